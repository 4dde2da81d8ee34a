package advisor

import (
	"encoding/json"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"tunebot/session"
)

// The numeric sampler's model is composite (docs/design.md §5; anchor: Astudillo & Frazier,
// "Bayesian optimization of composite functions", ICML 2019). Every trial reports seven
// metrics, and the score and the gates are a known function of them (session.Scorer). So
// the sampler models each metric on its own, from the scalars' positions, and predicts the
// score and each gate by pushing draws of the predicted metrics through the session's own
// Scorer. A move that hurt tracking and helped slip is then seen as exactly that, and a gate
// is predicted rather than discovered by breaking it.
//
// Each metric (in log units; the fall rate in log-odds) is a Bayesian regression on every
// scalar's position, in unit steps from the baseline (×2 of a weight's magnitude, a fifth
// of a param's range), with a linear and a curvature term per scalar. The prior carries what
// a reward engineer knows before any trial, from the reward space's declarations
// (session.Term.Acts, session.Param.Acts): strong on the metrics a scalar is declared to act
// on, with the expected sign as its mean (a stronger weight lowers them), and weak on every
// other metric, since most scalars move few metrics. The trials overrule the prior where
// they say otherwise.

// priorOptions is the composite model's prior, per unit step (log units of a metric).
type priorOptions struct {
	// DeclaredSD is the spread of a declared effect per step, DeclaredMean the size of its
	// expected sign's mean (a stronger weight lowers the metric by this much per step).
	DeclaredSD, DeclaredMean float64
	// DeclaredCurvMean and DeclaredCurvSD are a declared metric's curvature per squared step:
	// positive, since a scalar that acts on a metric has a best value for it. The mean is
	// for scalars whose direction is declared; UndeclaredCurvMean is the one for those whose
	// direction is not (default 0: none, bench/sampler/README.md, Search V).
	DeclaredCurvMean, DeclaredCurvSD float64
	UndeclaredCurvMean               float64
	// WeakSD and WeakCurvSD are the spreads on metrics a scalar is not declared to act on.
	WeakSD, WeakCurvSD float64
	// TrackSD is the spread of any scalar's effect on the velocity errors (every term may
	// cost tracking), and TrackMean the mean cost per step of a stronger penalty there.
	TrackSD, TrackMean float64
	// FallScale multiplies every spread and mean on the fall rate, whose log-odds move more
	// than the other metrics' logs (a cliff is several log-odds per step).
	FallScale float64
	// NoiseSD is one evaluation's noise per metric when the trials' seeds do not tell it
	// (a single evaluation seed); NoiseFloor is added in quadrature to the measured noise,
	// for what the model does not capture (interactions, training noise).
	NoiseSD, NoiseFloor float64
	// GP adds the residual Gaussian process to every metric's model (gp.go), its kernel's
	// amplitude around GPAmp (model units, default 0.05; times FallScale on the fall rate)
	// and its lengths around GPLength steps (default 1).
	GP              bool
	GPAmp, GPLength float64
	// LevelSD is the prior spread of an earlier session's level offset around what the two
	// sessions' baselines say (earlierObservations), per metric (default 0.3).
	LevelSD float64
	// HingeSD is the spread of a penalty's cost on the velocity errors past HingeAt steps
	// stronger than the baseline, per step past it (features' hinge term): tracking that
	// degrades only past some strength, which the linear and curvature terms cannot follow.
	// 0 or negative: no hinge (its coefficient held at 0), the default: 0.05 lost the
	// worst family's median on the tuning seeds (bench/sampler/README.md, Search III).
	HingeSD float64
}

func (p priorOptions) withDefaults() priorOptions {
	def := func(v *float64, d float64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&p.DeclaredSD, 0.08)
	def(&p.DeclaredMean, 0.03)
	def(&p.DeclaredCurvMean, 0.02)
	def(&p.DeclaredCurvSD, 0.04)
	def(&p.WeakSD, 0.02)
	def(&p.WeakCurvSD, 0.01)
	def(&p.TrackSD, 0.04)
	def(&p.TrackMean, 0.02)
	def(&p.FallScale, 3)
	def(&p.NoiseSD, 0.03)
	def(&p.NoiseFloor, 0.01)
	def(&p.LevelSD, 0.3)
	def(&p.GPAmp, 0.05)
	def(&p.GPLength, 1)
	return p
}

