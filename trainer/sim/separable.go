package sim

import (
	"math"
	"math/rand/v2"

	"tunebot/session"
)

// The separable family (FamilySeparable) draws surfaces where the gains are within the
// 0.5×–2× box around the defaults and come from separate terms, but where the first moves a
// search makes are often wrong and have to be taken back:
//
//   - each scalar acts only on the metrics its name is about (the domain family's table of
//     roles); about half of them do not matter, yet moving one costs a little (a shallow well
//     at its default, 0.008–0.024 log units of its metric, 0.6 steps wide), so a move
//     carried on a term that does not matter lowers the score;
//   - a scalar that matters has its own optimum strictly inside the box (never at a bound),
//     on the side its name suggests 7 times in 10, and no group or interaction: the gains add
//     up term by term. Every effect is a Gaussian well, so no move, however far, costs more
//     than its depth. It is one of three kinds, drawn 4 : 3 : 3:
//       - plain: a well 0.4–0.9 of the way to the box's edge (at most 1.3 steps), 0.03–0.12
//         log units deep;
//       - overshoot: a narrow well only 0.25–0.4 steps away, 0.03–0.09 deep, so a small move
//         helps and a full step (×2) costs against the default;
//       - decoy: a narrow well 0.5–0.9 of the way to the box's edge (0.05–0.15 deep), and on
//         the other side, 0.2–0.35 steps from the default, a shallow decoy (0.35–0.5 of the
//         depth, more if needed) whose pull at the default is at least twice the well's: the
//         local slope points away from the optimum, and the decoy is on the side the name
//         suggests;
//   - for half of those that matter a trade-off: moving towards the optimum costs another
//     metric the role names, linearly up to the optimum (10–50 % of the depth), nothing the
//     other way;
//   - a deceptive early signal on 3 scalars in 10: a move one way lowers a metric by
//     0.02–0.06 log units per step (bounded) at rung 0's 300 iterations, fading with a time
//     constant of 300 iterations (14 % of it left at 900, nothing at 2000), pointing away
//     from the optimum of one that matters 7 times in 10;
//   - one or two cliffs on the scalars whose role has one, past the box's edge (and at least
//     a step from the default), so a whole-box draw never falls but a search that keeps
//     going may; noise of 1–5 % per metric.
//
// The box is every scalar's 0.5×–2× of its default cut to its bounds (a weight's one step
// either way); a term off by default (0) has no box and does not matter. It was drawn and
// frozen (TestFamiliesAreFrozen) before any method was measured on it.

// FamilySeparable is the separable family (this file).
const FamilySeparable Family = "separable"

// well is a Gaussian dip of a metric, in log units: depth at center, width w (position).
type well struct {
	c        coord
	metric   string
	center   float64
	w, depth float64
}

// value is the well's effect at u against the default.
func (wl well) value(u float64) float64 {
	at := func(x float64) float64 { return -wl.depth * math.Exp(-sq(x-wl.center)/(2*sq(wl.w))) }
	return at(u) - at(wl.c.def)
}

// fade is an early signal: moving the scalar by x steps in dir lowers the metric by
// k·tanh(x) log units at rung 0's 300 iterations, fading as exp(-iteration/fadeTau).
type fade struct {
	c      coord
	metric string
	dir    float64
	k      float64
}

// fadeTau is the time constant of the early signals, in iterations.
const fadeTau = 300.0

// tradeoff is what moving a scalar towards its optimum costs another metric: cost log units
// once it has moved upto (position) in dir, in proportion before, nothing the other way.
type tradeoff struct {
	c      coord
	metric string
	dir    float64
	upto   float64
	cost   float64
}

// separableParts are what the separable family adds to a generated surface.
type separableParts struct {
	wells  []well
	trades []tradeoff
	fades  []fade
}

// add adds the wells' and trade-offs' effects at v to logs.
func (p *separableParts) add(v cfgValues, logs map[string]float64) {
	for _, wl := range p.wells {
		logs[wl.metric] += wl.value(wl.c.pos(v))
	}
	for _, t := range p.trades {
		logs[t.metric] += t.cost * math.Min(math.Max(t.dir*(t.c.pos(v)-t.c.def)/t.upto, 0), 1)
	}
}

