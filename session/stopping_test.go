package session_test

import (
	"testing"
	"time"

	"tunebot/session"
)

// With parallel trials, early stop counts trials in the order they finished, not by
// number: trial 3 finished last and improved, so nothing counts against the session.
func TestNoImprovementCountsInFinishOrder(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC) }
	tr := func(n int, score float64, end int) session.Trial {
		return session.Trial{Number: n, State: session.TrialCompleted, EndedAt: at(end),
			Score: &session.Score{Total: score, Eligible: true}}
	}
	r0 := []session.Trial{tr(0, 0, 0), tr(1, 0.10, 1), tr(2, 0.05, 2), tr(3, 0.20, 9), tr(4, 0.08, 3),
		{Number: 5, State: session.TrialTraining}}
	count, best := session.NoImprovement(r0)
	if count != 0 || best != 3 {
		t.Errorf("got %d without improvement, best %d; want 0 and trial 3", count, best)
	}
	r0[3].EndedAt = at(2) // now trial 4 finished after the best
	if count, best = session.NoImprovement(r0); count != 1 || best != 3 {
		t.Errorf("got %d without improvement, best %d; want 1 and trial 3", count, best)
	}
}
