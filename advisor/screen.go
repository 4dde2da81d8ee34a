package advisor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"tunebot/session"
)

// The screen (docs/design.md §5, issue 45). The prior judges a scalar by what the reward
// space declares of it: a weight is expected to lower the metrics it acts on as it gets
// stronger, a param with `lowers` the same way. It cannot judge a param whose direction
// nothing declares, nor a term that is off: with only the baseline seen, the model gives
// every move of such a scalar the same small expected loss, so a search ranked by the model
// moves it only by accident and never learns which way it acts. The screen gathers that
// evidence on purpose: the first rung-0 trials after the baseline (SamplerOptions.Screen,
// a share of the session's trial budget) each move a group of those scalars, and only
// those, one unit step from the base (a term that is off: switched on at a typical
// magnitude, one step from off), few enough at once to be told apart: a group takes
// scalars that act on different metrics first, so the per-metric models can attribute what
// moved. The tracking weights and every declared scalar stay where they are, and a group
// whose gates the model doubts (a chance to pass below MinPass) loses its most doubtful
// member until it passes. The screen ends when every such scalar has evidence (two
// configurations the model sees differ in it by at least half a step, in this session or in
// the one it builds on) or when its share of trials is spent.

// screenMove is the least move, in steps, that counts as evidence on a scalar.
const screenMove = 0.5

// unjudged reports whether the prior cannot judge room r (unjudgedDim).
func unjudged(sp *session.Space, r room) bool { return unjudgedDim(sp, r.mv.dim, r.off) }

// unjudgedDim reports whether the prior cannot judge dim d: a param whose direction the
// space does not declare, a weight that acts on no declared metric, or a term that is off.
func unjudgedDim(sp *session.Space, d tpeDim, off bool) bool {
	metrics, sign := declaredOf(sp, d)
	return off && d.weight || len(metrics) == 0 || sign == 0
}

// seenPositions are the positions of every configuration the model sees or will see: this
// session's rung-0 trials that did not fail (running ones too), the proposals not rejected,
// and the finished trials of the session this one builds on. A failed trial is no evidence,
// so its configuration does not count when it is also among the tried ones.
func seenPositions(m *composite, req session.ProposalRequest) [][]float64 {
	var out [][]float64
	add := func(c session.RewardConfig) { out = append(out, m.position(c, req.Space)) }
	failed := map[string]bool{}
	for _, h := range req.History {
		switch {
		case h.Rung != 0:
		case h.State == session.TrialFailed:
			failed[configKey(h.Config)] = true
		default:
			add(h.Config)
		}
	}
	for _, t := range req.Tried {
		if !t.Rejected && !failed[configKey(t.Config)] {
			add(t.Config)
		}
	}
	for _, h := range req.Earlier {
		if h.Rung == 0 && h.State == session.TrialCompleted {
			add(h.Config)
		}
	}
	return out
}

// hasEvidence reports whether two of the positions differ in dim i by at least screenMove.
func hasEvidence(seen [][]float64, i int) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range seen {
		lo, hi = math.Min(lo, x[i]), math.Max(hi, x[i])
	}
	return hi-lo >= screenMove-1e-9
}

// trialsAfterBaseline counts this session's rung-0 configurations after the baseline: its
// trials (running ones too) and its proposals not rejected.
func trialsAfterBaseline(req session.ProposalRequest) int {
	seen := map[string]bool{}
	for _, h := range req.History {
		if h.Rung == 0 {
			seen[configKey(h.Config)] = true
		}
	}
	for _, t := range req.Tried {
		if !t.Rejected {
			seen[configKey(t.Config)] = true
		}
	}
	return max(len(seen)-1, 0)
}

// screenTrials is how many rung-0 trials after the baseline the screen may take: share of
// the session's budget of rung-0 trials (budget 0: not known, taken as 12), at least one,
// and none when fewer than screenAfter trials would be left to the model after it.
func screenTrials(share float64, budget int) int {
	if share <= 0 {
		return 0
	}
	if budget <= 0 {
		budget = 12
	}
	n := max(int(math.Round(share*float64(budget))), 1)
	if budget-1-n < screenAfter {
		return 0
	}
	return n
}

// screenAfter is the least number of rung-0 trials the model must have after the screen to
// act on what it learned: with the default share, a session of fewer than 8 trials has no
// screen.
const screenAfter = 5

