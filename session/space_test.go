package session_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"tunebot/session"
)

// problemList returns the problems of an *InvalidError, failing the test for any other error.
func problemList(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatal("got no error, want an *InvalidError")
	}
	var ie *session.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("got %T %v, want an *InvalidError", err, err)
	}
	return ie.Problems
}

// wantProblems checks that err names exactly len(want) problems and that each want is a
// substring of a different one of them, so a missing or an extra problem both fail.
func wantProblems(t *testing.T, err error, want ...string) {
	t.Helper()
	got := problemList(t, err)
	used := make([]bool, len(got))
	for _, w := range want {
		found := false
		for i, p := range got {
			if !used[i] && strings.Contains(p, w) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("no problem contains %q; problems:\n  %s", w, strings.Join(got, "\n  "))
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n  %s", len(got), len(want), strings.Join(got, "\n  "))
	}
}

// The table of docs/design.md §2, written out again so that a typo in DefaultSpace shows up.
var designTerms = []session.Term{
	{Name: "track_linear_velocity", Default: 1.0, Min: 0.5, Max: 3.0, Acts: []string{session.MetricVelLinear}},
	{Name: "track_angular_velocity", Default: 1.0, Min: 0.25, Max: 2.0, Acts: []string{session.MetricVelAngular}},
	{Name: "body_orientation_l2", Default: -1.0, Min: -3.0, Max: -0.1, Acts: []string{session.MetricOrientation, session.MetricFallRate}},
	{Name: "pose", Default: 1.0, Min: 0, Max: 2.5, MayBeZero: true, Acts: []string{session.MetricOrientation}},
	{Name: "body_ang_vel", Default: -0.05, Min: -0.2, Max: 0, MayBeZero: true, Acts: []string{session.MetricOrientation}},
	{Name: "angular_momentum", Default: -0.025, Min: -0.1, Max: 0, MayBeZero: true, Acts: []string{session.MetricOrientation}},
	{Name: "is_terminated", Default: -200, Min: -400, Max: -50, Acts: []string{session.MetricFallRate}},
	{Name: "joint_acc_l2", Default: -2.5e-7, Min: -2e-6, Max: 0, MayBeZero: true, Acts: []string{session.MetricActionAcc}},
	{Name: "joint_pos_limits", Default: -10, Min: -30, Max: -2, Acts: []string{session.MetricFallRate}},
	{Name: "action_rate_l2", Default: -0.05, Min: -0.2, Max: -0.005, Acts: []string{session.MetricActionAcc}},
	{Name: "foot_gait", Default: 0.5, Min: 0, Max: 1.5, MayBeZero: true, Acts: []string{session.MetricFootSlip}},
	{Name: "foot_clearance", Default: -1.0, Min: -3.0, Max: 0, MayBeZero: true, Acts: []string{session.MetricFootSlip}},
	{Name: "foot_slip", Default: -0.25, Min: -1.0, Max: 0, MayBeZero: true, Acts: []string{session.MetricFootSlip}},
	{Name: "soft_landing", Default: -1e-3, Min: -5e-3, Max: 0, MayBeZero: true, Acts: []string{session.MetricActionAcc, session.MetricPower}},
	{Name: "stand_still", Default: -1.0, Min: -3.0, Max: 0, MayBeZero: true, Acts: []string{session.MetricPower}},
	{Name: "electrical_power", Default: 0, Min: -5e-3, Max: 0, MayBeZero: true, Acts: []string{session.MetricPower}},
}

var designParams = []session.Param{
	{Name: "track_linear_velocity.std", Default: 0.5, Min: 0.25, Max: 1.0, Acts: []string{session.MetricVelLinear}},
	{Name: "track_angular_velocity.std", Default: 0.7071, Min: 0.35, Max: 1.2, Acts: []string{session.MetricVelAngular}},
	{Name: "pose.std_standing_scale", Default: 1.0, Min: 0.5, Max: 2.0, Acts: []string{session.MetricOrientation}},
	{Name: "pose.std_walking_scale", Default: 1.0, Min: 0.5, Max: 2.0, Acts: []string{session.MetricOrientation}},
	{Name: "pose.std_running_scale", Default: 1.0, Min: 0.5, Max: 2.0, Acts: []string{session.MetricOrientation}},
	{Name: "pose.walking_threshold", Default: 0.05, Min: 0.05, Max: 0.5, Acts: []string{session.MetricOrientation}},
	{Name: "pose.running_threshold", Default: 1.5, Min: 1.0, Max: 2.5, Acts: []string{session.MetricOrientation}},
	{Name: "foot_gait.period", Default: 0.6, Min: 0.4, Max: 0.8, Acts: []string{session.MetricActionAcc, session.MetricFootSlip}},
	{Name: "foot_gait.threshold", Default: 0.56, Min: 0.45, Max: 0.65, Acts: []string{session.MetricFootSlip}},
	{Name: "foot_clearance.target_height", Default: 0.10, Min: 0.06, Max: 0.16, Acts: []string{session.MetricFootSlip, session.MetricPower}},
	{Name: "foot_gait.command_threshold", Default: 0.1, Min: 0.02, Max: 0.30, Acts: []string{session.MetricFootSlip}},
	{Name: "foot_clearance.command_threshold", Default: 0.1, Min: 0.02, Max: 0.30, Acts: []string{session.MetricFootSlip}},
	{Name: "foot_slip.command_threshold", Default: 0.1, Min: 0.02, Max: 0.30, Acts: []string{session.MetricFootSlip}},
	{Name: "stand_still.command_threshold", Default: 0.1, Min: 0.02, Max: 0.30, Acts: []string{session.MetricPower}},
}

func TestDefaultSpaceIsTheDesignTable(t *testing.T) {
	s := session.DefaultSpace()
	if err := s.Check(); err != nil {
		t.Fatalf("DefaultSpace().Check() = %v", err)
	}
	if len(s.Terms) != len(designTerms) || len(s.Params) != len(designParams) {
		t.Fatalf("%d terms and %d params, want %d and %d", len(s.Terms), len(s.Params), len(designTerms), len(designParams))
	}
	for i, want := range designTerms {
		if got := s.Terms[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("term %d = %+v, want %+v", i, got, want)
		}
		if got, ok := s.Term(want.Name); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("Term(%q) = %+v, %v", want.Name, got, ok)
		}
	}
	for i, want := range designParams {
		if got := s.Params[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("param %d = %+v, want %+v", i, got, want)
		}
		if got, ok := s.Param(want.Name); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("Param(%q) = %+v, %v", want.Name, got, ok)
		}
	}
	if s.MaxChanges != 4 || s.StepMin != 0.5 || s.StepMax != 2 {
		t.Errorf("max changes %d, step %g–%g, want 4, 0.5–2", s.MaxChanges, s.StepMin, s.StepMax)
	}
	if len(s.Orders) != 1 || s.Orders[0] != (session.Order{Lower: "pose.walking_threshold", Upper: "pose.running_threshold"}) {
		t.Errorf("orders = %+v", s.Orders)
	}
	if _, ok := s.Term("foot_gait.period"); ok {
		t.Error("Term finds a param name")
	}
	if _, ok := s.Param("pose"); ok {
		t.Error("Param finds a term name")
	}
	names := s.Names()
	if len(names) != 30 || names[0] != "track_linear_velocity" || names[15] != "electrical_power" || names[16] != "track_linear_velocity.std" || names[29] != "stand_still.command_threshold" {
		t.Errorf("Names() = %v", names)
	}
}

