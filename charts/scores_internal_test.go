package charts

import (
	"testing"

	"tunebot/session"
)

// The demo's session as the issue saw it (issue 20, item 15): the best is trial 8 @ rung 2
// with its rung-1 point just left of it and no room on its right for the label, and trial
// 11 sits on the baseline's 0 line at the right edge, where "baseline" was written.
func demoScores() []session.Trial {
	tr := func(n, rung int, score float64, eligible bool) session.Trial {
		t := session.Trial{Number: n, Rung: rung, State: session.TrialCompleted, Score: &session.Score{Total: score, Eligible: eligible}}
		if rung == 2 {
			t.Final = &session.Final{Seeds: []int{0, 1, 2}, Score: session.Score{Total: score, Eligible: eligible}}
		}
		return t
	}
	return []session.Trial{
		tr(0, 0, 0, true), tr(0, 1, 0.217, true), tr(0, 2, 0.213, true), tr(1, 0, -0.032, false), tr(2, 0, 0.027, false),
		tr(3, 0, -0.052, true), tr(4, 0, -0.238, false), tr(5, 0, 0.021, true), tr(5, 1, 0.246, true), tr(6, 0, -0.132, true),
		tr(7, 0, -0.109, true), tr(8, 0, 0.129, true), tr(8, 1, 0.332, true), tr(8, 2, 0.332, true), tr(9, 0, -0.197, false),
		tr(10, 0, 0.064, true), tr(10, 1, 0.286, true), tr(10, 2, 0.272, true), tr(11, 0, 0.047, true), tr(11, 1, 0.27, true),
	}
}

// No label of the score chart covers a point or another label, and each stays in the plot.
func TestScoreLabelsCoverNoPoint(t *testing.T) {
	for name, trials := range map[string][]session.Trial{"demo": demoScores(), "best at the left edge": func() []session.Trial {
		ts := demoScores()
		for i := range ts {
			if ts[i].Number == 0 && ts[i].Rung > 0 {
				ts[i].Score.Total += 0.2 // the baseline is best
				if ts[i].Final != nil {
					ts[i].Final.Score.Total += 0.2
				}
			}
		}
		return ts
	}()} {
		_, p, err := drawScores(Meta{SessionID: "463b42f6", Trial: session.TrialRef{Number: 8, Rung: 2}}, trials, nil)
		if err != nil {
			t.Fatal(err)
		}
		l := p.labels
		if len(l.placed) < 2 {
			t.Fatalf("%s: %d labels placed", name, len(l.placed))
		}
		for i, b := range l.placed {
			if !b.In(l.area) {
				t.Errorf("%s: label %d %v leaves the plot %v", name, i, b, l.area)
			}
			for _, m := range l.marks {
				if b.Overlaps(m) {
					t.Errorf("%s: label %d %v covers the point at %v", name, i, b, m)
				}
			}
			for j, o := range l.placed[:i] {
				if b.Overlaps(o) {
					t.Errorf("%s: label %d %v covers label %d %v", name, i, b, j, o)
				}
			}
		}
	}
}

// The report's score chart plots a trial above rung 0 against the baseline at its rung,
// recomputed from the metrics, and leaves the session's trials as they are.
func TestVersusTrialsPlotsAgainstTheSameRung(t *testing.T) {
	st := session.DefaultSettings()
	m := func(k float64) session.Metrics {
		return session.Metrics{session.MetricVelLinear: 0.2 * k, session.MetricVelAngular: 0.3 * k, session.MetricActionAcc: 12 * k,
			session.MetricOrientation: 0.05 * k, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08 * k, session.MetricPower: 150}
	}
	tr := func(num, rung int, k, stored float64) session.Trial {
		return session.Trial{Number: num, Rung: rung, State: session.TrialCompleted, Metrics: m(k), Score: &session.Score{Total: stored, Eligible: true}}
	}
	trials := []session.Trial{tr(0, 0, 1, 0), tr(3, 0, 0.9, 0.05), tr(0, 1, 0.8, 0.2), tr(3, 1, 0.7, 0.27)}
	shown := versusTrials(st, trials)
	v, _ := session.VersusControl(st, trials, trials[3])
	if shown[3].Score.Total != v.Score || !v.Matched() || shown[2].Score.Total != 0 || shown[1].Score.Total != 0.05 {
		t.Errorf("plotted %v %v %v, want trial 3 @ rung 1 at %v (vs rung 1), the rung-1 baseline at 0, rung 0 as stored",
			shown[1].Score.Total, shown[2].Score.Total, shown[3].Score.Total, v.Score)
	}
	if trials[3].Score.Total != 0.27 {
		t.Error("the session's trial was changed")
	}
}
