package advisor

import (
	"math"
	"math/rand/v2"
	"testing"

	"tunebot/session"
)

// searcherFor is the search of one proposal of s for req, as Propose prepares it.
func searcherFor(s *Sampler, req session.ProposalRequest) (*searcher, *rand.Rand) {
	dims := tpeDims(req.Space)
	moves := constrainMoves(req, tpeMovable(req.Space, dims, req.Base))
	rng := rand.New(rand.NewPCG(uint64(req.Seed), uint64(len(req.History))^samplerStream))
	m := fitComposite(req, s.unit, s.opts.Prior)
	return s.searcher(rng, m, req, moves), rng
}

// The space-filling design covers every scalar's whole room: each quarter of every room
// holds some candidate's value of it.
func TestWideCandidatesCoverTheBox(t *testing.T) {
	space := session.DefaultSpace()
	sr, rng := searcherFor(NewSampler(SamplerOptions{}), requestOf(space, 1.3))
	cands := sr.wideCandidates(rng, 120)
	if len(cands) < 100 {
		t.Fatalf("%d wide candidates of 120", len(cands))
	}
	for ri, r := range sr.rooms {
		lo, hi := r.lo, r.hi
		if r.off {
			lo = r.onLo
		}
		var hit [4]bool
		for _, c := range cands {
			if len(c.moved) > sr.maxChanges {
				t.Fatalf("a wide candidate changes %d scalars, more than %d", len(c.moved), sr.maxChanges)
			}
			if !contains(c.moved, ri) {
				continue
			}
			v := c.x[r.dim]
			if v < lo-1e-9 || v > hi+1e-9 {
				t.Fatalf("%s at %.3f, outside its room %.3f–%.3f", r.mv.dim.name, v, lo, hi)
			}
			hit[min(int(4*(v-lo)/(hi-lo)), 3)] = true
		}
		for q, ok := range hit {
			if !ok {
				t.Errorf("%s: no wide candidate in quarter %d of its room %.2f–%.2f", r.mv.dim.name, q+1, lo, hi)
			}
		}
	}
}

// An undo candidate takes back each of the incumbent's changes alone, to the default and
// past it, and all of them at once.
func TestUndoCandidatesTakeBackTheIncumbentsChanges(t *testing.T) {
	space := session.DefaultSpace()
	req := requestOf(space, 1.3)
	req.Base = space.Defaults()
	req.Base.Weights["foot_slip"] *= 1.6
	req.Base.Weights["pose"] *= 0.7
	sr, rng := searcherFor(NewSampler(SamplerOptions{}), req)
	changed := sr.changed()
	if len(changed) != 2 {
		t.Fatalf("the incumbent's changes: %d rooms, want 2 (foot_slip and pose)", len(changed))
	}
	toDefault, past, all := 0, 0, false
	for _, c := range sr.undoCandidates(rng, 5) {
		for _, ri := range c.moved {
			if !contains(changed, ri) {
				t.Fatalf("an undo candidate moves %s, which the incumbent did not change", sr.rooms[ri].mv.dim.name)
			}
			r := sr.rooms[ri]
			switch to := c.x[r.dim]; {
			case math.Abs(to) < 1e-9:
				toDefault++
			case to*r.base < 0:
				past++
			}
		}
		all = all || len(c.moved) == 2
	}
	if toDefault < 2 || past < 2 || !all {
		t.Errorf("undo candidates: %d moves to the default, %d past it, all at once %v; want each change taken back both ways and all at once", toDefault, past, all)
	}
}

// Of two candidates the model cannot tell apart, the one that carries fewer changes from
// the defaults ranks first: here one more scalar the model expects a hair better of.
func TestFewerChangesWinWhenTheModelCannotTell(t *testing.T) {
	space := session.DefaultSpace()
	req := requestOf(space, 1.3, 0.7, 1.6)
	with := NewSampler(SamplerOptions{CarryCost: 0.001})
	without := NewSampler(SamplerOptions{})
	sr, _ := searcherFor(with, req)
	sr0, _ := searcherFor(without, req)
	slip := -1
	for ri, r := range sr.rooms {
		if r.mv.dim.name == "foot_slip" {
			slip = ri
		}
	}
	small := sr.with(sr.base, sr.rooms[slip], 0.5)
	for ri, r := range sr.rooms {
		if ri == slip || r.off {
			continue
		}
		big := sr.with(small, r, 0.3)
		a, b := sr0.assess(small), sr0.assess(big)
		if d := b.mean - a.mean; d <= 0 || d >= 0.0008 || b.pass < sr.minPass || a.pass < sr.minPass {
			continue
		}
		// The model expects the larger set a hair better, within what it can tell.
		if sr0.better(a, b) {
			t.Fatalf("without the charge the smaller set already wins: the test shows nothing")
		}
		if !sr.better(sr.assess(small), sr.assess(big)) {
			t.Errorf("foot_slip alone (%.4f) against foot_slip and %s (%.4f): the larger set wins", a.mean, r.mv.dim.name, b.mean)
		}
		return
	}
	t.Fatal("no scalar the model expects a hair better of: the test shows nothing")
}