func TestDefaultsAreAValidFullConfig(t *testing.T) {
	s := session.DefaultSpace()
	c := s.Defaults()
	if err := s.CheckConfig(c); err != nil {
		t.Fatalf("CheckConfig(Defaults()) = %v", err)
	}
	if len(c.Weights) != 16 || len(c.Params) != 14 {
		t.Fatalf("defaults have %d weights and %d params, want 16 and 14", len(c.Weights), len(c.Params))
	}
	if c.Weights["is_terminated"] != -200 || c.Weights["electrical_power"] != 0 || c.Params["track_angular_velocity.std"] != 0.7071 {
		t.Errorf("defaults = %+v", c)
	}
	// Each call gives fresh maps.
	c.Weights["pose"] = 2
	if got := s.Defaults().Weights["pose"]; got != 1 {
		t.Errorf("Defaults() shares its maps: pose = %g after changing an earlier copy", got)
	}
}

// small is a valid two-term, two-param space to break one field at a time.
func small() *session.Space {
	return &session.Space{
		Terms: []session.Term{
			{Name: "up", Default: 1, Min: 0.5, Max: 2},
			{Name: "down", Default: -1, Min: -2, Max: 0, MayBeZero: true},
		},
		Params: []session.Param{
			{Name: "lo", Default: 0.2, Min: 0.1, Max: 1},
			{Name: "hi", Default: 0.8, Min: 0.1, Max: 1},
		},
		Orders:     []session.Order{{Lower: "lo", Upper: "hi"}},
		MaxChanges: 2, StepMin: 0.5, StepMax: 2,
	}
}

