package session

import "math"

// The most and least a proposer's model may claim of a probability (docs/design.md §5): a
// model of a few trials cannot be sure of anything, and a probability of 100 % reads as a
// promise. With n trials observed, a chance is kept within [1/(n+2), (n+1)/(n+2)] (Laplace's
// rule of succession: what n observations all agreeing would support) and never beyond
// [CredenceMin, CredenceMax].
const (
	CredenceMin = 0.05
	CredenceMax = 0.95
)

// Credible clips probability p, estimated by a model of n observed trials, to what such a
// model can claim: one trial allows 33–67 %, eighteen or more 5–95 %.
func Credible(p float64, n int) float64 {
	if math.IsNaN(p) {
		return 0.5
	}
	n = max(n, 0)
	lo := math.Max(CredenceMin, 1/float64(n+2))
	hi := math.Min(CredenceMax, float64(n+1)/float64(n+2))
	return math.Round(100*math.Max(lo, math.Min(hi, p))) / 100
}
