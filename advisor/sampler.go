package advisor

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"tunebot/session"
)

// SamplerOptions configures the numeric sampler. Zero fields take the defaults.
type SamplerOptions struct {
	// MaxChanges caps the scalars one proposal changes, below the space's own cap
	// (0: the space's).
	MaxChanges int
	// PriorSD is the prior spread of one scalar's effect on the score per unit step
	// (default 0.01: about what a ×2 step of a term that matters is worth).
	PriorSD float64
	// NoiseSD is the score's noise per rung-0 trial the model assumes when the history
	// does not say more (default 0.015).
	NoiseSD float64
	// ParamStep is a param's unit step as a fraction of its range (default 0.2); a weight's
	// unit step is a factor of 2.
	ParamStep float64
	// WeightStep is a weight's unit step as a factor (default 2, the step rule's limit).
	WeightStep float64
	// ExploitAfter is the number of finished rung-0 trials from which a proposal follows
	// the model's mean rather than a draw from it (default 6; negative: never), so that the last trials of a
	// session, the ones successive halving mostly picks from, build on what was learned.
	ExploitAfter int
	// MaxTries bounds the draws when a proposal is refused (duplicates; default 200).
	MaxTries int
	// CurvMean and CurvSD are the prior of each scalar's curvature: the score's change per
	// squared unit step away from the baseline, with mean -CurvMean (default 0.002: a step
	// costs a little on its own) and spread CurvSD (default 0.003; negative: no curvature
	// terms, the purely linear model).
	CurvMean, CurvSD float64
}

// Sampler is tunebot's numeric proposer (docs/design.md §5). It models every finished
// rung-0 trial, not only the best: the score as a linear function of each scalar's
// position (log2 of a weight's magnitude, so ×2 is one unit; a param in steps of a fifth of
// its range), fitted by Bayesian ridge regression, so each scalar gets an effect per unit
// step with its uncertainty. A proposal draws one plausible set of effects from that
// posterior (Thompson sampling) and moves the up to MaxChanges scalars whose drawn effect
// promises the most, each by a full step the way its effect points. Scalars no trial moved
// keep the prior's spread and get drawn into proposals until they are measured; scalars
// measured as irrelevant stop being drawn; scalars with a clear effect keep being pushed,
// a step per proposal, as long as the evidence holds, which is how an optimum several steps
// from the default is reached. Regression credits a trial's change to the scalars that
// explain it across all trials, where sharing it equally (the old sampler) could not.
//
// Each scalar also has a curvature term (the score's change per squared step from the
// baseline, with a prior that leans a little negative): a move that cost does not prove
// that the opposite move gains, since near its optimum a scalar costs whichever way it
// moves (on the benchmark's surfaces, proposing the opposite of a move that cost shipped
// far less than not doing so). A scalar is moved up or down by the step whose drawn linear
// effect plus curvature change promises more, and not at all when neither promises a gain.
//
// It never proposes a rejected direction again: after a person rejects a patch, a proposal
// that moves the same scalars the same way is never drawn again (docs/design.md §1).
//
// It is stateless and deterministic: every call rebuilds the model from the request and
// seeds its generator from the session seed and the history length.
type Sampler struct {
	opts SamplerOptions
}

var _ session.Advisor = (*Sampler)(nil)

// NewSampler returns the sampler; zero fields of opts take the defaults.
func NewSampler(opts SamplerOptions) *Sampler {
	if opts.PriorSD <= 0 {
		opts.PriorSD = 0.01
	}
	if opts.NoiseSD <= 0 {
		opts.NoiseSD = 0.015
	}
	if opts.ParamStep <= 0 {
		opts.ParamStep = 0.2
	}
	if opts.ExploitAfter == 0 {
		opts.ExploitAfter = 6
	}
	if opts.WeightStep <= 1 {
		opts.WeightStep = 2
	}
	if opts.MaxTries <= 0 {
		opts.MaxTries = 200
	}
	if opts.CurvSD == 0 {
		opts.CurvSD = 0.003
		if opts.CurvMean == 0 {
			opts.CurvMean = 0.002
		}
	}
	return &Sampler{opts: opts}
}

