// Package sim is the built-in simulated trainer: it honours the trainer contract of
// docs/design.md §4 (event files, model_<N>.pt checkpoints, policy.onnx, evaluation.json) without
// a GPU, from a deterministic response surface over the reward configuration. tunebot's
// sim-train and sim-eval subcommands run it, so the demo and the tests exercise real
// subprocesses; Evaluate lets benchmarks score configurations in-process.
//
// The surface is made up, but shaped like the real trade-offs: tracking weights and kernel
// widths set the velocity errors, smoothness penalties lower action acceleration but cost
// tracking past a point, orientation and termination penalties keep the robot upright and
// too little of them (or too strong smoothness) makes it fall, the slip and power penalties
// lower slip and power at some cost elsewhere. The defaults are sound but not optimal: a
// better configuration lies a few 0.5×–2× steps away (narrower tracking kernels, somewhat
// stronger action-rate, slip and power penalties). A reward space with other names (one
// `tunebot space` printed for another task) gets surfaces built from its own declarations
// (spacesurf.go).
package sim

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strconv"

	"tunebot/session"
)

// Tau is the learning time constant in iterations at the default tracking kernel width:
// after Tau iterations the metrics have closed about 63 % of the gap to their asymptote.
const Tau = 150.0

// Seed-to-seed variation: relative noise on the continuous metrics, and the number of
// episodes the fall rate is counted over.
const (
	seedNoise    = 0.015
	fallEpisodes = 4000
)

// Evaluate returns the seven metrics of docs/design.md §3 for a policy trained for iteration
// iterations under cfg, evaluated on seed. It is deterministic: the same arguments give
// the same numbers. Names missing from cfg take the Unitree-Go2-Flat defaults.
func Evaluate(cfg session.RewardConfig, iteration int, seed int) session.Metrics {
	return shipped.Evaluate(cfg, iteration, seed)
}

// Evaluate is the package-level Evaluate on this surface.
func (s *Surface) Evaluate(cfg session.RewardConfig, iteration int, seed int) session.Metrics {
	m := s.Expected(cfg, iteration)
	h := ConfigHash(cfg)
	if s.gen != nil {
		h += fmt.Sprintf("@%d", s.seed) // each surface its own noise
		if s.family != FamilyGeneric {
			h += "/" + string(s.family)
		}
	}
	if s.sh != nil {
		h += "#" + s.sh.key // and each space
	}
	for _, name := range session.MetricNames {
		z := gauss(h, uint64(iteration), uint64(int64(seed)), name)
		if s.gen != nil {
			m[name] *= math.Exp(s.gen.noise[name] * z)
			continue
		}
		if name == session.MetricFallRate {
			// Binomial-like: falls are counted over a few thousand evaluation episodes.
			f := m[name]
			m[name] = math.Max(0, f+z*math.Sqrt(f*(1-f)/fallEpisodes))
			continue
		}
		m[name] *= math.Exp(seedNoise * z)
	}
	return m
}

// Expected is the noise-free surface at an iteration.
func (s *Surface) Expected(cfg session.RewardConfig, iteration int) session.Metrics {
	var a session.Metrics
	if s.gen != nil {
		a = s.gen.asymptote(cfg)
		if s.gen.separable != nil {
			s.gen.separable.early(valuesIn(s.gen.sp, cfg), iteration, a)
		}
	} else {
		a = asymptote(cfg)
	}
	it := float64(max(iteration, 0))
	g := math.Exp(-it / s.tau(cfg))
	return session.Metrics{
		session.MetricVelLinear:   a[session.MetricVelLinear] * (1 + 2.0*g),
		session.MetricVelAngular:  a[session.MetricVelAngular] * (1 + 1.5*g),
		session.MetricActionAcc:   a[session.MetricActionAcc] * (1 + 1.5*g),
		session.MetricOrientation: a[session.MetricOrientation] * (1 + 2.0*g),
		// Early falls fade at a pace of their own, the same for every configuration, so
		// that at an early rung the fall gate compares configurations, not learning speeds.
		session.MetricFallRate: a[session.MetricFallRate] + math.Max(0, 0.3-a[session.MetricFallRate])*math.Exp(-2*it/Tau),
		session.MetricFootSlip: a[session.MetricFootSlip] * (1 + 1.0*g),
		session.MetricPower:    a[session.MetricPower] * (1 + 0.4*g),
	}
}

