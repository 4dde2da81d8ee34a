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

// cmdTable reads the JSON-line results of several samplers and prints one row per seed and
// the summary the targets are stated in.
func cmdTable(files []string, stdout io.Writer) error {
	best := map[string]map[int]float64{}
	var names []string
	seeds := map[int]bool{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var r result
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				fh.Close()
				return fmt.Errorf("reading %s: %w", f, err)
			}
			if best[r.Sampler] == nil {
				best[r.Sampler] = map[int]float64{}
				names = append(names, r.Sampler)
			}
			best[r.Sampler][r.Seed] = r.Best
			seeds[r.Seed] = true
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	var order []int
	for s := range seeds {
		order = append(order, s)
	}
	sort.Ints(order)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "seed\t")
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t", n)
	}
	fmt.Fprintln(tw)
	for _, s := range order {
		fmt.Fprintf(tw, "%d\t", s)
		for _, n := range names {
			if v, ok := best[n][s]; ok {
				fmt.Fprintf(tw, "%.4f\t", v)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "median\t")
	for _, n := range names {
		fmt.Fprintf(tw, "%.4f\t", median(best[n]))
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	if t, r := best["tpe"], best["random"]; t != nil && r != nil {
		ahead, ties, n := 0, 0, 0
		for s, tv := range t {
			rv, ok := r[s]
			if !ok {
				continue
			}
			n++
			switch {
			case tv > rv:
				ahead++
			case tv == rv:
				ties++
			}
		}
		fmt.Fprintf(stdout, "tpe ahead of random in %d of %d seeds (%.0f%%, %d ties; target ≥ 80%%)\n", ahead, n, 100*float64(ahead)/float64(max(n, 1)), ties)
	}
	if t, o := best["tpe"], best["optuna"]; t != nil && o != nil {
		mt, mo := median(t), median(o)
		verdict := "not behind"
		if mt < mo {
			verdict = "BEHIND"
		}
		fmt.Fprintf(stdout, "median best: tpe %.4f, optuna %.4f: tpe %s optuna (target: not behind)\n", mt, mo, verdict)
	}
	return nil
}

func median(m map[int]float64) float64 {
	var xs []float64
	for _, v := range m {
		xs = append(xs, v)
	}
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}
