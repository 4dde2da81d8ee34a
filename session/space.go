package session

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Term is one reward term of the space: its default weight, absolute bounds and whether the
// term may be switched off (weight 0).
type Term struct {
	Name      string  `json:"name" yaml:"name"`
	Default   float64 `json:"default" yaml:"default"`
	Min       float64 `json:"min" yaml:"min"`
	Max       float64 `json:"max" yaml:"max"`
	MayBeZero bool    `json:"may_be_zero" yaml:"may_be_zero"`
	// Acts names the metrics the term is meant to act on: what a reward engineer knows
	// before any trial (docs/design.md §2). A stronger weight (a larger magnitude) is
	// expected to lower them. The numeric sampler's prior is strong on these metrics, with
	// that sign as its mean, and weak on the others; the trials may overrule both.
	Acts []string `json:"acts,omitempty" yaml:"acts"`
}

// Param is one scalar parameter of a reward term (a kernel width, a threshold).
type Param struct {
	Name    string  `json:"name" yaml:"name"`
	Default float64 `json:"default" yaml:"default"`
	Min     float64 `json:"min" yaml:"min"`
	Max     float64 `json:"max" yaml:"max"`
	// Acts names the metrics the param is meant to act on, as Term.Acts.
	Acts []string `json:"acts,omitempty" yaml:"acts"`
	// Lowers says which way of moving the param is expected to lower the metrics of Acts:
	// LowersUp, LowersDown, or "" when nobody knows before a trial (a kernel width, a
	// threshold).
	Lowers string `json:"lowers,omitempty" yaml:"lowers"`
}

// The directions of Param.Lowers.
const (
	LowersUp   = "up"
	LowersDown = "down"
)

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
			{"track_linear_velocity", 1.0, 0.5, 3.0, false, acts(MetricVelLinear)},
			{"track_angular_velocity", 1.0, 0.25, 2.0, false, acts(MetricVelAngular)},
			{"body_orientation_l2", -1.0, -3.0, -0.1, false, acts(MetricOrientation, MetricFallRate)},
			{"pose", 1.0, 0, 2.5, true, acts(MetricOrientation)},
			{"body_ang_vel", -0.05, -0.2, 0, true, acts(MetricOrientation)},
			{"angular_momentum", -0.025, -0.1, 0, true, acts(MetricOrientation)},
			{"is_terminated", -200, -400, -50, false, acts(MetricFallRate)},
			{"joint_acc_l2", -2.5e-7, -2e-6, 0, true, acts(MetricActionAcc)},
			{"joint_pos_limits", -10, -30, -2, false, acts(MetricFallRate)},
			{"action_rate_l2", -0.05, -0.2, -0.005, false, acts(MetricActionAcc)},
			{"foot_gait", 0.5, 0, 1.5, true, acts(MetricFootSlip)},
			{"foot_clearance", -1.0, -3.0, 0, true, acts(MetricFootSlip)},
			{"foot_slip", -0.25, -1.0, 0, true, acts(MetricFootSlip)},
			{"soft_landing", -1e-3, -5e-3, 0, true, acts(MetricActionAcc, MetricPower)},
			{"stand_still", -1.0, -3.0, 0, true, acts(MetricPower)},
			{"electrical_power", 0, -5e-3, 0, true, acts(MetricPower)},
		},
		Params: []Param{
			{"track_linear_velocity.std", 0.5, 0.25, 1.0, acts(MetricVelLinear), ""},
			{"track_angular_velocity.std", 0.7071, 0.35, 1.2, acts(MetricVelAngular), ""},
			{"pose.std_standing_scale", 1.0, 0.5, 2.0, acts(MetricOrientation), ""},
			{"pose.std_walking_scale", 1.0, 0.5, 2.0, acts(MetricOrientation), ""},
			{"pose.std_running_scale", 1.0, 0.5, 2.0, acts(MetricOrientation), ""},
			{"pose.walking_threshold", 0.05, 0.05, 0.5, acts(MetricOrientation), ""},
			{"pose.running_threshold", 1.5, 1.0, 2.5, acts(MetricOrientation), ""},
			{"foot_gait.period", 0.6, 0.4, 0.8, acts(MetricActionAcc, MetricFootSlip), ""},
			{"foot_gait.threshold", 0.56, 0.45, 0.65, acts(MetricFootSlip), ""},
			{"foot_clearance.target_height", 0.10, 0.06, 0.16, acts(MetricFootSlip, MetricPower), ""},
			{"foot_gait.command_threshold", 0.1, 0.02, 0.30, acts(MetricFootSlip), ""},
			{"foot_clearance.command_threshold", 0.1, 0.02, 0.30, acts(MetricFootSlip), ""},
			{"foot_slip.command_threshold", 0.1, 0.02, 0.30, acts(MetricFootSlip), ""},
			{"stand_still.command_threshold", 0.1, 0.02, 0.30, acts(MetricPower), ""},
		},
		Orders:     []Order{{Lower: "pose.walking_threshold", Upper: "pose.running_threshold"}},
		MaxChanges: 4,
		StepMin:    0.5,
		StepMax:    2.0,
	}
}

func acts(metrics ...string) []string { return metrics }

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
		probs = append(probs, checkActs("term "+t.Name, t.Acts)...)
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
		probs = append(probs, checkActs("param "+p.Name, p.Acts)...)
		if p.Lowers != "" && p.Lowers != LowersUp && p.Lowers != LowersDown {
			probs = append(probs, fmt.Sprintf("param %s: lowers %q must be %s, %s or empty", p.Name, p.Lowers, LowersUp, LowersDown))
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

// checkActs names the unknown or repeated metrics of a declaration.
func checkActs(what string, metrics []string) []string {
	var probs []string
	seen := map[string]bool{}
	for _, m := range metrics {
		switch {
		case !contains(MetricNames, m):
			probs = append(probs, fmt.Sprintf("%s: acts on %q, which is not a metric (%s)", what, m, strings.Join(MetricNames, ", ")))
		case seen[m]:
			probs = append(probs, fmt.Sprintf("%s: acts on %s twice", what, m))
		}
		seen[m] = true
	}
	return probs
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