// Of the best-ranked candidate and one the model cannot tell from it that carries fewer
// changes, the smaller goes first; one the best clearly leads stays behind.
func TestSmallerSetGoesFirstWhenTheModelCannotTell(t *testing.T) {
	space := session.DefaultSpace()
	req := requestOf(space, 1.3, 0.7, 1.6)
	sr, _ := searcherFor(NewSampler(SamplerOptions{}), req)
	slip := -1
	for ri, r := range sr.rooms {
		if r.mv.dim.name == "foot_slip" {
			slip = ri
		}
	}
	small := candidate{x: sr.with(sr.base, sr.rooms[slip], 0.5), moved: []int{slip}}
	small.assessment = sr.assess(small.x)
	for ri, r := range sr.rooms {
		if ri == slip || r.off {
			continue
		}
		big := candidate{x: sr.with(small.x, r, 0.3), moved: []int{slip, ri}}
		big.assessment = sr.assess(big.x)
		if big.mean <= small.mean || big.pass < sr.minPass || small.pass < sr.minPass {
			continue
		}
		a, b := sr.scores(big.x), sr.scores(small.x)
		for k := range a {
			a[k] -= b[k]
		}
		if lead, sd := session.MeanStd(a); lead > 0.1*sd {
			continue // the model can tell these apart
		}
		ranked := []candidate{big, small}
		if got := sr.preferSmaller(ranked, 0); got[0].moved[len(got[0].moved)-1] != ri {
			t.Fatal("with the rule off the order changed")
		}
		got := sr.preferSmaller(ranked, 0.25)
		if len(got[0].moved) != 1 {
			t.Errorf("foot_slip alone (%.4f) against foot_slip and %s (%.4f): the larger set stays first", small.mean, r.mv.dim.name, big.mean)
		}
		// A foot_slip move the model clearly expects less of stays behind.
		weak := candidate{x: sr.with(sr.base, sr.rooms[slip], 0.02), moved: []int{slip}}
		weak.assessment = sr.assess(weak.x)
		if got := sr.preferSmaller([]candidate{big, weak}, 0.25); len(got[0].moved) != 2 {
			t.Errorf("a foot_slip move of 0.02 steps (%.4f) went ahead of the best (%.4f)", weak.mean, big.mean)
		}
		return
	}
	t.Fatal("no scalar the model expects a hair better of: the test shows nothing")
}

// Edge candidates put the scalars the model finds promising at the edge of their room the
// way their promise points, the most promising alone and with the next ones, never more
// than the cap on changes; none are drawn when they are off.
func TestEdgeCandidatesPushPromisingScalarsToTheirEdge(t *testing.T) {
	space := session.DefaultSpace()
	sr, rng := searcherFor(NewSampler(SamplerOptions{Edges: 8}), requestOf(space, 1.3))
	sr.promise(rng, sr.assess(sr.base))
	top, promising := -1, 0
	for ri, r := range sr.rooms {
		if r.promise > 0 && r.bestSign != 0 {
			promising++
			if top < 0 || r.promise > sr.rooms[top].promise {
				top = ri
			}
		}
	}
	if promising < 2 {
		t.Fatalf("%d promising scalars; the test needs two", promising)
	}
	if got := sr.edgeCandidates(rng, 0); got != nil {
		t.Fatalf("%d edge candidates with Edges off", len(got))
	}
	cands := sr.edgeCandidates(rng, sr.edges)
	if want := min(sr.maxChanges, promising) + sr.edges; len(cands) > want || len(cands) < sr.edges {
		t.Fatalf("%d edge candidates, want %d at most and %d at least", len(cands), want, sr.edges)
	}
	r := sr.rooms[top]
	edge := r.lo
	if r.bestSign > 0 {
		edge = r.hi
	}
	alone := false
	for _, c := range cands {
		if len(c.moved) > sr.maxChanges {
			t.Fatalf("an edge candidate changes %d scalars, more than %d", len(c.moved), sr.maxChanges)
		}
		for _, ri := range c.moved {
			q := sr.rooms[ri]
			if v := c.x[q.dim]; v != q.lo && v != q.hi {
				t.Errorf("%s at %.3f, not at an edge of its room %.3f–%.3f", q.mv.dim.name, v, q.lo, q.hi)
			}
		}
		if len(c.moved) == 1 && c.moved[0] == top && c.x[r.dim] == edge {
			alone = true
		}
	}
	if !alone {
		t.Errorf("no edge candidate moves the most promising scalar %s alone to %.3f", r.mv.dim.name, edge)
	}
}
