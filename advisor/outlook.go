package advisor

import (
	"math"

	"tunebot/session"
)

// explorationWeight is the acquisition's weight on the model's doubt, mean + β·sd, after
// trials finished rung-0 trials (the baseline included): beta with the baseline alone,
// falling linearly to 0 at exploitAfter, so early proposals value what a trial would
// teach where the model knows little and later ones exploit what it has learned. A
// negative exploitAfter keeps beta throughout.
func explorationWeight(beta float64, trials, exploitAfter int) float64 {
	if beta <= 0 {
		return 0
	}
	if exploitAfter < 0 {
		return beta
	}
	if exploitAfter <= 1 || trials >= exploitAfter {
		return 0
	}
	return beta * float64(exploitAfter-max(trials, 1)) / float64(exploitAfter-1)
}

// outlookTop is how many of the ranked candidates the outlook looks at.
const outlookTop = 10

// outlook is what the model expects of the most promising candidates (session.Outlook):
// among the first outlookTop ranked, the most expected improvement of the noise-free score
// over the base's (the best configuration), draw by draw under the same coefficients, a
// draw in which a gate fails gaining nothing; the most chance of beating the base by more
// than one evaluation's noise on the score (and the session's margin); and that noise, at
// the proposed candidate c.
func (s *searcher) outlook(ranked []candidate, c candidate) session.Outlook {
	base, _ := s.cleanScores(s.base)
	o := session.Outlook{Noise: math.Sqrt(math.Max(c.measuredSD*c.measuredSD-c.sd*c.sd, 0))}
	bar := math.Max(o.Noise, session.NoiseMargin)
	for i := 0; i < min(outlookTop, len(ranked)); i++ {
		scores, ok := s.cleanScores(ranked[i].x)
		var gain float64
		beat := 0
		for k := range scores {
			if !ok[k] {
				continue
			}
			d := scores[k] - base[k]
			gain += math.Max(d, 0)
			if d > bar {
				beat++
			}
		}
		n := float64(max(len(scores), 1))
		o.Gain, o.Chance = math.Max(o.Gain, gain/n), math.Max(o.Chance, float64(beat)/n)
	}
	return o
}

// cleanScores returns the noise-free score at x under each of the model's draws, and
// whether every gate passes in it.
func (s *searcher) cleanScores(x []float64) ([]float64, []bool) {
	pt := s.m.at(x)
	out := make([]float64, len(s.beta))
	ok := make([]bool, len(s.beta))
	var clean, noisy [session.NumMetrics]float64
	for k := range s.beta {
		s.m.predict(pt, s.draws, k, &clean, &noisy)
		out[k], ok[k] = s.m.scorer.Quick(clean)
	}
	return out, ok
}
