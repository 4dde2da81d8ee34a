package advisor

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"tunebot/session"
)

// SamplerOptions configures the numeric sampler. Zero fields take the defaults.
type SamplerOptions struct {
	// MaxChanges caps the scalars one proposal changes, below the space's own cap
	// (0: the space's).
	MaxChanges int
	// ParamStep is a param's unit step as a fraction of its range (default 0.2); a weight's
	// unit step is a factor of WeightStep (default 2, the step rule's limit).
	ParamStep, WeightStep float64
	// Prior is the composite model's prior (composite.go).
	Prior SamplerPrior
	// Beta weighs the score's spread in the acquisition, mean + β·sd, while the model knows
	// little: β falls linearly from Beta with the baseline alone to 0 at ExploitAfter
	// finished rung-0 trials, and the mean alone ranks from then on (explorationWeight;
	// default 0: the mean alone throughout, bench/sampler/README.md, Search III).
	Beta         float64
	ExploitAfter int
	// NoOutlook leaves the model's outlook off the suggestions, so the session stops by its
	// patience counter rather than by the model (a diagnostic of the benchmark).
	NoOutlook bool
	// MinPass is the least predicted probability that every gate passes for a candidate to
	// be proposed while one that likely passes exists (default 0.8).
	MinPass float64
	// Candidates is the number of candidate patches drawn per proposal (default 300) and
	// Draws the number of the model's draws each is assessed on (default 48).
	Candidates, Draws int
	// RadiusStart is the trust region's first radius in unit steps (default 0.7), halved
	// after RadiusFails trials in a row that did not improve on the best (default 3) and
	// doubled after one that did, up to a full step.
	RadiusStart float64
	RadiusFails int
	// Ascents is how many of the best candidates are improved by coordinate ascent
	// (default 3; negative: none), MoveCost the least gain in the acquisition worth moving
	// one more scalar (default 0.002).
	Ascents  int
	MoveCost float64
	// Across is the share of candidates drawn across the whole region the step rule allows
	// rather than in the trust region (default 0.5; negative: none).
	Across float64
	// Undo is how many random subsets of the incumbent's changes are taken back as
	// candidates, beside each change alone and all at once (default 20; negative: no undo
	// candidates); Wide is how many candidates a scrambled Halton design draws over every
	// scalar's whole room (default 60; negative: none). See wide.go.
	Undo, Wide int
	// Edges is how many candidates push the scalars the model finds promising to the edge
	// of their room, beside the most promising k for every k (0: none; see wide.go).
	Edges int
	// CarryCost is what the acquisition charges per scalar a configuration changes from the
	// defaults (default 0: none; 0.001 lost the coupled and generic families' medians on the
	// tuning seeds, bench/sampler/README.md, Search IV).
	CarryCost float64
	// Tie is how close, in the spread of the difference over the model's draws, the best
	// candidate's lead must be for one carrying fewer changes to go first instead (0: off).
	Tie float64
	// Screen is the share of the session's rung-0 trials the screen may take, the first
	// ones after the baseline (default 0.25; negative: no screen; screen.go).
	Screen float64
	// NearBound is how many steps from its bound a scalar's move on the side its
	// declaration calls helpful starts to slow: within it, a move goes at most half the way
	// to the bound (default 2; negative: never).
	NearBound float64
	// ScreenPass is the least predicted chance that every gate passes for a screen's
	// candidate (default: MinPass).
	ScreenPass float64
}

// SamplerPrior is the composite model's prior (see composite.go), per unit step in log
// units of a metric (the fall rate in log-odds).
type SamplerPrior = priorOptions

// Sampler is tunebot's numeric proposer (docs/design.md §5). Its model is composite: each
// of the seven metrics is modelled from the scalars' positions, with a prior from the reward
// space's declarations of what each scalar acts on, and the score and the gates are
// predicted through the session's own Scorer (composite.go). A proposal is the candidate
// patch, drawn in a trust region around the base, with the best upper confidence bound of
// its score among those whose every gate likely passes (acquire.go).
//
// It never proposes a rejected direction again: after a person rejects a patch, a proposal
// that moves the same scalars the same way is never made again (docs/design.md §1).
//
// It is stateless and deterministic: every call rebuilds the model from the request and
// seeds its generator from the session seed and the history length.
type Sampler struct {
	opts SamplerOptions
}

var _ session.Advisor = (*Sampler)(nil)

