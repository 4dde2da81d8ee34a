package mjlab

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"tunebot/session"
)

// TaskRewards is what `python -m tunebot_mjlab space --task TASK` prints: the installed
// task's own reward terms, in the order of its env_cfg.rewards.
type TaskRewards struct {
	Task  string     `json:"task"`
	Mjlab string     `json:"mjlab"`
	Terms []TaskTerm `json:"terms"`
	// TableNames are the names the adapter's hand-written table for the task accepts
	// (docs/design.md §2's fixed names); empty when the task has no table.
	TableNames []string `json:"table_names"`
	// TableDefaults are the task's defaults in the table's names (--print-defaults); nil
	// without a table.
	TableDefaults *session.RewardConfig `json:"table_defaults"`
}

// TaskTerm is one reward term of a task.
type TaskTerm struct {
	Name     string  `json:"name"`
	Weight   float64 `json:"weight"`
	Function string  `json:"function"`
	Module   string  `json:"module"`
	// Params are the term's params that are plain numbers; OtherParams name the rest
	// (per-joint tables, sensor and asset names), which are never tuned.
	Params      map[string]float64 `json:"params"`
	OtherParams []string           `json:"other_params"`
}

// UsesTable says whether a reward configuration with these names is read through the
// task's table rather than in the task's own names: the task has a table and every name is
// in it. The adapter decides the same way (tunebot_mjlab/names.py, uses_table).
func (t TaskRewards) UsesTable(names []string) bool {
	if len(t.TableNames) == 0 {
		return false
	}
	for _, n := range names {
		if !slices.Contains(t.TableNames, n) {
			return false
		}
	}
	return true
}

// OwnDefaults returns the task's weights and scalar params in its own names: a weight is
// the term, a param term.param.
func (t TaskRewards) OwnDefaults() session.RewardConfig {
	c := session.RewardConfig{Weights: map[string]float64{}, Params: map[string]float64{}}
	for _, term := range t.Terms {
		c.Weights[term.Name] = term.Weight
		for k, v := range term.Params {
			c.Params[term.Name+"."+k] = v
		}
	}
	return c
}

// Function is what tunebot knows of one mjlab reward function before any trial: the metrics
// (docs/design.md §3) a stronger weight is expected to lower, a typical weight for a term
// that defaults to 0, and the metrics each scalar param acts on. It is the numeric
// sampler's prior (session.Term.Acts), so it lives here in Go, beside the space it fills.
type Function struct {
	Acts []string
	// Typical is a weight of the function's usual scale, sign included; 0 when unknown.
	Typical float64
	// Params maps a scalar param to the metrics it acts on.
	Params map[string][]string
	// Orders are pairs of params (lower, upper) that must stay ordered.
	Orders [][2]string
	// Note says why a known function acts on no metric.
	Note string
}

// Functions is tunebot's table of mjlab's reward functions (mjlab.envs.mdp.rewards and
// mjlab.tasks.velocity.mdp.rewards), by function name. A function not in it gets no acts
// and a comment saying so.
var Functions = map[string]Function{
	// Tracking.
	"track_linear_velocity":  {Acts: acts(session.MetricVelLinear), Params: map[string][]string{"std": acts(session.MetricVelLinear)}},
	"track_angular_velocity": {Acts: acts(session.MetricVelAngular), Params: map[string][]string{"std": acts(session.MetricVelAngular)}},
	// Orientation, posture and falls.
	"upright":             {Acts: acts(session.MetricOrientation, session.MetricFallRate), Params: map[string][]string{"std": acts(session.MetricOrientation)}},
	"flat_orientation_l2": {Acts: acts(session.MetricOrientation, session.MetricFallRate)},
	"variable_posture": {
		Acts:   acts(session.MetricOrientation),
		Params: map[string][]string{"walking_threshold": acts(session.MetricOrientation), "running_threshold": acts(session.MetricOrientation)},
		Orders: [][2]string{{"walking_threshold", "running_threshold"}},
	},
	"body_angular_velocity_penalty": {Acts: acts(session.MetricOrientation), Typical: -0.05},
	"angular_momentum_penalty":      {Acts: acts(session.MetricOrientation), Typical: -0.025},
	"is_terminated":                 {Acts: acts(session.MetricFallRate), Typical: -200},
	"is_alive":                      {Acts: acts(session.MetricFallRate)},
	"joint_pos_limits":              {Acts: acts(session.MetricFallRate)},
	// Smoothness.
	"action_rate_l2": {Acts: acts(session.MetricActionAcc)},
	"action_acc_l2":  {Acts: acts(session.MetricActionAcc)},
	"joint_acc_l2":   {Acts: acts(session.MetricActionAcc), Typical: -2.5e-7},
	// Feet and slip.
	"feet_air_time": {
		Acts:   acts(session.MetricFootSlip),
		Params: map[string][]string{"threshold_min": acts(session.MetricFootSlip), "threshold_max": acts(session.MetricFootSlip), "command_threshold": acts(session.MetricFootSlip)},
		Orders: [][2]string{{"threshold_min", "threshold_max"}},
	},
	"feet_clearance": {
		Acts:   acts(session.MetricFootSlip),
		Params: map[string][]string{"target_height": acts(session.MetricFootSlip, session.MetricPower), "command_threshold": acts(session.MetricFootSlip)},
	},
	"feet_swing_height": {
		Acts:   acts(session.MetricFootSlip),
		Params: map[string][]string{"target_height": acts(session.MetricFootSlip, session.MetricPower), "command_threshold": acts(session.MetricFootSlip)},
	},
	"feet_slip": {Acts: acts(session.MetricFootSlip), Params: map[string][]string{"command_threshold": acts(session.MetricFootSlip)}},
	"soft_landing": {
		Acts:   acts(session.MetricActionAcc, session.MetricPower),
		Params: map[string][]string{"command_threshold": acts(session.MetricActionAcc, session.MetricPower)},
	},
	// Energy.
	"electrical_power_cost": {Acts: acts(session.MetricPower), Typical: -2.5e-3},
	"joint_torques_l2":      {Acts: acts(session.MetricPower), Typical: -1e-5},
	"joint_vel_l2":          {Acts: acts(session.MetricPower)},
	// Known, but no metric of §3 measures what it penalises.
	"self_collision_cost": {Note: "self-collisions: no metric tunebot measures counts them"},
}

