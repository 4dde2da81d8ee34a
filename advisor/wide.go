package advisor

import (
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distmv"
	"gonum.org/v1/gonum/stat/samplemv"
)

// Two kinds of candidates beside the trust region's (docs/design.md §5, issue 37):
//
//   - undo candidates take back one or more of the incumbent's changes, to the default (the
//     baseline's position) or past it toward the other side, so a move that did not help
//     is not carried to the end of the session because nothing proposed to drop it;
//   - wide candidates are a scrambled Halton design (gonum's samplemv, Owen's scrambling)
//     over every scalar's whole room, so the search also looks far from the incumbent.
//
// The acquisition then charges every change a configuration carries from the defaults a
// little (SamplerOptions.CarryCost), so among candidates the model cannot tell apart the one
// with the fewer changes wins, and the shipped configuration carries only moves the
// evidence supports.

// changed lists the rooms whose base position differs from the baseline's: the incumbent's
// changes.
func (s *searcher) changed() []int {
	var out []int
	for i, r := range s.rooms {
		if math.Abs(r.base) > 1e-9 {
			out = append(out, i)
		}
	}
	return out
}

// backTo is where room r goes when its change is taken back: the default (0), or as far
// past it toward the other side as the incumbent's change was (other), within the room.
func backTo(r room, other bool) (float64, bool) {
	to := 0.0
	if other {
		to = -r.base
	}
	to = math.Min(math.Max(to, r.lo), r.hi)
	if (to > r.base && !r.dirUp) || (to < r.base && !r.dirDown) || math.Abs(to-r.base) < 1e-9 {
		return 0, false
	}
	return to, true
}

// undoCandidates takes back each of the incumbent's changes alone (to the default and toward
// the other side), every change at once, and n random subsets of them.
func (s *searcher) undoCandidates(rng *rand.Rand, n int) []candidate {
	changed := s.changed()
	if len(changed) == 0 {
		return nil
	}
	var out []candidate
	make1 := func(rooms []int, other bool) {
		back := func(r room) (float64, bool) { return backTo(r, other) }
		if c, ok := s.moveTo(rooms, back); ok {
			out = append(out, c)
		}
	}
	for _, ri := range changed {
		make1([]int{ri}, false)
		make1([]int{ri}, true)
	}
	make1(changed, false)
	for k := 0; k < n; k++ {
		var sub []int
		for _, ri := range changed {
			if rng.IntN(2) == 0 {
				sub = append(sub, ri)
			}
		}
		make1(sub, false)
	}
	return out
}

// moveTo is the candidate that moves each room of set, in turn, from the base to where to
// says (skipping a room to leaves where it is), up to maxChanges rooms; false when it moves
// none. The undo and edge candidates are made by it.
func (s *searcher) moveTo(set []int, to func(room) (float64, bool)) (candidate, bool) {
	x := append([]float64(nil), s.base...)
	var moved []int
	for _, ri := range set {
		if len(moved) == s.maxChanges {
			break
		}
		if v, ok := to(s.rooms[ri]); ok {
			x[s.rooms[ri].dim] = v
			moved = append(moved, ri)
		}
	}
	if len(moved) == 0 {
		return candidate{}, false
	}
	sort.Ints(moved)
	return candidate{x: x, moved: moved}, true
}

// wideCandidates are n candidates over every room's whole extent: each changes up to
// maxChanges scalars, the scalars taken in turn from shuffled rounds of every room so each
// is changed about as often as any other, and each scalar's values over the candidates that
// change it are a Latin hypercube of its room (gonum's samplemv: one value in each of as
// many equal strata as there are such candidates), so the design covers every room evenly
// whatever the cap on changes.
func (s *searcher) wideCandidates(rng *rand.Rand, n int) []candidate {
	D := len(s.rooms)
	if n <= 0 || D == 0 {
		return nil
	}
	var stream []int
	sets := make([][]int, n)
	for p := range sets {
		k := 1 + rng.IntN(min(s.maxChanges, D))
		for len(sets[p]) < k {
			if len(stream) == 0 {
				stream = rng.Perm(D)
			}
			if ri := stream[0]; !contains(sets[p], ri) {
				sets[p] = append(sets[p], ri)
			}
			stream = stream[1:]
		}
		sort.Ints(sets[p])
	}
	xs := make([][]float64, n)
	for p := range xs {
		xs[p] = append([]float64(nil), s.base...)
	}
	for ri, r := range s.rooms {
		var at []int
		for p, set := range sets {
			if contains(set, ri) {
				at = append(at, p)
			}
		}
		lo, hi, ok := wideRange(r)
		if len(at) == 0 || !ok {
			continue
		}
		u := mat.NewDense(len(at), 1, nil)
		samplemv.LatinHypercube{Q: distmv.NewUnitUniform(1, rng), Src: rng}.Sample(u)
		for k, p := range at {
			xs[p][r.dim] = lo + u.At(k, 0)*(hi-lo)
		}
	}
	out := make([]candidate, 0, n)
	for p, set := range sets {
		var moved []int
		for _, ri := range set {
			if xs[p][s.rooms[ri].dim] != s.base[s.rooms[ri].dim] {
				moved = append(moved, ri)
			}
		}
		if len(moved) > 0 {
			out = append(out, candidate{x: xs[p], moved: moved})
		}
	}
	return out
}