// samplerStream keeps the sampler's draws apart from the other proposers'.
const samplerStream uint64 = 0x6a09e667f3bcc908

// Effect is what the sampler has learned about one scalar: its estimated effect on the
// score per unit step (a ×2 of a weight's magnitude, or a fifth of a param's range,
// upwards), the estimate's standard deviation, and how many trials moved it.
type Effect struct {
	Name    string
	Weight  bool
	PerStep float64
	SD      float64
	// Curv is the estimated change of the score per squared step away from the baseline
	// (negative: moving it costs whichever way), CurvSD its deviation.
	Curv, CurvSD float64
	Moved        int
}

// Effects fits the sampler's model to the request's history and returns every scalar's
// effect estimate, in the space's order. The advisor's prompt carries them, so that the
// language model and the sampler reason from the same evidence.
func (s *Sampler) Effects(req session.ProposalRequest) []Effect {
	m := s.fit(req)
	out := make([]Effect, len(m.dims))
	for i, d := range m.dims {
		c, csd := m.curv(i)
		out[i] = Effect{Name: d.name, Weight: d.weight, PerStep: m.mean[i+1], SD: math.Sqrt(m.cov[i+1][i+1]), Curv: c, CurvSD: csd, Moved: m.moved[i]}
	}
	return out
}

// samplerModel is the fitted posterior: coefficient 0 is the intercept, i+1 is dims[i].
type samplerModel struct {
	dims  []tpeDim
	xb    []float64 // the base's position per dim, in unit steps from the baseline
	units []float64 // model-space length of one unit step per dim
	mean  []float64
	cov   [][]float64
	chol  [][]float64 // lower Cholesky factor of cov
	moved []int
}

// unit returns a dim's unit step in model space.
func (s *Sampler) unit(d tpeDim) float64 {
	if d.weight {
		return math.Log(s.opts.WeightStep)
	}
	return s.opts.ParamStep * (d.hi - d.lo)
}

// samplerIneligibleDrop is the least a trial that broke a gate (or failed) counts as below
// the baseline: whatever its weighted score, it is no improvement.
const samplerIneligibleDrop = 0.03

func (s *Sampler) fit(req session.ProposalRequest) samplerModel {
	dims := tpeDims(req.Space)
	m := samplerModel{dims: dims, units: make([]float64, len(dims)), moved: make([]int, len(dims))}
	for i, d := range dims {
		m.units[i] = s.unit(d)
	}
	hist := tpeFinished(req.History)
	D := len(dims)
	curv := s.opts.CurvSD > 0 // the model has a curvature term per dim
	p := D + 1
	if curv {
		p += D
	}
	// Features: each scalar's position relative to the first trial (the baseline), in unit
	// steps. Targets: the score; a trial that broke a gate counts at most
	// samplerIneligibleDrop below the baseline's score.
	var xs [][]float64
	var ys []float64
	base := 0.0
	if len(hist) > 0 && hist[0].good {
		base = hist[0].score
	}
	m.xb = make([]float64, D)
	if len(hist) > 0 {
		for i, d := range dims {
			m.xb[i] = (d.encode(d.value(req.Base, req.Space)) - d.encode(d.value(hist[0].config, req.Space))) / m.units[i]
		}
	}
	for _, tr := range hist {
		x := make([]float64, p)
		x[0] = 1
		for i, d := range dims {
			x[i+1] = (d.encode(d.value(tr.config, req.Space)) - d.encode(d.value(hist[0].config, req.Space))) / m.units[i]
			if x[i+1] != 0 {
				m.moved[i]++
			}
			if curv {
				x[D+1+i] = x[i+1] * x[i+1]
			}
		}
		y := tr.score
		if !tr.good {
			y = math.Min(y, base-samplerIneligibleDrop)
		}
		xs, ys = append(xs, x), append(ys, y)
	}
	// Posterior precision A = XᵀX/σ² + prior precision; mean = A⁻¹ Xᵀy/σ².
	noise2 := s.opts.NoiseSD * s.opts.NoiseSD
	a := make([][]float64, p)
	b := make([]float64, p)
	for i := range a {
		a[i] = make([]float64, p)
		prior := s.opts.PriorSD
		if i == 0 {
			prior = 1 // the intercept is barely constrained
		}
		if i > D {
			prior = s.opts.CurvSD
			b[i] = -s.opts.CurvMean / (prior * prior) // the prior's mean
		}
		a[i][i] = 1 / (prior * prior)
	}
	for k, x := range xs {
		for i := 0; i < p; i++ {
			if x[i] == 0 {
				continue
			}
			b[i] += x[i] * ys[k] / noise2
			for j := 0; j < p; j++ {
				a[i][j] += x[i] * x[j] / noise2
			}
		}
	}
	m.cov = invertSPD(a)
	m.mean = make([]float64, p)
	for i := 0; i < p; i++ {
		for j := 0; j < p; j++ {
			m.mean[i] += m.cov[i][j] * b[j]
		}
	}
	m.chol = cholesky(m.cov)
	return m
}