// NewSampler returns the sampler; zero fields of opts take the defaults.
func NewSampler(opts SamplerOptions) *Sampler {
	if opts.ParamStep <= 0 {
		opts.ParamStep = 0.2
	}
	if opts.WeightStep <= 1 {
		opts.WeightStep = 2
	}
	opts.Prior = opts.Prior.withDefaults()
	opts.Beta = math.Max(opts.Beta, 0)
	if opts.ExploitAfter == 0 {
		opts.ExploitAfter = 7
	}
	if opts.MinPass <= 0 {
		opts.MinPass = 0.8
	}
	if opts.Candidates <= 0 {
		opts.Candidates = 300
	}
	if opts.Draws <= 0 {
		opts.Draws = 48
	}
	if opts.RadiusStart <= 0 {
		opts.RadiusStart = 0.7
	}
	if opts.RadiusFails <= 0 {
		opts.RadiusFails = 3
	}
	if opts.Ascents == 0 {
		opts.Ascents = 3
	}
	if opts.MoveCost == 0 {
		opts.MoveCost = 0.002
	}
	if opts.Across == 0 {
		opts.Across = 0.5
	}
	if opts.Undo == 0 {
		opts.Undo = 20
	}
	if opts.Wide == 0 {
		opts.Wide = 60
	}
	if opts.Screen == 0 {
		opts.Screen = 0.25
	}
	if opts.ScreenPass <= 0 {
		opts.ScreenPass = opts.MinPass
	}
	if opts.NearBound == 0 {
		opts.NearBound = 2
	}
	return &Sampler{opts: opts}
}

// samplerStream keeps the sampler's draws apart from the other proposers'.
const samplerStream uint64 = 0x6a09e667f3bcc908

// unit returns a dim's unit step in model space.
func (s *Sampler) unit(d tpeDim) float64 {
	if d.weight {
		return math.Log(s.opts.WeightStep)
	}
	return s.opts.ParamStep * (d.hi - d.lo)
}

// Propose implements session.Advisor: fit the model, draw candidates in the trust region,
// rank them, and return the best one the rules accept.
func (s *Sampler) Propose(ctx context.Context, req session.ProposalRequest) (session.Suggestion, error) {
	if err := tpeCheckRequest(req); err != nil {
		return session.Suggestion{}, err
	}
	dims := tpeDims(req.Space)
	moves := constrainMoves(req, tpeMovable(req.Space, dims, req.Base))
	if len(moves) == 0 {
		return session.Suggestion{}, fmt.Errorf("sampler: %w: no scalar can move from the base configuration", ErrNoValidPatch)
	}
	rng := rand.New(rand.NewPCG(uint64(req.Seed), uint64(len(req.History))^samplerStream))
	m := fitComposite(req, s.unit, s.opts.Prior)
	if m == nil {
		// No baseline metrics yet (never so in a session: the baseline is evaluated first).
		return s.explore(rng, req, moves)
	}
	sr := s.searcher(rng, m, req, moves)
	rejected := rejectedDirections(req)
	if sug, ok := s.screen(rng, sr, req, rejected); ok {
		return sug, nil
	}
	var lastErr error
	ranked := sr.search(rng, s.opts.Candidates)
	for _, c := range ranked {
		if err := ctx.Err(); err != nil {
			return session.Suggestion{}, err
		}
		changes := sr.changes(c)
		patch := tpePatch(changes)
		if r, ok := repeatsRejected(req, patch, rejected); ok {
			lastErr = fmt.Errorf("moves the scalars of rejected proposal %d the same way", r)
			continue
		}
		if _, err := req.Check(patch); err != nil {
			lastErr = err
			continue
		}
		summary, evidence := sr.explain(c, changes, req.BaseTrial)
		if p, ok := FollowedPreference(req, patch); ok {
			summary += " It " + PreferenceNote(p) + "."
		}
		// Neither chance claims more than a model of m.trials trials can (session.Credible).
		beat := session.Credible(sr.beatChance(c.x, bestSoFar(req)), m.trials)
		sug := session.Suggestion{Patch: patch, Summary: summary, Evidence: evidence, Confidence: session.Credible(c.pass, m.trials),
			BeatBest: &beat, Source: session.SourceSampler}
		if !s.opts.NoOutlook {
			o := sr.outlook(ranked, c)
			sug.Outlook = &o
		}
		return sug, nil
	}
	if lastErr == nil {
		// No candidate at all (every scalar at the edge of its room): explore.
		return s.explore(rng, req, moves)
	}
	return session.Suggestion{}, fmt.Errorf("sampler: %w: no candidate passed the rules: %v", ErrNoValidPatch, lastErr)
}

// screen is the screen's proposal (screen.go), false when the screen is over or its
// candidate breaks a rule, a constraint or a rejection (the search proposes then).
func (s *Sampler) screen(rng *rand.Rand, sr *searcher, req session.ProposalRequest, rejected [][]direction) (session.Suggestion, bool) {
	c, ok := sr.screenCandidate(rng, req, screenTrials(s.opts.Screen, req.TrialBudget))
	if !ok {
		return session.Suggestion{}, false
	}
	changes := sr.changes(c)
	patch := tpePatch(changes)
	if _, ok := repeatsRejected(req, patch, rejected); ok {
		return session.Suggestion{}, false
	}
	if _, err := req.Check(patch); err != nil {
		return session.Suggestion{}, false
	}
	summary, evidence := sr.explainWhy(c, changes, req.BaseTrial, screenWhy(changes))
	beat := session.Credible(sr.beatChance(c.x, bestSoFar(req)), sr.m.trials)
	// No outlook: the model cannot say what is left to gain before it has seen these.
	return session.Suggestion{Patch: patch, Summary: summary, Evidence: evidence,
		Confidence: session.Credible(c.pass, sr.m.trials), BeatBest: &beat, Source: session.SourceSampler}, true
}

