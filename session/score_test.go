package session_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"tunebot/session"
)

// baseline is a plausible rung-0 evaluation; every metric is above its default floor.
func baseline() session.Metrics {
	return session.Metrics{
		session.MetricVelLinear: 0.2, session.MetricVelAngular: 0.3, session.MetricActionAcc: 12,
		session.MetricOrientation: 0.05, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08,
		session.MetricPower: 150,
	}
}

// with returns a copy of m with the given name/value pairs changed.
func with(m session.Metrics, kv ...any) session.Metrics {
	out := session.Metrics{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = toFloat(kv[i+1])
	}
	return out
}

func scorer(base session.Metrics) session.Scorer {
	return session.Scorer{Baseline: base, Weights: session.DefaultObjectiveWeights(), Floors: session.DefaultFloors()}
}

const tol = 1e-12

func near(a, b float64) bool { return math.Abs(a-b) <= tol }

func TestScoreHandComputed(t *testing.T) {
	b := baseline()
	// unit is a baseline of ones, so that the tracking gate can be hit exactly in binary.
	unit := with(b, session.MetricVelLinear, 1.0, session.MetricVelAngular, 1.0)
	tests := []struct {
		name     string
		base     session.Metrics
		cur      session.Metrics
		imp      map[string]float64 // the non-zero improvements
		total    float64
		eligible bool
		reasons  []string
	}{
		{"baseline against itself", b, b, nil, 0, true, nil},

		// one metric at a time; total = weight × objective / 100
		{"linear velocity error halves", b, with(b, session.MetricVelLinear, 0.1),
			map[string]float64{session.MetricVelLinear: 0.5}, 0.8 * 0.5 * 35 / 100, true, nil}, // tracking 0.4 → 0.14
		{"angular velocity error halves", b, with(b, session.MetricVelAngular, 0.15),
			map[string]float64{session.MetricVelAngular: 0.5}, 0.2 * 0.5 * 35 / 100, true, nil}, // tracking 0.1 → 0.035
		{"action acceleration 12 → 9", b, with(b, session.MetricActionAcc, 9),
			map[string]float64{session.MetricActionAcc: 0.25}, 0.25 * 20 / 100, true, nil}, // 0.05
		{"orientation error 0.05 → 0.04", b, with(b, session.MetricOrientation, 0.04),
			map[string]float64{session.MetricOrientation: 0.2}, 0.2 * 15 / 100, true, nil}, // 0.03
		{"fall rate halves", b, with(b, session.MetricFallRate, 0.005),
			map[string]float64{session.MetricFallRate: 0.5}, 0.5 * 15 / 100, true, nil}, // 0.075
		{"foot slip 0.08 → 0.1 is worse", b, with(b, session.MetricFootSlip, 0.1),
			map[string]float64{session.MetricFootSlip: -0.25}, -0.25 * 10 / 100, true, nil}, // -0.025
		{"power 150 → 120", b, with(b, session.MetricPower, 120),
			map[string]float64{session.MetricPower: 0.2}, 0.2 * 5 / 100, true, nil}, // 0.01

		// floors: the scale is max(|baseline|, floor)
		{"fall rate baseline under its floor", with(b, session.MetricFallRate, 0.001), with(b, session.MetricFallRate, 0.006),
			map[string]float64{session.MetricFallRate: -0.5}, -0.5 * 15 / 100, true, nil}, // -0.005/0.01
		{"orientation baseline 0 uses the floor", with(b, session.MetricOrientation, 0), with(b, session.MetricOrientation, 0.01),
			map[string]float64{session.MetricOrientation: -0.5}, -0.5 * 15 / 100, true, nil}, // -0.01/0.02
		{"power baseline 2 W under the 5 W floor", with(b, session.MetricPower, 2), with(b, session.MetricPower, 1),
			map[string]float64{session.MetricPower: 0.2}, 0.2 * 5 / 100, true, nil}, // 1/5
		{"linear baseline under its floor, worse", with(b, session.MetricVelLinear, 0.01), with(b, session.MetricVelLinear, 0.02),
			map[string]float64{session.MetricVelLinear: -0.2}, 0.8 * -0.2 * 35 / 100, false, []string{"tracking is 16.0% worse than the baseline (limit 5%)"}},

		// clipping to [-1, 1]
		{"power triples: clipped to -1", b, with(b, session.MetricPower, 450),
			map[string]float64{session.MetricPower: -1}, -1 * 5 / 100.0, true, nil},
		{"power to 0: exactly +1", b, with(b, session.MetricPower, 0),
			map[string]float64{session.MetricPower: 1}, 1 * 5 / 100.0, true, nil},
		{"linear error triples: clipped, tracking gate", b, with(b, session.MetricVelLinear, 0.6),
			map[string]float64{session.MetricVelLinear: -1}, 0.8 * -1 * 35 / 100, false, []string{"tracking is 80.0% worse"}},

		// gates
		{"fall rate exactly baseline + 0.02 is eligible", b, with(b, session.MetricFallRate, 0.03),
			map[string]float64{session.MetricFallRate: -1}, -15 / 100.0, true, nil},
		{"fall rate from 0 to exactly 0.02 is eligible", with(b, session.MetricFallRate, 0), with(b, session.MetricFallRate, 0.02),
			map[string]float64{session.MetricFallRate: -1}, -15 / 100.0, true, nil}, // -0.02/0.01 clipped
		{"fall rate over baseline + 0.02", b, with(b, session.MetricFallRate, 0.031),
			map[string]float64{session.MetricFallRate: -1}, -15 / 100.0, false, []string{"fall rate 0.031 exceeds the baseline's 0.010 + 0.02"}},
		{"tracking exactly -0.05 through linear is eligible", unit, with(unit, session.MetricVelLinear, 1.0625),
			map[string]float64{session.MetricVelLinear: -0.0625}, -0.05 * 35 / 100, true, nil},
		{"tracking exactly -0.05 through angular is eligible", unit, with(unit, session.MetricVelAngular, 1.25),
			map[string]float64{session.MetricVelAngular: -0.25}, -0.05 * 35 / 100, true, nil},
		{"tracking -0.056 is not", unit, with(unit, session.MetricVelLinear, 1.07),
			map[string]float64{session.MetricVelLinear: -0.07}, 0.8 * -0.07 * 35 / 100, false, []string{"tracking is 5.6% worse than the baseline (limit 5%)"}},
		{"better elsewhere does not lift the tracking gate", unit, with(unit, session.MetricVelLinear, 1.5, session.MetricPower, 0, session.MetricActionAcc, 0),
			map[string]float64{session.MetricVelLinear: -0.5, session.MetricPower: 1, session.MetricActionAcc: 1}, (0.8*-0.5*35 + 20 + 5) / 100, false, []string{"tracking is 40.0% worse"}},
		{"both gates", b, with(b, session.MetricFallRate, 0.5, session.MetricVelLinear, 0.4),
			map[string]float64{session.MetricFallRate: -1, session.MetricVelLinear: -1}, (0.8*-1*35 - 15) / 100, false,
			[]string{"fall rate 0.500 exceeds the baseline's 0.010 + 0.02", "tracking is 80.0% worse"}},

		{"everything better", b, with(b, session.MetricVelLinear, 0.1, session.MetricVelAngular, 0.15, session.MetricActionAcc, 9,
			session.MetricOrientation, 0.04, session.MetricFallRate, 0.005, session.MetricFootSlip, 0.06, session.MetricPower, 120),
			map[string]float64{session.MetricVelLinear: 0.5, session.MetricVelAngular: 0.5, session.MetricActionAcc: 0.25,
				session.MetricOrientation: 0.2, session.MetricFallRate: 0.5, session.MetricFootSlip: 0.25, session.MetricPower: 0.2},
			(0.5*35 + 0.25*20 + 0.2*15 + 0.5*15 + 0.25*10 + 0.2*5) / 100, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := scorer(tt.base).Score(tt.cur)
			if err != nil {
				t.Fatal(err)
			}
			wantImp := map[string]float64{}
			for _, m := range session.MetricNames {
				wantImp[m] = tt.imp[m]
			}
			if diff := cmp.Diff(wantImp, sc.Improvements, cmpopts.EquateApprox(0, tol)); diff != "" {
				t.Errorf("improvements (-want +got):\n%s", diff)
			}
			wantObj := map[string]float64{
				session.ObjTracking:   0.8*wantImp[session.MetricVelLinear] + 0.2*wantImp[session.MetricVelAngular],
				session.ObjSmoothness: wantImp[session.MetricActionAcc],
				session.ObjStability:  wantImp[session.MetricOrientation],
				session.ObjFalls:      wantImp[session.MetricFallRate],
				session.ObjSlip:       wantImp[session.MetricFootSlip],
				session.ObjEnergy:     wantImp[session.MetricPower],
			}
			if diff := cmp.Diff(wantObj, sc.Objectives, cmpopts.EquateApprox(0, tol)); diff != "" {
				t.Errorf("objectives (-want +got):\n%s", diff)
			}
			if !near(sc.Total, tt.total) {
				t.Errorf("total = %.15g, want %.15g", sc.Total, tt.total)
			}
			if sc.Eligible != tt.eligible {
				t.Errorf("eligible = %v, want %v (reasons %q)", sc.Eligible, tt.eligible, sc.Reasons)
			}
			if len(sc.Reasons) != len(tt.reasons) {
				t.Fatalf("reasons = %q, want %d", sc.Reasons, len(tt.reasons))
			}
			for i, r := range tt.reasons {
				if !strings.Contains(sc.Reasons[i], r) {
					t.Errorf("reason %d = %q, want it to contain %q", i, sc.Reasons[i], r)
				}
			}
		})
	}
}