// curved says whether the model has a curvature term per dim.
func (m samplerModel) curved() bool { return len(m.mean) > len(m.dims)+1 }

// curv returns dim i's curvature estimate and its deviation (0, 0 without curvature terms).
func (m samplerModel) curv(i int) (float64, float64) {
	if !m.curved() {
		return 0, 0
	}
	k := len(m.dims) + 1 + i
	return m.mean[k], math.Sqrt(m.cov[k][k])
}

// draw is one Thompson sample of the coefficients.
func (m samplerModel) draw(rng *rand.Rand) []float64 {
	p := len(m.mean)
	z := make([]float64, p)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	out := append([]float64(nil), m.mean...)
	for i := 0; i < p; i++ {
		for j := 0; j <= i; j++ {
			out[i] += m.chol[i][j] * z[j]
		}
	}
	return out
}

// Propose implements session.Advisor.
func (s *Sampler) Propose(ctx context.Context, req session.ProposalRequest) (session.Suggestion, error) {
	if err := tpeCheckRequest(req); err != nil {
		return session.Suggestion{}, err
	}
	moves := constrainMoves(req, tpeMovable(req.Space, tpeDims(req.Space), req.Base))
	if len(moves) == 0 {
		return session.Suggestion{}, fmt.Errorf("sampler: %w: no scalar can move from the base configuration", ErrNoValidPatch)
	}
	byName := map[string]tpeMove{}
	for _, mv := range moves {
		byName[mv.dim.name] = mv
	}
	maxChanges := req.Space.MaxChanges
	if s.opts.MaxChanges > 0 {
		maxChanges = min(maxChanges, s.opts.MaxChanges)
	}
	m := s.fit(req)
	u, liked := PreferenceUtility(req) // people's preferences (advisor/preference.go); 0 without
	ub := u(req.Base)
	rng := rand.New(rand.NewPCG(uint64(req.Seed), uint64(len(req.History))^samplerStream))
	rejected := rejectedDirections(req)
	n := len(tpeFinished(req.History))
	var lastErr error
	for try := 0; try < s.opts.MaxTries; try++ {
		if err := ctx.Err(); err != nil {
			return session.Suggestion{}, err
		}
		beta := m.draw(rng)
		if s.opts.ExploitAfter > 0 && n >= s.opts.ExploitAfter && try == 0 {
			beta = m.mean
		}
		type pick struct {
			i     int
			dir   float64
			gain  float64
			to    float64
			mv    tpeMove
			delta float64
		}
		var picks []pick
		for i, d := range m.dims {
			mv, ok := byName[d.name]
			if !ok || beta[i+1] == 0 && !liked { // a person's preference is evidence too
				continue
			}
			dir := math.Copysign(1, beta[i+1])
			zb := d.encode(mv.base)
			if m.curved() {
				// The better of a step up and a step down, each worth its linear effect
				// plus the curvature's change between the base's position and the new one;
				// a term that is off can only be switched on, to the middle of its range.
				xb := m.xb[i]
				g := beta[len(m.dims)+1+i]
				bestGain, bestTo := math.Inf(-1), 0.0
				for _, dd := range []float64{1, -1} {
					to := math.Min(math.Max(zb+dd*m.units[i], mv.zlo), mv.zhi)
					if d.weight && mv.base == 0 {
						if dd < 0 {
							continue
						}
						to = mv.zlo + 0.5*(mv.zhi-mv.zlo)
					}
					delta := (to - zb) / m.units[i]
					if math.Abs(delta) < 0.25 {
						continue
					}
					gain := beta[i+1]*delta + g*((xb+delta)*(xb+delta)-xb*xb)
					gain += req.PreferenceWeight * (u(withValue(req.Base, d, d.decode(to, mv.vlo, mv.vhi))) - ub)
					if gain > bestGain {
						bestGain, bestTo = gain, to
					}
				}
				if math.IsInf(bestGain, -1) {
					continue
				}
				delta := (bestTo - zb) / m.units[i]
				picks = append(picks, pick{i: i, dir: math.Copysign(1, delta), gain: bestGain, to: bestTo, mv: mv, delta: delta})
				continue
			}
			var to float64
			if d.weight && mv.base == 0 {
				if dir < 0 {
					continue // already off
				}
				to = mv.zlo + 0.5*(mv.zhi-mv.zlo) // switching on: the middle of its range
			} else {
				to = zb + dir*m.units[i]
			}
			to = math.Min(math.Max(to, mv.zlo), mv.zhi)
			delta := (to - zb) / m.units[i]
			if math.Abs(delta) < 0.25 {
				continue // at a bound the way its effect points
			}
			gain := beta[i+1]*delta + req.PreferenceWeight*(u(withValue(req.Base, d, d.decode(to, mv.vlo, mv.vhi)))-ub)
			picks = append(picks, pick{i: i, dir: dir, gain: gain, to: to, mv: mv, delta: delta})
		}
		sort.Slice(picks, func(a, b int) bool { return picks[a].gain > picks[b].gain })
		var changes []tpeChange
		chosen := map[direction]bool{}
		for _, pk := range picks {
			if len(changes) >= maxChanges || pk.gain <= 0 {
				break
			}
			d := direction{pk.mv.dim.name, pk.dir > 0}
			if completes(rejected, chosen, d) {
				continue // with the others chosen, this would repeat a rejected direction
			}
			chosen[d] = true
			changes = append(changes, tpeChange{dim: pk.mv.dim, old: pk.mv.base, new: pk.mv.dim.decode(pk.to, pk.mv.vlo, pk.mv.vhi)})
		}
		if len(changes) == 0 {
			// Nothing promises a gain in this draw: explore one scalar at random.
			changes = tpeExplore(rng, moves, 1)
		}
		patch := tpePatch(changes)
		if r, ok := repeatsRejected(req, patch, rejected); ok {
			lastErr = fmt.Errorf("moves the scalars of rejected proposal %d the same way", r)
			continue
		}
		if _, err := req.Check(patch); err != nil {
			lastErr = err
			continue
		}
		summary, evidence := explainMoves(n, m.evidence(changes))
		if p, ok := FollowedPreference(req, patch); ok {
			summary += " It " + PreferenceNote(p) + "."
		}
		return session.Suggestion{
			Patch:      patch,
			Summary:    summary,
			Evidence:   evidence,
			Confidence: 0.3,
			Source:     session.SourceSampler,
		}, nil
	}
	return session.Suggestion{}, fmt.Errorf("sampler: %w after %d tries: %v", ErrNoValidPatch, s.opts.MaxTries, lastErr)
}

