package session_test

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
)

// w and p build patches tersely: w("pose", 2, "foot_slip", 0) names weights only.
func w(kv ...any) session.Patch { return build(kv, nil) }
func p(kv ...any) session.Patch { return build(nil, kv) }
func wp(weights, params []any) session.Patch {
	return build(weights, params)
}

func build(weights, params []any) session.Patch {
	out := session.Patch{Weights: map[string]float64{}, Params: map[string]float64{}}
	fill := func(m map[string]float64, kv []any) {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = toFloat(kv[i+1])
		}
	}
	fill(out.Weights, weights)
	fill(out.Params, params)
	return out
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	panic("not a number")
}

func TestValidateRules(t *testing.T) {
	s := session.DefaultSpace()
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name  string
		patch session.Patch
		want  []string // nil: accepted
	}{
		// at most 4 and at least 1 scalar
		{"one change", w("pose", 2), nil},
		{"exactly 4 changes", wp([]any{"pose", 2, "foot_gait", 1}, []any{"foot_gait.period", 0.7, "stand_still.command_threshold", 0.2}), nil},
		{"5 changes", wp([]any{"pose", 2, "foot_gait", 1, "foot_slip", -0.5}, []any{"foot_gait.period", 0.7, "stand_still.command_threshold", 0.2}),
			[]string{"5 changes: at most 4 scalars may change per proposal"}},
		{"5 changes all weights", w("pose", 2, "foot_gait", 1, "foot_slip", -0.5, "stand_still", -2, "soft_landing", -2e-3),
			[]string{"5 changes"}},
		{"empty patch", session.Patch{}, []string{"empty patch: at least 1 scalar must change"}},
		{"empty maps", w(), []string{"empty patch"}},
		{"patch equal to base", w("pose", 1, "foot_slip", -0.25), []string{"the patch changes nothing"}},
		{"param equal to base", p("foot_gait.period", 0.6), []string{"the patch changes nothing"}},
		{"equal up to float noise", w("pose", 1+1e-12), []string{"the patch changes nothing"}},
		{"one of two unchanged is fine", w("pose", 1, "foot_slip", -0.5), nil},
		// Changes are counted after merging: a value equal to the base is no change.
		{"4 changes and one equal to the base", wp([]any{"pose", 2, "foot_gait", 1, "body_ang_vel", -0.05}, []any{"foot_gait.period", 0.7, "stand_still.command_threshold", 0.2}), nil},
		{"5 changes and one equal to the base", wp([]any{"pose", 2, "foot_gait", 1, "foot_slip", -0.5, "body_ang_vel", -0.05}, []any{"foot_gait.period", 0.7, "stand_still.command_threshold", 0.2}),
			[]string{"5 changes: at most 4 scalars may change per proposal"}},

		// names only from the tables
		{"misspelt term", w("foot_slp", -0.5), []string{"weights.foot_slp: unknown term (did you mean foot_slip?)"}},
		{"transposed letters", w("psoe", 1.5), []string{"weights.psoe: unknown term (did you mean pose?)"}},
		{"unrelated term", w("banana", 1), []string{"weights.banana: unknown term"}},
		{"misspelt param", p("foot_gait.perod", 0.7), []string{"params.foot_gait.perod: unknown param (did you mean foot_gait.period?)"}},
		{"unrelated param", p("gravity", 9.81), []string{"params.gravity: unknown param"}},
		{"hidden name: termination angle", p("bad_orientation.limit_angle", 1.2), []string{"params.bad_orientation.limit_angle: unknown param"}},
		// The hint names the very name typed, which at least points at the param table.
		{"param under weights", w("foot_gait.period", 0.7), []string{"weights.foot_gait.period: is a param, not a reward term"}},

		// finite numbers
		{"NaN weight", w("pose", nan), []string{"weights.pose: NaN is not a finite number"}},
		{"+Inf weight", w("foot_slip", inf), []string{"weights.foot_slip: +Inf is not a finite number"}},
		{"-Inf param", p("foot_gait.period", math.Inf(-1)), []string{"params.foot_gait.period: -Inf is not a finite number"}},

		// sign and step
		{"sign flip negative to positive", w("body_orientation_l2", 0.5),
			[]string{"weights.body_orientation_l2: sign flip from -1 to 0.5", "weights.body_orientation_l2: 0.5 is outside its bounds [-3, -0.1]"}},
		{"sign flip positive to negative", w("pose", -1),
			[]string{"weights.pose: sign flip from 1 to -1", "weights.pose: -1 is outside its bounds [0, 2.5]"}},
		{"step 2.01x", w("pose", 2.01), []string{"weights.pose: 1 → 2.01 is a step of 2.01×; one proposal may move a weight only 0.5×–2×"}},
		{"step 0.49x", w("pose", 0.49), []string{"weights.pose: 1 → 0.49 is a step of 0.49×"}},
		{"negative step 2.01x", w("foot_clearance", -2.01), []string{"weights.foot_clearance: -1 → -2.01 is a step of 2.01×"}},
		{"negative step 0.49x", w("foot_clearance", -0.49), []string{"weights.foot_clearance: -1 → -0.49 is a step of 0.49×"}},
		{"step exactly 2x", w("pose", 2), nil},
		{"step exactly 0.5x", w("pose", 0.5), nil},
		{"negative step exactly 2x", w("is_terminated", -400), nil},
		{"negative step exactly 0.5x", w("is_terminated", -100), nil},
		{"tiny weight exactly 2x", w("joint_acc_l2", -5e-7), nil},
		{"step and bounds both broken", w("track_linear_velocity", 3.5),
			[]string{"weights.track_linear_velocity: 3.5 is outside its bounds [0.5, 3]", "step of 3.5×"}},

		// zero
		{"may-be-zero term switched off", w("pose", 0), nil},
		{"another may-be-zero term switched off", w("foot_slip", 0), nil},
		{"may-not-be-zero term to 0", w("track_linear_velocity", 0), []string{"weights.track_linear_velocity: this term may not be 0"}},
		{"negative may-not-be-zero term to 0", w("is_terminated", 0), []string{"weights.is_terminated: this term may not be 0"}},

		// a term that is off has no step rule, only bounds and so its sign
		{"electrical_power on at the bound", w("electrical_power", -5e-3), nil},
		{"electrical_power on, tiny", w("electrical_power", -1e-7), nil},
		{"electrical_power on with the wrong sign", w("electrical_power", 1e-3), []string{"weights.electrical_power: 0.001 is outside its bounds [-0.005, 0]"}},
		{"electrical_power on past the bound", w("electrical_power", -6e-3), []string{"weights.electrical_power: -0.006 is outside its bounds [-0.005, 0]"}},

		// params: bounds only, no step rule
		{"param above max", p("track_linear_velocity.std", 1.01), []string{"params.track_linear_velocity.std: 1.01 is outside its bounds [0.25, 1]"}},
		{"param below min", p("foot_gait.period", 0.39), []string{"params.foot_gait.period: 0.39 is outside its bounds [0.4, 0.8]"}},
		{"param more than 2x is not a step problem", p("track_linear_velocity.std", 0.25, "pose.walking_threshold", 0.5), nil},

		// all at once
		{"every problem named", wp([]any{"foot_slp", -0.5, "pose", nan, "body_orientation_l2", 0.5, "track_linear_velocity", 0}, []any{"foot_gait.period", 0.9}),
			[]string{"5 changes", "weights.foot_slp: unknown term (did you mean foot_slip?)", "weights.pose: NaN", "sign flip from -1 to 0.5", "weights.body_orientation_l2: 0.5 is outside", "weights.track_linear_velocity: this term may not be 0", "params.foot_gait.period: 0.9 is outside"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := s.Defaults()
			merged, err := s.Validate(base, tt.patch, nil)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want accepted", err)
				}
				if want := session.Merge(s.Defaults(), tt.patch); !merged.Equal(want) {
					t.Errorf("merged = %+v, want %+v", merged, want)
				}
				if err := s.CheckConfig(merged); err != nil {
					t.Errorf("merged config fails CheckConfig: %v", err)
				}
				return
			}
			wantProblems(t, err, tt.want...)
			if !strings.HasPrefix(err.Error(), "patch refused: ") {
				t.Errorf("error %q does not start with 'patch refused: '", err)
			}
			if merged.Weights != nil || merged.Params != nil {
				t.Errorf("a refused patch returned a config: %+v", merged)
			}
			if strings.HasPrefix(tt.name, "unrelated") && strings.Contains(err.Error(), "did you mean") {
				t.Errorf("an unrelated name got a hint: %v", err)
			}
		})
	}
}

