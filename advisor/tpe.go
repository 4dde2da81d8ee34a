package advisor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"tunebot/session"
)

// TPEOptions configures the TPE sampler. Zero fields take the defaults below. The Parzen
// estimators are Optuna's TPESampler defaults (24 candidates, prior weight 1, the magic clip
// on, endpoints not considered, Optuna's gamma and weights, univariate). The schedule around
// them is not Optuna's, because a session has 12 trials, not hundreds: Optuna's 10 random
// start-up trials would leave the model two proposals (the benchmark measured that tied
// with random proposals in 16 of 20 seeds), so the start-up is one exploration trial after
// the baseline, and every later proposal spends the patch budget on one model-guided move
// plus exploration of scalars the session has not touched yet.
type TPEOptions struct {
	Startup           int                   // exploration-only proposals while fewer rung-0 trials than this finished (default 2: the baseline and one exploration trial)
	Exploit           int                   // model-guided moves per proposal (default 1)
	Explore           int                   // exploration moves per proposal, within what MaxChanges leaves (default 3)
	ParamStep         float64               // trust radius of a param, as a fraction of its range (default 0.15); weights use the 0.5×–2× rule
	Candidates        int                   // candidates drawn from l(x) per dimension (default 24)
	PriorWeight       float64               // weight of the prior kernel (default 1)
	NoMagicClip       bool                  // turn Optuna's consider_magic_clip off
	ConsiderEndpoints bool                  // Optuna's consider_endpoints
	Gamma             func(n int) int       // size of the good group (default TPEGamma)
	Weights           func(n int) []float64 // observation weights, oldest first (default TPEWeights)
	MaxTries          int                   // fresh draws before giving up (default 200)
}

// TPE is the previous numeric proposer (tunebot proposes with Sampler now; the benchmark
// keeps TPE as its "old" sampler), bound by the patch rules. Each proposal
// patches the best configuration with up to MaxChanges scalars:
//
//   - Exploit moves (default 1) go to scalars the history has already moved. A move's
//     evidence is the score change it caused against its parent trial (the best eligible
//     trial before it), shared equally among the scalars that trial changed; a scalar's
//     evidence is the sum over the trials that moved it, signed by direction. The scalar
//     with the strongest evidence is moved to the side it points to (the reflection of a
//     move that hurt), unless that would push further along a move the best configuration
//     already made: a kept move is not extrapolated, which on a surface with bounded
//     optima mostly overshoots. Where on that side is Optuna's choice: of 24 draws from
//     l(x), the one with the best l(x)/g(x), l and g being Optuna's univariate Parzen
//     estimators of the good and bad groups; their gain also breaks evidence ties.
//   - Exploration moves (default up to 3, within MaxChanges) go to scalars no trial has
//     moved yet, each by half to all of its trust radius in a random direction, so a
//     12-trial session covers most of the space once and every move has a parent to be
//     judged against. The start-up proposals are exploration only.
//
// Why this shape (bench/sampler/README.md has the numbers): with 12 trials, noisy scores
// and some 30 scalars, what pays is covering many scalars with moves large enough to
// show, and turning the moves that clearly hurt around; patches of one or two scalars,
// or following the model into more than one scalar per proposal, did worse.
//
// It is stateless and deterministic: every call rebuilds the model from the request's
// history and seeds its generator from the session seed and the history length, so
// nothing is lost on a crash and a resumed session proposes the same patch.
type TPE struct {
	opts TPEOptions
	gp   tpeGaussParams
}

var _ session.Advisor = (*TPE)(nil)

