package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"tunebot/session"
	"tunebot/trainer/sim"
)

// cmdBox checks, noise-free, what the 0.5×–2× box that random search and Optuna search
// holds on each surface (README.md, "Is the comparison fair"): the share of random box
// points that pass the gates at the top rung and which gate the others break, the median
// point's and the best of 11 random points' fraction of the attainable gain, and what a
// coordinate search confined to the box reaches (the box's own ceiling).
func cmdBox(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("box", flag.ContinueOnError)
	first := fs.Int64("first", 1, "first surface seed")
	surfaces := fs.Int("surfaces", 40, "number of surfaces")
	points := fs.Int("points", 400, "random box points per surface")
	family := familyFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *first < 1 || *points < 11 {
		return fmt.Errorf("-first %d -points %d: surfaces from 1, at least 11 points", *first, *points)
	}
	st := session.DefaultSettings()
	st.Normalize()
	top := st.Rungs[len(st.Rungs)-1]
	sp := boxSpace()
	dims := boxDims(sp)
	reasons := map[string]int{}
	var eligible, median, best11, ceiling []float64
	for seed := *first; seed < *first+int64(*surfaces); seed++ {
		surf, err := sim.NewFamilySurface(*family, seed)
		if err != nil {
			return err
		}
		_, att := surf.Oracle(session.DefaultSpace(), top, st.Objective, st.Floors)
		scorer := session.Scorer{Baseline: surf.Expected(sp.Defaults(), top), Weights: st.Objective, Floors: st.Floors}
		rng := rand.New(rand.NewPCG(uint64(seed), 0xb0c5))
		var fr []float64
		ok := 0
		for range *points {
			x := map[string]float64{}
			for _, d := range dims {
				u := rng.Float64()
				if d.weight {
					x[d.name] = math.Exp(math.Log(d.lo) + u*(math.Log(d.hi)-math.Log(d.lo)))
				} else {
					x[d.name] = d.lo + u*(d.hi-d.lo)
				}
			}
			c := session.Merge(sp.Defaults(), boxPatch(dims, x))
			sc, err := scorer.Score(surf.Expected(c, top))
			if err != nil {
				return err
			}
			g := sc.Total
			if sc.Eligible {
				ok++
			} else {
				g = math.Min(g, 0)
			}
			for _, r := range sc.Reasons {
				reasons[strings.SplitN(r, " ", 2)[0]]++
			}
			fr = append(fr, g/att)
		}
		var b11 []float64
		for k := 0; k+11 <= len(fr); k += 11 {
			b := 0.0 // the baseline is always there to ship
			for _, v := range fr[k : k+11] {
				b = math.Max(b, v)
			}
			b11 = append(b11, b)
		}
		eligible = append(eligible, float64(ok)/float64(*points))
		median = append(median, medianOf(fr))
		best11 = append(best11, medianOf(b11))
		ceiling = append(ceiling, boxCeiling(surf, sp, dims, top, st)/att)
	}
	fmt.Fprintf(stdout, "surfaces %d..%d, %d random points of the box each, noise-free at %d iterations (medians over surfaces)\n",
		*first, *first+int64(*surfaces)-1, *points, top)
	fmt.Fprintf(stdout, "box points passing the gates: %.0f%%; gates broken (all points): fall rate %d, tracking %d\n",
		100*medianOf(eligible), reasons["fall"], reasons["tracking"])
	fmt.Fprintf(stdout, "fraction of the attainable gain: median box point %.0f%%, best of 11 box points %.0f%%, coordinate search within the box %.0f%%\n",
		100*medianOf(median), 100*medianOf(best11), 100*medianOf(ceiling))
	return nil
}

// boxCeiling is a coordinate search confined to the box (41 points per scalar, sweeps until
// nothing improves), from the defaults: the noise-free gain the box holds.
func boxCeiling(surf *sim.Surface, sp *session.Space, dims []boxDim, top int, st session.Settings) float64 {
	x := map[string]float64{}
	for _, d := range dims {
		if d.weight {
			t, _ := sp.Term(d.name)
			x[d.name] = math.Abs(t.Default)
		} else {
			p, _ := sp.Param(d.name)
			x[d.name] = p.Default
		}
	}
	gain := func() float64 {
		c := session.Merge(sp.Defaults(), boxPatch(dims, x))
		if sp.CheckConfig(c) != nil {
			return math.Inf(-1)
		}
		g, ok := surf.Gain(c, top, st.Objective, st.Floors)
		if !ok {
			return math.Inf(-1)
		}
		return g
	}
	cur := gain()
	for sweep := 0; sweep < 10; sweep++ {
		start := cur
		for _, d := range dims {
			best := x[d.name]
			for k := 0; k <= 40; k++ {
				u := float64(k) / 40
				if d.weight {
					x[d.name] = math.Exp(math.Log(d.lo) + u*(math.Log(d.hi)-math.Log(d.lo)))
				} else {
					x[d.name] = d.lo + u*(d.hi-d.lo)
				}
				if g := gain(); g > cur+1e-12 {
					cur, best = g, x[d.name]
				}
			}
			x[d.name] = best
		}
		if cur <= start+1e-9 {
			break
		}
	}
	return cur
}

func medianOf(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return quantile(s, 0.5)
}