func TestScoreBaselineIsExactlyZero(t *testing.T) {
	for _, base := range []session.Metrics{
		baseline(),
		with(baseline(), session.MetricFallRate, 0, session.MetricOrientation, 0, session.MetricPower, 0),
		{session.MetricVelLinear: 0.123, session.MetricVelAngular: 7, session.MetricActionAcc: 1e6,
			session.MetricOrientation: 1e-9, session.MetricFallRate: 1, session.MetricFootSlip: 0.3, session.MetricPower: 3.3},
	} {
		sc, err := scorer(base).Score(base)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Total != 0 || !sc.Eligible || len(sc.Reasons) != 0 {
			t.Errorf("baseline %v scores %+v, want exactly 0 and eligible", base, sc)
		}
		for k, v := range sc.Objectives {
			if v != 0 {
				t.Errorf("objective %s = %g", k, v)
			}
		}
	}
}

func TestScoreObjectiveWeights(t *testing.T) {
	b := baseline()
	// tracking 0.4 (linear 0.2 → 0.1), energy -1 (power tripled), the rest unchanged
	cur := with(b, session.MetricVelLinear, 0.1, session.MetricPower, 450)
	tests := []struct {
		name    string
		weights session.ObjectiveWeights
		total   float64
	}{
		{"default", session.DefaultObjectiveWeights(), (0.4*35 - 5) / 100},
		{"tracking only", session.ObjectiveWeights{session.ObjTracking: 1}, 0.4},
		{"zero weights are ignored", session.ObjectiveWeights{session.ObjTracking: 2, session.ObjEnergy: 0, session.ObjSlip: 0}, 0.4},
		{"energy only", session.ObjectiveWeights{session.ObjEnergy: 7}, -1},
		{"3 to 1", session.ObjectiveWeights{session.ObjTracking: 3, session.ObjEnergy: 1}, (3*0.4 - 1) / 4},
		{"unchanged objectives dilute", session.ObjectiveWeights{session.ObjTracking: 1, session.ObjStability: 1}, 0.2},
	}
	for _, tt := range tests {
		s := session.Scorer{Baseline: b, Weights: tt.weights, Floors: session.DefaultFloors()}
		sc, err := s.Score(cur)
		if err != nil {
			t.Fatal(err)
		}
		if !near(sc.Total, tt.total) {
			t.Errorf("%s: total = %.15g, want %.15g", tt.name, sc.Total, tt.total)
		}
	}
}

