package session_test

import (
	"strings"
	"testing"

	"tunebot/session"
)

// done is a completed, eligible trial with a rung score and, when final is given, a final
// re-evaluation on seeds 0,1,2.
func done(num, rung int, score float64, final ...float64) session.Trial {
	t := session.Trial{Number: num, Rung: rung, Iterations: []int{300, 900, 2000}[rung], State: session.TrialCompleted,
		Score: &session.Score{Total: score, Eligible: true}}
	if len(final) == 2 {
		t.Final = &session.Final{Seeds: []int{0, 1, 2}, Score: session.Score{Total: final[0], Eligible: true}, ScoreStd: final[1]}
	}
	return t
}

func TestCompareHeadlinesAtEqualTraining(t *testing.T) {
	st := session.DefaultSettings()
	noControl := st
	noControl.Control = false
	ladder := []session.Trial{
		done(0, 0, 0), done(1, 0, 0.05), done(2, 0, 0.08),
		done(0, 1, 0.25), done(1, 1, 0.20), done(2, 1, 0.22),
		done(0, 2, 0.31, 0.30, 0.01), done(2, 2, 0.33, 0.34, 0.02),
	}
	tests := []struct {
		name        string
		s           session.Session
		trials      []session.Trial
		wantBest    session.TrialRef
		wantControl int // the control's rung, -1 for none
		want        []string
	}{
		{"succeeded: the preset's final against the baseline's final at rung 2",
			session.Session{State: session.StateSucceeded, Preset: "p", BestTrial: 2, BestRung: 2, Settings: st}, ladder,
			session.TrialRef{Number: 2, Rung: 2}, 2,
			[]string{"trial 2 @ rung 2 scores +0.340 ± 0.020, the baseline +0.300 ± 0.010 (both vs baseline @ rung 0) at the same 2000 iterations on the same seeds 0,1,2: +0.040 over the baseline"}},
		{"succeeded with the baseline best: the tuned trial it beat",
			session.Session{State: session.StateSucceeded, Preset: "p", BestTrial: 0, BestRung: 2, Settings: st},
			[]session.Trial{done(0, 0, 0), done(2, 0, 0.08), done(0, 1, 0.25), done(2, 1, 0.22), done(0, 2, 0.31, 0.36, 0.01), done(2, 2, 0.33, 0.34, 0.02)},
			session.TrialRef{Number: 2, Rung: 2}, 2, []string{"the baseline is ahead by 0.020"}},
		{"cancelled during rung 2: rung 1, where the baseline is ahead, not rung 0's gain",
			session.Session{State: session.StateCancelled, BestTrial: 2, BestRung: 0, Settings: st}, ladder[:6],
			session.TrialRef{Number: 2, Rung: 1}, 1,
			[]string{"trial 2 @ rung 1 scores +0.220, the baseline +0.250 (both vs baseline @ rung 0) at the same 900 iterations", "the baseline is ahead by 0.030"}},
		{"cancelled at rung 1 before the baseline got there: rung 0",
			session.Session{State: session.StateCancelled, Settings: st}, append(ladder[:3:3], done(1, 1, 0.20)),
			session.TrialRef{Number: 2, Rung: 0}, 0, []string{"trial 2 @ rung 0 scores +0.080 vs the baseline @ rung 0 (same 300 iterations"}},
		{"control off: said in words",
			session.Session{State: session.StateSucceeded, Preset: "p", BestTrial: 2, BestRung: 2, Settings: noControl},
			[]session.Trial{done(0, 0, 0), done(2, 0, 0.08), done(2, 1, 0.22), done(2, 2, 0.33, 0.34, 0.02)},
			session.TrialRef{Number: 2, Rung: 2}, -1,
			[]string{"trial 2 @ rung 2 (2000 iterations) scores +0.340 ± 0.020 vs the baseline at 300 iterations (rung 0)", "not a comparison at equal training"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := session.Compare(tt.s, tt.trials)
			if !ok {
				t.Fatal("no comparison")
			}
			if got := (session.TrialRef{Number: c.Best.Trial, Rung: c.Best.Rung}); got != tt.wantBest {
				t.Errorf("best %s, want %s", got, tt.wantBest)
			}
			switch {
			case tt.wantControl < 0 && c.Control != nil:
				t.Errorf("control %+v, want none", c.Control)
			case tt.wantControl >= 0 && (c.Control == nil || c.Control.Trial != 0 || c.Control.Rung != tt.wantControl):
				t.Errorf("control %+v, want the baseline at rung %d", c.Control, tt.wantControl)
			}
			h := c.Headline()
			for _, w := range tt.want {
				if !strings.Contains(h, w) {
					t.Errorf("headline %q\nwant it to say %q", h, w)
				}
			}
		})
	}
	if _, ok := session.Compare(session.Session{State: session.StateCancelled, Settings: st}, ladder[:1]); ok {
		t.Error("a comparison with no tuned trial")
	}
}
