package advisor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"tunebot/session"
)

// tpeFloorDecades is how far below the largest magnitude a weight whose bounds reach 0 is
// modelled in log space: 0 itself has no logarithm, and three decades below the largest
// allowed magnitude is "practically off" for every term of the default space.
const tpeFloorDecades = 3

// offTypical is a typical magnitude of a term that is off by default, as a share of the
// largest its bounds allow: where switching it on starts.
const offTypical = 0.25

// tpeDim is one scalar of the space as the samplers model it. Weights live in log|w| space,
// because the step rule is multiplicative and some weights span several orders of magnitude
// (joint_acc_l2, soft_landing); params live in their own linear space.
type tpeDim struct {
	name     string
	weight   bool
	sign     float64 // the sign of a weight's bounds (+1 or -1); 1 for params
	lo, hi   float64 // model-space domain
	magLo    float64 // smallest magnitude the bounds allow (0 when they reach 0)
	mayBe0   bool
	min, max float64 // bounds in value space
}

// tpeDims lists the space's scalars in table order, weights first.
func tpeDims(s *session.Space) []tpeDim {
	out := make([]tpeDim, 0, len(s.Terms)+len(s.Params))
	for _, t := range s.Terms {
		sign := 1.0
		if t.Min < 0 {
			sign = -1
		}
		magHi := math.Max(math.Abs(t.Min), math.Abs(t.Max))
		magLo := math.Min(math.Abs(t.Min), math.Abs(t.Max))
		floor := magLo
		switch {
		case floor == 0 && t.Default == 0:
			// A term off by default: off sits one ×2 step below a typical magnitude, a
			// quarter of the largest, so switching it on is one step in the model, not
			// the several a floor far below would make it (issue 45).
			floor = magHi * offTypical / 2
		case floor == 0:
			floor = magHi * math.Pow(10, -tpeFloorDecades)
		}
		d := tpeDim{name: t.Name, weight: true, sign: sign, magLo: magLo, mayBe0: t.MayBeZero, min: t.Min, max: t.Max}
		if magHi > 0 {
			d.lo, d.hi = math.Log(floor), math.Log(magHi)
		}
		out = append(out, d)
	}
	for _, p := range s.Params {
		out = append(out, tpeDim{name: p.Name, sign: 1, lo: p.Min, hi: p.Max, min: p.Min, max: p.Max})
	}
	return out
}

// value reads the dim's current value from c, falling back to def.
func (d tpeDim) value(c session.RewardConfig, s *session.Space) float64 {
	if d.weight {
		if v, ok := c.Weights[d.name]; ok {
			return v
		}
		t, _ := s.Term(d.name)
		return t.Default
	}
	if v, ok := c.Params[d.name]; ok {
		return v
	}
	p, _ := s.Param(d.name)
	return p.Default
}

// encode maps a value into model space; a weight of 0 (term off) sits at the floor.
func (d tpeDim) encode(v float64) float64 {
	if !d.weight {
		return v
	}
	m := math.Abs(v)
	if m == 0 {
		return d.lo
	}
	return math.Min(math.Max(math.Log(m), d.lo), d.hi)
}

// decode maps a model-space point back to a value, rounded to 4 significant digits when the
// rounded value stays inside [a, b] (value space), so proposals read well in chat.
func (d tpeDim) decode(z, a, b float64) float64 {
	v := z
	if d.weight {
		v = d.sign * math.Exp(z)
	}
	r := tpeRound(v, 4)
	if r >= a && r <= b && (r != 0 || !d.weight) {
		return r
	}
	return math.Min(math.Max(v, a), b)
}

func tpeRound(v float64, digits int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	e := math.Floor(math.Log10(math.Abs(v)))
	scale := math.Pow(10, float64(digits-1)-e)
	return math.Round(v*scale) / scale
}