// early scales the metrics of m (not the fall rate) by the early signals at iteration.
func (p *separableParts) early(v cfgValues, iteration int, m session.Metrics) {
	f := math.Exp(1 - float64(max(iteration, 0))/fadeTau)
	for _, e := range p.fades {
		x := e.dir * (e.c.pos(v) - e.c.def) / domainStep(e.c)
		m[e.metric] *= math.Exp(-e.k * math.Tanh(x) * f)
	}
}

// separableBox is c's box (0.5×–2× of its default, cut to its bounds) in position units;
// ok is false for a term off by default.
func separableBox(sp *session.Space, c coord) (lo, hi float64, ok bool) {
	if c.weight {
		if t, _ := sp.Term(c.name); t.Default == 0 {
			return 0, 0, false
		}
		step := domainStep(c)
		return math.Max(c.def-step, 0), math.Min(c.def+step, 1), true
	}
	p, _ := sp.Param(c.name)
	at := func(x float64) float64 { return (x - p.Min) / (p.Max - p.Min) }
	return at(math.Max(p.Default*0.5, p.Min)), at(math.Min(p.Default*2, p.Max)), true
}

// generateSeparable draws a surface of the separable family.
func generateSeparable(sh shape, seed int64) *generated {
	rng := rand.New(rand.NewPCG(uint64(seed)^sh.salt, 0x5e9a5e9a5e9a5e9a))
	g := &generated{base: asymptote(space.Defaults()), noise: map[string]float64{}, separable: &separableParts{}}
	f := g.base[mFall] / 0.9
	g.fallOdds = math.Log(f / (1 - f))
	for _, name := range session.MetricNames {
		g.noise[name] = 0.01 + 0.04*rng.Float64()
	}
	// The draws happen in this order, scalar by scalar, then the cliffs: the family is frozen.
	for _, c := range coords(sh.sp) {
		g.separableScalar(sh, rng, c)
	}
	g.separableCliffs(sh, rng)
	return g
}

// separableScalar draws what one scalar does: whether it matters, its kind, its trade-off
// and its early signal.
func (g *generated) separableScalar(sh shape, rng *rand.Rand, c coord) {
	role := sh.role(c.name)
	metric := role.acts[0]
	step := domainStep(c)
	lo, hi, ok := separableBox(sh.sp, c)
	matters := rng.Float64() < 0.5
	// room[0] below the default, room[1] above it, in steps.
	room := [2]float64{(c.def - lo) / step, (hi - c.def) / step}
	side := role.up
	if side == 0 {
		side = float64(1 - 2*rng.IntN(2))
	}
	declared := side
	if rng.Float64() < 0.3 {
		side = -side
	}
	kind := rng.Float64()
	if matters && ok && kind >= 0.7 {
		side = -declared // a decoy lies on the side the name suggests, the optimum on the other
	}
	if roomOf(room, side) < 0.3 {
		side = -side
	}
	if !ok || roomOf(room, side) < 0.3 {
		matters = false
	}
	optDir := 0.0 // the side of its optimum; 0: it does not matter
	if !matters {
		// A move costs a little, however small: a shallow well at the default.
		g.separable.wells = append(g.separable.wells, well{c: c, metric: metric, center: c.def, w: 0.6 * step, depth: 0.008 + 0.016*rng.Float64()})
	} else {
		optDir = side
		g.separableEffect(rng, c, role, kind, side, roomOf(room, side), roomOf(room, -side))
	}
	if rng.Float64() < 0.3 && metric != mFall {
		dir := float64(1 - 2*rng.IntN(2))
		if optDir != 0 {
			dir = -optDir
			if rng.Float64() < 0.3 {
				dir = optDir
			}
		}
		g.separable.fades = append(g.separable.fades, fade{c: c, metric: metric, dir: dir, k: 0.02 + 0.04*rng.Float64()})
	}
}

// roomOf is the room on side (+1 above the default, -1 below it).
func roomOf(room [2]float64, side float64) float64 {
	if side > 0 {
		return room[1]
	}
	return room[0]
}

