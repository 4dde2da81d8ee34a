package session

import (
	"math"
	"strconv"
)

// SignificantDigits is how many significant digits a reward value keeps. A proposer's
// arithmetic (-200 × 1.9999999997) must not reach a preset, an export or the trainer's
// repository as -399.99999944548205: four digits are finer than any step the rules allow
// (0.5×–2×) and than any difference a training run can tell apart.
const SignificantDigits = 4

// Round returns patch with each value rounded to SignificantDigits significant digits,
// whoever wrote it (the sampler, DeepSeek, a person's edit): every patch entering the core
// passes through it (Validate rounds too), so no proposer needs to round for itself. A
// value that obeys the rules still obeys them once rounded: when the nearest rounding
// would cross a bound or the step rule, the value is rounded towards the inside instead,
// with more digits only if neither neighbour fits. A value that breaks a rule is left as
// written, so the refusal names what was proposed.
func (s *Space) Round(base RewardConfig, patch Patch) Patch {
	return s.round(base, patch, true)
}

// Complete returns the full configuration a partial one names: the space's defaults with
// partial's values over them, rounded as Round does (the step rule aside: a configuration
// is not a step), and checked with CheckConfig. An imported preset or a --base file may
// name only the few scalars it changes.
func (s *Space) Complete(partial RewardConfig) (RewardConfig, error) {
	full := Merge(s.Defaults(), s.round(s.Defaults(), partial, false))
	return full, s.CheckConfig(full)
}

// round rounds every value of patch a known name holds; steps says whether the step rule
// from base applies.
func (s *Space) round(base RewardConfig, patch Patch, steps bool) Patch {
	out := Patch{Weights: make(map[string]float64, len(patch.Weights)), Params: make(map[string]float64, len(patch.Params))}
	for name, v := range patch.Weights {
		out.Weights[name] = v
		t, ok := s.Term(name)
		if !ok {
			continue
		}
		old, had := base.Weights[name]
		if !had {
			old = t.Default
		}
		if !steps {
			old = 0 // checkWeight has no step to check from 0
		}
		out.Weights[name] = tidy(v, func(x float64) bool { return len(s.checkWeight(t, old, x)) == 0 })
	}
	for name, v := range patch.Params {
		out.Params[name] = v
		if p, ok := s.Param(name); ok {
			out.Params[name] = tidy(v, func(x float64) bool { return x >= p.Min && x <= p.Max })
		}
	}
	// Two ordered params rounded onto the same value would break their order: keep them as
	// written then.
	raw, rounded := Merge(base, patch), Merge(base, out)
	for _, o := range s.Orders {
		if raw.Params[o.Lower] < raw.Params[o.Upper] && !(rounded.Params[o.Lower] < rounded.Params[o.Upper]) {
			for _, k := range []string{o.Lower, o.Upper} {
				if v, ok := patch.Params[k]; ok {
					out.Params[k] = v
				}
			}
		}
	}
	return out
}

// tidy rounds v to SignificantDigits significant digits keeping fits(v): the nearer of
// the two roundings that fits, or with one digit more until one does. A value that does
// not fit, zero and non-finite values are returned as they are.
func tidy(v float64, fits func(float64) bool) float64 {
	if v == 0 || !finite(v) || !fits(v) {
		return v
	}
	for d := SignificantDigits; d < 16; d++ {
		scale := math.Pow(10, float64(d-1)-math.Floor(math.Log10(math.Abs(v))))
		near, far := roundSig(math.Floor(v*scale)/scale, d+1), roundSig(math.Ceil(v*scale)/scale, d+1)
		if v-near > far-v {
			near, far = far, near
		}
		for _, x := range []float64{near, far} {
			if fits(x) {
				return x
			}
		}
	}
	return v
}

// roundSig is v with d significant digits, in the shortest form that prints them.
func roundSig(v float64, d int) float64 {
	x, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', d, 64), 64)
	if err != nil {
		return v
	}
	return x
}
