package advisor

import (
	"math"
	"math/rand/v2"
	"sort"

	"tunebot/session"
)

// How the sampler chooses among candidate patches (docs/design.md §5): each candidate is
// assessed under the composite model by pushing draws of its predicted metrics through the
// session's Scorer, which gives its expected score, the score's spread, and the probability
// that every gate passes once an evaluation's noise is added. Only candidates likely to pass
// every gate are considered (MinPass); among them the one with the best upper confidence
// bound (mean + Beta·sd) is proposed, or, late in the session, the best mean.
//
// Candidates are drawn in a trust region around the base (anchor: TuRBO, Eriksson et al.,
// NeurIPS 2019): each moved scalar goes anywhere up to the region's radius, in unit steps,
// so a proposal moves a scalar a little or a full step and moves few scalars or many, as
// the model warrants, never only the full ×2. The radius starts moderate, doubles after a
// trial that improved on the best and halves after trials in a row that did not. Half the
// candidates are drawn in that region, half across the whole region the step rule allows.

// candidate is one patch of the base: positions in steps from the baseline, per dim.
type candidate struct {
	x     []float64
	moved []int // the dims it changes from the base, ascending
	assessment
}

// assessment is what the model predicts of a candidate.
type assessment struct {
	mean, sd float64 // the score, noise-free, over the model's draws
	pass     float64 // share of draws in which every gate passes, with an evaluation's noise
	acq      float64 // the acquisition value it is ranked by
	// measuredSD is the spread of the score as a trial would measure it (the model's doubt
	// and an evaluation's noise).
	measuredSD float64
}

// room is how far each movable dim may go from the base, in steps from the baseline.
type room struct {
	dim      int
	base     float64 // the base's position
	lo, hi   float64 // the step rule and the bounds
	off      bool    // a weight that is off: it can only be switched on
	onLo     float64 // where switching on starts (the middle of its range)
	mv       tpeMove
	dirUp    bool // allowed up (constraints)
	dirDown  bool // allowed down
	promise  float64
	bestSign float64
}

// searcher holds what one proposal's search needs.
type searcher struct {
	m          *composite
	rooms      []room
	base       []float64 // the base's position, per dim
	radius     float64   // the trust region's radius in steps
	maxChanges int
	*draws
	ucb     float64 // Beta of mean + Beta·sd
	minPass float64
	// screenPass is the least chance to pass every gate a screen's candidate needs.
	screenPass float64
	across     float64 // share of candidates drawn across the step rule's whole region
	ascents    int     // how many of the best candidates coordinate ascent improves
	moveCost   float64 // the least gain in the acquisition worth one more moved scalar
	undo       int     // random subsets of the incumbent's changes taken back (negative: no undo)
	wide       int     // candidates of the space-filling design over the whole room
	edges      int     // candidates with promising scalars at their room's edge (0: none)
	carryCost  float64 // what the acquisition charges per scalar changed from the defaults
	tie        float64 // preferSmaller's closeness in spreads (0: off)
	// pref is, per dim, what people's preferences add to the acquisition per step up
	// (session.ProposalRequest.PreferenceWeight × the "looks right" utility); nil without.
	pref []float64
}

// assess predicts the score and the gates at x.
func (s *searcher) assess(x []float64) assessment {
	pt := s.m.at(x)
	var sum, sum2, nsum, nsum2 float64
	pass := 0
	var clean, noisy [session.NumMetrics]float64
	for k := range s.beta {
		s.m.predict(pt, s.draws, k, &clean, &noisy)
		total, _ := s.m.scorer.Quick(clean)
		sum += total
		sum2 += total * total
		measured, ok := s.m.scorer.Quick(noisy)
		if ok {
			pass++
		}
		nsum += measured
		nsum2 += measured * measured
	}
	n := float64(len(s.beta))
	mean := sum / n
	sd := math.Sqrt(math.Max(sum2/n-mean*mean, 0))
	nmean := nsum / n
	a := assessment{mean: mean, sd: sd, pass: float64(pass) / n, measuredSD: math.Sqrt(math.Max(nsum2/n-nmean*nmean, 0))}
	a.acq = mean + s.ucb*sd - s.carryCost*float64(carried(x))
	if s.pref != nil {
		a.acq += dot(s.pref, x)
	}
	return a
}