// feasible returns the model-space interval the dim may move to from base under the step
// rule and the bounds, and the same interval in value space (ordered). ok is false when the
// dim cannot move at all.
func (d tpeDim) feasible(s *session.Space, base float64) (zlo, zhi, vlo, vhi float64, ok bool) {
	if !d.weight {
		return d.lo, d.hi, d.min, d.max, d.hi > d.lo
	}
	if !(d.hi > d.lo) {
		return 0, 0, 0, 0, false
	}
	zlo, zhi = d.lo, d.hi
	if base != 0 {
		m := math.Abs(base)
		zlo = math.Max(zlo, math.Log(m*s.StepMin))
		zhi = math.Min(zhi, math.Log(m*s.StepMax))
		if d.magLo > 0 {
			zlo = math.Max(zlo, math.Log(d.magLo))
		}
	}
	if !(zhi > zlo) {
		return 0, 0, 0, 0, false
	}
	a, b := d.sign*math.Exp(zlo), d.sign*math.Exp(zhi)
	if a > b {
		a, b = b, a
	}
	// Shrink by a hair so that exp(log(x)) round-off never lands just outside the step rule.
	eps := 1e-9 * (zhi - zlo)
	return zlo + eps, zhi - eps, math.Max(a, d.min), math.Min(b, d.max), true
}

// tpeChange is one proposed move, kept for the rationale.
type tpeChange struct {
	dim      tpeDim
	old, new float64
}

// label is the dim's name as every surface shows it (session/display.go): a weight's name,
// a param's "params.x".
func (d tpeDim) label() string {
	if d.weight {
		return d.name
	}
	return session.ParamLabel(d.name)
}

func (c tpeChange) String() string {
	switch {
	case c.dim.weight && c.old != 0:
		return fmt.Sprintf("scale %s ×%.2g", c.dim.name, c.new/c.old)
	case c.dim.weight:
		return fmt.Sprintf("switch on %s at %g", c.dim.name, c.new)
	default:
		return fmt.Sprintf("set %s %.4g→%.4g", c.dim.label(), c.old, c.new)
	}
}

func tpeDescribe(changes []tpeChange) string {
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = c.String()
	}
	return strings.Join(parts, ", ")
}

func tpePatch(changes []tpeChange) session.Patch {
	p := session.Patch{Weights: map[string]float64{}, Params: map[string]float64{}}
	for _, c := range changes {
		if c.dim.weight {
			p.Weights[c.dim.name] = c.new
		} else {
			p.Params[c.dim.name] = c.new
		}
	}
	return p
}

// Generator streams: the TPE and the random proposer draw from different streams of the
// same seed, so that a benchmark of one against the other does not pair identical draws.
const (
	tpeStreamRandom uint64 = 0x9e3779b97f4a7c15
	tpeStreamTPE    uint64 = 0xd1b54a32d192ed03
)

// tpeRNG seeds the generator from the session seed and the history length, so a resumed
// session asks the same question and gets the same proposal.
func tpeRNG(req session.ProposalRequest, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(req.Seed), uint64(len(req.History))^stream))
}

// tpeMovable returns the dims that can move from base, with their feasible intervals.
type tpeMove struct {
	dim                tpeDim
	base               float64
	zlo, zhi, vlo, vhi float64
}

func tpeMovable(s *session.Space, dims []tpeDim, base session.RewardConfig) []tpeMove {
	var out []tpeMove
	for _, d := range dims {
		b := d.value(base, s)
		zlo, zhi, vlo, vhi, ok := d.feasible(s, b)
		if ok {
			out = append(out, tpeMove{dim: d, base: b, zlo: zlo, zhi: zhi, vlo: vlo, vhi: vhi})
		}
	}
	return out
}

// tpeRandomPatch draws 1..MaxChanges movable dims uniformly and a uniform model-space value
// for each: the Random proposer.
func tpeRandomPatch(rng *rand.Rand, s *session.Space, moves []tpeMove) []tpeChange {
	k := 1 + rng.IntN(min(s.MaxChanges, len(moves)))
	idx := rng.Perm(len(moves))[:k]
	sort.Ints(idx)
	out := make([]tpeChange, 0, k)
	for _, i := range idx {
		m := moves[i]
		z := m.zlo + rng.Float64()*(m.zhi-m.zlo)
		out = append(out, tpeChange{dim: m.dim, old: m.base, new: m.dim.decode(z, m.vlo, m.vhi)})
	}
	return out
}

// tpeCheckRequest refuses a request no proposer can answer.
func tpeCheckRequest(req session.ProposalRequest) error {
	if req.Space == nil {
		return fmt.Errorf("proposal request has no reward space")
	}
	if req.Space.MaxChanges < 1 {
		return fmt.Errorf("reward space allows no changes (max_changes %d)", req.Space.MaxChanges)
	}
	return nil
}