// metricFit is one metric's posterior over its coefficients: 0 is the intercept (the
// metric at the baseline's position), 1..D the linear effect per step of each dim, D+1..2D
// its curvature per squared step, 2D+1..3D its slope per step past the hinge (features).
type metricFit struct {
	name     string
	mean     []float64
	cov      *mat.SymDense
	chol     *mat.TriDense // lower Cholesky factor of cov
	noise    float64       // one evaluation's noise (model units)
	declared []bool        // per dim: the space declares that the dim acts on this metric
	gp       *gpFit        // the residual process (gp.go); nil without
}

// composite is the fitted model of every metric.
type composite struct {
	dims   []tpeDim
	units  []float64 // model-space length of one unit step per dim
	origin []float64 // the baseline's model-space position per dim
	fits   []metricFit
	scorer session.Scorer
	floors session.Metrics
	// trials is the number of finished rung-0 trials with metrics; moved counts, per dim,
	// those whose configuration differs from the baseline's there.
	trials int
	moved  []int
}

// observation is one trial's metrics at its position.
type observation struct {
	x       []float64 // steps from the baseline, per dim
	metrics session.Metrics
	perSeed []session.SeedMetrics
	// weight is the observation's precision relative to one of this session's trials
	// (0: a full one); an earlier session's trial weighs ProposalRequest.EarlierWeight.
	weight float64
	// earlier marks a trial of the session this one builds on: its level is this session's
	// plus the earlier session's offset (features' last column).
	earlier bool
}

// precision is the observation's weight in the regression.
func (o observation) precision() float64 {
	if o.weight <= 0 {
		return 1
	}
	return o.weight
}

// toModel maps a metric's value into model units: its log, the fall rate's log-odds, each
// clamped away from 0 by a fraction of the score's floor (a fall rate of exactly 0 is common
// in a short evaluation).
func toModel(metric string, v float64, floors session.Metrics) float64 {
	lo := 1e-3 * floors[metric]
	if metric == session.MetricFallRate {
		lo = 0.5 * floors[metric]
		p := math.Min(math.Max(v, lo), 1-lo)
		return math.Log(p / (1 - p))
	}
	return math.Log(math.Max(v, math.Max(lo, 1e-12)))
}

// fromModel is toModel's inverse.
func fromModel(metric string, y float64) float64 {
	if metric == session.MetricFallRate {
		return 1 / (1 + math.Exp(-y))
	}
	return math.Exp(y)
}

// position returns c's position in steps from the baseline, per dim.
func (m *composite) position(c session.RewardConfig, sp *session.Space) []float64 {
	x := make([]float64, len(m.dims))
	for i, d := range m.dims {
		x[i] = (d.encode(d.value(c, sp)) - m.origin[i]) / m.units[i]
	}
	return x
}

// features is the regression's row for position x: per dim its position, its square, and
// how far it is past the hinge (a one-sided cost that sets in only HingeAt steps stronger);
// the last column, the earlier session's level offset, is 0 (this session's level).
func features(x []float64) []float64 {
	D := len(x)
	f := make([]float64, numFeatures(D))
	f[0] = 1
	for i, v := range x {
		f[1+i] = v
		f[1+D+i] = v * v
		f[1+2*D+i] = hinge(v)
	}
	return f
}

// numFeatures is the length of features' row for D dims: the intercept, three per dim, and
// the earlier session's level offset.
func numFeatures(D int) int { return 2 + 3*D }

// rowOf is observation o's row: its features, and 1 in the offset column for an earlier
// session's trial.
func rowOf(o observation) []float64 {
	f := features(o.x)
	if o.earlier {
		f[len(f)-1] = 1
	}
	return f
}

// hingeAt is where the hinge term starts, in steps up from the baseline: half a step, about
// ×1.4 of a weight (bench/sampler/README.md, Search III).
const hingeAt = 0.5

