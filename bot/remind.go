package bot

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"tunebot/session"
)

// Overdue is a pending decision that has waited longer than the reminder threshold.
type Overdue struct {
	Proposal session.Proposal
	Waited   time.Duration
}

// Reminders returns the pending proposals that have waited at least threshold since they
// were created, and at least threshold since their last reminder (reminded, by proposal
// id; may be nil), oldest first. It is pure: the caller keeps reminded and posts.
func Reminders(now time.Time, pending []session.Proposal, threshold time.Duration, reminded map[string]time.Time) []Overdue {
	if threshold <= 0 {
		return nil
	}
	var out []Overdue
	for _, p := range pending {
		if p.State != session.ProposalPending {
			continue
		}
		waited := now.Sub(p.CreatedAt)
		if waited < threshold {
			continue
		}
		if last, ok := reminded[p.ID]; ok && now.Sub(last) < threshold {
			continue
		}
		out = append(out, Overdue{Proposal: p, Waited: waited})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Waited > out[j].Waited })
	return out
}

// ReminderText is the line posted in a session's thread for an overdue decision.
func ReminderText(o Overdue) string {
	n := o.Proposal.Seq
	return fmt.Sprintf("reminder: proposal %d for trial %d has waited %s for a decision (approve %d, reject %d <feedback> or edit %d); its GPU slot stays free until then",
		n, o.Proposal.Number, roughly(o.Waited), n, n, n)
}

// Digest renders the daily digest: active sessions, and those that ended or changed in
// the day before now. It returns "" when there is nothing to say, so a quiet day posts
// nothing.
func Digest(now time.Time, sessions []session.Session) string {
	since := now.Add(-24 * time.Hour)
	var active, ended []session.Session
	for _, s := range sessions {
		switch {
		case s.State.Active():
			active = append(active, s)
		case !s.EndedAt.IsZero() && s.EndedAt.After(since):
			ended = append(ended, s)
		}
	}
	if len(active) == 0 && len(ended) == 0 {
		return ""
	}
	byTime := func(xs []session.Session) {
		sort.SliceStable(xs, func(i, j int) bool { return xs[i].CreatedAt.Before(xs[j].CreatedAt) })
	}
	byTime(active)
	byTime(ended)
	var b strings.Builder
	fmt.Fprintf(&b, "tunebot daily digest, %s\n", now.Format("Mon 2 Jan 2006"))
	line := func(s session.Session) {
		fmt.Fprintf(&b, "• %s %s (%s): %s", short(s.ID), s.Settings.RunName, session.StateLabel(s.State), s.Message)
		switch {
		case s.Result != nil:
			// best vs the baseline at equal training (docs/design.md §1); a finished
			// session's message already says it
			if h := s.Result.Headline(); !strings.Contains(s.Message, h) {
				fmt.Fprintf(&b, "; %s", h)
			}
		case s.BestTrial >= 0 && (s.BestTrial > 0 || s.BestScore != 0):
			fmt.Fprintf(&b, "; best trial %d @ rung %d, score %s", s.BestTrial, s.BestRung, session.SignedScore(s.BestScore))
		}
		if s.Preset != "" {
			fmt.Fprintf(&b, "; preset %s", s.Preset)
		}
		if s.GPUSeconds > 0 {
			fmt.Fprintf(&b, "; %.1f %s h", s.GPUSeconds/3600, strings.TrimSuffix(s.TimeLabel(), " time"))
		}
		b.WriteByte('\n')
	}
	if len(active) > 0 {
		b.WriteString("active:\n")
		for _, s := range active {
			line(s)
		}
	}
	if len(ended) > 0 {
		b.WriteString("ended in the last 24 h:\n")
		for _, s := range ended {
			line(s)
		}
	}
	b.WriteString("(scores compare with each session's baseline at rung 0)\n")
	return b.String()
}

// FormatList renders schedule entries for chat, one per line.
func FormatList(entries []ScheduleEntry) string {
	if len(entries) == 0 {
		return "no schedules: `schedule add \"0 2 * * *\" mode=approval trials=12` adds one\n"
	}
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s  %q  start %s  if busy: %s", e.ID, e.Spec, orNone(e.Args), e.IfBusy)
		if !e.Next.IsZero() {
			fmt.Fprintf(&b, "  next %s", e.Next.Format("2006-01-02 15:04 MST"))
		}
		if e.LastResult != "" {
			fmt.Fprintf(&b, "  last %s: %s", e.LastRun.Format("2006-01-02 15:04Z"), e.LastResult)
		}
		fmt.Fprintf(&b, "  by %s\n", e.CreatedBy)
	}
	return b.String()
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(defaults)"
	}
	return s
}

func roughly(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
	case d >= 2*time.Hour:
		return fmt.Sprintf("%d hours", int(d/time.Hour))
	}
	return fmt.Sprintf("%d minutes", int(d/time.Minute))
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