// beatChance is the share of the model's draws in which a trial at x measures (with an
// evaluation's noise) a score above best with every gate passing: its chance of beating the
// best so far. It is what a proposal's card shows beside the chance that the gates pass.
func (s *searcher) beatChance(x []float64, best float64) float64 {
	if len(s.beta) == 0 {
		return 0
	}
	pt := s.m.at(x)
	var clean, noisy [session.NumMetrics]float64
	k := 0
	for i := range s.beta {
		s.m.predict(pt, s.draws, i, &clean, &noisy)
		if total, ok := s.m.scorer.Quick(noisy); ok && total > best {
			k++
		}
	}
	return float64(k) / float64(len(s.beta))
}

// bestSoFar is the best score of an eligible finished rung-0 trial of req (the baseline's 0
// when none beat it): what a proposal must beat to become the best.
func bestSoFar(req session.ProposalRequest) float64 {
	best := 0.0
	for _, h := range req.History {
		if h.Rung == 0 && h.State == session.TrialCompleted && h.Eligible && h.Score != nil {
			best = math.Max(best, *h.Score)
		}
	}
	return best
}

// better ranks candidates: those likely to pass every gate first, by acquisition; the others
// by their chance of passing.
func (s *searcher) better(a, b assessment) bool {
	okA, okB := a.pass >= s.minPass, b.pass >= s.minPass
	if okA != okB {
		return okA
	}
	if okA {
		return a.acq > b.acq
	}
	if a.pass != b.pass {
		return a.pass > b.pass
	}
	return a.acq > b.acq
}

// with returns x with dim r moved to position to.
func (s *searcher) with(x []float64, r room, to float64) []float64 {
	out := append([]float64(nil), x...)
	out[r.dim] = to
	return out
}

// target draws where dim r goes within radius: up or down (dir +1/-1, 0: either), between
// a third of the room and all of it, so a move is never lost in the noise.
func (s *searcher) target(rng *rand.Rand, r room, radius, dir float64) (float64, bool) {
	if r.off {
		if !r.dirUp {
			return 0, false
		}
		return r.onLo + rng.Float64()*(r.hi-r.onLo), true
	}
	up := math.Min(r.hi, r.base+radius) - r.base
	down := r.base - math.Max(r.lo, r.base-radius)
	if !r.dirUp {
		up = 0
	}
	if !r.dirDown {
		down = 0
	}
	if dir == 0 {
		if rng.IntN(2) == 0 {
			dir = 1
		} else {
			dir = -1
		}
	}
	least := math.Min(minMove, radius/2)
	if (dir > 0 && up < least) || (dir < 0 && down < least) {
		dir = -dir
	}
	u := 1.0/3 + 2.0/3*rng.Float64()
	switch {
	case dir > 0 && up >= least:
		return r.base + math.Max(u*up, least), true
	case dir < 0 && down >= least:
		return r.base - math.Max(u*down, least), true
	}
	return 0, false
}

// minMove is the smallest move in steps (about 7 % of a weight, 3 % of a param's range),
// or half the trust region's radius when that is smaller.
const minMove = 0.15

// promise assesses every dim moved alone by the radius either way, and keeps, per dim, how
// much the better way promises over the base (its upper confidence bound) and which way.
func (s *searcher) promise(rng *rand.Rand, at assessment) {
	for i := range s.rooms {
		r := &s.rooms[i]
		r.promise, r.bestSign = 0, 0
		for _, dir := range []float64{1, -1} {
			to, ok := s.target(rng, *r, s.radius, dir)
			if !ok {
				continue
			}
			a := s.assess(s.with(s.base, *r, to))
			if gain := a.mean + s.ucb*a.sd - at.mean; a.pass >= s.minPass && gain > r.promise {
				r.promise, r.bestSign = gain, math.Copysign(1, to-r.base)
			}
		}
	}
}

// draw makes one candidate: k dims, chosen by their promise or uniformly, each moved within
// radius.
func (s *searcher) draw(rng *rand.Rand, radius float64, byPromise bool) candidate {
	k := 1 + rng.IntN(min(s.maxChanges, len(s.rooms)))
	var total float64
	for _, r := range s.rooms {
		total += r.promise + 1e-3
	}
	chosen := map[int]bool{}
	x := append([]float64(nil), s.base...)
	var moved []int
	for tries := 0; len(moved) < k && tries < 4*k+8; tries++ {
		i := rng.IntN(len(s.rooms))
		if byPromise {
			u := rng.Float64() * total
			for i = 0; i < len(s.rooms)-1; i++ {
				u -= s.rooms[i].promise + 1e-3
				if u <= 0 {
					break
				}
			}
		}
		if chosen[i] {
			continue
		}
		r := s.rooms[i]
		dir := 0.0
		if byPromise && r.bestSign != 0 && rng.Float64() < 0.8 {
			dir = r.bestSign
		}
		to, ok := s.target(rng, r, radius, dir)
		if !ok {
			continue
		}
		chosen[i] = true
		x[r.dim] = to
		moved = append(moved, i)
	}
	sort.Ints(moved)
	return candidate{x: x, moved: moved}
}

