package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"tunebot/session"
)

// Surface is one response surface of the sim trainer. Surface seed 0 is the hand-made
// surface described in the package comment (the demo's); every other seed draws a surface
// of its own from the same family, so a sampler can be measured on problems it was not
// tuned on (bench/sampler/README.md). A generated surface keeps the contract and the
// metrics' scales but draws, per scalar of the reward space:
//
//   - whether it matters at all (about half do not);
//   - where its optimum lies: near the default, or far from it up to a bound (several
//     0.5×–2× steps away);
//   - how sharply the primary metric it acts on rises away from that optimum, and what
//     moving towards the optimum costs on another metric (a trade-off);
//
// and, for the surface as a whole, a few interactions between pairs of scalars, one or
// two cliffs (past a point of one scalar the robot falls, which breaks the fall-rate
// gate) and a noise level of 1–5 % per metric.
type Surface struct {
	family Family
	seed   int64
	gen    *generated // nil: the hand-made surface of seed 0
	sh     *shape     // the space the surface is built from (spacesurf.go); nil: the built-in one
}

// Family names a family of generated surfaces.
type Family string

// The families. FamilyGeneric draws what each scalar acts on at random (this file);
// FamilyDomain draws surfaces shaped the way real reward spaces are, each term acting on the
// metrics its name is about (domain.go); FamilyCoupled (coupled.go) draws surfaces where a
// term's metric is right but its sign often is not and the gains need several moves at once;
// FamilySeparable (separable.go) draws surfaces whose gains come from separate terms within the
// box but whose first moves are often wrong; FamilyLevers (levers.go) draws surfaces whose
// largest gains are on scalars whose direction nothing declares and on terms that are off.
// All are measured in bench/sampler.
const (
	FamilyGeneric Family = "generic"
	FamilyDomain  Family = "domain"
)

// Families lists the families, for messages and flags.
var Families = []Family{FamilyGeneric, FamilyDomain, FamilyCoupled, FamilySeparable, FamilyLevers}

// ParseFamily reads a family's name ("" is the generic family).
func ParseFamily(name string) (Family, error) {
	if name == "" {
		return FamilyGeneric, nil
	}
	if f := Family(name); slices.Contains(Families, f) {
		return f, nil
	}
	return "", unknownFamily(name)
}

// unknownFamily is the error naming a family that is none of Families, and them:
// `surface family "x" is unknown (generic, domain, coupled, separable or levers)`.
func unknownFamily(name string) error {
	names := make([]string, len(Families))
	for i, f := range Families {
		names[i] = string(f)
	}
	last := len(names) - 1
	return fmt.Errorf("surface family %q is unknown (%s or %s)", name, strings.Join(names[:last], ", "), names[last])
}

// shipped is surface seed 0, behind the package-level Evaluate.
var shipped = &Surface{family: FamilyGeneric}

// NewSurface returns the generic family's surface of seed (0: the hand-made one).
// Negative seeds are refused.
func NewSurface(seed int64) (*Surface, error) {
	return NewFamilySurface(FamilyGeneric, seed)
}

// NewFamilySurface returns the surface of seed in family (seed 0 is the hand-made surface of
// the demo, whatever the family). Negative seeds and unknown families are refused.
func NewFamilySurface(family Family, seed int64) (*Surface, error) {
	if seed < 0 {
		return nil, fmt.Errorf("surface seed %d must not be negative", seed)
	}
	if seed == 0 {
		return shipped, nil
	}
	switch family {
	case FamilyGeneric, "":
		return &Surface{family: FamilyGeneric, seed: seed, gen: generate(builtin, seed)}, nil
	case FamilyDomain:
		return &Surface{family: FamilyDomain, seed: seed, gen: generateDomain(builtin, seed)}, nil
	case FamilyCoupled:
		return &Surface{family: FamilyCoupled, seed: seed, gen: generateCoupled(builtin, seed)}, nil
	case FamilySeparable:
		return &Surface{family: FamilySeparable, seed: seed, gen: generateSeparable(builtin, seed)}, nil
	case FamilyLevers:
		return &Surface{family: FamilyLevers, seed: seed, gen: generateLevers(builtin, seed)}, nil
	}
	return nil, unknownFamily(string(family))
}