func TestScoreRefusesBadMetrics(t *testing.T) {
	b := baseline()
	drop := func(m session.Metrics, k string) session.Metrics { m = with(m); delete(m, k); return m }
	tests := []struct {
		name      string
		base, cur session.Metrics
		want      []string
	}{
		{"missing metric", b, drop(b, session.MetricFallRate), []string{"metrics.fall_rate: missing"}},
		{"NaN metric", b, with(b, session.MetricFootSlip, math.NaN()), []string{"metrics.foot_slip: NaN is not finite"}},
		{"+Inf metric", b, with(b, session.MetricPower, math.Inf(1)), []string{"metrics.mechanical_power: +Inf is not finite"}},
		{"negative metric", b, with(b, session.MetricActionAcc, -1), []string{"metrics.action_acceleration: -1 is negative"}},
		{"nil metrics", b, nil, []string{"metrics: missing"}},
		{"bad baseline", drop(b, session.MetricOrientation), b, []string{"baseline.orientation_error: missing"}},
		{"several", with(drop(b, session.MetricVelAngular), session.MetricPower, math.NaN()), with(drop(b, session.MetricVelLinear), session.MetricFallRate, -0.1),
			[]string{"baseline.velocity_error_angular: missing", "baseline.mechanical_power: NaN", "metrics.velocity_error_linear: missing", "metrics.fall_rate: -0.1 is negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := scorer(tt.base).Score(tt.cur)
			wantProblems(t, err, tt.want...)
			if !strings.HasPrefix(err.Error(), "cannot score: ") {
				t.Errorf("error %q", err)
			}
			if sc.Eligible || sc.Total != 0 {
				t.Errorf("a failed score is %+v", sc)
			}
		})
	}
}