// screenOrder orders the unscreened rooms for the screen: each next one the room whose
// declared metrics overlap least with those already taken, ties in rng's order.
func (s *searcher) screenOrder(rng *rand.Rand, unscreened []int) []int {
	order := append([]int(nil), unscreened...)
	rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	covered := map[string]int{}
	out := make([]int, 0, len(order))
	for len(order) > 0 {
		best, bestOverlap := 0, math.MaxInt
		for j, ri := range order {
			overlap := 0
			for _, name := range s.actsOn(ri) {
				overlap += covered[name]
			}
			if overlap < bestOverlap {
				best, bestOverlap = j, overlap
			}
		}
		ri := order[best]
		order = append(order[:best], order[best+1:]...)
		for _, name := range s.actsOn(ri) {
			covered[name]++
		}
		out = append(out, ri)
	}
	return out
}

// actsOn lists the metrics room ri's scalar is declared to act on.
func (s *searcher) actsOn(ri int) []string {
	var out []string
	for _, f := range s.m.fits {
		if f.declared[s.rooms[ri].dim] {
			out = append(out, f.name)
		}
	}
	return out
}

// screenTarget is where room r goes in a screen: one step up or down from the base (the way
// with room for a whole step, either at random when both have it, the longer otherwise), or
// switched on one step from off.
func screenTarget(rng *rand.Rand, r room) (float64, bool) {
	if r.off {
		return r.onLo, r.dirUp
	}
	up, down := r.hi-r.base, r.base-r.lo
	if !r.dirUp {
		up = 0
	}
	if !r.dirDown {
		down = 0
	}
	if up < screenMove && down < screenMove {
		return 0, false
	}
	dir := 1.0
	switch {
	case up >= 1 && down >= 1:
		dir = float64(1 - 2*rng.IntN(2))
	case down > up:
		dir = -1
	}
	if dir > 0 {
		return r.base + math.Min(1, up), true
	}
	return r.base - math.Min(1, down), true
}

// screenCandidate is the screen's candidate for this proposal, false when the screen is
// over: every unjudged scalar has evidence, or the screen's trials are spent.
func (s *searcher) screenCandidate(rng *rand.Rand, req session.ProposalRequest, trials int) (candidate, bool) {
	done := trialsAfterBaseline(req)
	if done >= trials {
		return candidate{}, false
	}
	seen := seenPositions(s.m, req)
	var unscreened []int
	for i, r := range s.rooms {
		if unjudged(req.Space, r) && !hasEvidence(seen, r.dim) {
			unscreened = append(unscreened, i)
		}
	}
	if len(unscreened) == 0 {
		return candidate{}, false
	}
	k := min((len(unscreened)+trials-done-1)/(trials-done), s.maxChanges)
	order := s.screenOrder(rng, unscreened)
	targets := map[int]float64{} // room → where the screen moves it
	next := 0
	fill := func() {
		for ; len(targets) < k && next < len(order); next++ {
			if to, ok := screenTarget(rng, s.rooms[order[next]]); ok {
				targets[order[next]] = to
			}
		}
	}
	for fill(); len(targets) > 0; fill() {
		c := candidate{x: append([]float64(nil), s.base...)}
		for ri, to := range targets {
			c.x[s.rooms[ri].dim] = to
			c.moved = append(c.moved, ri)
		}
		sort.Ints(c.moved)
		c.assessment = s.assess(c.x)
		if c.pass >= s.screenPass {
			return c, true
		}
		// The most doubtful member leaves, and the next unscreened room takes its place.
		delete(targets, s.mostDoubtful(targets))
	}
	return candidate{}, false
}

// mostDoubtful is the room among targets whose move alone the model gives the least chance
// to pass every gate.
func (s *searcher) mostDoubtful(targets map[int]float64) int {
	worst, worstPass := -1, math.Inf(1)
	for ri, to := range targets {
		a := s.assess(s.with(s.base, s.rooms[ri], to))
		if a.pass < worstPass || (a.pass == worstPass && ri < worst) {
			worst, worstPass = ri, a.pass
		}
	}
	return worst
}

// screenWhy is what a screen's sentence says it is for.
func screenWhy(changes []tpeChange) string {
	return fmt.Sprintf("to learn what %s that the reward space does not judge in advance (params without a declared direction, terms that are off) do, one step each, as a screen", plural(len(changes), "scalar"))
}