// NewTPE returns a TPE sampler; zero fields of opts take the defaults.
func NewTPE(opts TPEOptions) *TPE {
	if opts.Startup <= 0 {
		opts.Startup = 2
	}
	if opts.Exploit <= 0 {
		opts.Exploit = 1
	}
	if opts.Explore <= 0 {
		opts.Explore = 3
	}
	if opts.ParamStep <= 0 {
		opts.ParamStep = 0.15
	}
	if opts.Candidates <= 0 {
		opts.Candidates = 24
	}
	if opts.PriorWeight <= 0 {
		opts.PriorWeight = 1
	}
	if opts.Gamma == nil {
		opts.Gamma = TPEGamma
	}
	if opts.Weights == nil {
		opts.Weights = TPEWeights
	}
	if opts.MaxTries <= 0 {
		opts.MaxTries = 200
	}
	return &TPE{opts: opts, gp: tpeGaussParams{priorWeight: opts.PriorWeight, magicClip: !opts.NoMagicClip, considerEndpoints: opts.ConsiderEndpoints}}
}

// TPEGamma is Optuna's default_gamma: the good group holds min(ceil(0.1 n), 25) trials.
func TPEGamma(n int) int {
	return min(int(math.Ceil(0.1*float64(n))), 25)
}

// TPEWeights is Optuna's default_weights: equal weights below 25 observations; from 25 on,
// the newest 25 weigh 1 and the older ones ramp linearly from 1/n towards 1.
func TPEWeights(n int) []float64 {
	if n <= 0 {
		return []float64{}
	}
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	if n < 25 {
		return w
	}
	m := n - 25 // numpy linspace(1/n, 1, num=m)
	lo := 1 / float64(n)
	for i := 0; i < m; i++ {
		if m == 1 {
			w[i] = lo
			continue
		}
		w[i] = lo + (1-lo)*float64(i)/float64(m-1)
	}
	return w
}

// ErrNoValidPatch is returned when no draw passes the patch rules within the try budget.
var ErrNoValidPatch = errors.New("no valid patch found")

// Propose implements session.Advisor.
func (t *TPE) Propose(ctx context.Context, req session.ProposalRequest) (session.Suggestion, error) {
	if err := tpeCheckRequest(req); err != nil {
		return session.Suggestion{}, err
	}
	rng := tpeRNG(req, tpeStreamTPE)
	moves := constrainMoves(req, tpeMovable(req.Space, tpeDims(req.Space), req.Base))
	if len(moves) == 0 {
		return session.Suggestion{}, fmt.Errorf("tpe: %w: no scalar can move from the base configuration", ErrNoValidPatch)
	}
	hist := tpeFinished(req.History)
	n := len(hist)
	var cands []tpeCand
	fresh := make([]tpeMove, 0, len(moves))
	label := fmt.Sprintf("TPE start-up exploration (n=%d < %d)", n, t.opts.Startup)
	if n < t.opts.Startup {
		for _, m := range moves {
			fresh = append(fresh, m.local(t.opts.ParamStep))
		}
	} else {
		below, above := tpeSplit(hist, t.opts.Gamma(n))
		label = fmt.Sprintf("TPE (n=%d, γ=%d)", n, len(below))
		ev := tpeEvidence(req.Space, hist)
		z0 := hist[0].config
		for _, m := range moves {
			m = m.local(t.opts.ParamStep)
			if !tpeVaries(m.dim, req.Space, hist) {
				fresh = append(fresh, m)
				continue
			}
			if c, ok := t.candidate(rng, m, req.Space, below, above, ev[m.dim.name], m.dim.encode(m.dim.value(z0, req.Space))); ok {
				cands = append(cands, c)
			}
		}
		sort.SliceStable(cands, func(a, b int) bool {
			ea, eb := math.Abs(cands[a].evidence), math.Abs(cands[b].evidence)
			if ea != eb {
				return ea > eb
			}
			return cands[a].gain > cands[b].gain
		})
	}
	var lastErr error
	for try := 0; try < t.opts.MaxTries; try++ {
		if err := ctx.Err(); err != nil {
			return session.Suggestion{}, err
		}
		exploit, explore := t.draw(rng, req.Space, moves, cands, fresh, try >= t.opts.MaxTries/2)
		patch := tpePatch(append(append([]tpeChange(nil), exploit...), explore...))
		if _, err := req.Check(patch); err != nil {
			lastErr = err
			continue
		}
		why := label + ":"
		if len(exploit) > 0 {
			why += " " + tpeDescribe(exploit) + " (the evidence of earlier trials);"
		}
		if len(explore) > 0 {
			why += " exploring " + tpeDescribe(explore)
		}
		return session.Suggestion{
			Patch:      patch,
			Rationale:  why,
			Confidence: 0.3,
			Source:     session.SourceSampler,
		}, nil
	}
	return session.Suggestion{}, fmt.Errorf("tpe: %w after %d tries: %v", ErrNoValidPatch, t.opts.MaxTries, lastErr)
}

