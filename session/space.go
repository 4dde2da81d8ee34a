package session

import (
	"fmt"
	"math"
	"sort"
)

// Term is one reward term of the space: its default weight, absolute bounds and whether the
// term may be switched off (weight 0).
type Term struct {
	Name      string  `json:"name" yaml:"name"`
	Default   float64 `json:"default" yaml:"default"`
	Min       float64 `json:"min" yaml:"min"`
	Max       float64 `json:"max" yaml:"max"`
	MayBeZero bool    `json:"may_be_zero" yaml:"may_be_zero"`
}

// Param is one scalar parameter of a reward term (a kernel width, a threshold).
type Param struct {
	Name    string  `json:"name" yaml:"name"`
	Default float64 `json:"default" yaml:"default"`
	Min     float64 `json:"min" yaml:"min"`
	Max     float64 `json:"max" yaml:"max"`
}

// Order says that param Lower must stay strictly below param Upper.
type Order struct {
	Lower string `json:"lower" yaml:"lower"`
	Upper string `json:"upper" yaml:"upper"`
}

// Space is the whitelist a patch is checked against (docs/design.md §2). It is data, so that a
// task version with other defaults or bounds is a config change, not a code change.
type Space struct {
	Terms      []Term  `json:"terms" yaml:"terms"`
	Params     []Param `json:"params" yaml:"params"`
	Orders     []Order `json:"orders" yaml:"orders"`
	MaxChanges int     `json:"max_changes" yaml:"max_changes"`
	// StepMin and StepMax bound the factor new/old of a non-zero weight per proposal.
	StepMin float64 `json:"step_min" yaml:"step_min"`
	StepMax float64 `json:"step_max" yaml:"step_max"`
}

// DefaultSpace returns the Unitree-Go2-Flat space of docs/design.md §2.
func DefaultSpace() *Space {
	return &Space{
		Terms: []Term{
			{"track_linear_velocity", 1.0, 0.5, 3.0, false},
			{"track_angular_velocity", 1.0, 0.25, 2.0, false},
			{"body_orientation_l2", -1.0, -3.0, -0.1, false},
			{"pose", 1.0, 0, 2.5, true},
			{"body_ang_vel", -0.05, -0.2, 0, true},
			{"angular_momentum", -0.025, -0.1, 0, true},
			{"is_terminated", -200, -400, -50, false},
			{"joint_acc_l2", -2.5e-7, -2e-6, 0, true},
			{"joint_pos_limits", -10, -30, -2, false},
			{"action_rate_l2", -0.05, -0.2, -0.005, false},
			{"foot_gait", 0.5, 0, 1.5, true},
			{"foot_clearance", -1.0, -3.0, 0, true},
			{"foot_slip", -0.25, -1.0, 0, true},
			{"soft_landing", -1e-3, -5e-3, 0, true},
			{"stand_still", -1.0, -3.0, 0, true},
			{"electrical_power", 0, -5e-3, 0, true},
		},
		Params: []Param{
			{"track_linear_velocity.std", 0.5, 0.25, 1.0},
			{"track_angular_velocity.std", 0.7071, 0.35, 1.2},
			{"pose.std_standing_scale", 1.0, 0.5, 2.0},
			{"pose.std_walking_scale", 1.0, 0.5, 2.0},
			{"pose.std_running_scale", 1.0, 0.5, 2.0},
			{"pose.walking_threshold", 0.05, 0.05, 0.5},
			{"pose.running_threshold", 1.5, 1.0, 2.5},
			{"foot_gait.period", 0.6, 0.4, 0.8},
			{"foot_gait.threshold", 0.56, 0.45, 0.65},
			{"foot_clearance.target_height", 0.10, 0.06, 0.16},
			{"foot_gait.command_threshold", 0.1, 0.02, 0.30},
			{"foot_clearance.command_threshold", 0.1, 0.02, 0.30},
			{"foot_slip.command_threshold", 0.1, 0.02, 0.30},
			{"stand_still.command_threshold", 0.1, 0.02, 0.30},
		},
		Orders:     []Order{{Lower: "pose.walking_threshold", Upper: "pose.running_threshold"}},
		MaxChanges: 4,
		StepMin:    0.5,
		StepMax:    2.0,
	}
}