func TestObjectiveWeightsCheck(t *testing.T) {
	tests := []struct {
		name string
		w    session.ObjectiveWeights
		want []string
	}{
		{"default", session.DefaultObjectiveWeights(), nil},
		{"one objective", session.ObjectiveWeights{session.ObjSlip: 0.1}, nil},
		{"some zero", session.ObjectiveWeights{session.ObjTracking: 1, session.ObjEnergy: 0}, nil},
		{"unknown", session.ObjectiveWeights{session.ObjTracking: 1, "speed": 3}, []string{`objective "speed" is unknown (one of tracking, smoothness, stability, falls, slip, energy)`}},
		{"negative", session.ObjectiveWeights{session.ObjTracking: 1, session.ObjEnergy: -1}, []string{"objective energy: weight -1 must be a non-negative number"}},
		{"NaN", session.ObjectiveWeights{session.ObjTracking: math.NaN()}, []string{"objective tracking: weight NaN"}},
		{"Inf", session.ObjectiveWeights{session.ObjTracking: math.Inf(1)}, []string{"objective tracking: weight +Inf"}},
		{"all zero", session.ObjectiveWeights{session.ObjTracking: 0, session.ObjFalls: 0}, []string{"objective weights must sum to more than 0"}},
		{"empty", session.ObjectiveWeights{}, []string{"must sum to more than 0"}},
		{"several", session.ObjectiveWeights{"speed": 1, "Tracking": 1, session.ObjFalls: -2}, []string{`"speed"`, `"Tracking"`, "objective falls: weight -2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.w.Check()
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantProblems(t, err, tt.want...)
		})
	}
}

