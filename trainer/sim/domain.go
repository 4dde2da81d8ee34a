package sim

import (
	"math"
	"math/rand/v2"

	"tunebot/session"
)

// The domain family (FamilyDomain) draws surfaces shaped the way real reward spaces are, as a
// reward engineer describes them: each term acts on the metrics its name is about (the
// tracking weights and kernels on the velocity errors, action-rate and joint-acc on
// smoothness, orientation and termination on stability and falls, slip on slip, power on
// power), most often the way its name says (a stronger penalty lowers its metric) and with a
// trade-off into another metric (mostly tracking: a stronger penalty costs tracking); most
// defaults sit near a good point and the gains come from moderate moves of several terms; a
// few moves past a threshold make the robot fall; metric noise is 1–5 %.
//
// What a reward engineer believes is not the truth of a surface: a term may turn out not to
// matter, its optimum may lie on the side its name does not suggest, and it may act on a
// metric nobody declared. Each surface draws those exceptions.
//
// The table below is this family's own, written from the terms' names; it is not read from
// the reward space's declarations (session.Space), which a sampler may use as its prior, so
// that a change to the declarations never changes the problems. Only a space with other
// names than the built-in one, which the table does not cover, has its roles read from its
// declarations (spacesurf.go).

// domainRole is what a scalar is about on a domain-shaped surface.
type domainRole struct {
	acts []string // the metrics it acts on, the first the main one
	// up is +1 when raising the scalar (a stronger weight: a larger magnitude) is expected
	// to lower the metrics it acts on, 0 when its sign is not known before a trial.
	up float64
	// trades are the metrics that most often pay for moving it the way that helps.
	trades []string
	// cliff is +1 when raising it far makes the robot fall, -1 when lowering it far does,
	// 0 when neither.
	cliff float64
	// small marks a scalar nobody declared a metric for (a space's term without acts): it
	// acts a little on the one metric of acts, drawn from its name (spacesurf.go).
	small bool
}

const (
	mLin   = session.MetricVelLinear
	mAng   = session.MetricVelAngular
	mAcc   = session.MetricActionAcc
	mOri   = session.MetricOrientation
	mFall  = session.MetricFallRate
	mSlip  = session.MetricFootSlip
	mPower = session.MetricPower
)

var domainRoles = map[string]domainRole{
	"track_linear_velocity":            {acts: []string{mLin}, up: 1, trades: []string{mAcc, mPower}, cliff: 1},
	"track_angular_velocity":           {acts: []string{mAng}, up: 1, trades: []string{mAcc, mLin}},
	"body_orientation_l2":              {acts: []string{mOri, mFall}, up: 1, trades: []string{mLin, mAng}, cliff: -1},
	"pose":                             {acts: []string{mOri}, up: 1, trades: []string{mLin, mAng}},
	"body_ang_vel":                     {acts: []string{mOri}, up: 1, trades: []string{mAng}},
	"angular_momentum":                 {acts: []string{mOri}, up: 1, trades: []string{mAng}},
	"is_terminated":                    {acts: []string{mFall}, up: 1, trades: []string{mLin}, cliff: -1},
	"joint_acc_l2":                     {acts: []string{mAcc}, up: 1, trades: []string{mLin}},
	"joint_pos_limits":                 {acts: []string{mFall}, up: 1, trades: []string{mLin}, cliff: -1},
	"action_rate_l2":                   {acts: []string{mAcc}, up: 1, trades: []string{mLin, mAng}, cliff: 1},
	"foot_gait":                        {acts: []string{mSlip}, up: 1, trades: []string{mLin, mPower}},
	"foot_clearance":                   {acts: []string{mSlip}, up: 1, trades: []string{mPower}},
	"foot_slip":                        {acts: []string{mSlip}, up: 1, trades: []string{mLin}},
	"soft_landing":                     {acts: []string{mAcc, mPower}, up: 1, trades: []string{mLin}},
	"stand_still":                      {acts: []string{mPower}, up: 1, trades: []string{mLin}},
	"electrical_power":                 {acts: []string{mPower}, up: 1, trades: []string{mLin, mAcc}},
	"track_linear_velocity.std":        {acts: []string{mLin}},
	"track_angular_velocity.std":       {acts: []string{mAng}},
	"pose.std_standing_scale":          {acts: []string{mOri}},
	"pose.std_walking_scale":           {acts: []string{mOri}},
	"pose.std_running_scale":           {acts: []string{mOri}},
	"pose.walking_threshold":           {acts: []string{mOri}},
	"pose.running_threshold":           {acts: []string{mOri}},
	"foot_gait.period":                 {acts: []string{mAcc, mSlip}},
	"foot_gait.threshold":              {acts: []string{mSlip}},
	"foot_clearance.target_height":     {acts: []string{mSlip, mPower}, cliff: 1},
	"foot_gait.command_threshold":      {acts: []string{mSlip}},
	"foot_clearance.command_threshold": {acts: []string{mSlip}},
	"foot_slip.command_threshold":      {acts: []string{mSlip}},
	"stand_still.command_threshold":    {acts: []string{mPower}},
}

// domainStep is one "step" of a scalar in position units: a factor of 2 of a weight's
// magnitude, a fifth of a param's range. Distances of this family are drawn in steps.
func domainStep(c coord) float64 {
	if c.weight {
		return math.Ln2 / (c.hi - c.lo)
	}
	return 0.2
}