// hinge is how far position v is past the hinge, 0 before it.
func hinge(v float64) float64 { return math.Max(v-hingeAt, 0) }

// fitComposite fits every metric's model to the finished rung-0 trials of req that have
// metrics (the first is the baseline), and adds the trials still running and the proposals
// still waiting as observations of what the model itself predicts there ("kriging
// believer"), so that the next proposal looks elsewhere. It returns nil when the baseline
// has no metrics yet.
func fitComposite(req session.ProposalRequest, unit func(tpeDim) float64, prior priorOptions) *composite {
	var baseline *session.TrialSummary
	for i := range req.History {
		if h := req.History[i]; h.Rung == 0 && h.State == session.TrialCompleted && len(h.Metrics) > 0 {
			baseline = &req.History[i]
			break
		}
	}
	if baseline == nil {
		return nil
	}
	floors := req.Floors
	if floors == nil {
		floors = session.DefaultFloors()
	}
	objective := req.Objective
	if objective == nil {
		objective = session.DefaultObjectiveWeights()
	}
	dims := tpeDims(req.Space)
	m := &composite{dims: dims, units: make([]float64, len(dims)), origin: make([]float64, len(dims)), moved: make([]int, len(dims)),
		scorer: session.Scorer{Baseline: baseline.Metrics, Weights: objective, Floors: floors}, floors: floors}
	for i, d := range dims {
		m.units[i] = unit(d)
		m.origin[i] = d.encode(d.value(baseline.Config, req.Space))
	}
	var obs []observation
	finished := map[string]bool{}
	for _, h := range req.History {
		if h.Rung != 0 || h.State != session.TrialCompleted || len(h.Metrics) == 0 {
			continue
		}
		o := observation{x: m.position(h.Config, req.Space), metrics: h.Metrics, perSeed: h.PerSeed}
		for i, v := range o.x {
			if v != 0 {
				m.moved[i]++
			}
		}
		obs = append(obs, o)
		finished[configKey(h.Config)] = true
	}
	m.trials = len(obs)
	own := obs // this session's trials: the noise and the intercept's prior read these only
	earlier, offsets := earlierObservations(m, req, obs[0].metrics, floors)
	obs = append(obs, earlier...)
	var pending [][]float64
	for _, h := range req.History {
		if h.Rung == 0 && !h.State.Terminal() && !finished[configKey(h.Config)] {
			pending = append(pending, m.position(h.Config, req.Space))
			finished[configKey(h.Config)] = true
		}
	}
	for _, t := range req.Tried {
		if !t.Rejected && !finished[configKey(t.Config)] {
			pending = append(pending, m.position(t.Config, req.Space))
			finished[configKey(t.Config)] = true
		}
	}
	fs := fitSet{declared: declarations(req.Space, dims), floors: floors, prior: prior, own: own, obs: obs, pending: pending, offsets: offsets}
	for _, name := range session.MetricNames {
		m.fits = append(m.fits, fs.fit(name, len(earlier) > 0))
	}
	return m
}

// fitSet is what every metric's fit reads: the declarations, this session's trials (own),
// every trial (obs, the earlier session's included, at their offsets' prior means), and
// the positions of the trials still pending.
type fitSet struct {
	declared map[string][]declaration
	floors   session.Metrics
	prior    priorOptions
	own, obs []observation
	pending  [][]float64
	offsets  map[string]float64
}