func TestCheckFloors(t *testing.T) {
	f := session.DefaultFloors
	drop := func(m session.Metrics, k string) session.Metrics { delete(m, k); return m }
	tests := []struct {
		name string
		f    session.Metrics
		want []string
	}{
		{"default", f(), nil},
		{"missing", drop(f(), session.MetricPower), []string{"floor for mechanical_power must be a positive number"}},
		{"zero", with(f(), session.MetricFallRate, 0), []string{"floor for fall_rate must be a positive number"}},
		{"negative", with(f(), session.MetricFootSlip, -0.02), []string{"floor for foot_slip"}},
		{"NaN", with(f(), session.MetricVelLinear, math.NaN()), []string{"floor for velocity_error_linear"}},
		{"unknown", with(f(), "speed", 1), []string{`floor for unknown metric "speed"`}},
		{"empty", session.Metrics{}, []string{"velocity_error_linear", "velocity_error_angular", "action_acceleration", "orientation_error", "fall_rate", "foot_slip", "mechanical_power"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := session.CheckFloors(tt.f)
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantProblems(t, err, tt.want...)
		})
	}
	want := session.Metrics{session.MetricVelLinear: 0.05, session.MetricVelAngular: 0.05, session.MetricActionAcc: 1,
		session.MetricOrientation: 0.02, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.02, session.MetricPower: 5}
	if diff := cmp.Diff(want, f()); diff != "" {
		t.Errorf("DefaultFloors differ from docs/design.md §3 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(session.ObjectiveWeights{"tracking": 35, "smoothness": 20, "stability": 15, "falls": 15, "slip": 10, "energy": 5}, session.DefaultObjectiveWeights()); diff != "" {
		t.Errorf("DefaultObjectiveWeights differ from docs/design.md §1 (-want +got):\n%s", diff)
	}
}

// designEvaluation is the example of docs/design.md §3 with its per-seed placeholder filled in.
const designEvaluation = `{"task": "Unitree-Go2-Flat", "checkpoint": "model_300.pt", "iteration": 300, "seeds": [0],
 "metrics": {"velocity_error_linear": 0.21, "velocity_error_angular": 0.30,
             "action_acceleration": 12.0, "orientation_error": 0.05, "fall_rate": 0.01,
             "foot_slip": 0.08, "mechanical_power": 150.0},
 "perSeed": [{"seed": 0, "metrics": {"velocity_error_linear": 0.21, "velocity_error_angular": 0.30,
             "action_acceleration": 12.0, "orientation_error": 0.05, "fall_rate": 0.01,
             "foot_slip": 0.08, "mechanical_power": 150.0}}]}`

func TestDecodeEvaluation(t *testing.T) {
	ev, err := session.DecodeEvaluation([]byte(designEvaluation))
	if err != nil {
		t.Fatalf("the docs/design.md example: %v", err)
	}
	m := session.Metrics{"velocity_error_linear": 0.21, "velocity_error_angular": 0.30, "action_acceleration": 12.0,
		"orientation_error": 0.05, "fall_rate": 0.01, "foot_slip": 0.08, "mechanical_power": 150.0}
	want := session.Evaluation{Task: "Unitree-Go2-Flat", Checkpoint: "model_300.pt", Iteration: 300, Seeds: []int{0},
		Metrics: m, PerSeed: []session.SeedMetrics{{Seed: 0, Metrics: m}}}
	if diff := cmp.Diff(want, ev); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}

	full := `"velocity_error_linear": 0.2, "velocity_error_angular": 0.3, "action_acceleration": 12, "orientation_error": 0.05, "fall_rate": 0.01, "foot_slip": 0.08, "mechanical_power": 150`
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"no perSeed is fine", `{"metrics": {` + full + `}}`, nil},
		{"extra metric names are kept, not refused", `{"metrics": {` + full + `, "extra_metric": 1}}`, nil},
		{"unknown field", `{"metrics": {` + full + `}, "score": 1}`, []string{`malformed: unknown field "score"`}},
		{"a long unknown field is quoted by its start", `{"metrics": {` + full + `}, "` + strings.Repeat("k", 5000) + `": 1}`, []string{`malformed: unknown field "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"… (5000 bytes)`}},
		{"more perSeed entries than seeds", `{"seeds": [0], "metrics": {` + full + `}, "perSeed": [{"seed": 0, "metrics": {` + full + `}}, {"seed": 1, "metrics": {` + full + `}}]}`,
			[]string{"perSeed has 2 entries, more than the 1 seeds"}},
		{"missing metric", `{"metrics": {"velocity_error_linear": 0.2, "velocity_error_angular": 0.3, "action_acceleration": 12, "orientation_error": 0.05, "foot_slip": 0.08, "mechanical_power": 150}}`,
			[]string{"metrics.fall_rate: missing"}},
		{"no metrics", `{"task": "Unitree-Go2-Flat"}`, []string{"metrics: missing"}},
		{"1e999", `{"metrics": {"fall_rate": 1e999}}`, []string{`malformed: "metrics" holds a number where a float64 belongs`}},
		{"string for a number", `{"metrics": {"fall_rate": "0.01"}}`, []string{"malformed: "}},
		{"negative", `{"metrics": {` + strings.Replace(full, "150", "-150", 1) + `}}`, []string{"metrics.mechanical_power: -150 is negative"}},
		{"per-seed problems name the seed", `{"seeds": [7, 2, 3], "metrics": {` + full + `}, "perSeed": [{"seed": 7, "metrics": {"fall_rate": 0}}, {"seed": 2, "metrics": {` + strings.Replace(full, "0.08", "-0.08", 1) + `}}, {"seed": 3}]}`,
			[]string{
				"perSeed[0] (seed 7).velocity_error_linear: missing", "perSeed[0] (seed 7).velocity_error_angular: missing",
				"perSeed[0] (seed 7).action_acceleration: missing", "perSeed[0] (seed 7).orientation_error: missing",
				"perSeed[0] (seed 7).foot_slip: missing", "perSeed[0] (seed 7).mechanical_power: missing",
				"perSeed[1] (seed 2).foot_slip: -0.08 is negative",
				"perSeed[2] (seed 3): missing",
			}},
		{"trailing object", `{"metrics": {` + full + `}} {}`, []string{"trailing data"}},
		{"malformed", `{"metrics": {`, []string{"malformed: "}},
		{"empty", ``, []string{"malformed: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := session.DecodeEvaluation([]byte(tt.in))
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantProblems(t, err, tt.want...)
			if !strings.HasPrefix(err.Error(), "evaluation.json: ") {
				t.Errorf("error %q", err)
			}
		})
	}
}

