package sim

import (
	"math"
	"math/rand/v2"

	"tunebot/session"
)

// The coupled family (FamilyCoupled) draws surfaces where what each term is about is right
// but how it acts is not what its name suggests, and where the gains come from moves made
// together:
//
//   - each scalar acts only on the metrics its name is about (the domain family's table of
//     roles, written from the names), but for 4 in 10 of the weights the sign is the other
//     way: a stronger penalty raises the metric it is about, as an over-regularised gait
//     does (a param's side is drawn either way);
//   - alone, a move is worth little: a scalar's own optimum lies 0.3–1 step away and is
//     shallow (0.005–0.03 in log units of its metric), and strengthening a weight that
//     costs tracking costs it one-sidedly (a hinge 0.5–1.2 steps up: nothing before it,
//     0.04–0.12 log units per step past it);
//   - one or two groups of 3–6 scalars pay together: each member has a target 0.6–1.4
//     steps away on its side, and the group's gain (0.3–0.6 log units of a metric) grows
//     with the cube of the members' mean progress, so a member moved alone gains at most
//     1/27 of it and the optimum needs several moderate moves at once;
//   - three to five interactions between pairs of scalars that matter (the gain of one move
//     depends on another), on a metric one of them is about;
//   - one to three cliffs on the scalars whose role has one, 1–2.5 steps out and at least
//     half a step past a group's target, so overshooting the good point makes the robot
//     fall; noise of 1–5 % per metric.
//
// It differs from the generic family, whose scalars act on metrics drawn at random with
// optima anywhere, and from the domain family, whose terms mostly act the way their name
// says and whose gains add up move by move: here a sampler that trusts the declared signs
// is wrong 4 times in 10, and one that climbs a scalar at a time finds little. It was drawn
// and frozen (TestFamiliesAreFrozen) before any method was measured on it.

// FamilyCoupled is the coupled family (this file).
const FamilyCoupled Family = "coupled"

// hinge is a one-sided cost: past at (in the direction dir) the metric rises by k log
// units per unit of position, and not at all before it.
type hinge struct {
	c      coord
	at     float64
	dir    float64
	metric string
	k      float64
}

// member is one scalar of a synergy group and the position it must reach.
type member struct {
	c      coord
	target float64
}

// synergy is a group of scalars whose moves pay only together: with progress q of each
// member towards its target (0 at the default, 1 at the target), each counts
// 1-(1-q)², and the metrics fall by depth times the cube of their mean (when positive).
type synergy struct {
	members []member
	metrics []string
	depths  []float64
}

// coupledParts are what the coupled family adds to a generated surface.
type coupledParts struct {
	hinges    []hinge
	synergies []synergy
}

// add adds the hinges' and groups' effects at v to logs.
func (p *coupledParts) add(v cfgValues, logs map[string]float64) {
	for _, h := range p.hinges {
		logs[h.metric] += h.k * math.Max(0, h.dir*(h.c.pos(v)-h.at))
	}
	for _, s := range p.synergies {
		mean := 0.0
		for _, m := range s.members {
			q := (m.c.pos(v) - m.c.def) / (m.target - m.c.def)
			mean += 1 - sq(1-q)
		}
		mean = math.Max(0, mean/float64(len(s.members)))
		for i, metric := range s.metrics {
			logs[metric] -= s.depths[i] * mean * mean * mean
		}
	}
}

// coupledFlip is the share of weights whose sign is the other way.
const coupledFlip = 0.4

// generateCoupled draws a surface of the coupled family.
func generateCoupled(sh shape, seed int64) *generated {
	rng := rand.New(rand.NewPCG(uint64(seed)^sh.salt, 0xc0c0c0c0c0c0c0c0))
	g := &generated{base: asymptote(space.Defaults()), noise: map[string]float64{}, coupled: &coupledParts{}}
	f := g.base[mFall] / 0.9
	g.fallOdds = math.Log(f / (1 - f))
	for _, name := range session.MetricNames {
		g.noise[name] = 0.01 + 0.04*rng.Float64()
	}
	// The draws happen in this order, step by step: the family is frozen.
	matter := g.coupledEffects(sh, rng)
	targets := g.coupledSynergies(rng, matter)
	g.coupledInteractions(rng, matter)
	g.coupledCliffs(sh, rng, targets)
	return g
}

// mattering is a scalar that matters on a coupled surface.
type mattering struct {
	c     coord
	side  float64
	role  domainRole
	first int // index of its first effect
}

