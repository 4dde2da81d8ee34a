package session_test

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"tunebot/session"
)

// The verdict's critical values are Student's t's 95th percentiles (the session package keeps
// them as a table, being standard library only): checked against gonum's quantile.
func TestTCriticalIsStudentsT(t *testing.T) {
	for df := 1; df <= 40; df++ {
		want := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(min(df, 30))}.Quantile(1 - session.VerdictLevel)
		if got := session.TCritical(df); math.Abs(got-want) > 5e-4 {
			t.Errorf("t(0.95, %d) = %.4f, gonum says %.4f", df, got, want)
		}
	}
	if !math.IsInf(session.TCritical(0), 1) {
		t.Error("no degrees of freedom: the bound must be unbounded")
	}
}

// Fresh seeds are the session's own: the same id gives the same seeds (a resumed session
// measures on the seeds it started with), another id others, never an evaluation seed.
func TestFreshSeeds(t *testing.T) {
	a := session.FreshSeeds("4aa3ae7aa0cd6d42", 5, []int{0, 1, 2})
	if len(a) != 5 || !slices.Equal(a, session.FreshSeeds("4aa3ae7aa0cd6d42", 5, []int{0, 1, 2})) || slices.Equal(a, session.FreshSeeds("102c4bc103170022", 5, []int{0, 1, 2})) {
		t.Errorf("fresh seeds %v: want 5, the same for the same id and others for another", a)
	}
	for i, s := range a {
		if s < 1000 || s > 9999+5 || (i > 0 && s != a[i-1]+1) {
			t.Errorf("fresh seeds %v: want consecutive 4-digit seeds", a)
		}
	}
	avoid := []int{a[1], a[3]}
	b := session.FreshSeeds("4aa3ae7aa0cd6d42", 5, avoid)
	if len(b) != 5 || slices.ContainsFunc(b, func(s int) bool { return slices.Contains(avoid, s) }) {
		t.Errorf("fresh seeds %v avoiding %v", b, avoid)
	}
}

// pairOn is a control and a trial at rung 2 whose final evaluations are per-seed metrics: the
// control's linear velocity error 0.2 on every seed, the trial's 0.2·(1 − gain/0.28 + d_i),
// so its score against the control is gain plus the seed's deviation d_i (linear velocity
// weighs 0.8 of tracking's 0.35).
func pairOn(gain float64, dev []float64, seeds []int) (session.Settings, *session.Trial, session.Trial) {
	st := session.DefaultSettings()
	base := session.Metrics{session.MetricVelLinear: 0.2, session.MetricVelAngular: 0.3, session.MetricActionAcc: 12,
		session.MetricOrientation: 0.05, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08, session.MetricPower: 150}
	final := func(lin func(i int) float64) *session.Final {
		f := &session.Final{Seeds: seeds, Metrics: session.Metrics{}}
		for i, s := range seeds {
			m := session.Metrics{}
			for k, v := range base {
				m[k] = v
			}
			m[session.MetricVelLinear] = lin(i)
			f.PerSeed = append(f.PerSeed, session.SeedMetrics{Seed: s, Metrics: m})
		}
		for k := range base {
			sum := 0.0
			for _, ps := range f.PerSeed {
				sum += ps.Metrics[k]
			}
			f.Metrics[k] = sum / float64(len(seeds))
		}
		return f
	}
	sc := session.Score{Eligible: true}
	control := &session.Trial{Number: 0, Rung: 2, State: session.TrialCompleted, Metrics: base, Score: &sc, Final: final(func(int) float64 { return 0.2 })}
	trial := session.Trial{Number: 4, Rung: 2, State: session.TrialCompleted, Metrics: base, Score: &sc,
		Final: final(func(i int) float64 { return 0.2 * (1 - (gain+dev[i])/0.28) })}
	return st, control, trial
}