// overlappingThresholds is the default space with the pose thresholds' bounds overlapping
// (walking up to 2, running from 0.5), so that their order can break.
func overlappingThresholds() *session.Space {
	s := session.DefaultSpace()
	for i := range s.Params {
		switch s.Params[i].Name {
		case "pose.walking_threshold":
			s.Params[i].Max = 2.0
		case "pose.running_threshold":
			s.Params[i].Min = 0.5
		}
	}
	return s
}

// With the default bounds the thresholds cannot cross (walking ≤ 0.5 < 1.0 ≤ running), so a
// space with overlapping bounds is needed to see the order rule work.
func TestValidateOrderedThresholds(t *testing.T) {
	s := overlappingThresholds()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		base  map[string]float64 // param overrides of the base
		patch session.Patch
		want  string // "" accepted
	}{
		{"walking raised below running", nil, p("pose.walking_threshold", 1.4), ""},
		{"walking raised to running", nil, p("pose.walking_threshold", 1.5), "params.pose.walking_threshold (1.5) must stay below params.pose.running_threshold (1.5)"},
		{"walking raised past running", nil, p("pose.walking_threshold", 1.6), "params.pose.walking_threshold (1.6) must stay below params.pose.running_threshold (1.5)"},
		{"running lowered under walking", map[string]float64{"pose.walking_threshold": 1.2}, p("pose.running_threshold", 1.1), "params.pose.walking_threshold (1.2) must stay below params.pose.running_threshold (1.1)"},
		{"both moved, crossing", nil, p("pose.walking_threshold", 1.0, "pose.running_threshold", 0.9), "(1) must stay below params.pose.running_threshold (0.9)"},
		{"both moved, still ordered", nil, p("pose.walking_threshold", 1.0, "pose.running_threshold", 1.01), ""},
		{"neither moved", map[string]float64{"pose.walking_threshold": 1.2}, p("foot_gait.period", 0.7), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := s.Defaults()
			for k, v := range tt.base {
				base.Params[k] = v
			}
			_, err := s.Validate(base, tt.patch, nil)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			wantProblems(t, err, tt.want)
		})
	}
}

