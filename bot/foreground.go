package bot

import "strings"

// daemonVerbs come with the daemon (tunebot run) only: a foreground session (tune) has no
// scheduler, no applier and no monitoring page, and runs its one session.
var daemonVerbs = map[Verb]string{
	VerbStart:     "start",
	VerbSchedule:  "schedule",
	VerbApply:     "apply",
	VerbRollback:  "rollback",
	VerbDashboard: "the monitoring page (dashboard)",
}

// foregroundRefusal is the answer to a daemon-only command in a foreground session, ok
// false when the verb works here.
func foregroundRefusal(v Verb) (Reply, bool) {
	what, daemon := daemonVerbs[v]
	if !daemon {
		return Reply{}, false
	}
	return Reply{Private: true, Text: what + " comes with the daemon (tunebot run --config FILE); tune runs this one session in the foreground"}, true
}

// ForegroundHelp lists the commands of a foreground session's terminal (tune): Help's,
// without those of the daemon, which it names at the end.
func ForegroundHelp() string {
	var out []string
	for _, l := range strings.Split(Help(true), "\n") {
		switch {
		case strings.HasPrefix(l, "start "), strings.HasPrefix(l, "schedule "), strings.HasPrefix(l, "apply and rollback"):
			continue
		case strings.HasPrefix(l, "status "):
			l = strings.Replace(l, " · dashboard (a private sign-in link to the monitoring page)", "", 1)
		}
		out = append(out, l)
	}
	return strings.Join(append(out, "start, schedule, apply, rollback and the monitoring page (dashboard) come with the daemon: tunebot run --config FILE"), "\n")
}

// Advised reports whether the engine has an advisor (DeepSeek) that reads people's notes and
// feedback in its prompt; an engine that cannot say is taken to have one, as chat's daemon
// may.
func (h *Handler) Advised() bool {
	if a, ok := h.cfg.Engine.(interface{ Advised() bool }); ok {
		return a.Advised()
	}
	return true
}