// A gain is an improvement only when it clears its own uncertainty on the fresh seeds
// (issue 43, item 2): a one-sided paired t-test at 5 %.
func TestVerdictClearsTheNoiseOrSaysSo(t *testing.T) {
	seeds := []int{7301, 7302, 7303, 7304, 7305}
	spread := []float64{-0.02, 0.01, 0.02, -0.01, 0}
	cases := []struct {
		name    string
		gain    float64
		dev     []float64
		outcome string
	}{
		{"a clear gain", 0.05, spread, session.OutcomeImproved},
		// +0.005 ± 0.007: "improved" was said of such a gain before.
		{"a gain inside the noise", 0.005, spread, session.OutcomeWithinNoise},
		{"a small loss inside the noise", -0.004, spread, session.OutcomeWithinNoise},
		{"a loss beyond the noise", -0.05, spread, session.OutcomeNoImprovement},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, control, trial := pairOn(c.gain, c.dev, seeds)
			v := session.VerdictOf(st, control, trial)
			fv, _ := session.FinalVersusOf(st, control, trial)
			if !v.Measured() || math.Abs(v.Gain-fv.Score) > 1e-12 || math.Abs(v.Gain-c.gain) > 1e-9 {
				t.Fatalf("verdict %+v, want the headline's gain %+.4f (final versus %+.4f)", v, c.gain, fv.Score)
			}
			// the sample standard deviation of the deviations over √5
			if want := 0.0158113883 / math.Sqrt(5); math.Abs(v.SE-want) > 1e-6 || math.Abs(v.Lower-(v.Gain-2.1318*v.SE)) > 1e-3 {
				t.Errorf("standard error %.5f (want %.5f), lower bound %.4f", v.SE, want, v.Lower)
			}
			if got := session.OutcomeOf(v); got != c.outcome || v.Cleared != (c.outcome == session.OutcomeImproved) {
				t.Errorf("outcome %s (cleared %v), want %s: %s", got, v.Cleared, c.outcome, v.Text())
			}
			if !strings.Contains(v.Text(), "on fresh seeds 7301–7305 (paired, 95 % lower bound ") {
				t.Errorf("verdict text %q does not say where and how it was measured", v.Text())
			}
		})
	}
}

// Without a measurement at equal training on fresh seeds there is no test, and the verdict
// says why; a session then ends unmeasured, never improved.
func TestVerdictUnmeasured(t *testing.T) {
	seeds := []int{7301, 7302, 7303}
	st, control, trial := pairOn(0.2, []float64{0, 0, 0}, seeds)
	noPerSeed := trial
	noPerSeed.Final = &session.Final{Seeds: seeds, Metrics: trial.Final.Metrics}
	failed := trial
	failed.Final, failed.FinalFailed = nil, true
	otherRung := *control
	otherRung.Rung = 1
	nanMean := trial
	nanMean.Final = &session.Final{Seeds: seeds, PerSeed: trial.Final.PerSeed, Metrics: session.Metrics{}}
	for k, v := range trial.Final.Metrics {
		nanMean.Final.Metrics[k] = v
	}
	nanMean.Final.Metrics[session.MetricFallRate] = math.NaN()
	cases := []struct {
		name    string
		control *session.Trial
		trial   session.Trial
		want    string
	}{
		{"control off", nil, trial, "no baseline was trained as long (control: false)"},
		{"the control at another rung", &otherRung, trial, "no baseline was trained as long"},
		{"a failed final evaluation", control, failed, "its final evaluation failed (trial 4 @ rung 2's reason says why)"},
		{"no per-seed results", control, noPerSeed, "share 0 seed(s) with per-seed results; a spread needs 2"},
		// its per-seed results pair, but the gain would have been the rung's figure, the one that chose
		{"a final mean that does not score", control, nanMean, "final mean metrics do not score against the baseline's"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := session.VerdictOf(st, c.control, c.trial)
			if v.Measured() || !strings.Contains(v.Unmeasured, c.want) || session.OutcomeOf(v) != session.OutcomeUnmeasured || v.Cleared {
				t.Errorf("verdict %+v, want unmeasured: %s", v, c.want)
			}
		})
	}
}