// fit fits one metric: the regression (with the residual process when the prior says so),
// then again with the model's own prediction at every pending position as an observation.
func (fs fitSet) fit(name string, earlier bool) metricFit {
	m0, v0 := metricPrior(name, fs.own, fs.declared[name], fs.floors, fs.prior)
	if earlier {
		m0[len(m0)-1], v0[len(v0)-1] = fs.offsets[name], levelVariance(name, fs.prior)
	}
	noise := metricNoise(name, fs.own, fs.floors, fs.prior)
	fit := func(obs []observation, hyper *gpHyper) metricFit {
		if !fs.prior.GP {
			return fitMetric(name, obs, fs.declared[name], fs.floors, m0, v0, noise)
		}
		return fitMetricGP(name, obs, fs.declared[name], fs.floors, m0, v0, noise, gpPriorOf(name, fs.prior), hyper)
	}
	f := fit(fs.obs, nil)
	if len(fs.pending) == 0 {
		return f
	}
	more := append([]observation(nil), fs.obs...)
	for _, x := range fs.pending {
		more = append(more, observation{x: x, metrics: session.Metrics{name: fromModel(name, f.meanAt(x))}})
	}
	var hyper *gpHyper
	if f.gp != nil {
		hyper = &f.gp.hyper
	}
	return fit(more, hyper)
}

// declaration is what the space declares of one dim on one metric: whether it acts on it,
// and the sign of a step up's expected effect (-1: lowers it, 0: not known).
type declaration struct {
	acts bool
	sign float64
	// penalty: a weight whose bounds are negative; a stronger penalty is expected to cost
	// tracking (the trade-off every locomotion reward makes).
	penalty bool
}

// declarations reads the space's Acts per metric and dim.
func declarations(sp *session.Space, dims []tpeDim) map[string][]declaration {
	out := map[string][]declaration{}
	for _, name := range session.MetricNames {
		out[name] = make([]declaration, len(dims))
	}
	for i, d := range dims {
		metrics, sign := declaredOf(sp, d)
		for _, name := range session.MetricNames {
			out[name][i].penalty = d.weight && d.sign < 0
		}
		for _, metric := range metrics {
			if ds, ok := out[metric]; ok {
				ds[i].acts, ds[i].sign = true, sign
			}
		}
	}
	return out
}

// declaredOf is what the space declares of dim d: the metrics it acts on, and the sign of a
// step up's expected effect on them (-1: lowers them, +1: raises them, 0: not known). A
// stronger weight (a step up in magnitude) lowers them; a param says so with lowers.
func declaredOf(sp *session.Space, d tpeDim) ([]string, float64) {
	if d.weight {
		t, _ := sp.Term(d.name)
		return t.Acts, -1
	}
	p, _ := sp.Param(d.name)
	switch p.Lowers {
	case session.LowersUp:
		return p.Acts, -1
	case session.LowersDown:
		return p.Acts, 1
	}
	return p.Acts, 0
}

// metricPrior is one metric's prior over its coefficients (means and variances).
func metricPrior(name string, obs []observation, decl []declaration, floors session.Metrics, prior priorOptions) (m0, v0 []float64) {
	D := len(decl)
	p := numFeatures(D)
	scale := 1.0
	if name == session.MetricFallRate {
		scale = prior.FallScale
	}
	m0 = make([]float64, p)
	v0 = make([]float64, p)
	v0[0] = 1 // the intercept: the baseline's own value, barely constrained
	if len(obs) > 0 {
		m0[0] = toModel(name, obs[0].metrics[name], floors)
	}
	tracking := name == session.MetricVelLinear || name == session.MetricVelAngular
	for i, d := range decl {
		lin, curv := prior.WeakSD*scale, prior.WeakCurvSD*scale
		if tracking && !d.acts {
			lin = math.Max(lin, prior.TrackSD)
			if d.penalty {
				m0[1+i] = prior.TrackMean
			}
		}
		if d.acts {
			lin, curv = prior.DeclaredSD*scale, prior.DeclaredCurvSD*scale
			m0[1+i] = d.sign * prior.DeclaredMean * scale
			// A best value for the metric is expected only where the direction is declared:
			// without it, a move either way is not predicted to lose before a trial says so
			// (issue 45: the curvature mean alone kept such scalars still).
			m0[1+D+i] = prior.UndeclaredCurvMean * scale
			if d.sign != 0 {
				m0[1+D+i] = prior.DeclaredCurvMean * scale
			}
		}
		v0[1+i], v0[1+D+i] = lin*lin, curv*curv
		v0[1+2*D+i] = hingeVariance(tracking, d, scale, prior)
	}
	v0[p-1] = 1e-10 // no earlier session: no offset
	return m0, v0
}