// tpeCand is a model-guided move of one scalar.
type tpeCand struct {
	move     tpeMove
	z        float64 // model-space value to move to
	evidence float64 // signed: > 0 says "up helped"
	gain     float64 // log l/g at z minus at the base value
}

// candidate turns a scalar's evidence into a move: to the side of the base the evidence
// points to, within the trust region, at the best of Candidates draws from l(x) by
// l(x)/g(x). There is none without evidence, when
// the evidence would extrapolate a move the base already made (z0 is the first trial's
// value), or when the trust region leaves no room on that side.
func (t *TPE) candidate(rng *rand.Rand, m tpeMove, s *session.Space, below, above []tpeTrial, ev, z0 float64) (tpeCand, bool) {
	zb := m.dim.encode(m.base)
	if ev == 0 || (ev > 0 && zb > z0) || (ev < 0 && zb < z0) {
		return tpeCand{}, false
	}
	lo, hi := m.zlo, m.zhi
	if ev > 0 {
		lo = math.Max(lo, zb)
	} else {
		hi = math.Min(hi, zb)
	}
	if !(hi > lo) {
		return tpeCand{}, false
	}
	md := t.fit(m, s, below, above)
	best, bestA := lo, math.Inf(-1)
	for c := 0; c < t.opts.Candidates; c++ {
		z := md.l.sample(rng, lo, hi)
		if a := md.l.logPDF(z) - md.g.logPDF(z); a > bestA {
			best, bestA = z, a
		}
	}
	return tpeCand{move: m, z: best, evidence: ev, gain: bestA - (md.l.logPDF(zb) - md.g.logPDF(zb))}, true
}

// draw builds one proposal: the Exploit strongest candidates (a random few of the top ones
// on late retries, when the favourites keep colliding with tried configurations), then up
// to Explore exploration moves on fresh scalars, within MaxChanges in all. With neither, it explores any
// movable scalar, so a session that has touched everything still gets a proposal.
func (t *TPE) draw(rng *rand.Rand, s *session.Space, moves []tpeMove, cands []tpeCand, fresh []tpeMove, shuffle bool) (exploit, explore []tpeChange) {
	k := min(t.opts.Exploit, len(cands), s.MaxChanges)
	pick := cands[:k]
	if shuffle && len(cands) > 0 {
		pool := append([]tpeCand(nil), cands[:min(len(cands), 2*s.MaxChanges)]...)
		rng.Shuffle(len(pool), func(a, b int) { pool[a], pool[b] = pool[b], pool[a] })
		k = rng.IntN(min(t.opts.Exploit, len(pool)) + 1)
		pick = pool[:k]
	}
	for _, c := range pick {
		m := c.move
		exploit = append(exploit, tpeChange{dim: m.dim, old: m.base, new: m.dim.decode(c.z, m.vlo, m.vhi)})
	}
	if room := min(s.MaxChanges-len(exploit), len(fresh), t.opts.Explore); room > 0 {
		explore = tpeExplore(rng, fresh, room)
	}
	if len(exploit)+len(explore) == 0 {
		local := make([]tpeMove, len(moves))
		for i, m := range moves {
			local[i] = m.local(t.opts.ParamStep)
		}
		explore = tpeExplore(rng, local, 1+rng.IntN(min(s.MaxChanges, len(local))))
	}
	return exploit, explore
}

