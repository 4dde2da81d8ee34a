package advisor

import (
	"math"
	"math/rand/v2"
)

// tpeParzen is a univariate Parzen estimator as Optuna builds one for a float parameter:
// one truncated-normal kernel per observation plus a prior kernel centred on the domain with
// the domain's width, mixed with the observation weights and the prior weight.
type tpeParzen struct {
	mus, sigmas, weights []float64
	low, high            float64
}

// tpeGaussParams are the knobs of the estimator that Optuna exposes.
type tpeGaussParams struct {
	priorWeight       float64
	magicClip         bool
	considerEndpoints bool
}

// newTPEParzen builds the estimator over [low, high] from observations (model space, in
// chronological order) and their weights, following Optuna's univariate bandwidth rule:
// each kernel's sigma is the larger gap to its sorted neighbours (the prior's mean and, with
// considerEndpoints, the domain ends counting as neighbours), clipped to
// [(high-low)/min(100, n+2), high-low] under the magic clip.
func newTPEParzen(obs, obsWeights []float64, low, high float64, p tpeGaussParams) *tpeParzen {
	n := len(obs)
	pe := &tpeParzen{low: low, high: high}
	var w []float64
	if n == 0 {
		w = []float64{1}
	} else {
		w = append(append([]float64(nil), obsWeights...), p.priorWeight)
	}
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	for i := range w {
		w[i] /= sum
	}
	pe.weights = w

	priorMu := 0.5 * (low + high)
	sigmas := make([]float64, n)
	if n > 0 {
		// Sort observations together with the prior mean, remembering where each came from.
		all := append(append([]float64(nil), obs...), priorMu)
		order := tpeArgsort(all)
		ext := make([]float64, len(all)+2)
		ext[0] = low
		for i, j := range order {
			ext[i+1] = all[j]
		}
		ext[len(ext)-1] = high
		sorted := make([]float64, len(all))
		for i := range sorted {
			sorted[i] = math.Max(ext[i+1]-ext[i], ext[i+2]-ext[i+1])
		}
		if !p.considerEndpoints && len(ext) >= 4 {
			sorted[0] = ext[2] - ext[1]
			sorted[len(sorted)-1] = ext[len(ext)-2] - ext[len(ext)-3]
		}
		for i, j := range order {
			if j < n {
				sigmas[j] = sorted[i]
			}
		}
		maxSigma := high - low
		minSigma := 1e-12
		if p.magicClip {
			minSigma = (high - low) / math.Min(100, 1+float64(n+1))
		}
		for i := range sigmas {
			sigmas[i] = math.Min(math.Max(sigmas[i], minSigma), maxSigma)
		}
	}
	pe.mus = append(append([]float64(nil), obs...), priorMu)
	pe.sigmas = append(sigmas, high-low)
	return pe
}

// tpeArgsort returns the indices that sort xs ascending; ties keep their order.
func tpeArgsort(xs []float64) []int {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	// Insertion sort: stable and n is at most a few hundred trials.
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && xs[idx[j]] < xs[idx[j-1]]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	return idx
}

// logPDF is the log density of the mixture at x, each kernel normalised over the whole domain.
func (pe *tpeParzen) logPDF(x float64) float64 {
	terms := make([]float64, len(pe.mus))
	for k := range pe.mus {
		mu, s := pe.mus[k], pe.sigmas[k]
		z := (x - mu) / s
		mass := tpeNormMass((pe.low-mu)/s, (pe.high-mu)/s)
		terms[k] = math.Log(pe.weights[k]) - 0.5*z*z - math.Log(s) - 0.5*math.Log(2*math.Pi) - math.Log(mass)
	}
	return tpeLogSumExp(terms)
}

// sample draws from the mixture restricted to [a, b] ⊆ [low, high]: a kernel is chosen with
// probability proportional to its weight times its mass inside [a, b] (relative to its mass
// on the domain), then a truncated normal draw within [a, b]. With [a, b] the whole domain
// this is exactly Optuna's sampling.
func (pe *tpeParzen) sample(rng *rand.Rand, a, b float64) float64 {
	probs := make([]float64, len(pe.mus))
	total := 0.0
	for k := range pe.mus {
		mu, s := pe.mus[k], pe.sigmas[k]
		in := tpeNormMass((a-mu)/s, (b-mu)/s)
		all := tpeNormMass((pe.low-mu)/s, (pe.high-mu)/s)
		if all > 0 {
			probs[k] = pe.weights[k] * in / all
		}
		total += probs[k]
	}
	if !(total > 0) {
		return a + rng.Float64()*(b-a)
	}
	u := rng.Float64() * total
	k := len(probs) - 1
	for i, p := range probs {
		if u < p {
			k = i
			break
		}
		u -= p
	}
	return tpeTruncNormal(rng, pe.mus[k], pe.sigmas[k], a, b)
}

// tpeNormCDF is Φ(z).
func tpeNormCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// tpeNormMass is Φ(b)-Φ(a), computed in the tail where it is accurate.
func tpeNormMass(a, b float64) float64 {
	if a > 0 {
		return tpeNormCDF(-a) - tpeNormCDF(-b)
	}
	return tpeNormCDF(b) - tpeNormCDF(a)
}

// tpeTruncNormal draws from N(mu, s²) truncated to [a, b] by inverting the CDF, mirrored into
// the lower tail where the CDF has its precision.
func tpeTruncNormal(rng *rand.Rand, mu, s, a, b float64) float64 {
	za, zb := (a-mu)/s, (b-mu)/s
	flip := false
	if za > 0 {
		za, zb, flip = -zb, -za, true
	}
	pa, pb := tpeNormCDF(za), tpeNormCDF(zb)
	if !(pb > pa) {
		return a + rng.Float64()*(b-a)
	}
	p := pa + rng.Float64()*(pb-pa)
	z := -math.Sqrt2 * math.Erfcinv(2*p)
	z = math.Min(math.Max(z, za), zb)
	if flip {
		z = -z
	}
	return math.Min(math.Max(mu+s*z, a), b)
}

func tpeLogSumExp(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	if math.IsInf(m, -1) {
		return m
	}
	s := 0.0
	for _, x := range xs {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}