// tau is the learning time constant: sharper tracking kernels give a sparser signal early
// on and learn more slowly, so narrowing them pays off more at later rungs.
func tau(cfg session.RewardConfig) float64 {
	v := values(cfg)
	return Tau * math.Pow(0.5/v.p("track_linear_velocity.std"), 0.3)
}

// tau is the surface's learning time constant: on a space other than the built-in one,
// which may have no tracking kernel, Tau whatever the configuration.
func (s *Surface) tau(cfg session.RewardConfig) float64 {
	if s.sh != nil {
		return Tau
	}
	return tau(cfg)
}

// quality is the latent "policy quality" a checkpoint records: how far training has come.
func (s *Surface) quality(cfg session.RewardConfig, iteration int) float64 {
	return 1 - math.Exp(-float64(max(iteration, 0))/s.tau(cfg))
}

// cfgValues reads a configuration with the defaults filling gaps.
type cfgValues struct {
	w, pr map[string]float64
}

var space = session.DefaultSpace()

func values(cfg session.RewardConfig) cfgValues { return valuesIn(space, cfg) }

// valuesIn reads a configuration of sp (nil: the built-in space) with sp's defaults filling
// gaps.
func valuesIn(sp *session.Space, cfg session.RewardConfig) cfgValues {
	if sp == nil {
		sp = space
	}
	d := sp.Defaults()
	for k, x := range cfg.Weights {
		d.Weights[k] = x
	}
	for k, x := range cfg.Params {
		d.Params[k] = x
	}
	return cfgValues{w: d.Weights, pr: d.Params}
}

func (v cfgValues) p(name string) float64 { return v.pr[name] }

// in is a penalty's intensity relative to its default magnitude (1 = default); for a term
// that is off by default, relative to ref.
func (v cfgValues) in(name string, ref float64) float64 {
	t, _ := space.Term(name)
	if t.Default != 0 {
		ref = math.Abs(t.Default)
	}
	return math.Abs(v.w[name]) / ref
}

func pos(x float64) float64 {
	if x > 0 {
		return x
	}
	return 0
}

// lg2 is log2 that treats 0 (a term switched off) as very weak rather than -Inf.
func lg2(x float64) float64 { return math.Log2(math.Max(x, 1e-3)) }

// bowl is 1 at x = opt and grows quadratically in log distance; normalised to 1 at the
// default so a factor is 1 for the default configuration.
func bowl(x, opt, def, k float64) float64 {
	f := func(x float64) float64 { l := math.Log(x / opt); return 1 + k*l*l }
	return f(x) / f(def)
}

// asymptote is the demo surface (seed 0): the metrics a policy trained long enough under cfg
// reaches, each a product of factors of the scalars that act on it.
func asymptote(cfg session.RewardConfig) session.Metrics {
	d := demoScalarsOf(cfg)
	return session.Metrics{
		session.MetricVelLinear: d.linError(), session.MetricVelAngular: d.angError(), session.MetricActionAcc: d.actionAcc(),
		session.MetricOrientation: d.orientation(), session.MetricFallRate: d.fallRate(), session.MetricFootSlip: d.footSlip(),
		session.MetricPower: d.power(),
	}
}

// demoScalars are the scalars the demo surface reads: weights (w…), the intensities of the
// penalties (i…, in multiples of their defaults) and the params.
type demoScalars struct {
	wl, wa, iar, ija, isl, ior, ibav, iam, iterm, ijpl, ipose, igait, icl, ifs, iss, iep, sl, sa, period, gthr, height, poseScale, walkThr, slipCmd, standCmd float64
}

