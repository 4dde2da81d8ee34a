package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
)

// cmdSummary reads the session results of several methods and prints, per method, the
// spread of the fraction of the attainable gain its shipped configurations reached, the
// trials used, and the targets for tunebot's sampler.
func cmdSummary(files []string, stdout io.Writer) error {
	by := map[string][]sessionResult{}
	var names []string
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var r sessionResult
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				fh.Close()
				return fmt.Errorf("reading %s: %w", f, err)
			}
			if by[r.Method] == nil {
				names = append(names, r.Method)
			}
			by[r.Method] = append(by[r.Method], r)
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "method\tsessions\tsurfaces\tq1\tmedian\tq3\tmean\tmean trials\tstopped early\t")
	med := map[string]float64{}
	for _, n := range names {
		rs := by[n]
		var fr []float64
		trials, early, sum := 0, 0, 0.0
		surf := map[int64]bool{}
		for _, r := range rs {
			fr = append(fr, r.Fraction)
			sum += r.Fraction
			trials += r.Trials
			if r.Trials < 12 {
				early++
			}
			surf[r.Surface] = true
		}
		sort.Float64s(fr)
		med[n] = quantile(fr, 0.5)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f%%\t%.1f%%\t%.1f%%\t%.1f%%\t%.1f\t%d%%\t\n", n, len(rs), len(surf),
			100*quantile(fr, 0.25), 100*med[n], 100*quantile(fr, 0.75), 100*sum/float64(len(rs)), float64(trials)/float64(len(rs)), 100*early/len(rs))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	t, ok := med["tunebot"]
	if !ok {
		return nil
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintf(stdout, "target: tunebot median ≥ 50%% of the attainable gain: %.1f%%: %s\n", 100*t, verdict(t >= 0.5))
	if o, ok := med["optuna"]; ok {
		fmt.Fprintf(stdout, "target: tunebot ahead of Optuna's median (%.1f%%): %s\n", 100*o, verdict(t > o))
	}
	if r, ok := med["random"]; ok {
		fmt.Fprintf(stdout, "target: tunebot ≥ 1.5× random's median (%.1f%%): %s\n", 100*r, verdict(t >= 1.5*r && t > 0))
	}
	return nil
}

// quantile of sorted xs, linear between order statistics.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	p := q * float64(len(xs)-1)
	i := int(p)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (p-float64(i))*(xs[i+1]-xs[i])
}