func TestSpaceCheckNamesEachProblem(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		mutate func(s *session.Space)
		want   []string
	}{
		{"valid", func(s *session.Space) {}, nil},
		{"term default above max", func(s *session.Space) { s.Terms[0].Default = 5 }, []string{"term up: default 5 outside [0.5, 2]"}},
		{"term default below min", func(s *session.Space) { s.Terms[1].Default = -3 }, []string{"term down: default -3 outside [-2, 0]"}},
		{"term bounds cross zero", func(s *session.Space) { s.Terms[1].Max = 1 }, []string{"term down: bounds [-2, 1] cross zero"}},
		{"term min above max", func(s *session.Space) { s.Terms[0].Min = 3 }, []string{"term up: bounds [3, 2] are not an interval"}},
		{"term NaN bound", func(s *session.Space) { s.Terms[0].Max = nan }, []string{"term up: bounds [0.5, NaN] are not an interval"}},
		{"term infinite default", func(s *session.Space) { s.Terms[0].Default = math.Inf(1) }, []string{"term up: bounds [0.5, 2] are not an interval"}},
		{"repeated term", func(s *session.Space) { s.Terms[1].Name = "up" }, []string{`term "up": empty or repeated name`}},
		{"empty term name", func(s *session.Space) { s.Terms[0].Name = "" }, []string{`term "": empty or repeated name`}},
		{"param named like a term", func(s *session.Space) { s.Params[0].Name = "up"; s.Orders = nil }, []string{`param "up": empty or repeated name`}},
		{"repeated param", func(s *session.Space) { s.Params[1].Name = "lo"; s.Orders = nil }, []string{`param "lo": empty or repeated name`}},
		{"default 0 but may not be 0", func(s *session.Space) { s.Terms[0].Min, s.Terms[0].Default = 0, 0 }, []string{"term up: default is 0 but the term may not be 0"}},
		{"param default outside", func(s *session.Space) { s.Params[0].Default = 0.05 }, []string{"param lo: default 0.05 outside [0.1, 1]"}},
		{"param bounds reversed", func(s *session.Space) { s.Params[1].Min, s.Params[1].Max = 1, 0.1 }, []string{"param hi: bounds [1, 0.1] are not an interval"}},
		{"order names unknown param", func(s *session.Space) { s.Orders[0].Upper = "top" }, []string{"order: unknown param top"}},
		{"max changes 0", func(s *session.Space) { s.MaxChanges = 0 }, []string{"max_changes must be at least 1"}},
		{"step min 0", func(s *session.Space) { s.StepMin = 0 }, []string{"step rule 0×–2×"}},
		{"step min above 1", func(s *session.Space) { s.StepMin = 1.5 }, []string{"step rule 1.5×–2×"}},
		{"step max below 1", func(s *session.Space) { s.StepMax = 0.9 }, []string{"step rule 0.5×–0.9×"}},
		{"step max infinite", func(s *session.Space) { s.StepMax = math.Inf(1) }, []string{"step rule 0.5×–+Inf×"}},
		{"step rule 1×–1× is allowed", func(s *session.Space) { s.StepMin, s.StepMax = 1, 1 }, nil},
		{"acts on a metric that is not one", func(s *session.Space) { s.Terms[0].Acts = []string{"speed"} }, []string{`term up: acts on "speed", which is not a metric`}},
		{"acts on a metric twice", func(s *session.Space) { s.Params[0].Acts = []string{session.MetricPower, session.MetricPower} }, []string{"param lo: acts on mechanical_power twice"}},
		{"lowers neither way", func(s *session.Space) { s.Params[0].Lowers = "sideways" }, []string{`param lo: lowers "sideways" must be up, down or empty`}},
		{"several at once", func(s *session.Space) {
			s.Terms[0].Default = 5
			s.Terms[1].Max = 1
			s.Params[0].Default = 2
			s.MaxChanges = 0
			s.StepMin = 0
		}, []string{"term up: default 5", "term down: bounds [-2, 1] cross zero", "param lo: default 2", "max_changes", "step rule"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := small()
			tt.mutate(s)
			err := s.Check()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			wantProblems(t, err, tt.want...)
			if !strings.HasPrefix(err.Error(), "reward space: ") {
				t.Errorf("error %q does not say it is the reward space", err)
			}
		})
	}
}