// Term returns the term named name.
func (s *Space) Term(name string) (Term, bool) {
	for _, t := range s.Terms {
		if t.Name == name {
			return t, true
		}
	}
	return Term{}, false
}

// Param returns the param named name.
func (s *Space) Param(name string) (Param, bool) {
	for _, p := range s.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// Names returns every weight and param name, weights first, in table order.
func (s *Space) Names() []string {
	out := make([]string, 0, len(s.Terms)+len(s.Params))
	for _, t := range s.Terms {
		out = append(out, t.Name)
	}
	for _, p := range s.Params {
		out = append(out, p.Name)
	}
	return out
}

// Defaults returns the full default configuration.
func (s *Space) Defaults() RewardConfig {
	c := RewardConfig{Weights: map[string]float64{}, Params: map[string]float64{}}
	for _, t := range s.Terms {
		c.Weights[t.Name] = t.Default
	}
	for _, p := range s.Params {
		c.Params[p.Name] = p.Default
	}
	return c
}

// Check validates the space itself: defaults inside bounds, unique names, sane step rule.
// A space loaded from a config file goes through it before anything uses it.
func (s *Space) Check() error {
	var probs []string
	seen := map[string]bool{}
	for _, t := range s.Terms {
		if t.Name == "" || seen[t.Name] {
			probs = append(probs, fmt.Sprintf("term %q: empty or repeated name", t.Name))
		}
		seen[t.Name] = true
		if !finite(t.Min, t.Max, t.Default) || t.Min > t.Max {
			probs = append(probs, fmt.Sprintf("term %s: bounds [%g, %g] are not an interval", t.Name, t.Min, t.Max))
		} else if t.Default < t.Min || t.Default > t.Max {
			probs = append(probs, fmt.Sprintf("term %s: default %g outside [%g, %g]", t.Name, t.Default, t.Min, t.Max))
		}
		if t.Min < 0 && t.Max > 0 {
			probs = append(probs, fmt.Sprintf("term %s: bounds [%g, %g] cross zero, so the sign is not fixed", t.Name, t.Min, t.Max))
		}
		if t.Default == 0 && !t.MayBeZero {
			probs = append(probs, fmt.Sprintf("term %s: default is 0 but the term may not be 0", t.Name))
		}
	}
	for _, p := range s.Params {
		if p.Name == "" || seen[p.Name] {
			probs = append(probs, fmt.Sprintf("param %q: empty or repeated name", p.Name))
		}
		seen[p.Name] = true
		if !finite(p.Min, p.Max, p.Default) || p.Min > p.Max {
			probs = append(probs, fmt.Sprintf("param %s: bounds [%g, %g] are not an interval", p.Name, p.Min, p.Max))
		} else if p.Default < p.Min || p.Default > p.Max {
			probs = append(probs, fmt.Sprintf("param %s: default %g outside [%g, %g]", p.Name, p.Default, p.Min, p.Max))
		}
	}
	for _, o := range s.Orders {
		if _, ok := s.Param(o.Lower); !ok {
			probs = append(probs, fmt.Sprintf("order: unknown param %s", o.Lower))
		}
		if _, ok := s.Param(o.Upper); !ok {
			probs = append(probs, fmt.Sprintf("order: unknown param %s", o.Upper))
		}
	}
	if s.MaxChanges < 1 {
		probs = append(probs, "max_changes must be at least 1")
	}
	if !(s.StepMin > 0 && s.StepMin <= 1 && s.StepMax >= 1 && finite(s.StepMax)) {
		probs = append(probs, fmt.Sprintf("step rule %g×–%g× must satisfy 0 < min ≤ 1 ≤ max", s.StepMin, s.StepMax))
	}
	if len(probs) > 0 {
		return &InvalidError{What: "reward space", Problems: probs}
	}
	return nil
}

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
