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

// TPEOptions configures the TPE sampler. The zero value is Optuna's TPESampler default:
// 10 random start-up trials, 24 expected-improvement candidates, prior weight 1, the magic
// clip on, endpoints not considered, Optuna's gamma and weights, independent (univariate)
// estimators.
type TPEOptions struct {
	Startup           int                   // random proposals while fewer trials than this finished (default 10)
	Candidates        int                   // candidates drawn from l(x) per dimension (default 24)
	PriorWeight       float64               // weight of the prior kernel (default 1)
	NoMagicClip       bool                  // turn Optuna's consider_magic_clip off
	ConsiderEndpoints bool                  // Optuna's consider_endpoints
	Gamma             func(n int) int       // size of the good group (default TPEGamma)
	Weights           func(n int) []float64 // observation weights, oldest first (default TPEWeights)
	MaxTries          int                   // fresh draws before giving up (default 200)
}

// TPE is the numeric proposer of DESIGN.md §5: a tree-structured Parzen estimator as Optuna
// implements it, bound by the patch rules. It is stateless: every call rebuilds the model
// from the request's history, so nothing is lost on a crash and a resumed session proposes
// the same patch for the same request.
type TPE struct {
	opts TPEOptions
	gp   tpeGaussParams
}

var _ session.Advisor = (*TPE)(nil)

// NewTPE returns a TPE sampler; zero fields of opts take Optuna's defaults.
func NewTPE(opts TPEOptions) *TPE {
	if opts.Startup <= 0 {
		opts.Startup = 10
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
	rng := tpeRNG(req)
	dims := tpeDims(req.Space)
	moves := tpeMovable(req.Space, dims, req.Base)
	if len(moves) == 0 {
		return session.Suggestion{}, fmt.Errorf("tpe: %w: no scalar can move from the base configuration", ErrNoValidPatch)
	}
	hist := tpeFinished(req.History)
	n := len(hist)
	if n < t.opts.Startup {
		return tpeRandomSuggestion(ctx, rng, req, moves, t.opts.MaxTries,
			fmt.Sprintf("TPE random start-up (n=%d < %d)", n, t.opts.Startup))
	}

	below, above := tpeSplit(hist, t.opts.Gamma(n))
	models := make([]tpeDimModel, len(moves))
	for i, m := range moves {
		models[i] = t.fit(m, req.Space, below, above)
	}
	var lastErr error
	for try := 0; try < t.opts.MaxTries; try++ {
		if err := ctx.Err(); err != nil {
			return session.Suggestion{}, err
		}
		changes := t.draw(rng, moves, models, req.Space.MaxChanges, try >= t.opts.MaxTries/2)
		patch := tpePatch(changes)
		if _, err := req.Space.Validate(req.Base, patch, req.Tried); err != nil {
			lastErr = err
			continue
		}
		return session.Suggestion{
			Patch:      patch,
			Rationale:  fmt.Sprintf("TPE (n=%d, γ=%d): %s", n, len(below), tpeDescribe(changes)),
			Confidence: 0.3,
			Source:     session.SourceSampler,
		}, nil
	}
	return session.Suggestion{}, fmt.Errorf("tpe: %w after %d tries: %v", ErrNoValidPatch, t.opts.MaxTries, lastErr)
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

// draw picks, per dimension, the candidate from l(x) inside the trust region with the best
// log l(x) − log g(x), and keeps the dimensions where that beats the base value most: these
// are the moves the model most expects to land in the good group. With shuffle (late
// retries, when the favourites keep colliding with tried configurations) the dims are a
// random subset of the improving ones instead.
func (t *TPE) draw(rng *rand.Rand, moves []tpeMove, models []tpeDimModel, maxChanges int, shuffle bool) []tpeChange {
	type cand struct {
		i    int
		z    float64
		gain float64
	}
	cands := make([]cand, len(moves))
	for i, m := range moves {
		md := models[i]
		best, bestA := m.zlo, math.Inf(-1)
		for c := 0; c < t.opts.Candidates; c++ {
			z := md.l.sample(rng, m.zlo, m.zhi)
			if a := md.l.logPDF(z) - md.g.logPDF(z); a > bestA {
				best, bestA = z, a
			}
		}
		zb := m.dim.encode(m.base)
		cands[i] = cand{i: i, z: best, gain: bestA - (md.l.logPDF(zb) - md.g.logPDF(zb))}
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].gain > cands[b].gain })
	k := 0
	for k < len(cands) && k < maxChanges && cands[k].gain > 0 {
		k++
	}
	k = max(k, 1)
	pick := cands[:k]
	if shuffle {
		pool := cands[:max(k, min(len(cands), 2*maxChanges))]
		rng.Shuffle(len(pool), func(a, b int) { pool[a], pool[b] = pool[b], pool[a] })
		pick = pool[:1+rng.IntN(min(maxChanges, len(pool)))]
	}
	sort.Slice(pick, func(a, b int) bool { return pick[a].i < pick[b].i })
	out := make([]tpeChange, 0, len(pick))
	for _, c := range pick {
		m := moves[c.i]
		out = append(out, tpeChange{dim: m.dim, old: m.base, new: m.dim.decode(c.z, m.vlo, m.vhi)})
	}
	return out
}