func TestValidateDuplicates(t *testing.T) {
	s := session.DefaultSpace()
	defaults := s.Defaults()
	trial3 := session.Merge(defaults, w("pose", 1.5))
	rejected := session.Merge(defaults, w("foot_slip", -0.5))
	tried := []session.Tried{{Label: "trial 1", Config: defaults}, {Label: "trial 3", Config: trial3},
		{Label: "proposal 2", Config: rejected, Rejected: true}}
	tests := []struct {
		name  string
		base  session.RewardConfig
		patch session.Patch
		want  []string
	}{
		{"same as trial 3", defaults, w("pose", 1.5), []string{"duplicate: the merged configuration equals trial 3, already tried in this session"}},
		{"same as trial 3 up to 1e-12", defaults, w("pose", 1.5*(1+1e-12)), []string{"duplicate: the merged configuration equals trial 3"}},
		{"back to the baseline", trial3, w("pose", 1), []string{"equals trial 1"}},
		{"same as a rejected proposal", defaults, w("foot_slip", -0.5), []string{"duplicate: the merged configuration equals proposal 2, rejected earlier in this session"}},
		{"rounded onto trial 3", defaults, w("pose", 1.5*(1+1e-6)), []string{"duplicate: the merged configuration equals trial 3"}},
		{"1e-3 away is new", defaults, w("pose", 1.5*(1+1e-3)), nil},
		{"new", defaults, w("pose", 2), nil},
		// A patch with another problem is refused for it; the duplicate check would only add noise.
		{"duplicate and bad", defaults, w("pose", 1.5, "banana", 1), []string{"weights.banana: unknown term"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Validate(tt.base, tt.patch, tried)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			wantProblems(t, err, tt.want...)
		})
	}
}

