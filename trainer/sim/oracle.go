package sim

import (
	"math"
	"math/rand/v2"

	"tunebot/session"
)

// Gain is the noise-free score of cfg at iteration against the defaults at the same
// iteration (docs/design.md §3), and whether it passes the gates.
func (s *Surface) Gain(cfg session.RewardConfig, iteration int, w session.ObjectiveWeights, floors session.Metrics) (float64, bool) {
	sc, err := session.Scorer{Baseline: s.Expected(s.Space().Defaults(), iteration), Weights: w, Floors: floors}.Score(s.Expected(cfg, iteration))
	if err != nil {
		return math.Inf(-1), false
	}
	return sc.Total, sc.Eligible
}

// oracleGrid is the number of positions per scalar one sweep tries.
const oracleGrid = 41

// Oracle searches the noise-free surface within the bounds of sp for the eligible
// configuration of the highest Gain: coordinate sweeps over a 41-point grid of every scalar
// (log magnitude for weights, 0 as well for terms that may be off), repeated until a sweep
// finds nothing better, from the defaults and from five random starts (on the coupled
// family also from its groups at their targets, which no sweep of one scalar finds), then a
// finer sweep around the best. It ignores the patch rules: it is the attainable gain a benchmark
// measures sessions against, not a proposer.
func (s *Surface) Oracle(sp *session.Space, iteration int, w session.ObjectiveWeights, floors session.Metrics) (session.RewardConfig, float64) {
	dims := coords(sp)
	score := func(c session.RewardConfig) float64 {
		if sp.CheckConfig(c) != nil {
			return math.Inf(-1)
		}
		g, ok := s.Gain(c, iteration, w, floors)
		if !ok {
			return math.Inf(-1)
		}
		return g
	}
	grid := unitGrid(oracleGrid - 1)
	rng := rand.New(rand.NewPCG(uint64(s.seed), 0x0dac1e))
	var best session.RewardConfig
	bestGain := math.Inf(-1)
	starts := 6
	if s.gen != nil && s.gen.coupled != nil {
		starts++ // and from every group of the coupled family at its targets
	}
	for start := 0; start < starts; start++ {
		c := sp.Defaults()
		switch {
		case start == 6:
			for _, g := range s.gen.coupled.synergies {
				for _, m := range g.members {
					setUnit(c, m.c, m.target)
				}
			}
		case start > 0:
			for _, d := range dims {
				setUnit(c, d, rng.Float64())
			}
		}
		cur := score(c)
		if math.IsInf(cur, -1) {
			c, cur = sp.Defaults(), score(sp.Defaults())
		}
		for i := 0; i < 10; i++ {
			next := sweep(dims, score, c, cur, grid)
			if next <= cur+1e-9 {
				break
			}
			cur = next
		}
		if cur > bestGain {
			best, bestGain = c, cur
		}
	}
	fine := unitGrid(4 * (oracleGrid - 1))
	for i := 0; i < 3; i++ {
		next := sweep(dims, score, best, bestGain, fine)
		if next <= bestGain+1e-9 {
			break
		}
		bestGain = next
	}
	return best, bestGain
}

// setUnit sets d in c to u of its range: linear for a param, in log magnitude for a
// weight, and a weight off (0) for u < 0.
func setUnit(c session.RewardConfig, d coord, u float64) {
	if !d.weight {
		c.Params[d.name] = d.lo + u*(d.hi-d.lo)
		return
	}
	if u < 0 {
		c.Weights[d.name] = 0
		return
	}
	c.Weights[d.name] = d.sign * math.Exp(d.lo+u*(d.hi-d.lo))
}

// sweep moves each of dims in turn, in c, to the value of grid that scores best above cur
// (a weight that may be off tries 0 too), keeping it where nothing beats cur; it returns
// the score c ends at.
func sweep(dims []coord, score func(session.RewardConfig) float64, c session.RewardConfig, cur float64, grid []float64) float64 {
	for _, d := range dims {
		keepW, keepP := c.Weights[d.name], c.Params[d.name]
		bestU, best := math.NaN(), cur
		us := grid
		if d.zero {
			us = append([]float64{-1}, grid...)
		}
		for _, u := range us {
			setUnit(c, d, u)
			if v := score(c); v > best+1e-12 {
				bestU, best = u, v
			}
		}
		if math.IsNaN(bestU) {
			if d.weight {
				c.Weights[d.name] = keepW
			} else {
				c.Params[d.name] = keepP
			}
			continue
		}
		setUnit(c, d, bestU)
		cur = best
	}
	return cur
}

// unitGrid is the k+1 points 0, 1/k, …, 1.
func unitGrid(k int) []float64 {
	g := make([]float64, k+1)
	for i := range g {
		g[i] = float64(i) / float64(k)
	}
	return g
}