// fitMetric is one metric's Bayesian regression: posterior precision A = V₀⁻¹ + XᵀX/σ², mean
// A⁻¹(V₀⁻¹m₀ + Xᵀy/σ²).
func fitMetric(name string, obs []observation, decl []declaration, floors session.Metrics, m0, v0 []float64, noise float64) metricFit {
	p := len(m0)
	f := newMetricFit(name, decl, noise)
	noise2 := noise * noise
	a := mat.NewSymDense(p, nil)
	b := make([]float64, p)
	for i := range b {
		a.SetSym(i, i, 1/v0[i])
		b[i] = m0[i] / v0[i]
	}
	for _, o := range obs {
		// A weighted row: the row and the target scaled by √weight, so the observation's
		// precision is weight/σ².
		x := rowOf(o)
		y := toModel(name, o.metrics[name], floors)
		w := o.precision() / noise2
		for i := 0; i < p; i++ {
			if x[i] == 0 {
				continue
			}
			b[i] += w * x[i] * y
		}
		a.SymRankOne(a, w, mat.NewVecDense(p, x))
	}
	f.setPosterior(a, b)
	return f
}

// newMetricFit is an empty fit of metric name: its noise and the dims declared to act on it.
func newMetricFit(name string, decl []declaration, noise float64) metricFit {
	f := metricFit{name: name, declared: make([]bool, len(decl)), noise: noise}
	for i, d := range decl {
		f.declared[i] = d.acts
	}
	return f
}

// setPosterior sets f's coefficients from their posterior precision a and b = a·mean: the
// covariance A⁻¹, the mean A⁻¹b, and the covariance's lower factor for drawing.
func (f *metricFit) setPosterior(a *mat.SymDense, b []float64) {
	f.cov = spdInverse(a)
	mean := mat.NewVecDense(len(b), nil)
	mean.MulVec(f.cov, mat.NewVecDense(len(b), b))
	f.mean = mean.RawVector().Data
	f.chol = lowerFactor(f.cov)
}

// metricNoise estimates one evaluation's noise on a metric (model units) from the spread of
// the trials' evaluation seeds: the pooled within-trial variance over the number of seeds
// an evaluation averages, plus the floor for what the model does not capture. Without
// several seeds it is the prior's NoiseSD.
func metricNoise(name string, obs []observation, floors session.Metrics, prior priorOptions) float64 {
	var ss float64
	var dof, seeds int
	for _, o := range obs {
		k := len(o.perSeed)
		if k < 2 {
			continue
		}
		ys := make([]float64, k)
		mean := 0.0
		for i, s := range o.perSeed {
			ys[i] = toModel(name, s.Metrics[name], floors)
			mean += ys[i]
		}
		mean /= float64(k)
		for _, y := range ys {
			ss += (y - mean) * (y - mean)
		}
		dof += k - 1
		seeds += k
	}
	if dof < 2 {
		return math.Hypot(prior.NoiseSD, prior.NoiseFloor)
	}
	perSeed := ss / float64(dof)
	k := float64(seeds) / float64(dof+len(obs)) // seeds per evaluation, on average
	return math.Sqrt(perSeed/math.Max(k, 1) + prior.NoiseFloor*prior.NoiseFloor)
}

// draws are joint draws of the model: per draw and metric, the coefficients, a standard
// normal for an evaluation's noise, and, with the residual process, a standard normal for
// its spread and the residuals the coefficients leave at the trials.
type draws struct {
	beta  [][][]float64
	z     [][]float64
	zeta  [][]float64
	resid [][][]float64
}

// sample returns n joint draws of the model.
func (m *composite) sample(rng *rand.Rand, n int) *draws {
	d := &draws{beta: make([][][]float64, n), z: make([][]float64, n), zeta: make([][]float64, n), resid: make([][][]float64, n)}
	for s := 0; s < n; s++ {
		d.beta[s] = make([][]float64, len(m.fits))
		d.z[s] = make([]float64, len(m.fits))
		d.zeta[s] = make([]float64, len(m.fits))
		d.resid[s] = make([][]float64, len(m.fits))
		for j, f := range m.fits {
			d.beta[s][j] = drawCoefficients(rng, f.mean, f.chol)
			d.z[s][j] = rng.NormFloat64()
			if f.gp != nil {
				d.zeta[s][j] = rng.NormFloat64()
				d.resid[s][j] = f.gp.residuals(d.beta[s][j])
			}
		}
	}
	return d
}