// wideRange is the extent of room r the wide design covers: all of it, on the allowed side
// of the base when a constraint allows one side only, from the middle up for a weight that
// is off; false when nothing is left.
func wideRange(r room) (float64, float64, bool) {
	lo, hi := r.lo, r.hi
	if r.off {
		lo = r.onLo
	}
	if !r.dirUp {
		hi = r.base
	}
	if !r.dirDown && !r.off {
		lo = r.base
	}
	return lo, hi, hi-lo > 1e-9
}

// carried is how many scalars position x changes from the defaults (the baseline's
// position).
func carried(x []float64) int {
	n := 0
	for _, v := range x {
		if math.Abs(v) > 1e-9 {
			n++
		}
	}
	return n
}

// tieLook is how many of the best-ranked candidates preferSmaller compares with the first.
const tieLook = 30

// preferSmaller puts first, among the candidates the model cannot tell from the best-ranked
// one, the one that carries the fewest changes from the defaults: the best's lead over it,
// draw by draw under the same coefficients, is less than tie times its spread, and it is as
// likely to pass the gates. The others keep their order.
func (s *searcher) preferSmaller(ranked []candidate, tie float64) []candidate {
	if tie <= 0 || len(ranked) < 2 {
		return ranked
	}
	top := ranked[0]
	at := s.scores(top.x)
	pick, fewest := 0, carried(top.x)
	for i := 1; i < min(tieLook, len(ranked)); i++ {
		c := ranked[i]
		n := carried(c.x)
		if n >= fewest || (c.pass < s.minPass && top.pass >= s.minPass) {
			continue
		}
		if mean, sd := pairedGain(at, s.scores(c.x)); mean < tie*sd {
			pick, fewest = i, n
		}
	}
	if pick == 0 {
		return ranked
	}
	out := append([]candidate{ranked[pick]}, ranked[:pick]...)
	return append(out, ranked[pick+1:]...)
}

// edgeCandidates push the scalars the model says matter to the edge of their room (the step
// rule's or the bounds'), each the way its promise points: the k most promising together for
// every k up to maxChanges, then n sets drawn by promise. A trust region's moves stop short
// of the edge (a third to all of the radius) and the wide design's strata rarely reach it,
// so where the optimum sits at a bound (the generic family) only these go all the way.
func (s *searcher) edgeCandidates(rng *rand.Rand, n int) []candidate {
	if n <= 0 {
		return nil
	}
	var order []int
	for i, r := range s.rooms {
		if r.promise > 0 && r.bestSign != 0 {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return nil
	}
	sort.SliceStable(order, func(a, b int) bool { return s.rooms[order[a]].promise > s.rooms[order[b]].promise })
	var out []candidate
	make1 := func(set []int) {
		if c, ok := s.moveTo(set, edgeOf); ok {
			out = append(out, c)
		}
	}
	for k := 1; k <= min(s.maxChanges, len(order)); k++ {
		make1(order[:k])
	}
	for p := 0; p < n; p++ {
		k := 1 + rng.IntN(min(s.maxChanges, len(order)))
		make1(pickByPromise(rng, s.rooms, order, k))
	}
	return out
}

// edgeOf is the edge of room r its promise points to, false when that is the base.
func edgeOf(r room) (float64, bool) {
	to := r.lo
	if r.bestSign > 0 {
		to = r.hi
	}
	if (to > r.base && !r.dirUp) || (to < r.base && (!r.dirDown || r.off)) || math.Abs(to-r.base) < 1e-9 {
		return 0, false
	}
	return to, true
}

// pickByPromise draws k distinct rooms of order, each with a chance in proportion to its
// promise.
func pickByPromise(rng *rand.Rand, rooms []room, order []int, k int) []int {
	left := append([]int(nil), order...)
	var out []int
	for len(out) < k && len(left) > 0 {
		total := 0.0
		for _, ri := range left {
			total += rooms[ri].promise
		}
		u, at := rng.Float64()*total, len(left)-1
		for j, ri := range left {
			if u -= rooms[ri].promise; u <= 0 {
				at = j
				break
			}
		}
		out = append(out, left[at])
		left = append(left[:at], left[at+1:]...)
	}
	return out
}
