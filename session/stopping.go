package session

import (
	"cmp"
	"slices"
)

// noImprovement counts the rung-0 trials since the last one that beat the best score by
// more than NoiseMargin (0.01), and returns the best rung-0 trial number. Trials count in the order they
// finished (several run at once with a parallel executor, docs/design.md §1), the number
// breaking ties; trials still running do not count.
func noImprovement(r0 []Trial) (count, best int) {
	done := make([]Trial, 0, len(r0))
	for _, t := range r0 {
		if t.Number != 0 && t.State.Terminal() {
			done = append(done, t)
		}
	}
	slices.SortStableFunc(done, func(a, b Trial) int {
		if c := a.EndedAt.Compare(b.EndedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Number, b.Number)
	})
	bestScore := 0.0
	for _, t := range done {
		if t.Eligible() && t.Score.Total > bestScore+NoiseMargin {
			bestScore, best, count = t.Score.Total, t.Number, 0
		} else {
			count++
		}
	}
	return count, best
}
