package sim

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"

	"tunebot/session"
)

// A space other than the built-in one (a space printed by `tunebot space --task`, in the
// task's own names) gets surfaces built from the space itself, since the hand-made surface
// and the families' role table are written for the built-in names:
//
//   - each term and param acts on the metrics its `acts` declares, a stronger weight (a
//     param moved the way its `lowers` says) lowering them; one without `acts` gets a small
//     effect on a metric drawn from its name;
//   - seed 0, the demo's surface, is drawn from the space alone: about six in ten scalars
//     have their optimum one step (×2 of a weight, a fifth of a param's range) from the
//     default on the declared side, some of them at a small cost in tracking (or, for a
//     tracking term, in smoothness and power), the others are right at their default; no
//     cliffs, 1.5 % noise; so a session finds a clear gain by trusting the declarations;
//   - seeds > 0 draw from the chosen family, keyed by the space (the same space and seed
//     always give the same surface, another space another one): the domain, coupled and
//     separable families with the roles read from the declarations instead of their table, the
//     generic family as ever, each scalar on a metric drawn at random.
//
// The space's key (a hash of its canonical JSON) goes into every checkpoint, so a job on
// another space than the checkpoint's is refused.

// shape is what the generators need to know about the space a surface is drawn for: the
// space, each scalar's role, and a salt that keys the draws by the space (0 for the
// built-in space, so its families stay frozen).
type shape struct {
	sp    *session.Space
	roles map[string]domainRole
	salt  uint64
	key   string // the space's hash; "" for the built-in space
}

// builtin is the built-in space's shape: the families' own role table.
var builtin = shape{sp: space, roles: domainRoles}

func (sh shape) role(name string) domainRole { return sh.roles[name] }

// custom reports whether the shape is another space than the built-in one.
func (sh shape) custom() bool { return sh.key != "" }

// shapeOf is the shape of sp: the built-in one when sp is nil or names exactly the
// built-in terms and params, in any order (its bounds may differ: the surfaces read names),
// else one read from sp's declarations.
func shapeOf(sp *session.Space) shape {
	if sp == nil || slices.Equal(slices.Sorted(slices.Values(sp.Names())), slices.Sorted(slices.Values(space.Names()))) {
		return builtin
	}
	key := SpaceKey(sp)
	h := fnv.New64a()
	h.Write([]byte(key))
	sh := shape{sp: sp, roles: map[string]domainRole{}, salt: h.Sum64(), key: key}
	for _, t := range sp.Terms {
		sh.roles[t.Name] = declaredRole(sh.salt, t.Name, t.Acts, 1)
	}
	for _, p := range sp.Params {
		up := 0.0
		switch p.Lowers {
		case session.LowersUp:
			up = 1
		case session.LowersDown:
			up = -1
		}
		sh.roles[p.Name] = declaredRole(sh.salt, p.Name, p.Acts, up)
		if r := sh.roles[p.Name]; !r.small {
			r.trades, r.cliff = nil, 0 // a param's side is rarely known; it trades nothing
			sh.roles[p.Name] = r
		}
	}
	return sh
}

// SpaceKey is a short, stable hash of a reward space (its JSON form), recorded in the
// checkpoints of surfaces built from a space other than the built-in one.
func SpaceKey(sp *session.Space) string {
	data, _ := json.Marshal(sp) // a Space always marshals
	h := fnv.New64a()
	h.Write(data)
	return fmt.Sprintf("%016x", h.Sum64())
}

// declaredRole is a scalar's role read from its declaration: the metrics of acts (the
// unknown ones dropped), lowered by moving it towards up; tracking terms trade smoothness and
// power, the other weights tracking; a weight acting on falls makes the robot fall when much
// weaker, one acting on smoothness or tracking when much stronger. A scalar that declares
// no metric acts a little on one drawn from its name.
func declaredRole(salt uint64, name string, acts []string, up float64) domainRole {
	var r domainRole
	for _, a := range acts {
		if slices.Contains(session.MetricNames, a) && !slices.Contains(r.acts, a) {
			r.acts = append(r.acts, a)
		}
	}
	if len(r.acts) == 0 {
		n := len(session.MetricNames)
		return domainRole{acts: []string{session.MetricNames[int(nameHash(salt, name)%uint64(n))]}, small: true}
	}
	r.up = up
	switch r.acts[0] {
	case mLin, mAng:
		r.trades = []string{mAcc, mPower}
	default:
		r.trades = []string{mLin, mAng}
	}
	switch {
	case slices.Contains(r.acts, mFall):
		r.cliff = -1
	case r.acts[0] == mAcc || r.acts[0] == mLin:
		r.cliff = 1
	}
	return r
}