// Seed is the surface's seed.
func (s *Surface) Seed() int64 { return s.seed }

// Family is the surface's family.
func (s *Surface) Family() Family { return s.family }

// coord is one scalar's position on a generated surface: 0..1 across its bounds, in log
// magnitude for weights (down to 1/1000 of the largest magnitude when the bounds reach 0)
// and linear for params, as the samplers model the space.
type coord struct {
	name   string
	weight bool
	lo, hi float64 // log-magnitude or value range
	def    float64 // the default's position, 0..1
	sign   float64 // a weight's sign
	zero   bool    // a weight that may be 0 (off)
}

func (c coord) pos(v cfgValues) float64 {
	x := v.pr[c.name]
	if c.weight {
		x = math.Log(math.Max(math.Abs(v.w[c.name]), math.Exp(c.lo)))
	}
	return math.Min(math.Max((x-c.lo)/(c.hi-c.lo), 0), 1)
}

func coords(sp *session.Space) []coord {
	var out []coord
	for _, t := range sp.Terms {
		hi := math.Max(math.Abs(t.Min), math.Abs(t.Max))
		lo := math.Min(math.Abs(t.Min), math.Abs(t.Max))
		if lo == 0 {
			lo = hi / 1000
		}
		if hi == 0 {
			continue // a term that is always off has no position
		}
		c := coord{name: t.Name, weight: true, lo: math.Log(lo), hi: math.Log(hi), sign: 1, zero: t.MayBeZero}
		if t.Min < 0 {
			c.sign = -1
		}
		d := math.Max(math.Abs(t.Default), lo)
		c.def = (math.Log(d) - c.lo) / (c.hi - c.lo)
		out = append(out, c)
	}
	for _, p := range sp.Params {
		out = append(out, coord{name: p.Name, lo: p.Min, hi: p.Max, def: (p.Default - p.Min) / (p.Max - p.Min)})
	}
	return out
}

// effect is what one scalar does on a generated surface, in log units of a metric (the fall
// rate: in log-odds).
type effect struct {
	c       coord
	opt     float64 // optimum position
	curv    float64 // log-metric rise per squared unit of distance from the optimum
	primary string
	trade   string  // metric that pays for moving towards the optimum ("" for none)
	slope   float64 // its rise per unit moved towards the optimum
}

type interaction struct {
	a, b   int // indexes into the effects
	metric string
	k      float64
}

type cliff struct {
	c     coord
	at    float64 // position past which the robot falls
	dir   float64 // +1: falls above at, -1: below
	steep float64 // log-odds per unit past it
}

type generated struct {
	base      session.Metrics // the hand-made surface's asymptote at the defaults
	effects   []effect
	inter     []interaction
	cliffs    []cliff
	noise     map[string]float64
	fallOdds  float64
	coupled   *coupledParts   // the coupled family's hinges and groups (coupled.go); nil in the others
	separable *separableParts // the separable family's wells and early signals (separable.go)
	sp        *session.Space  // the space configurations are read in; nil: the built-in one
}

// The metrics a scalar may act on, drawn with the objective's weights in mind: tracking
// and smoothness are where most reward terms act.
var primaryPool = []string{
	session.MetricVelLinear, session.MetricVelLinear, session.MetricVelAngular,
	session.MetricActionAcc, session.MetricActionAcc, session.MetricOrientation,
	session.MetricFallRate, session.MetricFootSlip, session.MetricPower,
}

// maxCurv bounds a scalar's curvature: a factor of 2 on a weight whose bounds span a
// factor of 6 (a third of its range) costs its metric at most 7 %.
const maxCurv = 0.6

