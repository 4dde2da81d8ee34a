package sim

import (
	"math"
	"math/rand/v2"
)

// The levers family (FamilyLevers) draws surfaces whose largest gains sit where a prior
// built from the reward space's declarations cannot see them (issue "Search V"):
//
//   - two or three levers, each a scalar whose direction nothing declares (a param: the
//     domain table knows what it acts on, not which way), with its optimum one to two steps
//     from the default towards a bound and close to it; the first is the largest single
//     gain of the surface (0.15–0.25 log units of its metric), the others 0.06–0.12;
//   - every term off by default (a weight of 0) is worth switching on at a typical
//     magnitude, 1/8–1/2 of its largest (0.1–0.18 log units of its metric, a little on
//     smoothness, and a small tracking cost);
//   - the rest of the gain spread over about a dozen weights that are on, each 0.02–0.06 deep
//     and 0.4–1.2 steps from the default, on the side the domain table suggests 8 times in
//     10, most with a trade-off into another metric;
//   - a few cliffs: the linear tracking weight on its helpful side, 0.8–1.3 steps up, with
//     its tracking gain beyond the cliff so that a search keeps pushing it there; a param
//     nobody declared a direction for, 1.1–1.8 steps either way; and one or two of the
//     domain table's risky scalars, 1–2.5 steps the way the table says;
//   - two or three weak interactions, and noise of 1–5 % per metric.
//
// It was drawn and frozen (TestFamiliesAreFrozen) before any method was measured on it.

// FamilyLevers is the levers family (this file).
const FamilyLevers Family = "levers"

// generateLevers draws a surface of the levers family.
func generateLevers(sh shape, seed int64) *generated {
	rng := rand.New(rand.NewPCG(uint64(seed)^sh.salt, 0x1e7e251e7e251e7e))
	g := drawGenerated(rng)
	cs := coords(sh.sp)
	used := map[string]bool{}
	leverEffects(rng, sh, g, cs, used)
	spreadEffects(rng, sh, g, cs, used)
	domainInteractions(rng, g) // among these only: a term off moves many steps when switched on
	offEffects(rng, sh, g, cs, used)
	leverCliffs(rng, sh, g, cs)
	return g
}

// undeclared reports whether c is a scalar whose direction nothing declares: the domain
// table knows what it acts on but not which way a step up moves it.
func undeclared(sh shape, c coord) bool {
	r := sh.role(c.name)
	return r.up == 0 && len(r.acts) > 0 && !r.small
}

// roomTo is how many steps c has from its default to the bound on side (+1: up).
func roomTo(c coord, side float64) float64 {
	if side > 0 {
		return (1 - c.def) / domainStep(c)
	}
	return c.def / domainStep(c)
}

// leverEffects draws the levers: two or three undeclared scalars with at least 1.25 steps
// of room on some side, each with its optimum one to two steps that way and, where the
// bound is within 2.5 steps, a quarter step or less from it.
func leverEffects(rng *rand.Rand, sh shape, g *generated, cs []coord, used map[string]bool) {
	var open []coord
	for _, c := range cs {
		if undeclared(sh, c) && math.Max(roomTo(c, 1), roomTo(c, -1)) >= 1.25 {
			open = append(open, c)
		}
	}
	perm := rng.Perm(len(open))
	n := 2 + rng.IntN(2)
	for k := 0; k < n && k < len(perm); k++ {
		c := open[perm[k]]
		side := 1.0
		up, down := roomTo(c, 1), roomTo(c, -1)
		switch {
		case up >= 1.25 && down >= 1.25:
			side = float64(1 - 2*rng.IntN(2))
		case down > up:
			side = -1
		}
		room := roomTo(c, side)
		dist := 1 + rng.Float64()
		if room < 2.5 {
			dist = math.Max(room-0.25*rng.Float64(), 1)
		}
		dist = math.Min(dist, room)
		step := domainStep(c)
		opt := c.def + side*dist*step
		depth := 0.06 + 0.06*rng.Float64()
		if k == 0 {
			depth = 0.15 + 0.1*rng.Float64()
		}
		g.effects = append(g.effects, effect{c: c, opt: opt, curv: depth / sq(dist*step), primary: sh.role(c.name).acts[0]})
		used[c.name] = true
	}
}