// TestFinalFailedReadsTheStoredWords: a trial stored while final_failed held the failure's
// words reads as failed (its session's trials failed to decode at all), and one written now
// holds a bool, absent when not set.
func TestFinalFailedReadsTheStoredWords(t *testing.T) {
	for _, tt := range []struct {
		stored string
		want   bool
	}{
		{`{"number":4,"rung":2,"final_failed":"exit status 1"}`, true},
		{`{"number":4,"rung":2,"final_failed":""}`, false},
		{`{"number":4,"rung":2,"final_failed":true}`, true},
		{`{"number":4,"rung":2}`, false},
	} {
		var tr session.Trial
		if err := json.Unmarshal([]byte(tt.stored), &tr); err != nil || bool(tr.FinalFailed) != tt.want {
			t.Errorf("%s: final failed %v (%v), want %v", tt.stored, tr.FinalFailed, err, tt.want)
		}
	}
	var bad session.Trial
	if err := json.Unmarshal([]byte(`{"final_failed":3}`), &bad); err == nil {
		t.Errorf("a number read as final_failed %v, want an error", bad.FinalFailed)
	}
	for _, tt := range []struct {
		flag session.FailedFlag
		want string
	}{{true, `"final_failed":true`}, {false, ""}} {
		b, err := json.Marshal(session.Trial{FinalFailed: tt.flag})
		if err != nil || (tt.want != "") != strings.Contains(string(b), `"final_failed"`) || !strings.Contains(string(b), tt.want) {
			t.Errorf("written %s (%v), want %q", b, err, tt.want)
		}
	}
}

// A fresh seed whose metrics do not score is left out of the paired test, and the verdict says
// which: its seeds are the ones the test paired, so "over 4 fresh seeds" and the seeds it
// lists agree, and the left-out seed is named rather than silently dropped.
func TestVerdictNamesASeedItLeftOut(t *testing.T) {
	seeds := []int{7301, 7302, 7303, 7304, 7305}
	st, control, trial := pairOn(0.1, []float64{-0.02, 0.01, 0.02, -0.01, 0}, seeds)
	bad := session.Metrics{}
	for k, v := range trial.Final.PerSeed[2].Metrics {
		bad[k] = v
	}
	bad[session.MetricFallRate] = math.NaN()
	trial.Final.PerSeed[2].Metrics = bad
	v := session.VerdictOf(st, control, trial)
	if !v.Measured() || !slices.Equal(v.Seeds, []int{7301, 7302, 7304, 7305}) || !slices.Equal(v.LeftOut, []int{7303}) || v.Test != session.TestName(4) {
		t.Fatalf("verdict %+v: want the test over the 4 seeds that scored, 7303 named as left out", v)
	}
	if text := v.Text(); !strings.Contains(text, "seed(s) 7303 left out") || !strings.Contains(text, "fresh seeds 7301,7302,7304,7305") {
		t.Errorf("verdict text %q does not name the seeds it paired and the one it left out", text)
	}
}

// A stored final_eval_count the settings refuse, which only a damaged record holds, draws the
// default count of fresh seeds: never a panic (below 1) nor an allocation of billions.
func TestDamagedFinalEvalCountDrawsTheDefault(t *testing.T) {
	for _, n := range []int{-3, 0, 1, session.MaxFinalEvalCount + 1, 1 << 40} {
		s := session.Session{ID: "4aa3ae7aa0cd6d42", Settings: session.DefaultSettings()}
		s.Settings.FinalEvalCount = n
		if got := s.FinalSeeds(); len(got) != session.DefaultFinalEvalCount {
			t.Errorf("final_eval_count %d: %d fresh seeds, want the default %d", n, len(got), session.DefaultFinalEvalCount)
		}
	}
}