// coupledEffects draws which scalars matter, each one's effects and its hinge, if any.
func (g *generated) coupledEffects(sh shape, rng *rand.Rand) []mattering {
	var matter []mattering
	for _, c := range coords(sh.sp) {
		role := sh.role(c.name)
		if rng.Float64() < 0.3 {
			continue // does not matter on this surface
		}
		side := role.up
		if side == 0 {
			side = float64(1 - 2*rng.IntN(2))
		} else if rng.Float64() < coupledFlip {
			side = -side // a stronger penalty raises its metric
		}
		step := domainStep(c)
		opt := math.Min(math.Max(c.def+side*(0.3+0.7*rng.Float64())*step, 0), 1)
		d := math.Abs(opt-c.def) / step
		first := len(g.effects)
		for k, metric := range role.acts {
			depth := 0.005 + 0.025*rng.Float64()
			if k > 0 {
				depth *= 0.5
			}
			if metric == mFall {
				depth *= 2
			}
			if role.small {
				depth *= 0.3
			}
			e := effect{c: c, opt: opt, curv: depth / math.Max(d*d, 0.25) / (step * step), primary: metric}
			if k == 0 && len(role.trades) > 0 && rng.Float64() < 0.5 {
				e.trade = role.trades[rng.IntN(len(role.trades))]
				e.slope = (0.3 + 0.7*rng.Float64()) * depth / math.Max(math.Abs(opt-c.def), step*0.5)
			}
			g.effects = append(g.effects, e)
		}
		matter = append(matter, mattering{c: c, side: side, role: role, first: first})
		// A penalty that costs tracking costs it only past some strength: a hinge 0.5–1.2
		// steps above the default.
		if role.up != 0 && rng.Float64() < 0.6 {
			for _, t := range role.trades {
				if t != mLin && t != mAng {
					continue
				}
				at := c.def + (0.5+0.7*rng.Float64())*step
				if at < 0.98 {
					g.coupled.hinges = append(g.coupled.hinges, hinge{c: c, at: at, dir: 1, metric: t, k: (0.04 + 0.08*rng.Float64()) / step})
				}
				break
			}
		}
	}
	return matter
}

// coupledSynergies draws one or two groups of 3–6 scalars that pay together, each member
// towards its side; it returns the members' targets by name.
func (g *generated) coupledSynergies(rng *rand.Rand, matter []mattering) map[string]float64 {
	targets := map[string]float64{}
	perm := rng.Perm(len(matter))
	for n := 1 + rng.IntN(2); n > 0 && len(perm) >= 3; n-- {
		size := 3 + rng.IntN(4)
		var s synergy
		var lead domainRole // the role of the first member: the group pays on its metric
		for len(s.members) < size && len(perm) > 0 {
			m := matter[perm[0]]
			perm = perm[1:]
			step := domainStep(m.c)
			target := math.Min(math.Max(m.c.def+m.side*(0.6+0.8*rng.Float64())*step, 0), 1)
			if math.Abs(target-m.c.def) < 0.3*step {
				continue // its bound is too near: no room to move
			}
			if len(s.members) == 0 {
				lead = m.role
			}
			s.members = append(s.members, member{c: m.c, target: target})
			targets[m.c.name] = target
		}
		if len(s.members) < 3 {
			break
		}
		s.metrics = []string{lead.acts[0]}
		s.depths = []float64{0.3 + 0.3*rng.Float64()}
		if other := session.MetricNames[rng.IntN(len(session.MetricNames))]; other != lead.acts[0] && rng.Float64() < 0.5 {
			s.metrics = append(s.metrics, other)
			s.depths = append(s.depths, 0.5*s.depths[0])
		}
		if s.metrics[0] == mFall {
			s.depths[0] *= 2
		}
		g.coupled.synergies = append(g.coupled.synergies, s)
	}
	return targets
}

// coupledInteractions draws three to five interactions between pairs of scalars that matter.
func (g *generated) coupledInteractions(rng *rand.Rand, matter []mattering) {
	for n := 3 + rng.IntN(3); n > 0 && len(matter) > 1; n-- {
		a, b := matter[rng.IntN(len(matter))], matter[rng.IntN(len(matter))]
		if a.c.name == b.c.name {
			continue
		}
		k := (0.03 + 0.07*rng.Float64()) * float64(1-2*rng.IntN(2)) / (domainStep(a.c) * domainStep(b.c))
		g.inter = append(g.inter, interaction{a: a.first, b: b.first, metric: a.role.acts[0], k: k})
	}
}

// cliffCoords are the scalars whose role has a cliff, in the space's order.
func cliffCoords(sh shape) []coord {
	var risky []coord
	for _, c := range coords(sh.sp) {
		if sh.role(c.name).cliff != 0 {
			risky = append(risky, c)
		}
	}
	return risky
}

// coupledCliffs draws one to three cliffs on scalars whose role has one, 1–2.5 steps out
// the way the role says, and at least half a step past a group's target.
func (g *generated) coupledCliffs(sh shape, rng *rand.Rand, targets map[string]float64) {
	risky := cliffCoords(sh)
	cp := rng.Perm(len(risky))
	for i, n := 0, 1+rng.IntN(3); i < n && i < len(cp); i++ {
		c := risky[cp[i]]
		dir, step := sh.role(c.name).cliff, domainStep(c)
		at := c.def + dir*(1+1.5*rng.Float64())*step
		if t, ok := targets[c.name]; ok && dir*(at-t) < 0.5*step {
			at = t + dir*0.5*step
		}
		if at <= 0.02 || at >= 0.98 {
			continue // the bound comes first: no cliff inside the space
		}
		g.cliffs = append(g.cliffs, cliff{c: c, at: at, dir: dir, steep: (3 + 3*rng.Float64()) / step})
	}
}