// drawCoefficients is one draw from N(mean, L Lᵀ).
func drawCoefficients(rng *rand.Rand, mean []float64, l *mat.TriDense) []float64 {
	p := len(mean)
	z := make([]float64, p)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	out := mat.NewVecDense(p, nil)
	out.MulVec(l, mat.NewVecDense(p, z))
	out.AddVec(out, mat.NewVecDense(p, mean))
	return out.RawVector().Data
}

// point is what the model's prediction at a position needs: its features and, per metric
// with a residual process, the kriging weights and the residual's spread there.
type point struct {
	phi []float64
	w   [][]float64
	sd  []float64
}

// at prepares the prediction at position x; without a residual process (the default) it
// allocates nothing beside the features, since every candidate's assessment calls it.
func (m *composite) at(x []float64) point {
	p := point{phi: features(x)}
	for j, f := range m.fits {
		if f.gp == nil {
			continue
		}
		if p.w == nil {
			p.w, p.sd = make([][]float64, len(m.fits)), make([]float64, len(m.fits))
		}
		p.w[j], p.sd[j] = f.gp.weights(x)
	}
	return p
}

// predict writes into clean the metrics (in session.MetricNames order, as m.fits) at point
// p under draw k, and into noisy the same with one evaluation's noise added.
func (m *composite) predict(p point, d *draws, k int, clean, noisy *[session.NumMetrics]float64) {
	for j, f := range m.fits {
		y := dot(d.beta[k][j], p.phi)
		if f.gp != nil {
			y += dot(p.w[j], d.resid[k][j]) + p.sd[j]*d.zeta[k][j]
		}
		clean[j] = fromModel(f.name, y)
		noisy[j] = fromModel(f.name, y+f.noise*d.z[k][j])
	}
}

// meanAt is the posterior mean of the metric (model units) at position x.
func (f metricFit) meanAt(x []float64) float64 {
	y := dot(f.mean, features(x))
	if f.gp != nil {
		w, _ := f.gp.weights(x)
		y += dot(w, f.gp.residuals(f.mean))
	}
	return y
}

// meanMetrics returns the posterior mean's metrics at position x.
func (m *composite) meanMetrics(x []float64) session.Metrics {
	out := session.Metrics{}
	for _, f := range m.fits {
		out[f.name] = fromModel(f.name, f.meanAt(x))
	}
	return out
}

// configKey identifies a configuration by its values (encoding/json sorts map keys).
func configKey(c session.RewardConfig) string {
	b, _ := json.Marshal(c)
	return string(b)
}

// hingeVariance is the prior variance of a dim's hinge slope on one metric: HingeSD on the
// velocity errors for a penalty (a stronger penalty may cost tracking past some strength),
// the weak curvature's elsewhere, and next to nothing when the hinge is off (the default).
func hingeVariance(tracking bool, d declaration, scale float64, prior priorOptions) float64 {
	switch {
	case prior.HingeSD <= 0:
		return 1e-10
	case tracking && d.penalty:
		return prior.HingeSD * prior.HingeSD
	}
	sd := prior.WeakCurvSD * scale
	return sd * sd
}

// levelVariance is the prior variance of the earlier session's level offset on a metric.
func levelVariance(name string, prior priorOptions) float64 {
	sd := prior.LevelSD
	if name == session.MetricFallRate {
		sd *= prior.FallScale
	}
	return sd * sd
}

// gpPriorOf is the residual process's prior on a metric.
func gpPriorOf(name string, prior priorOptions) gpPrior {
	amp := prior.GPAmp
	if name == session.MetricFallRate {
		amp *= prior.FallScale
	}
	return gpPrior{amp: amp, length: prior.GPLength}
}
