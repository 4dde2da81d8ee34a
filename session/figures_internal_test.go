package session

import (
	"slices"
	"testing"
)

// rankLadder is a session with the baseline carried to rung 1 (control) where trials 1 and 2
// rank one way against rung 0's baseline and the other way against the baseline trained as
// long: the control learned linear tracking (0.5 of rung 0's error) but not the other
// metrics, so against it trial 1's extra tracking counts twice as much and trial 2's
// smoother actions the same. By the rung-0 score trial 2 leads (+0.65 weighted against
// +0.60); by the equal-training figure every screen shows, trial 1 does.
func rankLadder() snapshot {
	st := DefaultSettings()
	st.Objective = ObjectiveWeights{ObjTracking: 1, ObjSmoothness: 1}
	st.Normalize()
	base := Metrics{MetricVelLinear: 0.4, MetricVelAngular: 0.3, MetricActionAcc: 12, MetricOrientation: 0.05,
		MetricFallRate: 0.01, MetricFootSlip: 0.08, MetricPower: 150}
	with := func(lin, acc float64) Metrics {
		m := Metrics{}
		for k, v := range base {
			m[k] = v
		}
		m[MetricVelLinear], m[MetricActionAcc] = lin*base[MetricVelLinear], acc*base[MetricActionAcc]
		return m
	}
	at := map[TrialRef]Metrics{
		{0, 0}: base, {1, 0}: with(0.9, 1), {2, 0}: with(1, 0.9),
		{0, 1}: with(0.5, 1), {1, 1}: with(0.4, 1), {2, 1}: with(0.5, 0.85),
	}
	sc := st.scorer(base)
	var trials []Trial
	for _, ref := range []TrialRef{{0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1}, {2, 1}} {
		s, _ := sc.Score(at[ref])
		trials = append(trials, Trial{SessionID: "r", Number: ref.Number, Rung: ref.Rung, Iterations: st.Rungs[ref.Rung],
			State: TrialCompleted, Metrics: at[ref], Score: &s})
	}
	return snapshot{s: Session{ID: "r", Settings: st, BestTrial: -1}, trials: trials}
}

// One ranking everywhere (issue 43, item 3): the best, the promotion plan and the rung's order
// read the equal-training figure the table's column shows, not the score against rung 0's
// baseline, which would star trial 2 and promote it over trial 1.
func TestOneRankingByTheEqualTrainingFigure(t *testing.T) {
	n := rankLadder()
	one, two := *n.trial(1, 1), *n.trial(2, 1)
	v1, _ := VersusControl(n.s.Settings, n.trials, one)
	v2, _ := VersusControl(n.s.Settings, n.trials, two)
	if !(two.Score.Total > one.Score.Total && v1.Score > v2.Score) {
		t.Fatalf("fixture: rung-0 scores %.3f, %.3f and figures %.3f, %.3f; want trial 2 ahead on the first, trial 1 on the second",
			one.Score.Total, two.Score.Total, v1.Score, v2.Score)
	}
	if best, ok := chosenFinalist(n); !ok || best.Ref() != one.Ref() {
		t.Errorf("the best of rung 1: %v, want trial 1 @ rung 1 (figure %+.3f over %+.3f)", best.Ref(), v1.Score, v2.Score)
	}
	n.s.Settings.Promote = []int{3, 2, 1}
	n.s.Settings.Rungs = append(n.s.Settings.Rungs[:2], 900)
	if plan := promoted(n, 2); len(plan) != 2 || plan[0].Ref() != one.Ref() || plan[1].Number != 0 {
		t.Errorf("the plan to rung 2: %v, want trial 1 and the baseline carried along", refs(plan))
	}
	rung := n.rung(1)
	FiguresOf(n.s.Settings, n.trials).Sort(rung)
	if got := refs(rung); !slices.Equal(got, []TrialRef{{1, 1}, {0, 1}, {2, 1}}) && !slices.Equal(got, []TrialRef{{1, 1}, {2, 1}, {0, 1}}) {
		t.Errorf("rung 1 in rank order %v, want trial 1 first", got)
	}
}

func refs(ts []Trial) []TrialRef {
	out := make([]TrialRef, len(ts))
	for i, t := range ts {
		out[i] = t.Ref()
	}
	return out
}

// The final evaluation measures the trial the top rung chose and the baseline beside it, and
// nothing else: a finalist ranked second is never measured, so the fresh seeds choose nothing
// (issue 43, item 1).
func TestFinalPlanMeasuresTheChosenAndTheControlOnly(t *testing.T) {
	n := rankLadder()
	if got := refs(finalPlan(n)); !slices.Equal(got, []TrialRef{{1, 1}, {0, 1}}) {
		t.Errorf("final plan %v, want trial 1 @ rung 1 and the baseline @ rung 1", got)
	}
	// Once trial 1's final evaluation fails a gate it is no longer eligible: the next in rank
	// is chosen and measured in turn.
	for i := range n.trials {
		if n.trials[i].Ref() == (TrialRef{1, 1}) {
			n.trials[i].Final = &Final{Seeds: []int{7, 8}, Score: Score{Eligible: false}}
		}
	}
	if got := refs(finalPlan(n)); !slices.Equal(got, []TrialRef{{2, 1}, {0, 1}}) {
		t.Errorf("final plan after trial 1 failed its final gate: %v, want trial 2 and the baseline", got)
	}
}