func generate(sh shape, seed int64) *generated {
	rng := rand.New(rand.NewPCG(uint64(seed)^sh.salt, 0x5eed5eed5eed5eed))
	g := &generated{base: asymptote(space.Defaults()), noise: map[string]float64{}}
	f := g.base[session.MetricFallRate] / 0.9
	g.fallOdds = math.Log(f / (1 - f))
	for _, name := range session.MetricNames {
		g.noise[name] = 0.01 + 0.04*rng.Float64()
	}
	cs := coords(sh.sp)
	for _, c := range cs {
		if rng.Float64() < 0.5 {
			continue // does not matter
		}
		e := effect{c: c, primary: primaryPool[rng.IntN(len(primaryPool))]}
		switch r := rng.Float64(); {
		case r < 0.4: // near the default
			e.opt = c.def + (rng.Float64()*2-1)*0.15
		case r < 0.75: // anywhere in the bounds
			e.opt = rng.Float64()
		default: // at a bound
			e.opt = float64(rng.IntN(2))
		}
		e.opt = math.Min(math.Max(e.opt, 0), 1)
		d := math.Abs(e.opt - c.def)
		// Depth at the optimum (log units of the primary metric) of 0.05–0.5, but no
		// steeper than maxCurv per squared unit, so a default that is already right is
		// not a knife edge.
		depth := 0.05 * math.Pow(10, rng.Float64())
		e.curv = math.Min(depth/math.Max(d*d, 1e-4), maxCurv)
		if rng.Float64() < 0.5 {
			for e.trade == "" || e.trade == e.primary {
				e.trade = session.MetricNames[rng.IntN(len(session.MetricNames))]
			}
			e.slope = 0.5 * rng.Float64() * e.curv * d
		}
		g.effects = append(g.effects, e)
	}
	for n := 2 + rng.IntN(3); n > 0 && len(g.effects) > 1; n-- {
		a := rng.IntN(len(g.effects))
		b := rng.IntN(len(g.effects))
		if a == b {
			continue
		}
		k := (0.2 + 0.6*rng.Float64()) * float64(1-2*rng.IntN(2))
		g.inter = append(g.inter, interaction{a: a, b: b, metric: session.MetricNames[rng.IntN(len(session.MetricNames))], k: k})
	}
	for n := 1 + rng.IntN(2); n > 0; n-- {
		c := cs[rng.IntN(len(cs))]
		dir := float64(1 - 2*rng.IntN(2))
		room := c.def
		if dir > 0 {
			room = 1 - c.def
		}
		if room < 0.1 {
			dir, room = -dir, 1-room
		}
		at := c.def + dir*room*(0.45+0.5*rng.Float64())
		g.cliffs = append(g.cliffs, cliff{c: c, at: at, dir: dir, steep: 25 + 25*rng.Float64()})
	}
	return g
}

func (g *generated) asymptote(cfg session.RewardConfig) session.Metrics {
	v := valuesIn(g.sp, cfg)
	logs := map[string]float64{}
	pos := make([]float64, len(g.effects))
	for i, e := range g.effects {
		u := e.c.pos(v)
		pos[i] = u - e.c.def
		logs[e.primary] += e.curv * (sq(u-e.opt) - sq(e.c.def-e.opt))
		if e.trade != "" {
			towards := (u - e.c.def) * math.Copysign(1, e.opt-e.c.def)
			logs[e.trade] += e.slope * towards
		}
	}
	for _, in := range g.inter {
		logs[in.metric] += in.k * pos[in.a] * pos[in.b]
	}
	if g.coupled != nil {
		g.coupled.add(v, logs)
	}
	if g.separable != nil {
		g.separable.add(v, logs)
	}
	odds := g.fallOdds + logs[session.MetricFallRate]
	for _, c := range g.cliffs {
		odds += c.steep * math.Max(0, c.dir*(c.c.pos(v)-c.at))
	}
	m := session.Metrics{}
	for _, name := range session.MetricNames {
		if name == session.MetricFallRate {
			m[name] = 0.9 / (1 + math.Exp(-odds))
			continue
		}
		m[name] = g.base[name] * math.Exp(logs[name])
	}
	return m
}