// demoScalarsOf reads the demo surface's scalars from cfg.
func demoScalarsOf(cfg session.RewardConfig) demoScalars {
	v := values(cfg)
	return demoScalars{
		wl:        v.w["track_linear_velocity"],
		wa:        v.w["track_angular_velocity"],
		iar:       v.in("action_rate_l2", 0),
		ija:       v.in("joint_acc_l2", 0),
		isl:       v.in("soft_landing", 0),
		ior:       v.in("body_orientation_l2", 0),
		ibav:      v.in("body_ang_vel", 0),
		iam:       v.in("angular_momentum", 0),
		iterm:     v.in("is_terminated", 0),
		ijpl:      v.in("joint_pos_limits", 0),
		ipose:     v.in("pose", 0),
		igait:     v.in("foot_gait", 0),
		icl:       v.in("foot_clearance", 0),
		ifs:       v.in("foot_slip", 0),
		iss:       v.in("stand_still", 0),
		iep:       v.in("electrical_power", 1e-3),
		sl:        v.p("track_linear_velocity.std"),
		sa:        v.p("track_angular_velocity.std"),
		period:    v.p("foot_gait.period"),
		gthr:      v.p("foot_gait.threshold"),
		height:    v.p("foot_clearance.target_height"),
		poseScale: (v.p("pose.std_standing_scale") + v.p("pose.std_walking_scale") + v.p("pose.std_running_scale")) / 3,
		walkThr:   v.p("pose.walking_threshold"),
		slipCmd:   v.p("foot_slip.command_threshold"),
		standCmd:  v.p("stand_still.command_threshold"),
	}
}

// linError is the linear velocity error: over-regularisation (penalties stronger than the
// task can bear) costs tracking.
func (d demoScalars) linError() float64 {
	overSmooth := 0.4*sq(pos(lg2(d.iar)-0.6)) + 0.05*sq(pos(lg2(d.ija)-1))
	lin := 0.21 *
		math.Pow(d.wl, -0.3) *
		bowl(d.sl, 0.35, 0.5, 2.0) *
		(1 + overSmooth) *
		(1 + 0.12*sq(pos(lg2(d.ior)-1))) *
		(1 + 0.08*sq(pos(lg2(d.ifs)-1))) *
		(1 + 0.004*d.iep*d.iep) *
		bowlLin(d.igait, 1.4, 0.06) *
		bowlLin(d.period/0.5, 1, 1.5) / bowlLin(0.6/0.5, 1, 1.5) *
		bowlLin(d.ipose, 0.8, 0.05) *
		math.Pow(d.poseScale, -0.05) *
		(1 + 0.3*sq(pos(-lg2(d.iar)-1.5)))
	return lin
}

// angError is the angular velocity error.
func (d demoScalars) angError() float64 {
	ang := 0.30 *
		math.Pow(d.wa, -0.35) *
		math.Pow(d.wl, 0.08) *
		bowl(d.sa, 0.5, 0.7071, 2.0) *
		(1 + 0.20*sq(pos(lg2(d.iar)-0.6))) *
		(1 + 0.25*sq(pos(lg2(d.ibav)))) *
		(1 + 0.15*sq(pos(lg2(d.iam)))) *
		(1 + 0.003*d.iep*d.iep)
	return ang
}

// actionAcc is the action acceleration (smoothness).
func (d demoScalars) actionAcc() float64 {
	acc := 12.0 *
		math.Pow(d.iar, -0.6) *
		math.Pow((1+d.ija)/2, -0.25) *
		math.Pow((1+d.isl)/2, -0.08) *
		math.Pow(d.wl, 0.25) *
		math.Pow(d.wa, 0.1) *
		math.Pow(1+0.3*d.iep, -0.1) *
		math.Pow(d.period/0.6, -0.5)
	return acc
}