// evidence is what the fitted model (its mean, not the draw that chose) expects of each
// change: its linear effect over the step plus the curvature's change, and how many trials
// moved the scalar.
func (m samplerModel) evidence(changes []tpeChange) []moveEvidence {
	idx := map[string]int{}
	for i, d := range m.dims {
		idx[d.name] = i
	}
	out := make([]moveEvidence, len(changes))
	for k, c := range changes {
		i := idx[c.dim.name]
		delta := (c.dim.encode(c.new) - c.dim.encode(c.old)) / m.units[i]
		curv, _ := m.curv(i)
		xb := m.xb[i]
		out[k] = moveEvidence{change: c, moved: m.moved[i],
			expected: m.mean[i+1]*delta + curv*((xb+delta)*(xb+delta)-xb*xb),
			sd:       math.Sqrt(m.cov[i+1][i+1]) * math.Abs(delta)}
	}
	return out
}

// direction is one scalar moved one way.
type direction struct {
	name string
	up   bool
}

// rejectedDirections lists, per rejected proposal, the scalars it changed and which way.
func rejectedDirections(req session.ProposalRequest) [][]direction {
	var out [][]direction
	for _, r := range req.Rejected {
		out = append(out, patchDirections(req.Space, r.Base, r.Patch))
	}
	return out
}

