package main

import (
	"testing"

	"tunebot/session"
	"tunebot/session/sessiontest"
)

// TestKinOf: which trials a trial's charts compare it with.
func TestKinOf(t *testing.T) {
	scored := func(n, rung int, total float64, trained bool) session.Trial {
		return session.Trial{Number: n, Rung: rung, State: session.TrialCompleted, Trained: trained,
			Score: &session.Score{Total: total, Eligible: true}}
	}
	parent := session.TrialRef{Number: 3, Rung: 0}
	child := scored(3, 1, 0.5, true)
	child.Parent = &parent
	trials := []session.Trial{scored(0, 0, 0, true), scored(3, 0, 0.4, true), scored(0, 1, 0.1, true), child, scored(4, 0, 0.2, true)}
	untrained := []session.Trial{scored(0, 0, 0, true), scored(0, 1, 0, false), scored(5, 1, 0.3, true)}
	ref := func(tr *session.Trial) string {
		if tr == nil {
			return "none"
		}
		return tr.Ref().String()
	}
	tests := []struct {
		name                            string
		trials                          []session.Trial
		of                              session.Trial
		baseline, best, parent, control string
	}{
		{name: "the baseline itself", trials: trials, of: trials[0],
			baseline: "trial 0 @ rung 0", best: "trial 3 @ rung 1", parent: "none", control: "none"},
		{name: "a rung-0 trial has no control", trials: trials, of: trials[4],
			baseline: "trial 0 @ rung 0", best: "trial 3 @ rung 1", parent: "none", control: "none"},
		{name: "a promoted trial: its parent and the retrained baseline", trials: trials, of: child,
			baseline: "trial 0 @ rung 0", best: "trial 3 @ rung 1", parent: "trial 3 @ rung 0", control: "trial 0 @ rung 1"},
		{name: "a control still training is none", trials: untrained, of: untrained[2],
			baseline: "trial 0 @ rung 0", best: "trial 5 @ rung 1", parent: "none", control: "none"},
		{name: "no trials", of: child, baseline: "none", best: "none", parent: "none", control: "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := kinOf(session.DefaultSettings(), tt.trials, tt.of)
			got := [4]string{ref(k.baseline), ref(k.best), ref(k.parent), ref(k.control)}
			want := [4]string{tt.baseline, tt.best, tt.parent, tt.control}
			if got != want {
				t.Errorf("kin (baseline, best, parent, control) = %q, want %q", got, want)
			}
		})
	}
}

// A report's best is the trial the session stars: ranked by the figure against the baseline
// trained as long, where the rung-0 score would rank another first (issue 43).
func TestKinOfBestIsTheStarredTrial(t *testing.T) {
	s, trials := sessiontest.RankLadder()
	k := kinOf(s.Settings, trials, trials[0])
	if k.best == nil {
		t.Fatal("the report has no best")
	}
	if !s.IsBest(*k.best) {
		t.Errorf("the report's best is %s, the session stars trial %d @ rung %d", k.best.Ref(), s.BestTrial, s.BestRung)
	}
}
