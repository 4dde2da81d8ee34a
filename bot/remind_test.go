package bot_test

import (
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/session"
)

func TestReminders(t *testing.T) {
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	p := func(id string, age time.Duration, st session.ProposalState) session.Proposal {
		return session.Proposal{ID: id, Seq: 1, Number: 3, State: st, CreatedAt: now.Add(-age)}
	}
	props := []session.Proposal{
		p("fresh", 30*time.Minute, session.ProposalPending),
		p("old", 5*time.Hour, session.ProposalPending),
		p("older", 26*time.Hour, session.ProposalPending),
		p("decided", 9*time.Hour, session.ProposalApproved),
		p("reminded", 3*time.Hour, session.ProposalPending),
		p("reminded-long-ago", 7*time.Hour, session.ProposalPending),
	}
	reminded := map[string]time.Time{"reminded": now.Add(-time.Hour), "reminded-long-ago": now.Add(-3 * time.Hour)}
	got := bot.Reminders(now, props, 2*time.Hour, reminded)
	var ids []string
	for _, o := range got {
		ids = append(ids, o.Proposal.ID)
	}
	if strings.Join(ids, ",") != "older,reminded-long-ago,old" {
		t.Errorf("overdue = %v, want older,reminded-long-ago,old", ids)
	}
	if text := bot.ReminderText(got[0]); !strings.Contains(text, "proposal 1 for trial 3 has waited 26 hours") {
		t.Errorf("ReminderText = %q", text)
	}
	if got := bot.Reminders(now, props, 0, nil); got != nil {
		t.Errorf("threshold 0 reminds: %v", got)
	}
}

func TestDigest(t *testing.T) {
	now := time.Date(2025, 5, 1, 9, 0, 0, 0, time.UTC)
	sessions := []session.Session{
		{ID: "aaaaaaaa1111", State: session.StateAwaitingApproval, Settings: session.Settings{RunName: "night"}, Message: "proposal 2 waits",
			BestTrial: 1, BestScore: 0.05, GPUSeconds: 7200, CreatedAt: now.Add(-5 * time.Hour)},
		{ID: "bbbbbbbb2222", State: session.StateSucceeded, Settings: session.Settings{RunName: "auto-tune"}, Message: "done",
			BestTrial: 4, BestRung: 2, BestScore: 0.21, Preset: "auto-tune-bbbbbbbb", EndedAt: now.Add(-3 * time.Hour), CreatedAt: now.Add(-20 * time.Hour)},
		{ID: "cccccccc3333", State: session.StateFailed, EndedAt: now.Add(-50 * time.Hour), CreatedAt: now.Add(-60 * time.Hour)},
		// cancelled at rung 1, where the baseline trained as long is ahead: that is the headline
		{ID: "dddddddd4444", State: session.StateCancelled, Settings: session.Settings{RunName: "cut"}, Message: "cancelled by ana",
			BestTrial: 3, BestScore: 0.08, EndedAt: now.Add(-2 * time.Hour), CreatedAt: now.Add(-4 * time.Hour),
			Result: &session.Comparison{Best: session.Standing{Trial: 3, Rung: 1, Iterations: 900, Score: 0.2, Seeds: []int{0}},
				Control: &session.Standing{Trial: 0, Rung: 1, Iterations: 900, Score: 0.25, Seeds: []int{0}}, BaselineIterations: 300}},
	}
	d := bot.Digest(now, sessions)
	for _, w := range []string{"digest, Thu 1 May 2025", "active:\n• aaaaaaaa night (awaiting approval): proposal 2 waits; best trial 1 @ rung 0, score +0.050; 2.0 GPU h",
		"ended in the last 24 h:\n• bbbbbbbb auto-tune (succeeded): done; best trial 4 @ rung 2, score +0.210; preset auto-tune-bbbbbbbb", "baseline at rung 0",
		"• dddddddd cut (cancelled): cancelled by ana; trial 3 @ rung 1 scores +0.200, the baseline +0.250 (both vs baseline @ rung 0) at the same 900 iterations on the same seeds 0: the baseline is ahead by 0.050\n"} {
		if !strings.Contains(d, w) {
			t.Errorf("digest does not say %q:\n%s", w, d)
		}
	}
	if strings.Contains(d, "cccccccc") {
		t.Errorf("digest names a session that ended two days ago:\n%s", d)
	}
	if got := bot.Digest(now, sessions[2:3]); got != "" {
		t.Errorf("a quiet day's digest = %q, want empty", got)
	}
}
