package advisor

import (
	"math"
	"math/rand/v2"
	"sort"
)

// local narrows a move to its trust region around the base: a weight within the space's
// step rule (0.5×–2× of its magnitude), a param within paramStep of its range either side,
// both cut to the bounds. A param has no step rule, but a jump across its whole range is
// rarely what a tuner means by a step, and on the sim surface (and in reward tuning
// generally) the far ends of a kernel width or a threshold are where policies break. A
// weight that is off (0) keeps its whole switch-on range: there is no "near" for a term
// that is off.
func (m tpeMove) local(paramStep float64) tpeMove {
	if m.dim.weight {
		return m
	}
	zb := m.dim.encode(m.base)
	r := paramStep * (m.dim.hi - m.dim.lo)
	out := m
	out.zlo, out.zhi = math.Max(m.zlo, zb-r), math.Min(m.zhi, zb+r)
	if !(out.zhi > out.zlo) {
		return m
	}
	out.vlo, out.vhi = out.zlo, out.zhi
	return out
}

// tpeExplore moves k of the given scalars, chosen uniformly, each by half to all of its
// trust radius in a random direction (the other one when the bound leaves no room). Half
// at least, because a move within the evaluation noise teaches nothing; a weight's radius
// is the full step rule, so a weight moves ×1.41–×2 or ×0.5–×0.71.
func tpeExplore(rng *rand.Rand, moves []tpeMove, k int) []tpeChange {
	k = min(k, len(moves))
	idx := rng.Perm(len(moves))[:k]
	sort.Ints(idx)
	out := make([]tpeChange, 0, k)
	for _, i := range idx {
		m := moves[i]
		zb := math.Min(math.Max(m.dim.encode(m.base), m.zlo), m.zhi)
		up, down := m.zhi-zb, zb-m.zlo
		u := 0.5 + 0.5*rng.Float64()
		var z float64
		if (rng.IntN(2) == 0 && up > 0) || down <= 0 {
			z = zb + u*up
		} else {
			z = zb - u*down
		}
		out = append(out, tpeChange{dim: m.dim, old: m.base, new: m.dim.decode(z, m.vlo, m.vhi)})
	}
	return out
}