// orientation is the orientation error.
func (d demoScalars) orientation() float64 {
	orient := 0.05 *
		math.Pow(math.Max(d.ior, 0.05), -0.35) *
		math.Pow((1+d.ibav)/2, -0.12) *
		math.Pow((1+d.iam)/2, -0.10) *
		math.Pow(d.wl, 0.15) *
		math.Pow((1+d.ipose)/2, -0.10) *
		(1 + 0.3*sq(pos(-lg2(d.iar)-1)))
	return orient
}

// fallRate is the fall rate: a logistic of the ways a reward lets the robot fall.
func (d demoScalars) fallRate() float64 {
	u := -4.6 +
		2.2*sq(pos(lg2(d.iar)-0.8)) + // smoothness so strong the policy cannot recover a stumble
		3.0*sq(pos(-lg2(d.ior)-0.6)) + // too little incentive to stay upright
		2.5*sq(pos(-lg2(d.iterm)-0.5)) + // falling costs too little
		1.2*sq(pos(-lg2(d.ijpl)-1)) +
		0.8*sq(pos(lg2(d.ifs)-1)) +
		0.03*d.iep*d.iep +
		1.5*sq(pos(lg2(d.wl)-0.8)) +
		sq(pos((d.height-0.12)/0.02)) -
		0.25*math.Min(1, pos(lg2(d.ior))) +
		0.5*sq(pos(d.walkThr-0.3)/0.1)
	return 0.9 / (1 + math.Exp(-u))
}

// footSlip is the foot slip.
func (d demoScalars) footSlip() float64 {
	slip := 0.08 *
		(0.3 + 0.7*math.Pow((1+d.ifs)/2, -0.9)) *
		math.Pow(d.wl, 0.2) *
		math.Pow((1+d.igait)/2, -0.1) *
		bowlLin(d.gthr/0.56, 1, 2) *
		math.Pow(d.slipCmd/0.1, 0.05) *
		math.Pow(d.height/0.1, -0.1)
	return slip
}

// power is the electrical power.
func (d demoScalars) power() float64 {
	power := 150.0 *
		math.Pow(1+0.6*d.iep, -0.4) *
		math.Pow(d.wl, 0.3) *
		math.Pow(d.iar, -0.08) *
		math.Pow((1+d.iss)/2, -0.1) *
		math.Pow((1+d.ija)/2, -0.05) *
		math.Pow(d.height/0.1, 0.3) *
		math.Pow(d.standCmd/0.1, 0.03) *
		math.Pow((1+d.icl)/2, 0.05)
	return power
}

func sq(x float64) float64 { return x * x }

// bowlLin is a quadratic bowl in x around opt, normalised to 1 at x = 1 (the default).
func bowlLin(x, opt, k float64) float64 {
	return (1 + k*sq(x-opt)) / (1 + k*sq(1-opt))
}

// ConfigHash is a short, stable hash of a configuration: names sorted, values in their
// shortest exact form. It seeds the evaluation noise and is recorded in checkpoints.
func ConfigHash(cfg session.RewardConfig) string {
	h := fnv.New64a()
	for _, part := range []struct {
		tag string
		m   map[string]float64
	}{{"w", cfg.Weights}, {"p", cfg.Params}} {
		keys := make([]string, 0, len(part.m))
		for k := range part.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(h, "%s:%s=%s;", part.tag, k, strconv.FormatFloat(part.m[k], 'g', -1, 64))
		}
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// gauss is a standard normal draw determined by its inputs (splitmix64 + Box–Muller).
func gauss(hash string, a, b uint64, name string) float64 {
	h := fnv.New64a()
	h.Write([]byte(hash))
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], a)
	binary.LittleEndian.PutUint64(buf[8:], b)
	h.Write(buf[:])
	h.Write([]byte(name))
	s := h.Sum64()
	u1 := unit(splitmix(&s))
	u2 := unit(splitmix(&s))
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// unit maps to (0, 1], never 0, so the logarithm above is finite.
func unit(x uint64) float64 { return (float64(x>>11) + 1) / (1 << 53) }
