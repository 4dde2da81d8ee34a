package session_test

import (
	"math"
	"testing"

	"tunebot/session"
)

func metricsScaled(k float64) session.Metrics {
	return session.Metrics{session.MetricVelLinear: 0.2 * k, session.MetricVelAngular: 0.3 * k, session.MetricActionAcc: 12 * k,
		session.MetricOrientation: 0.05 * k, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08 * k, session.MetricPower: 150}
}

// A trial above rung 0 is shown against the baseline trained as long, recomputed from the
// two trials' metrics, and against rung 0 (said so) only when no such baseline exists.
func TestVersusControlComparesAtTheSameRung(t *testing.T) {
	st := session.DefaultSettings()
	b0 := metricsScaled(1)
	score := func(base, m session.Metrics) float64 {
		sc, err := session.Scorer{Baseline: base, Weights: st.Objective, Floors: st.Floors}.Score(m)
		if err != nil {
			t.Fatal(err)
		}
		return sc.Total
	}
	trial := func(num, rung int, m session.Metrics) session.Trial {
		return session.Trial{Number: num, Rung: rung, State: session.TrialCompleted, Metrics: m,
			Score: &session.Score{Total: score(b0, m), Eligible: true}}
	}
	base1, tuned1, tuned2 := trial(0, 1, metricsScaled(0.8)), trial(3, 1, metricsScaled(0.7)), trial(3, 2, metricsScaled(0.6))
	trials := []session.Trial{trial(0, 0, b0), trial(3, 0, metricsScaled(0.95)), base1, tuned1, tuned2}

	v, ok := session.VersusControl(st, trials, tuned1)
	if !ok || v.ControlRung != 1 || !v.Matched() || v.Label() != "vs baseline @ rung 1" {
		t.Fatalf("rung 1: %+v %q, want it against the baseline @ rung 1", v, v.Label())
	}
	want := score(base1.Metrics, tuned1.Metrics)
	if math.Abs(v.Score-want) > 1e-12 || math.Abs(v.Score-tuned1.Score.Total) < 0.01 {
		t.Errorf("rung 1 score %v, want %v recomputed against the rung-1 baseline (stored %v)", v.Score, want, tuned1.Score.Total)
	}
	if b, _ := session.VersusControl(st, trials, base1); b.Score != 0 || !b.Matched() {
		t.Errorf("the control against itself: %+v, want 0 at its rung", b)
	}
	v2, _ := session.VersusControl(st, trials, tuned2)
	if v2.ControlRung != 0 || v2.Matched() || v2.Score != tuned2.Score.Total || v2.Label() != "vs baseline @ rung 0, trained less" {
		t.Errorf("rung 2 without a baseline there: %+v %q, want the stored score vs rung 0, trained less", v2, v2.Label())
	}
	v0, _ := session.VersusControl(st, trials, trials[1])
	if v0.ControlRung != 0 || !v0.Matched() || v0.String() != "+0.052 vs baseline @ rung 0" && v0.Score != trials[1].Score.Total {
		t.Errorf("rung 0: %+v", v0)
	}
}

func TestCredibleClipsByTrialsObserved(t *testing.T) {
	for _, tc := range []struct {
		p    float64
		n    int
		want float64
	}{{1, 1, 0.67}, {0.92, 1, 0.67}, {0, 1, 0.33}, {0.5, 1, 0.5}, {1, 8, 0.9}, {1, 100, 0.95}, {0, 100, 0.05}, {0.42, 30, 0.42}, {1, 0, 0.5}} {
		if got := session.Credible(tc.p, tc.n); got != tc.want {
			t.Errorf("Credible(%v, %d) = %v, want %v", tc.p, tc.n, got, tc.want)
		}
	}
}

// Controls finds, for every rung, the trial ControlAt finds: the first completed, scored
// baseline result with metrics, not a failed or unscored one, and none where none is.
func TestControlsIsControlAtForEveryRung(t *testing.T) {
	sc := &session.Score{Total: 0}
	trials := []session.Trial{
		{Number: 0, Rung: 0, State: session.TrialCompleted, Score: sc, Metrics: metricsScaled(1)},
		{Number: 0, Rung: 1, State: session.TrialFailed, Score: sc, Metrics: metricsScaled(1)},
		{Number: 0, Rung: 1, State: session.TrialCompleted, Score: sc, Metrics: metricsScaled(0.9)},
		{Number: 0, Rung: 1, State: session.TrialCompleted, Score: sc, Metrics: metricsScaled(0.8)},
		{Number: 0, Rung: 2, State: session.TrialCompleted, Score: nil, Metrics: metricsScaled(1)},
		{Number: 3, Rung: 2, State: session.TrialCompleted, Score: sc, Metrics: metricsScaled(1)},
	}
	got := session.Controls(trials)
	for rung := 0; rung <= 3; rung++ {
		if want := session.ControlAt(trials, rung); got[rung] != want {
			t.Errorf("rung %d: Controls gives %p, ControlAt %p", rung, got[rung], want)
		}
	}
	if got[1] != &trials[2] || got[2] != nil {
		t.Errorf("Controls = %v, want rung 1's first completed baseline and none at rung 2", got)
	}
}