// TestDecodeEvaluationQuotesNoValue: what a trainer wrote as a value (a token it read, a
// megabyte of text) never reaches the message of an invalid evaluation.json, which goes to
// the trial's reason, the chat card and the log (issue 36 item 8): keys are named, values
// are not.
func TestDecodeEvaluationQuotesNoValue(t *testing.T) {
	const secret = "xoxb-1234-SECRETVALUE"
	for _, in := range []string{
		`{"metrics": {"fall_rate": "` + secret + `"}}`,
		`{"metrics": ` + secret + `}`,
		`{"task": ["` + secret + `"]}`,
		`{"seeds": "` + secret + `"}`,
		`{"metrics": {"fall_rate": ` + secret,
		`{"metrics": {"fall_rate": 1` + secret + `}}`,
	} {
		_, err := session.DecodeEvaluation([]byte(in))
		if err == nil || strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "xoxb") {
			t.Errorf("%s: %v", in, err)
		}
	}
	// A number's literal is the trainer's bytes too: 1 MB of digits, or digits that spell a
	// PIN, are not quoted (json's own message quotes them whole).
	for _, in := range []string{
		`{"metrics": {"fall_rate": 1` + strings.Repeat("9", 1<<20) + `}}`,
		`{"seeds": [31415926535897932384626433832795]}`,
		`{"iteration": 2.71828182845}`,
	} {
		_, err := session.DecodeEvaluation([]byte(in))
		if err == nil || len(err.Error()) > 200 || strings.Contains(err.Error(), "99999") || strings.Contains(err.Error(), "3141592") || strings.Contains(err.Error(), "2.718") {
			t.Errorf("%.60s…: %.300s", in, err)
		}
	}
}

// TestDecodeEvaluationKeepsFewExtraMetrics: issue 36's attack, 15,000 extra metric names in
// each metrics map, is cut to MaxExtraMetrics per map (the seven of the contract all kept),
// and Notes say what was left out, for the trial's log.
func TestDecodeEvaluationKeepsFewExtraMetrics(t *testing.T) {
	var extra strings.Builder
	for i := range 15000 {
		fmt.Fprintf(&extra, `, "extra_metric_%05d": %d`, i, i)
	}
	fmt.Fprintf(&extra, `, "%s": 1, "": 2`, strings.Repeat("n", session.MaxMetricName+1))
	full := `"velocity_error_linear": 0.2, "velocity_error_angular": 0.3, "action_acceleration": 12, "orientation_error": 0.05, "fall_rate": 0.01, "foot_slip": 0.08, "mechanical_power": 150`
	in := `{"seeds": [0], "metrics": {` + full + extra.String() + `}, "perSeed": [{"seed": 0, "metrics": {` + full + extra.String() + `}}]}`
	ev, err := session.DecodeEvaluation([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []session.Metrics{ev.Metrics, ev.PerSeed[0].Metrics} {
		if len(m) != session.NumMetrics+session.MaxExtraMetrics || m[session.MetricPower] != 150 || m["extra_metric_00000"] != 0 || m["extra_metric_00007"] != 7 {
			t.Errorf("kept %d names (power %v, extra 7 %v), want the seven and the first %d others", len(m), m[session.MetricPower], m["extra_metric_00007"], session.MaxExtraMetrics)
		}
	}
	want := []string{"evaluation.json names more metrics than the seven of the evaluation contract: kept at most 8 other names (of at most 64 bytes) per metrics map, left out 29988 names in 2 maps"}
	if diff := cmp.Diff(want, ev.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	if _, err := session.DecodeEvaluation([]byte(designEvaluation)); err != nil {
		t.Fatal(err)
	}
}

func TestMeanStd(t *testing.T) {
	tests := []struct {
		xs        []float64
		mean, std float64
	}{
		{nil, 0, 0},
		{[]float64{5}, 5, 0},
		{[]float64{1, 3}, 2, 1},
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, 2},
	}
	for _, tt := range tests {
		m, s := session.MeanStd(tt.xs)
		if !near(m, tt.mean) || !near(s, tt.std) {
			t.Errorf("MeanStd(%v) = %g, %g, want %g, %g", tt.xs, m, s, tt.mean, tt.std)
		}
	}
}

func TestSortedMetricNames(t *testing.T) {
	got := session.SortedMetricNames(session.Metrics{"zz": 1, session.MetricPower: 1, "aa": 1, session.MetricVelLinear: 1})
	want := []string{session.MetricVelLinear, session.MetricPower, "aa", "zz"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