// searcher prepares the search of one proposal: each movable scalar's room from the base,
// the trust region's radius, the model's draws and the acquisition's weight on the spread.
func (s *Sampler) searcher(rng *rand.Rand, m *composite, req session.ProposalRequest, moves []tpeMove) *searcher {
	maxChanges := req.Space.MaxChanges
	if s.opts.MaxChanges > 0 {
		maxChanges = min(maxChanges, s.opts.MaxChanges)
	}
	sr := &searcher{m: m, base: m.position(req.Base, req.Space), maxChanges: maxChanges, minPass: s.opts.MinPass, screenPass: s.opts.ScreenPass, across: math.Max(s.opts.Across, 0),
		ascents: max(s.opts.Ascents, 0), moveCost: math.Max(s.opts.MoveCost, 0),
		undo: s.opts.Undo, wide: max(s.opts.Wide, 0), carryCost: math.Max(s.opts.CarryCost, 0), tie: s.opts.Tie,
		edges:  max(s.opts.Edges, 0),
		radius: trustRadius(req.History, s.opts.RadiusStart, s.opts.RadiusFails)}
	index := map[string]int{}
	for i, d := range m.dims {
		index[d.name] = i
	}
	for _, mv := range moves {
		i := index[mv.dim.name]
		steps := func(z float64) float64 { return (z - m.origin[i]) / m.units[i] }
		r := room{dim: i, base: sr.base[i], lo: steps(mv.zlo), hi: steps(mv.zhi), mv: mv, dirUp: true, dirDown: true}
		if mv.dim.weight && mv.base == 0 {
			// Off sits one step below a typical magnitude (tpeDims): switching on starts there.
			r.off, r.dirDown = true, false
			r.onLo = math.Min(steps(mv.zlo)+1, r.hi)
		}
		slowNearBound(&r, helpfulSide(req.Space, m.dims[i]), s.opts.NearBound, (m.dims[i].lo-m.origin[i])/m.units[i], (m.dims[i].hi-m.origin[i])/m.units[i])
		sr.rooms = append(sr.rooms, r)
	}
	sr.ucb = explorationWeight(s.opts.Beta, m.trials, s.opts.ExploitAfter)
	sr.draws = m.sample(rng, s.opts.Draws)
	sr.pref = preferenceSlopes(req, s.unit) // people's preferences (preference.go); nil without
	return sr
}

// helpfulSide is the way a step of d is declared to help the metrics it acts on (declaredOf):
// +1 up (a stronger weight; a param whose lowers is up), -1 down, 0 when nothing is declared.
func helpfulSide(sp *session.Space, d tpeDim) float64 {
	metrics, sign := declaredOf(sp, d)
	if len(metrics) == 0 {
		return 0
	}
	return -sign
}

// slowNearBound keeps a chain of moves on the helpful side from running a scalar into its
// bound (lo and hi, in steps from the baseline) in one stride, where a cliff is most often
// met: within near steps of that bound, a move goes at most half the way there, so the
// model sees each part of the approach before the next.
func slowNearBound(r *room, side, near, lo, hi float64) {
	if near < 0 || r.off {
		return
	}
	switch {
	case side > 0 && hi-r.base <= near:
		r.hi = math.Min(r.hi, r.base+(hi-r.base)/2)
	case side < 0 && r.base-lo <= near:
		r.lo = math.Max(r.lo, r.base-(r.base-lo)/2)
	}
}

// changes turns a candidate into the moves of its patch.
func (sr *searcher) changes(c candidate) []tpeChange {
	out := make([]tpeChange, 0, len(c.moved))
	for _, ri := range c.moved {
		r := sr.rooms[ri]
		z := sr.m.origin[r.dim] + c.x[r.dim]*sr.m.units[r.dim]
		z = math.Min(math.Max(z, r.mv.zlo), r.mv.zhi)
		out = append(out, tpeChange{dim: r.mv.dim, old: r.mv.base, new: r.mv.dim.decode(z, r.mv.vlo, r.mv.vhi)})
	}
	return out
}

// explore is the proposal without a model: one scalar moved half to all of its room.
func (s *Sampler) explore(rng *rand.Rand, req session.ProposalRequest, moves []tpeMove) (session.Suggestion, error) {
	var lastErr error
	for try := 0; try < 50; try++ {
		changes := tpeExplore(rng, moves, 1)
		patch := tpePatch(changes)
		if _, err := req.Check(patch); err != nil {
			lastErr = err
			continue
		}
		moves := make([]moveEvidence, len(changes))
		for k, c := range changes {
			moves[k] = moveEvidence{change: c}
		}
		summary, evidence := explainMoves(0, moves)
		return session.Suggestion{Patch: patch, Summary: summary, Evidence: evidence, Confidence: 0.1, Source: session.SourceSampler}, nil
	}
	return session.Suggestion{}, fmt.Errorf("sampler: %w: %v", ErrNoValidPatch, lastErr)
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