func patchDirections(sp *session.Space, base session.RewardConfig, p session.Patch) []direction {
	var out []direction
	for _, d := range tpeDims(sp) {
		var v float64
		var ok bool
		if d.weight {
			v, ok = p.Weights[d.name]
		} else {
			v, ok = p.Params[d.name]
		}
		if !ok {
			continue
		}
		old := d.encode(d.value(base, sp))
		if nv := d.encode(v); nv != old {
			out = append(out, direction{d.name, nv > old})
		}
	}
	return out
}

// completes says whether adding d to chosen would make it hold every direction of one of
// the rejected proposals.
func completes(rejected [][]direction, chosen map[direction]bool, d direction) bool {
	for _, dirs := range rejected {
		if len(dirs) == 0 {
			continue
		}
		all := true
		for _, x := range dirs {
			if x != d && !chosen[x] {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// repeatsRejected reports the first rejected proposal (its Seq) whose every change the
// patch repeats: the same scalars moved the same way, whatever the step.
func repeatsRejected(req session.ProposalRequest, p session.Patch, rejected [][]direction) (int, bool) {
	if len(rejected) == 0 {
		return 0, false
	}
	mine := map[direction]bool{}
	for _, d := range patchDirections(req.Space, req.Base, p) {
		mine[d] = true
	}
	for k, dirs := range rejected {
		if len(dirs) == 0 {
			continue
		}
		all := true
		for _, d := range dirs {
			if !mine[d] {
				all = false
				break
			}
		}
		if all {
			return req.Rejected[k].Seq, true
		}
	}
	return 0, false
}

// cholesky returns the lower factor L of a symmetric positive definite a (a = L Lᵀ).
func cholesky(a [][]float64) [][]float64 {
	n := len(a)
	l := make([][]float64, n)
	for i := range l {
		l[i] = make([]float64, n)
	}
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			sum := a[i][j]
			for k := 0; k < j; k++ {
				sum -= l[i][k] * l[j][k]
			}
			if i == j {
				l[i][j] = math.Sqrt(math.Max(sum, 1e-18))
			} else {
				l[i][j] = sum / l[j][j]
			}
		}
	}
	return l
}

// invertSPD inverts a symmetric positive definite matrix through its Cholesky factor.
func invertSPD(a [][]float64) [][]float64 {
	n := len(a)
	l := cholesky(a)
	// Solve L Y = I, then Lᵀ X = Y.
	inv := make([][]float64, n)
	for i := range inv {
		inv[i] = make([]float64, n)
	}
	for c := 0; c < n; c++ {
		y := make([]float64, n)
		for i := 0; i < n; i++ {
			sum := 0.0
			if i == c {
				sum = 1
			}
			for k := 0; k < i; k++ {
				sum -= l[i][k] * y[k]
			}
			y[i] = sum / l[i][i]
		}
		for i := n - 1; i >= 0; i-- {
			sum := y[i]
			for k := i + 1; k < n; k++ {
				sum -= l[k][i] * inv[k][c]
			}
			inv[i][c] = sum / l[i][i]
		}
	}
	return inv
}