// refine tries small changes of c (drop a moved dim, add a promising one, scale every move)
// and returns the best variant found, c itself included.
func (s *searcher) refine(rng *rand.Rand, c candidate) candidate {
	best := c
	try := func(x []float64, moved []int) {
		if len(moved) == 0 || len(moved) > s.maxChanges {
			return
		}
		v := candidate{x: x, moved: moved}
		v.assessment = s.assess(x)
		if s.better(v.assessment, best.assessment) {
			best = v
		}
	}
	for _, drop := range c.moved {
		x := append([]float64(nil), c.x...)
		r := s.rooms[drop]
		x[r.dim] = r.base
		try(x, without(c.moved, drop))
	}
	for _, f := range []float64{0.5, 1.5} {
		x := append([]float64(nil), c.x...)
		for _, i := range c.moved {
			r := s.rooms[i]
			if r.off {
				continue
			}
			x[r.dim] = math.Min(math.Max(r.base+f*(c.x[r.dim]-r.base), math.Max(r.lo, r.base-1)), math.Min(r.hi, r.base+1))
		}
		try(x, c.moved)
	}
	if add := s.draw(rng, s.radius, true); len(add.moved) > 0 {
		i := add.moved[0]
		if !contains(c.moved, i) {
			x := append([]float64(nil), c.x...)
			x[s.rooms[i].dim] = add.x[s.rooms[i].dim]
			moved := append(append([]int(nil), c.moved...), i)
			sort.Ints(moved)
			try(x, moved)
		}
	}
	return best
}

// search draws candidates around the base and across the step rule's region, refines the
// best, and returns every candidate ranked best first.
func (s *searcher) search(rng *rand.Rand, n int) []candidate {
	at := s.assess(s.base)
	s.promise(rng, at)
	seen := map[string]bool{}
	var cands []candidate
	add := func(c candidate, assessed bool) {
		if len(c.moved) == 0 {
			return
		}
		key := positionKey(c.x)
		if seen[key] {
			return
		}
		seen[key] = true
		if !assessed {
			c.assessment = s.assess(c.x)
		}
		cands = append(cands, c)
	}
	for i := 0; i < n; i++ {
		radius := s.radius
		if float64(i%20) < 20*s.across {
			radius = 1 // across the whole region the step rule allows
		}
		add(s.draw(rng, radius, i%2 == 0), false)
	}
	if s.undo >= 0 {
		for _, c := range s.undoCandidates(rng, s.undo) {
			add(c, false)
		}
	}
	for _, c := range s.wideCandidates(rng, s.wide) {
		add(c, false)
	}
	for _, c := range s.edgeCandidates(rng, s.edges) {
		add(c, false)
	}
	rank := func() {
		sort.SliceStable(cands, func(a, b int) bool { return s.better(cands[a].assessment, cands[b].assessment) })
	}
	rank()
	for round := 0; round < 2; round++ {
		top := min(6, len(cands))
		for i := 0; i < top; i++ {
			add(s.refine(rng, cands[i]), true)
		}
		rank()
	}
	if s.ascents > 0 {
		top := min(s.ascents, len(cands))
		for i := 0; i < top; i++ {
			add(s.ascend(rng, cands[i]), true)
		}
		rank()
	}
	return s.preferSmaller(cands, s.tie)
}

// ascend improves c one scalar at a time (coordinate ascent on the acquisition): each
// movable scalar in turn tries its base value and a few positions across the trust
// region, and keeps the best. Moving one more scalar must gain at least moveCost, so a
// patch moves only the scalars the model finds worth their doubt.
func (s *searcher) ascend(rng *rand.Rand, c candidate) candidate {
	best := c
	for pass := 0; pass < 2; pass++ {
		improved := false
		for _, ri := range rng.Perm(len(s.rooms)) {
			for _, to := range s.ascentTries(s.rooms[ri], contains(best.moved, ri)) {
				if v, ok := s.ascentStep(best, ri, to); ok {
					best, improved = v, true
				}
			}
		}
		if !improved {
			break
		}
	}
	return best
}