// tpeVaries says whether the history holds more than one value of d.
func tpeVaries(d tpeDim, s *session.Space, hist []tpeTrial) bool {
	z0 := d.encode(d.value(hist[0].config, s))
	for _, tr := range hist[1:] {
		if d.encode(d.value(tr.config, s)) != z0 {
			return true
		}
	}
	return false
}

// tpeIneligibleDrop is the least score drop an ineligible or failed trial counts as: a
// configuration that breaks a floor is no improvement whatever its weighted score says.
const tpeIneligibleDrop = 0.02

// tpeEvidence credits every trial's score change against its parent (the best eligible
// trial before it, as the engine patches it) to the scalars it changed, equally and signed
// by the direction each moved in model space, and sums per scalar.
func tpeEvidence(s *session.Space, hist []tpeTrial) map[string]float64 {
	dims := tpeDims(s)
	ev := map[string]float64{}
	parent := 0
	for i := 1; i < len(hist); i++ {
		p, tr := hist[parent], hist[i]
		d := tr.score - p.score
		if !tr.good {
			d = math.Min(d, -tpeIneligibleDrop)
		}
		var names []string
		var dirs []float64
		for _, dim := range dims {
			a, b := dim.encode(dim.value(p.config, s)), dim.encode(dim.value(tr.config, s))
			if a != b {
				names = append(names, dim.name)
				dirs = append(dirs, math.Copysign(1, b-a))
			}
		}
		for j, name := range names {
			ev[name] += dirs[j] * d / float64(len(names))
		}
		if tr.good && (!hist[parent].good || tr.score > hist[parent].score) {
			parent = i
		}
	}
	return ev
}

// tpeTrial is a finished trial as the model sees it.
type tpeTrial struct {
	config session.RewardConfig
	score  float64
	good   bool // completed, scored and eligible
}

// tpeFinished keeps the finished rung-0 trials, oldest first.
func tpeFinished(h []session.TrialSummary) []tpeTrial {
	var out []tpeTrial
	for _, s := range h {
		if s.Rung != 0 || !s.State.Terminal() {
			continue
		}
		tr := tpeTrial{config: s.Config}
		if s.Score != nil && !math.IsNaN(*s.Score) {
			tr.score = *s.Score
			tr.good = s.State == session.TrialCompleted && s.Eligible
		}
		out = append(out, tr)
	}
	return out
}

// tpeSplit puts the nBelow best eligible trials in the good group (we maximise the score)
// and every other trial, ineligible and failed ones included, in the bad group; both keep
// chronological order, which the observation weights depend on.
func tpeSplit(hist []tpeTrial, nBelow int) (below, above []tpeTrial) {
	var good []int
	for i, tr := range hist {
		if tr.good {
			good = append(good, i)
		}
	}
	sort.SliceStable(good, func(a, b int) bool { return hist[good[a]].score > hist[good[b]].score })
	inBelow := map[int]bool{}
	for _, i := range good[:min(nBelow, len(good))] {
		inBelow[i] = true
	}
	for i, tr := range hist {
		if inBelow[i] {
			below = append(below, tr)
		} else {
			above = append(above, tr)
		}
	}
	return below, above
}

// tpeDimModel is the pair l(x), g(x) of one dimension.
type tpeDimModel struct {
	l, g *tpeParzen
}

func (t *TPE) fit(m tpeMove, s *session.Space, below, above []tpeTrial) tpeDimModel {
	obs := func(trs []tpeTrial) ([]float64, []float64) {
		xs := make([]float64, len(trs))
		for i, tr := range trs {
			xs[i] = m.dim.encode(m.dim.value(tr.config, s))
		}
		return xs, t.opts.Weights(len(trs))[:len(trs)]
	}
	bx, bw := obs(below)
	ax, aw := obs(above)
	return tpeDimModel{
		l: newTPEParzen(bx, bw, m.dim.lo, m.dim.hi, t.gp),
		g: newTPEParzen(ax, aw, m.dim.lo, m.dim.hi, t.gp),
	}
}