func acts(metrics ...string) []string { return metrics }

// The bounds rule (docs/design.md §2, "A space from the task"): a non-zero default d moves
// within ×BoundLow–×BoundHigh of d with its sign kept; a weight that defaults to 0 gets 0 to
// BoundHigh times its function's typical weight.
const (
	BoundLow  = 0.5
	BoundHigh = 2.0
)

// Built is a space built from a task, with what was left out and why.
type Built struct {
	Space *session.Space
	// Comments holds, by term or param name, the line printed above its entry.
	Comments map[string]string
	// Omitted lists what was left out, each with its reason, in the task's order.
	Omitted []string
	// Unknown lists the terms whose function is not in Functions.
	Unknown []string
}

// Build makes a reward space from the task's own terms by the bounds rule and the
// Functions table. base supplies max_changes and the step rule.
func Build(t TaskRewards, base *session.Space) Built {
	b := Built{
		Space:    &session.Space{MaxChanges: base.MaxChanges, StepMin: base.StepMin, StepMax: base.StepMax},
		Comments: map[string]string{},
	}
	for _, term := range t.Terms {
		fn, known := Functions[term.Function]
		if !known {
			b.Unknown = append(b.Unknown, term.Name)
		}
		what, note := termNote(term, fn, known)
		switch {
		case term.Weight != 0:
			lo, hi := bounds(term.Weight)
			b.Space.Terms = append(b.Space.Terms, session.Term{Name: term.Name, Default: term.Weight, Min: lo, Max: hi, Acts: fn.Acts})
			b.Comments[term.Name] = note
		case fn.Typical != 0:
			lo, hi := math.Min(0, round4(fn.Typical*BoundHigh)), math.Max(0, round4(fn.Typical*BoundHigh))
			b.Space.Terms = append(b.Space.Terms, session.Term{Name: term.Name, Default: 0, Min: lo, Max: hi, MayBeZero: true, Acts: fn.Acts})
			b.Comments[term.Name] = note + fmt.Sprintf("; off by default, bounds from the typical weight %g", fn.Typical)
		default:
			why := "its function is not in tunebot's table"
			if known {
				why = "tunebot's table has no typical weight for " + term.Function
			}
			b.Omitted = append(b.Omitted, fmt.Sprintf("term %s (%s): left out: its default weight is 0 and %s; add it by hand with bounds you choose", term.Name, what, why))
			continue
		}
		b.addParams(term, fn, known)
	}
	return b
}

// termNote is what a term's entry says it is (module.function) and the line printed above
// it: what, the parameters not tuned, and why it has no acts when it has none.
func termNote(term TaskTerm, fn Function, known bool) (what, note string) {
	what = term.Function
	if term.Module != "" {
		what = term.Module + "." + term.Function
	}
	note = what
	if len(term.OtherParams) > 0 {
		note += "; not tuned: " + strings.Join(term.OtherParams, ", ")
	}
	switch {
	case !known:
		note += "; not in tunebot's table of mjlab reward functions: no acts (add them if you know what it acts on)"
	case fn.Note != "":
		note += "; no acts (" + fn.Note + ")"
	}
	return what, note
}