// offEffects makes every term off by default worth switching on at a typical magnitude.
func offEffects(rng *rand.Rand, sh shape, g *generated, cs []coord, used map[string]bool) {
	for _, c := range cs {
		if !c.weight || !c.zero || c.def > 0 {
			continue
		}
		role := sh.role(c.name)
		opt := 0.7 + 0.2*rng.Float64() // 1/8–1/2 of the largest magnitude on a 1000× range
		depth := 0.1 + 0.08*rng.Float64()
		e := effect{c: c, opt: opt, curv: depth / sq(opt), primary: role.acts[0], trade: mLin, slope: (0.01 + 0.02*rng.Float64()) / opt}
		g.effects = append(g.effects, e)
		if role.acts[0] != mAcc {
			sd := 0.02 + 0.02*rng.Float64()
			g.effects = append(g.effects, effect{c: c, opt: opt, curv: sd / sq(opt), primary: mAcc})
		}
		used[c.name] = true
	}
}

// spreadEffects spreads the rest of the gain over about a dozen weights that are on.
func spreadEffects(rng *rand.Rand, sh shape, g *generated, cs []coord, used map[string]bool) {
	var rest []coord
	for _, c := range cs {
		if !used[c.name] && c.weight && c.def > 0 {
			rest = append(rest, c)
		}
	}
	perm := rng.Perm(len(rest))
	n := 10 + rng.IntN(5)
	for k := 0; k < n && k < len(perm); k++ {
		c := rest[perm[k]]
		role := sh.role(c.name)
		step := domainStep(c)
		side := role.up
		if side == 0 || rng.Float64() < 0.2 {
			side = float64(1 - 2*rng.IntN(2))
		}
		dist := math.Min(0.4+0.8*rng.Float64(), math.Max(roomTo(c, side), 0.2))
		opt := math.Min(math.Max(c.def+side*dist*step, 0), 1)
		d := math.Max(math.Abs(opt-c.def)/step, 0.2)
		depth := 0.02 + 0.04*rng.Float64()
		e := effect{c: c, opt: opt, curv: depth / sq(d*step), primary: role.acts[0]}
		if len(role.trades) > 0 && rng.Float64() < 0.6 {
			e.trade = role.trades[rng.IntN(len(role.trades))]
			e.slope = (0.1 + 0.4*rng.Float64()) * depth / (d * step)
		}
		g.effects = append(g.effects, e)
		used[c.name] = true
	}
}

// leverCliffs draws the cliffs: the linear tracking weight on its helpful side, with its
// tracking gain beyond the cliff; an undeclared scalar that is not a lever; and one or two
// of the domain table's risky scalars.
func leverCliffs(rng *rand.Rand, sh shape, g *generated, cs []coord) {
	levers := map[string]bool{}
	for _, e := range g.effects {
		if undeclared(sh, e.c) && e.curv*sq(e.opt-e.c.def) >= 0.08 {
			levers[e.c.name] = true
		}
	}
	var risky, other []coord
	var riskyDir []float64
	for _, c := range cs {
		role := sh.role(c.name)
		switch {
		case c.weight && role.acts[0] == mLin && role.up > 0 && roomTo(c, 1) > 1:
			step := domainStep(c)
			at := c.def + (0.8+0.5*math.Min(rng.Float64(), (roomTo(c, 1)-0.8)/0.5))*step
			g.cliffs = append(g.cliffs, cliff{c: c, at: math.Min(at, 0.97), dir: 1, steep: (3 + 3*rng.Float64()) / step})
			depth := 0.03 + 0.03*rng.Float64()
			g.effects = append(g.effects, effect{c: c, opt: 1, curv: depth / sq(1-c.def), primary: mLin})
		case undeclared(sh, c) && !levers[c.name]:
			other = append(other, c)
		case role.cliff != 0:
			risky, riskyDir = append(risky, c), append(riskyDir, role.cliff)
		}
	}
	if len(other) > 0 {
		c := other[rng.IntN(len(other))]
		step := domainStep(c)
		dir := float64(1 - 2*rng.IntN(2))
		if at := c.def + dir*(1.1+0.7*rng.Float64())*step; at > 0.02 && at < 0.98 {
			g.cliffs = append(g.cliffs, cliff{c: c, at: at, dir: dir, steep: (3 + 3*rng.Float64()) / step})
		}
	}
	perm := rng.Perm(len(risky))
	for i, n := 0, 1+rng.IntN(2); i < n && i < len(perm); i++ {
		c, dir := risky[perm[i]], riskyDir[perm[i]]
		step := domainStep(c)
		if at := c.def + dir*(1+1.5*rng.Float64())*step; at > 0.02 && at < 0.98 {
			g.cliffs = append(g.cliffs, cliff{c: c, at: at, dir: dir, steep: (3 + 3*rng.Float64()) / step})
		}
	}
}