// ascentFractions are the positions across the trust region's radius each scalar tries.
var ascentFractions = []float64{-1, -2.0 / 3, -1.0 / 3, 1.0 / 3, 2.0 / 3, 1}

// ascentTries are the positions room r tries in a coordinate ascent: its base when the
// candidate moves it, the incumbent's change taken back (undo candidates on), and a few
// positions across the trust region (switched on, for a weight that is off).
func (s *searcher) ascentTries(r room, moved bool) []float64 {
	var tries []float64
	if moved {
		tries = append(tries, r.base)
	}
	if s.undo >= 0 {
		// Take the incumbent's change back, to the default or past it.
		for _, other := range []bool{false, true} {
			if to, ok := backTo(r, other); ok {
				tries = append(tries, to)
			}
		}
	}
	if r.off {
		if r.dirUp {
			tries = append(tries, r.onLo, (r.onLo+r.hi)/2, r.hi)
		}
		return tries
	}
	for _, f := range ascentFractions {
		if (f > 0 && !r.dirUp) || (f < 0 && !r.dirDown) {
			continue
		}
		to := math.Min(math.Max(r.base+f*s.radius, r.lo), r.hi)
		if math.Abs(to-r.base) >= 1e-9 {
			tries = append(tries, to)
		}
	}
	return tries
}

// ascentStep is best with room ri moved to position to, when that ranks better once one
// more moved scalar is charged moveCost (one fewer credited it); false when it does not,
// or when the move would change no scalar or more than maxChanges.
func (s *searcher) ascentStep(best candidate, ri int, to float64) (candidate, bool) {
	r := s.rooms[ri]
	if to == best.x[r.dim] {
		return candidate{}, false
	}
	moved := contains(best.moved, ri)
	ms := best.moved
	switch {
	case to == r.base && moved:
		ms = without(best.moved, ri)
	case to != r.base && !moved:
		if len(best.moved) >= s.maxChanges {
			return candidate{}, false
		}
		ms = append(append([]int(nil), best.moved...), ri)
		sort.Ints(ms)
	}
	if len(ms) == 0 {
		return candidate{}, false
	}
	x := s.with(best.x, r, to)
	v := candidate{x: x, moved: ms}
	v.assessment = s.assess(x)
	cost := 0.0
	if len(ms) > len(best.moved) {
		cost = s.moveCost
	} else if len(ms) < len(best.moved) {
		cost = -s.moveCost
	}
	shifted := v.assessment
	shifted.acq -= cost
	if s.better(shifted, best.assessment) {
		return v, true
	}
	return candidate{}, false
}

func without(xs []int, x int) []int {
	var out []int
	for _, v := range xs {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func positionKey(x []float64) string {
	b := make([]byte, 0, 8*len(x))
	for _, v := range x {
		u := math.Float64bits(math.Round(v*1e6) / 1e6)
		for k := 0; k < 8; k++ {
			b = append(b, byte(u>>(8*k)))
		}
	}
	return string(b)
}

// trustRadius replays the finished rung-0 trials in order: the radius starts at start
// steps, doubles (up to one step, the step rule's ×2) after a trial whose score beat the
// best eligible score before it by the session's margin, and halves (down to a quarter of
// start) after fails trials in a row that did not.
func trustRadius(hist []session.TrialSummary, start float64, fails int) float64 {
	r := start
	best := math.Inf(-1)
	streak := 0
	first := true
	for _, h := range hist {
		if h.Rung != 0 || !h.State.Terminal() {
			continue
		}
		ok := h.State == session.TrialCompleted && h.Eligible && h.Score != nil
		if first {
			first = false
			if ok {
				best = *h.Score
			}
			continue
		}
		if ok && *h.Score > best+samplerImprove {
			r, streak = math.Min(2*r, 1), 0
		} else if streak++; streak >= fails {
			r, streak = math.Max(r/2, start/4), 0
		}
		if ok && *h.Score > best {
			best = *h.Score
		}
	}
	return r
}

// samplerImprove is the session's early-stop margin (docs/design.md §1): a trial improves
// on the best when it beats it by more than this.
const samplerImprove = 0.01