// nameHash is a scalar's own draw on a space: deterministic, different per name and space.
func nameHash(salt uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	s := h.Sum64() ^ salt
	return splitmix(&s)
}

// NewSpaceSurface returns the surface of seed in family for the reward space sp: for the
// built-in space (nil, or the same names) exactly NewFamilySurface's; for another space one
// built from its declarations (see above). Negative seeds and unknown families are refused.
func NewSpaceSurface(sp *session.Space, family Family, seed int64) (*Surface, error) {
	sh := shapeOf(sp)
	if !sh.custom() {
		return NewFamilySurface(family, seed)
	}
	if seed < 0 {
		return nil, fmt.Errorf("surface seed %d must not be negative", seed)
	}
	if family == "" {
		family = FamilyGeneric
	}
	s := &Surface{family: family, seed: seed, sh: &sh}
	switch {
	case seed == 0:
		s.gen = generateDemo(sh)
	case family == FamilyGeneric:
		s.gen = generate(sh, seed)
	case family == FamilyDomain:
		s.gen = generateDomain(sh, seed)
	case family == FamilyCoupled:
		s.gen = generateCoupled(sh, seed)
	case family == FamilySeparable:
		s.gen = generateSeparable(sh, seed)
	case family == FamilyLevers:
		s.gen = generateLevers(sh, seed)
	default:
		return nil, unknownFamily(string(family))
	}
	s.gen.sp = sp
	return s, nil
}

// Space is the reward space the surface reads configurations in.
func (s *Surface) Space() *session.Space {
	if s.sh == nil {
		return space
	}
	return s.sh.sp
}

// demoNoise is the demo surface's relative noise per metric, and smallCurv the curvature
// (log units of a metric per squared unit of position) of a scalar that declares no metric.
const (
	demoNoise = 0.015
	smallCurv = 0.03
)

// generateDemo draws the demo's surface (seed 0) of a space other than the built-in one.
func generateDemo(sh shape) *generated {
	g := newGenerated()
	for _, name := range session.MetricNames {
		g.noise[name] = demoNoise
	}
	for _, c := range coords(sh.sp) {
		role := sh.role(c.name)
		h := nameHash(sh.salt, c.name)
		u := unit(h)
		step := domainStep(c)
		side := role.up
		if side == 0 {
			side = float64(1 - 2*int(h>>63)) // a side nobody declared: drawn from the name
		}
		dist, depth := 1.0, 0.08+0.08*unit(h*0x9e3779b97f4a7c15)
		switch {
		case role.small:
			dist = 0.5
		case u < 0.4:
			dist = 0 // right at its default: moving it only costs
		}
		opt := math.Min(math.Max(c.def+side*dist*step, 0), 1)
		d := math.Abs(opt-c.def) / step
		for k, metric := range role.acts {
			dep := depth
			if k > 0 {
				dep *= 0.5
			}
			if metric == mFall {
				dep *= 2
			}
			curvStep := dep / math.Max(d*d, 0.25)
			if d < 0.2 {
				curvStep = 0.03
			}
			e := effect{c: c, opt: opt, curv: curvStep / (step * step), primary: metric}
			if role.small {
				e.curv = smallCurv // at most that across the whole bounds
			}
			if k == 0 && d >= 0.2 && len(role.trades) > 0 && u > 0.7 {
				e.trade = role.trades[0]
				e.slope = 0.15 * dep / math.Max(math.Abs(opt-c.def), step*0.5)
			}
			g.effects = append(g.effects, e)
		}
	}
	return g
}

// newGenerated is a generated surface with the hand-made surface's metrics at the defaults
// as its base and no effects yet.
func newGenerated() *generated {
	g := &generated{base: asymptote(space.Defaults()), noise: map[string]float64{}}
	f := g.base[mFall] / 0.9
	g.fallOdds = math.Log(f / (1 - f))
	return g
}

// spaceMagnitude is a term's per-episode magnitude on a space other than the built-in one,
// from the first metric it declares against the metric's value at the defaults: a reward
// (positive default) grows as the metric falls, a penalty with it.
func spaceMagnitude(t session.Term, role domainRole, m session.Metrics) float64 {
	if role.small {
		return 0.1
	}
	a := role.acts[0]
	r := m[a] / math.Max(builtinBase[a], 1e-9)
	if t.Default > 0 {
		return math.Exp(-r)
	}
	return r
}

// builtinBase is the hand-made surface's asymptote at the defaults: the scales every
// generated surface starts from.
var builtinBase = asymptote(space.Defaults())