// separableEffect draws the effect of a scalar that matters, of kind (plain below 0.4,
// overshoot below 0.7, decoy above), its optimum on side with room steps to the box's
// edge there and other on the other side. Every effect is a well, so that no single move,
// however far, costs more than its depth.
func (g *generated) separableEffect(rng *rand.Rand, c coord, role domainRole, kind, side, room, other float64) {
	step := domainStep(c)
	metric := role.acts[0]
	fall := 1.0
	if metric == mFall {
		fall = 2
	}
	var dist, depth float64
	switch {
	case kind < 0.4:
		dist = (0.4 + 0.5*rng.Float64()) * math.Min(room, 1.3)
		depth = fall * (0.03 + 0.09*rng.Float64())
		g.separable.wells = append(g.separable.wells, well{c: c, metric: metric, center: c.def + side*dist*step, w: math.Max(0.5*dist, 0.3) * step, depth: depth})
	case kind < 0.7 || other < 0.3:
		// Narrow: half the depth is gained at the optimum, and a full step costs about as
		// much against the default.
		dist = math.Min(0.25+0.15*rng.Float64(), 0.9*room)
		depth = fall * (0.03 + 0.06*rng.Float64())
		g.separable.wells = append(g.separable.wells, well{c: c, metric: metric, center: c.def + side*dist*step, w: 0.8 * dist * step, depth: depth})
	default:
		dist = (0.5 + 0.4*rng.Float64()) * math.Min(room, 1.3)
		depth = fall * (0.05 + 0.1*rng.Float64())
		g.separableDecoy(rng, c, metric, side, dist, depth, other)
	}
	if len(role.trades) > 0 && rng.Float64() < 0.5 {
		// Moving towards the optimum costs another metric, linearly up to the optimum: 10–50 %
		// of the depth there; moving the other way gains nothing on it.
		g.separable.trades = append(g.separable.trades, tradeoff{c: c, metric: role.trades[rng.IntN(len(role.trades))],
			dir: side, upto: dist * step, cost: (0.1 + 0.4*rng.Float64()) * depth})
	}
}

// separableDecoy adds the decoy kind's well at the optimum, dist steps on side, and its
// decoy on the other side, with a pull at the default at least twice the well's.
func (g *generated) separableDecoy(rng *rand.Rand, c coord, metric string, side, dist, depth, other float64) {
	step := domainStep(c)
	main := well{c: c, metric: metric, center: c.def + side*dist*step, w: 0.35 * dist * step, depth: depth}
	dd := math.Min(0.2+0.15*rng.Float64(), 0.8*other)
	decoy := well{c: c, metric: metric, center: c.def - side*dd*step, w: 0.6 * dd * step, depth: (0.35 + 0.15*rng.Float64()) * depth}
	// The slopes at the default, in log units per position: the well's pull, the decoy's.
	pull := func(wl well) float64 {
		x := c.def - wl.center
		return wl.depth * math.Abs(x) / sq(wl.w) * math.Exp(-sq(x)/(2*sq(wl.w)))
	}
	if p, q := pull(decoy), pull(main); p < 2*q {
		decoy.depth *= 2 * q / p
	}
	g.separable.wells = append(g.separable.wells, main, decoy)
}

// separableCliffs draws one or two cliffs on scalars whose role has one, past the box's edge
// the way the role says and at least a step from the default.
func (g *generated) separableCliffs(sh shape, rng *rand.Rand) {
	risky := cliffCoords(sh)
	perm := rng.Perm(len(risky))
	for i, n := 0, 1+rng.IntN(2); i < n && i < len(perm); i++ {
		c := risky[perm[i]]
		dir, step := sh.role(c.name).cliff, domainStep(c)
		lo, hi, _ := separableBox(sh.sp, c)
		edge := hi
		if dir < 0 {
			edge = lo
		}
		at := c.def + dir*math.Max(dir*(edge-c.def), step) + dir*(0.2+0.6*rng.Float64())*step
		if at <= 0.02 || at >= 0.98 {
			continue // the bound comes first: no cliff inside the space
		}
		g.cliffs = append(g.cliffs, cliff{c: c, at: at, dir: dir, steep: (3 + 3*rng.Float64()) / step})
	}
}