// addParams adds the params of a term that is in the space, each by the bounds rule (one
// whose default is 0 is omitted), and its function's orders between them.
func (b *Built) addParams(term TaskTerm, fn Function, known bool) {
	for _, k := range sortedKeys(term.Params) {
		name, v := term.Name+"."+k, term.Params[k]
		if v == 0 {
			b.Omitted = append(b.Omitted, fmt.Sprintf("param %s: left out: its default is 0, so ×%g–×%g gives no range; add it by hand", name, BoundLow, BoundHigh))
			continue
		}
		lo, hi := bounds(v)
		p := session.Param{Name: name, Default: v, Min: lo, Max: hi, Acts: fn.Params[k]}
		b.Space.Params = append(b.Space.Params, p)
		if known && fn.Params[k] == nil {
			b.Comments[name] = "not in tunebot's table for " + term.Function + ": no acts"
		}
	}
	for _, o := range fn.Orders {
		lo, up := term.Name+"."+o[0], term.Name+"."+o[1]
		_, okLo := b.Space.Param(lo)
		_, okUp := b.Space.Param(up)
		if okLo && okUp {
			b.Space.Orders = append(b.Space.Orders, session.Order{Lower: lo, Upper: up})
		}
	}
}

// bounds returns ×BoundLow–×BoundHigh of a non-zero x, sign kept, rounded to 4 significant
// digits as patches are (docs/design.md §2).
func bounds(x float64) (lo, hi float64) {
	a, b := round4(x*BoundLow), round4(x*BoundHigh)
	return math.Min(a, b), math.Max(a, b)
}

func round4(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
	return v
}

func sortedKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// YAML renders b as the commented `reward_space:` block `tunebot space` prints, for a
// person to review and paste into a config.
func (b Built) YAML(t TaskRewards) string {
	var w strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&w, format, a...) }
	p("# Reward space of %s (mjlab %s), printed by `tunebot space` from the installed task.\n", t.Task, t.Mjlab)
	p("# Names are the task's own (a weight is its term in env_cfg.rewards, a param term.param);\n")
	p("# the adapter applies them by name. Bounds: ×%g–×%g of each non-zero default, sign kept; a\n", BoundLow, BoundHigh)
	p("# weight that defaults to 0 gets 0 to %g× its function's typical weight. acts come from\n", BoundHigh)
	p("# tunebot's table of mjlab reward functions (trainer/mjlab/space.go): review them, then\n")
	p("# paste this block into your config (docs/design.md §2).\n")
	if len(b.Unknown) > 0 {
		p("# Not in the table, so without acts: %s.\n", strings.Join(b.Unknown, ", "))
	}
	s := b.Space
	p("reward_space:\n")
	p("  max_changes: %d\n", s.MaxChanges)
	p("  step_min: %s\n", num(s.StepMin))
	p("  step_max: %s\n", num(s.StepMax))
	p("  terms:\n")
	for _, term := range s.Terms {
		if c := b.Comments[term.Name]; c != "" {
			p("    # %s: %s\n", term.Name, c)
		}
		p("    - {name: %s, default: %s, min: %s, max: %s, may_be_zero: %t%s}\n",
			term.Name, num(term.Default), num(term.Min), num(term.Max), term.MayBeZero, actsYAML(term.Acts))
	}
	for _, o := range b.Omitted {
		if strings.HasPrefix(o, "term ") {
			p("    # %s\n", o)
		}
	}
	if len(s.Params) == 0 {
		p("  params: []\n")
	} else {
		p("  params:\n")
	}
	for _, prm := range s.Params {
		if c := b.Comments[prm.Name]; c != "" {
			p("    # %s: %s\n", prm.Name, c)
		}
		p("    - {name: %s, default: %s, min: %s, max: %s%s}\n", prm.Name, num(prm.Default), num(prm.Min), num(prm.Max), actsYAML(prm.Acts))
	}
	for _, o := range b.Omitted {
		if strings.HasPrefix(o, "param ") {
			p("    # %s\n", o)
		}
	}
	if len(s.Orders) == 0 {
		p("  orders: []\n")
		return w.String()
	}
	p("  orders:\n")
	for _, o := range s.Orders {
		p("    - {lower: %s, upper: %s}\n", o.Lower, o.Upper)
	}
	return w.String()
}

func actsYAML(a []string) string {
	if len(a) == 0 {
		return ""
	}
	return ", acts: [" + strings.Join(a, ", ") + "]"
}

// num prints x so that YAML reads it back as the same float64.
func num(x float64) string {
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".en") && !strings.Contains(s, "Inf") {
		s += ".0"
	}
	return s
}