// generateDomain draws a surface of the domain family.
func generateDomain(sh shape, seed int64) *generated {
	rng := rand.New(rand.NewPCG(uint64(seed)^sh.salt, 0xd0a1d0a1d0a1d0a1))
	g := drawGenerated(rng)
	var risky []coord // scalars whose role has a cliff
	var riskyDir []float64
	for _, c := range coords(sh.sp) {
		role := sh.role(c.name)
		if role.cliff != 0 {
			risky, riskyDir = append(risky, c), append(riskyDir, role.cliff)
		}
		if rng.Float64() < 0.25 {
			continue // does not matter on this surface, whatever its name says
		}
		g.effects = append(g.effects, domainEffects(rng, c, role)...)
	}
	domainInteractions(rng, g)
	domainCliffs(rng, g, risky, riskyDir)
	return g
}

// drawGenerated starts a surface of the domain-shaped families (newGenerated) and draws its
// noise, 1–5 % per metric.
func drawGenerated(rng *rand.Rand) *generated {
	g := newGenerated()
	for _, name := range session.MetricNames {
		g.noise[name] = 0.01 + 0.04*rng.Float64()
	}
	return g
}

// domainEffects draws what a scalar that matters does: where its optimum lies (near, a
// moderate move or far, on the side its role says, or, one time in five, the other side),
// its effect on each metric its role acts on (with a trade-off into another metric), and
// one time in five a side effect nobody declared.
func domainEffects(rng *rand.Rand, c coord, role domainRole) []effect {
	step := domainStep(c)
	// Where its optimum lies, in steps from the default: near (no gain to be had,
	// only cost), a moderate move, or far.
	var dist float64
	switch r := rng.Float64(); {
	case r < 0.2:
		dist = 0.2 * rng.Float64()
	case r < 0.85:
		dist = 0.4 + 1.1*rng.Float64()
	default:
		dist = 1.5 + 1.5*rng.Float64()
	}
	side := role.up
	if side == 0 || rng.Float64() < 0.2 {
		side = float64(1 - 2*rng.IntN(2)) // not the side the name suggests, or no known side
	}
	opt := math.Min(math.Max(c.def+side*dist*step, 0), 1)
	d := math.Abs(opt-c.def) / step // the distance left once cut to the bounds
	var out []effect
	for k, metric := range role.acts {
		out = append(out, domainEffect(rng, c, role, k, metric, opt, d))
	}
	if rng.Float64() < 0.2 {
		// A side effect nobody declared: the scalar also acts on another metric.
		other := session.MetricNames[rng.IntN(len(session.MetricNames))]
		if other != role.acts[0] {
			depth := 0.015 + 0.05*rng.Float64()
			sideOpt := math.Min(math.Max(c.def+float64(1-2*rng.IntN(2))*(0.5+rng.Float64())*step, 0), 1)
			sd := math.Abs(sideOpt-c.def) / step
			out = append(out, effect{c: c, opt: sideOpt, curv: depth / math.Max(sd*sd, 0.25) / (step * step), primary: other})
		}
	}
	return out
}

// domainEffect is a scalar's effect on the k-th metric its role acts on, with its optimum
// at opt, d steps from the default.
func domainEffect(rng *rand.Rand, c coord, role domainRole, k int, metric string, opt, d float64) effect {
	step := domainStep(c)
	// The gain at the optimum, in log units of the metric (the fall rate: log-odds),
	// 0.025–0.25; a second metric gets less.
	depth := 0.025 * math.Pow(10, rng.Float64())
	if k > 0 {
		depth *= 0.5
	}
	if metric == mFall {
		depth *= 2
	}
	if role.small {
		depth *= 0.3
	}
	// Curvature per squared step: the depth over the distance, and a default that is
	// already right is not a knife edge but still costs when moved.
	curvStep := depth / math.Max(d*d, 0.25)
	if d < 0.2 {
		curvStep = 0.02 + 0.08*rng.Float64()
	}
	e := effect{c: c, opt: opt, curv: curvStep / (step * step), primary: metric}
	if k == 0 && len(role.trades) > 0 && rng.Float64() < 0.7 {
		// Moving towards the optimum costs a trade metric, linearly: at the optimum
		// 10–70 % of the gain, in the metric's own log units.
		e.trade = role.trades[rng.IntN(len(role.trades))]
		e.slope = (0.1 + 0.6*rng.Float64()) * depth / math.Max(math.Abs(opt-c.def), step*0.5)
	}
	return e
}

// domainInteractions draws a few interactions between scalars that matter, on a metric one
// of them acts on.
func domainInteractions(rng *rand.Rand, g *generated) {
	for n := 2 + rng.IntN(2); n > 0 && len(g.effects) > 1; n-- {
		a, b := rng.IntN(len(g.effects)), rng.IntN(len(g.effects))
		if g.effects[a].c.name == g.effects[b].c.name {
			continue
		}
		sa, sb := domainStep(g.effects[a].c), domainStep(g.effects[b].c)
		k := (0.02 + 0.06*rng.Float64()) * float64(1-2*rng.IntN(2)) / (sa * sb)
		g.inter = append(g.inter, interaction{a: a, b: b, metric: g.effects[a].primary, k: k})
	}
}

// domainCliffs draws one to three cliffs, on scalars whose role has one: 1–2.5 steps from
// the default the way the role says, the fall rate rises 3–6 log-odds per step past it.
func domainCliffs(rng *rand.Rand, g *generated, risky []coord, riskyDir []float64) {
	perm := rng.Perm(len(risky))
	for i, n := 0, 1+rng.IntN(3); i < n && i < len(perm); i++ {
		c, dir := risky[perm[i]], riskyDir[perm[i]]
		step := domainStep(c)
		at := c.def + dir*(1+1.5*rng.Float64())*step
		if at <= 0.02 || at >= 0.98 {
			continue // the bound comes first: no cliff inside the space
		}
		g.cliffs = append(g.cliffs, cliff{c: c, at: at, dir: dir, steep: (3 + 3*rng.Float64()) / step})
	}
}