func TestCheckConfigNamesEachProblem(t *testing.T) {
	s := session.DefaultSpace()
	tests := []struct {
		name string
		edit func(c *session.RewardConfig)
		want []string
	}{
		{"defaults", func(c *session.RewardConfig) {}, nil},
		{"every term and param at its min", func(c *session.RewardConfig) {
			for _, t := range s.Terms {
				c.Weights[t.Name] = t.Min
			}
			for _, p := range s.Params {
				c.Params[p.Name] = p.Min
			}
		}, nil},
		{"every term and param at its max", func(c *session.RewardConfig) {
			for _, t := range s.Terms {
				c.Weights[t.Name] = t.Max
			}
			for _, p := range s.Params {
				c.Params[p.Name] = p.Max
			}
		}, nil},
		{"missing term", func(c *session.RewardConfig) { delete(c.Weights, "foot_slip") }, []string{"weights.foot_slip: missing"}},
		{"missing param", func(c *session.RewardConfig) { delete(c.Params, "foot_gait.period") }, []string{"params.foot_gait.period: missing"}},
		{"unknown term with hint", func(c *session.RewardConfig) { c.Weights["foot_slp"] = -0.2 }, []string{"weights.foot_slp: unknown term (did you mean foot_slip?)"}},
		{"unknown param", func(c *session.RewardConfig) { c.Params["gravity"] = 9.8 }, []string{"params.gravity: unknown param"}},
		{"term out of bounds", func(c *session.RewardConfig) { c.Weights["is_terminated"] = -401 }, []string{"weights.is_terminated: -401 is outside its bounds [-400, -50]"}},
		{"term may not be 0", func(c *session.RewardConfig) { c.Weights["action_rate_l2"] = 0 }, []string{"weights.action_rate_l2: this term may not be 0"}},
		{"term NaN", func(c *session.RewardConfig) { c.Weights["pose"] = math.NaN() }, []string{"weights.pose: NaN is not a finite number"}},
		{"param Inf", func(c *session.RewardConfig) { c.Params["foot_gait.period"] = math.Inf(-1) }, []string{"params.foot_gait.period: -Inf is not a finite number"}},
		{"param out of bounds", func(c *session.RewardConfig) { c.Params["foot_clearance.target_height"] = 0.17 }, []string{"params.foot_clearance.target_height: 0.17 is outside its bounds [0.06, 0.16]"}},
		{"several", func(c *session.RewardConfig) {
			delete(c.Weights, "pose")
			c.Weights["track_linear_velocity"] = 0
			c.Params["foot_gait.threshold"] = 0.7
			c.Params["bogus"] = 1
		}, []string{"weights.pose: missing", "weights.track_linear_velocity: this term may not be 0", "params.foot_gait.threshold: 0.7", "params.bogus: unknown param"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := s.Defaults()
			tt.edit(&c)
			err := s.CheckConfig(c)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("CheckConfig = %v, want nil", err)
				}
				return
			}
			wantProblems(t, err, tt.want...)
		})
	}
}

func TestCheckConfigOrderedThresholds(t *testing.T) {
	s := small()
	tests := []struct {
		lo, hi float64
		ok     bool
	}{{0.2, 0.8, true}, {0.5, 0.5, false}, {0.9, 0.3, false}, {0.79, 0.8, true}}
	for _, tt := range tests {
		c := s.Defaults()
		c.Params["lo"], c.Params["hi"] = tt.lo, tt.hi
		err := s.CheckConfig(c)
		if tt.ok {
			if err != nil {
				t.Errorf("lo %g hi %g: %v", tt.lo, tt.hi, err)
			}
			continue
		}
		wantProblems(t, err, "params.lo")
		if !strings.Contains(err.Error(), "must stay below params.hi") {
			t.Errorf("lo %g hi %g: %v does not name the order", tt.lo, tt.hi, err)
		}
	}
}
