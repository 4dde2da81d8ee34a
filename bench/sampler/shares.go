package main

import (
	"flag"
	"fmt"
	"io"

	"tunebot/session"
	"tunebot/trainer/sim"
)

// cmdShares says, noise-free, where each surface's attainable gain lies (README.md, Search V):
// for the oracle's configuration, the share of its gain each scalar holds (what is lost when
// that scalar alone goes back to its default), the share the scalars whose direction the
// space does not declare hold together (params without lowers), and the share the terms off
// by default hold. Medians over the surfaces.
func cmdShares(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("shares", flag.ContinueOnError)
	first := fs.Int64("first", 1, "first surface seed")
	surfaces := fs.Int("surfaces", 20, "number of surfaces")
	family := familyFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *first < 1 || *surfaces < 1 {
		return fmt.Errorf("-first %d -surfaces %d: surfaces from 1, at least one", *first, *surfaces)
	}
	st := session.DefaultSettings()
	st.Normalize()
	top := st.Rungs[len(st.Rungs)-1]
	sp := session.DefaultSpace()
	var largest, undecl, off, att []float64
	fmt.Fprintf(stdout, "%s family, surfaces %d..%d: share of the oracle's gain each group holds\n", *family, *first, *first+int64(*surfaces)-1)
	for seed := *first; seed < *first+int64(*surfaces); seed++ {
		surf, err := sim.NewFamilySurface(*family, seed)
		if err != nil {
			return err
		}
		best, gain := surf.Oracle(sp, top, st.Objective, st.Floors)
		if gain <= 0 {
			continue
		}
		lost := func(names ...string) float64 {
			c := best.Clone()
			for _, n := range names {
				if t, ok := sp.Term(n); ok {
					c.Weights[n] = t.Default
				} else if p, ok := sp.Param(n); ok {
					c.Params[n] = p.Default
				}
			}
			g, ok := surf.Gain(c, top, st.Objective, st.Floors)
			if !ok {
				g = min(g, 0)
			}
			return (gain - g) / gain
		}
		var und, offs []string
		top1, topName := 0.0, ""
		for _, n := range sp.Names() {
			if s := lost(n); s > top1 {
				top1, topName = s, n
			}
			if p, ok := sp.Param(n); ok && p.Lowers == "" {
				und = append(und, n)
			}
			if t, ok := sp.Term(n); ok && t.Default == 0 {
				offs = append(offs, n)
			}
		}
		u, o := lost(und...), lost(offs...)
		largest, undecl, off, att = append(largest, top1), append(undecl, u), append(off, o), append(att, gain)
		fmt.Fprintf(stdout, "surface %d: attainable %.3f, largest %s %.0f %%, undeclared %.0f %%, off terms %.0f %%\n", seed, gain, topName, 100*top1, 100*u, 100*o)
	}
	fmt.Fprintf(stdout, "medians: attainable %.3f, largest single scalar %.0f %%, undeclared params %.0f %%, off terms %.0f %%\n",
		medianOf(att), 100*medianOf(largest), 100*medianOf(undecl), 100*medianOf(off))
	return nil
}