func TestValidateNeverAliasesItsInputs(t *testing.T) {
	s := session.DefaultSpace()
	base := s.Defaults()
	patch := w("pose", 2)
	merged, err := s.Validate(base, patch, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !base.Equal(s.Defaults()) {
		t.Fatalf("Validate changed its base: pose = %g", base.Weights["pose"])
	}
	merged.Weights["foot_slip"] = -0.9
	merged.Params["foot_gait.period"] = 0.41
	patch.Weights["pose"] = 0.7
	if !base.Equal(s.Defaults()) {
		t.Errorf("the merged config shares maps with the base: %+v", base)
	}
	if merged.Weights["pose"] != 2 {
		t.Errorf("the merged config shares maps with the patch: pose = %g", merged.Weights["pose"])
	}
}

// The step rule and the bounds are separate rules: a 2× step from a base near a bound can
// still leave the bounds.
func TestValidateStepWithinRuleButOutOfBounds(t *testing.T) {
	s := session.DefaultSpace()
	base := session.Merge(s.Defaults(), w("track_linear_velocity", 2, "is_terminated", -300))
	_, err := s.Validate(base, w("track_linear_velocity", 4, "is_terminated", -600), nil)
	wantProblems(t, err,
		"weights.track_linear_velocity: 4 is outside its bounds [0.5, 3]",
		"weights.is_terminated: -600 is outside its bounds [-400, -50]")
}

// A term missing from a partial base is taken at its default for the step and sign rules.
func TestValidatePartialBaseUsesDefaults(t *testing.T) {
	s := session.DefaultSpace()
	base := session.RewardConfig{Weights: map[string]float64{}, Params: map[string]float64{}}
	if _, err := s.Validate(base, w("pose", 2), nil); err != nil {
		t.Errorf("pose 1 → 2 on a partial base: %v", err)
	}
	_, err := s.Validate(base, w("pose", 2.5), nil)
	wantProblems(t, err, "1 → 2.5 is a step of 2.5×")
}

func TestMergeDoesNotMutate(t *testing.T) {
	base := session.RewardConfig{Weights: map[string]float64{"a": 1, "b": 2}, Params: map[string]float64{"x": 0.5}}
	patch := session.Patch{Weights: map[string]float64{"b": 3}, Params: map[string]float64{"y": 0.1}}
	got := session.Merge(base, patch)
	want := session.RewardConfig{Weights: map[string]float64{"a": 1, "b": 3}, Params: map[string]float64{"x": 0.5, "y": 0.1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Merge (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(session.RewardConfig{Weights: map[string]float64{"a": 1, "b": 2}, Params: map[string]float64{"x": 0.5}}, base); diff != "" {
		t.Errorf("Merge changed its base (-want +got):\n%s", diff)
	}
	got.Weights["a"] = 9
	if base.Weights["a"] != 1 {
		t.Error("Merge's result shares the base's weights map")
	}
	// A nil patch is an empty patch.
	if got := session.Merge(base, session.Patch{}); !got.Equal(base) {
		t.Errorf("Merge(base, empty) = %+v", got)
	}
}

func TestEqual(t *testing.T) {
	a := session.RewardConfig{Weights: map[string]float64{"a": 1}, Params: map[string]float64{"x": 0.5}}
	tests := []struct {
		name string
		b    session.RewardConfig
		want bool
	}{
		{"same", a.Clone(), true},
		{"relative noise 1e-12", session.RewardConfig{Weights: map[string]float64{"a": 1 + 1e-12}, Params: map[string]float64{"x": 0.5}}, true},
		{"relative difference 1e-6", session.RewardConfig{Weights: map[string]float64{"a": 1 + 1e-6}, Params: map[string]float64{"x": 0.5}}, false},
		{"extra name", session.RewardConfig{Weights: map[string]float64{"a": 1, "b": 0}, Params: map[string]float64{"x": 0.5}}, false},
		{"name moved to params", session.RewardConfig{Weights: map[string]float64{}, Params: map[string]float64{"x": 0.5, "a": 1}}, false},
		{"other name same count", session.RewardConfig{Weights: map[string]float64{"b": 1}, Params: map[string]float64{"x": 0.5}}, false},
	}
	for _, tt := range tests {
		if got := a.Equal(tt.b); got != tt.want {
			t.Errorf("%s: Equal = %v, want %v", tt.name, got, tt.want)
		}
		if got := tt.b.Equal(a); got != tt.want {
			t.Errorf("%s: Equal is not symmetric", tt.name)
		}
	}
}

func TestDecodePatch(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want session.Patch // when ok
		errs []string      // nil: decodes
	}{
		{"weights and params", `{"weights": {"pose": 1.5, "foot_slip": -0.5}, "params": {"foot_gait.period": 0.7}}`,
			build([]any{"pose", 1.5, "foot_slip", -0.5}, []any{"foot_gait.period", 0.7}), nil},
		{"weights only", `{"weights": {"pose": 2}}`, w("pose", 2), nil},
		{"exponent and negative zero", `{"weights": {"joint_acc_l2": -5E-7, "pose": -0}}`, w("joint_acc_l2", -5e-7, "pose", 0), nil},
		{"empty object", `{}`, w(), nil},
		{"empty inner objects", `{"weights": {}, "params": {}}`, w(), nil},
		{"surrounding whitespace", " \n{\"params\": {\"foot_gait.period\": 0.5}}\n\t", p("foot_gait.period", 0.5), nil},

		{"empty input", ``, session.Patch{}, []string{"malformed JSON"}},
		{"truncated", `{"weights": {"pose": 1.5`, session.Patch{}, []string{"malformed JSON"}},
		{"single quotes", `{'weights': {}}`, session.Patch{}, []string{"malformed JSON"}},
		{"trailing comma", `{"weights": {"pose": 1.5,}}`, session.Patch{}, []string{"malformed JSON"}},
		{"trailing object", `{"weights": {"pose": 1.5}} {"params": {}}`, session.Patch{}, []string{"trailing data after the JSON value"}},
		{"trailing word", `{"weights": {"pose": 1.5}} x`, session.Patch{}, []string{"trailing data after the JSON value"}},
		{"top-level null", `null`, session.Patch{}, []string{`must be a JSON object {"weights": {...}, "params": {...}}`}},
		{"top-level array", `[{"weights": {}}]`, session.Patch{}, []string{"malformed JSON"}},
		{"top-level number", `3`, session.Patch{}, []string{"malformed JSON"}},
		{"NaN token", `{"weights": {"pose": NaN}}`, session.Patch{}, []string{"NaN and Infinity are not JSON numbers"}},
		{"Infinity token", `{"weights": {"pose": Infinity}}`, session.Patch{}, []string{"NaN and Infinity are not JSON numbers"}},
		{"-Infinity token", `{"params": {"foot_gait.period": -Infinity}}`, session.Patch{}, []string{"NaN and Infinity are not JSON numbers"}},

		{"string for a number", `{"weights": {"pose": "1.5"}}`, session.Patch{}, []string{`weights.pose: must be a number, got the string "1.5"`}},
		{"null for a number", `{"weights": {"pose": null}}`, session.Patch{}, []string{"weights.pose: must be a number, got null"}},
		{"true for a number", `{"params": {"foot_gait.period": true}}`, session.Patch{}, []string{"params.foot_gait.period: must be a number, got true"}},
		{"false for a number", `{"params": {"foot_gait.period": false}}`, session.Patch{}, []string{"params.foot_gait.period: must be a number, got false"}},
		{"array for a number", `{"weights": {"pose": [1.5]}}`, session.Patch{}, []string{"weights.pose: must be a number, got an array"}},
		{"object for a number", `{"weights": {"pose": {"value": 1.5}}}`, session.Patch{}, []string{"weights.pose: must be a number, got an object"}},
		{"1e999", `{"weights": {"pose": 1e999}}`, session.Patch{}, []string{"weights.pose: must be a finite number, got 1e999"}},
		{"-1e999", `{"params": {"foot_gait.period": -1e999}}`, session.Patch{}, []string{"params.foot_gait.period: must be a finite number, got -1e999"}},
		{"long string truncated", `{"weights": {"pose": "` + strings.Repeat("x", 100) + `"}}`, session.Patch{}, []string{`weights.pose: must be a number, got the string "` + strings.Repeat("x", 39) + "…"}},

		{"unknown top-level field", `{"weights": {"pose": 1.5}, "rationale": "x"}`, session.Patch{}, []string{`unknown field "rationale" (only "weights" and "params")`}},
		{"singular field name", `{"weight": {"pose": 1.5}}`, session.Patch{}, []string{`unknown field "weight"`}},
		{"weights null is an empty section", `{"weights": null, "params": {"pose.walking_threshold": 0.1}}`, session.Patch{Weights: map[string]float64{}, Params: map[string]float64{"pose.walking_threshold": 0.1}}, nil},
		{"weights array", `{"weights": [1.5]}`, session.Patch{}, []string{"weights: must be an object of name: number"}},
		{"params number", `{"params": 0.5}`, session.Patch{}, []string{"params: must be an object of name: number"}},

		{"every problem at once", `{"weights": {"pose": "x", "foot_slip": null, "foot_gait": 1e999, "stand_still": -1}, "params": {"foot_gait.period": true}, "extra": 1, "more": {}}`,
			session.Patch{}, []string{"weights.pose: must be a number", "weights.foot_slip: must be a number, got null", "weights.foot_gait: must be a finite number", "params.foot_gait.period: must be a number, got true", `unknown field "extra"`, `unknown field "more"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, dec := range []struct {
				what string
				fn   func([]byte) (session.RewardConfig, error)
			}{{"patch", session.DecodePatch}, {"reward configuration", session.DecodeConfig}} {
				got, err := dec.fn([]byte(tt.in))
				if tt.errs == nil {
					if err != nil {
						t.Fatalf("%s: %v", dec.what, err)
					}
					if diff := cmp.Diff(tt.want, got); diff != "" {
						t.Errorf("%s (-want +got):\n%s", dec.what, diff)
					}
					continue
				}
				wantProblems(t, err, tt.errs...)
				if !strings.HasPrefix(err.Error(), dec.what+": ") {
					t.Errorf("error %q does not start with %q", err, dec.what+": ")
				}
			}
		})
	}
}

func TestDiffAndPatchOf(t *testing.T) {
	s := session.DefaultSpace()
	a := s.Defaults()
	tests := []struct {
		name string
		b    session.RewardConfig
		want []session.Change
	}{
		{"same", a.Clone(), nil},
		{"float noise is no change", session.Merge(a, w("pose", 1+1e-12)), nil},
		// table order, not alphabetical: pose comes before foot_slip in §2
		{"weights in table order then params", session.Merge(a, build([]any{"foot_slip", -0.5, "pose", 2}, []any{"foot_gait.period", 0.7})),
			[]session.Change{
				{Kind: "weight", Name: "pose", Old: 1, New: 2},
				{Kind: "weight", Name: "foot_slip", Old: -0.25, New: -0.5},
				{Kind: "param", Name: "foot_gait.period", Old: 0.6, New: 0.7},
			}},
		{"term switched on", session.Merge(a, w("electrical_power", -1e-3)),
			[]session.Change{{Kind: "weight", Name: "electrical_power", Old: 0, New: -1e-3}}},
		{"names the space does not know, sorted, after the known", session.Merge(a, build([]any{"zeta", 1, "alpha", 2, "pose", 0.5}, []any{"zz", 3})),
			[]session.Change{
				{Kind: "weight", Name: "pose", Old: 1, New: 0.5},
				{Kind: "weight", Name: "alpha", Old: 0, New: 2},
				{Kind: "weight", Name: "zeta", Old: 0, New: 1},
				{Kind: "param", Name: "zz", Old: 0, New: 3},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.Diff(a, tt.b)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("Diff (-want +got):\n%s", diff)
			}
			if back := session.Merge(a, session.PatchOf(got)); !back.Equal(tt.b) {
				t.Errorf("Merge(a, PatchOf(Diff(a, b))) = %+v, want b", back)
			}
			if rev := s.Diff(tt.b, a); len(rev) != len(got) {
				t.Errorf("Diff(b, a) has %d changes, Diff(a, b) %d", len(rev), len(got))
			}
		})
	}
}

func TestPatchOfSplitsWeightsAndParams(t *testing.T) {
	got := session.PatchOf([]session.Change{
		{Kind: "weight", Name: "pose", Old: 1, New: 2},
		{Kind: "param", Name: "foot_gait.period", Old: 0.6, New: 0.7},
	})
	if diff := cmp.Diff(build([]any{"pose", 2}, []any{"foot_gait.period", 0.7}), got); diff != "" {
		t.Errorf("PatchOf (-want +got):\n%s", diff)
	}
	if got := session.PatchOf(nil); got.Len() != 0 || got.Weights == nil || got.Params == nil {
		t.Errorf("PatchOf(nil) = %+v, want empty non-nil maps", got)
	}
}

func TestChangeFactor(t *testing.T) {
	tests := []struct {
		old, new, want float64
	}{
		{1, 2, 2},
		{1, 0.5, 0.5},
		{-1, -2, 2},
		{-200, -100, 0.5},
		{0, -1e-3, 0}, // switched on: no factor
		{-0.25, 0, 0}, // switched off
	}
	for _, tt := range tests {
		if got := (session.Change{Old: tt.old, New: tt.new}).Factor(); got != tt.want {
			t.Errorf("Factor(%g → %g) = %g, want %g", tt.old, tt.new, got, tt.want)
		}
	}
}

// WithoutUnchanged keeps what Validate counts as a change: on a partial base a name it lacks
// is at its default, so an edit naming that default leaves it as it was, as one naming the
// base's own value does.
func TestWithoutUnchangedOnAPartialBase(t *testing.T) {
	s := session.DefaultSpace()
	d := s.Defaults()
	base := session.RewardConfig{Weights: map[string]float64{"foot_slip": -0.3}, Params: map[string]float64{}}
	edit := wp([]any{"pose", 2, "foot_slip", -0.3, "body_ang_vel", d.Weights["body_ang_vel"]}, []any{"foot_gait.period", d.Params["foot_gait.period"]})
	got, same := s.WithoutUnchanged(base, edit)
	if diff := cmp.Diff(w("pose", 2), got); diff != "" {
		t.Errorf("the patch that runs (-want +got):\n%s", diff)
	}
	var names []string
	for _, c := range same {
		names = append(names, c.Label())
	}
	if want := []string{"body_ang_vel", "foot_slip", "params.foot_gait.period"}; !cmp.Equal(names, want) {
		t.Errorf("left as they were: %v, want %v", names, want)
	}
	if _, err := s.Validate(base, edit, nil); err != nil {
		t.Errorf("Validate counts one change: %v", err)
	}
}
