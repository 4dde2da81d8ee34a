package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/gonum/stat"
)

// cmdSummary reads the session results of several methods and prints, per surface family
// and method, the spread of the fraction of the attainable gain its shipped configurations
// reached, the trials used, the share of proposed rung-0 trials that broke a gate, and the
// issue's targets for tunebot's sampler.
func cmdSummary(files []string, stdout io.Writer) error {
	type key struct{ family, method string }
	by := map[key][]sessionResult{}
	var keys []key
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r sessionResult
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				fh.Close()
				return fmt.Errorf("reading %s: %w", f, err)
			}
			if r.Family == "" {
				r.Family = "generic"
			}
			k := key{r.Family, r.Method}
			if by[k] == nil {
				keys = append(keys, k)
			}
			by[k] = append(by[k], r)
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	sort.SliceStable(keys, func(i, j int) bool { return keys[i].family < keys[j].family })
	families := map[string][]key{}
	var order []string
	for _, k := range keys {
		if families[k.family] == nil {
			order = append(order, k.family)
		}
		families[k.family] = append(families[k.family], k)
	}
	for fi, fam := range order {
		if fi > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "%s family\n", fam)
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "method\tsessions\tsurfaces\tq1\tmedian\tq3\tmean\tmean trials\tstopped early\tby the model\trung-0 trials saved\tbroke a gate\t")
		med := map[string]float64{}
		gates := map[string]float64{}
		for _, k := range families[fam] {
			rs := by[k]
			var fr []float64
			trials, early, byModel, saved, budget, sum := 0, 0, 0, 0, 0, 0.0
			proposed, broke := 0, 0
			surf := map[int64]bool{}
			for _, r := range rs {
				fr = append(fr, r.Fraction)
				sum += r.Fraction
				trials += r.Trials
				count := r.TrialCount
				if count == 0 {
					count = 12 // results written before the field
				}
				if r.Trials < count {
					early++
					saved += count - r.Trials
				}
				budget += count
				if r.ModelStop != nil {
					byModel++
				}
				surf[r.Surface] = true
				for i, ok := range r.Eligible0 {
					if i == 0 {
						continue // the baseline
					}
					proposed++
					if !ok {
						broke++
					}
				}
			}
			sort.Float64s(fr)
			med[k.method] = quantile(fr, 0.5)
			gates[k.method] = float64(broke) / float64(max(proposed, 1))
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f%%\t%.1f%%\t%.1f%%\t%.1f%%\t%.1f\t%d%%\t%d%%\t%d (%.0f%%)\t%.0f%%\t\n", k.method, len(rs), len(surf),
				100*quantile(fr, 0.25), 100*med[k.method], 100*quantile(fr, 0.75), 100*sum/float64(len(rs)),
				float64(trials)/float64(len(rs)), 100*early/len(rs), 100*byModel/len(rs), saved, 100*float64(saved)/float64(max(budget, 1)), 100*gates[k.method])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		t, ok := med["tunebot"]
		if !ok {
			continue
		}
		verdict := func(ok bool) string {
			if ok {
				return "met"
			}
			return "NOT met"
		}
		fmt.Fprintf(stdout, "target (%s): tunebot median ≥ 50%% of the attainable gain: %.1f%%: %s\n", fam, 100*t, verdict(t >= 0.5))
		if peer, o, ok := bestPeer(med, false); ok {
			fmt.Fprintf(stdout, "target (%s): tunebot ahead of every peer's median (best: %s, %.1f%%): %s\n", fam, peer, 100*o, verdict(t > o))
		}
		fmt.Fprintf(stdout, "target (%s): at most 20%% of tunebot's rung-0 trials break a gate: %.0f%%: %s\n", fam, 100*gates["tunebot"], verdict(gates["tunebot"] <= 0.2))
		if w, ok := med["tunebot-warm"]; ok {
			fmt.Fprintf(stdout, "target (%s): the second session's median ≥ 70%%: %.1f%%: %s\n", fam, 100*w, verdict(w >= 0.7))
			if peer, o, ok := bestPeer(med, true); ok {
				fmt.Fprintf(stdout, "target (%s): the second session ahead of every peer's study going on (best: %s, %.1f%%): %s\n", fam, peer, 100*o, verdict(w > o))
			}
		}
		rows := map[string][]sessionResult{}
		for _, k := range families[fam] {
			rows[k.method] = by[k]
		}
		for _, line := range pairedLines(rows) {
			fmt.Fprintf(stdout, "paired (%s): %s\n", fam, line)
		}
	}
	return nil
}

// pairedLines compares tunebot with each peer on the sessions both ran on the same surface
// and repetition (the same noise), the first sessions with tunebot's and the warm rows with
// tunebot's second session: the mean difference in points of the attainable gain, its
// standard error, and on how many sessions tunebot was better and worse. A median hides
// which method was ahead on the same problem; this says it.
func pairedLines(rows map[string][]sessionResult) []string {
	type at struct {
		surface int64
		rep     int
	}
	var out []string
	for _, base := range []string{"tunebot", "tunebot-warm"} {
		ours := map[at]float64{}
		for _, r := range rows[base] {
			ours[at{r.Surface, r.Rep}] = r.Fraction
		}
		if len(ours) == 0 {
			continue
		}
		var peers []string
		for name := range rows {
			if !strings.HasPrefix(name, "tunebot") && strings.HasSuffix(name, "-warm") == (base == "tunebot-warm") {
				peers = append(peers, name)
			}
		}
		sort.Strings(peers)
		for _, peer := range peers {
			var d []float64
			better, worse := 0, 0
			for _, r := range rows[peer] {
				f, ok := ours[at{r.Surface, r.Rep}]
				if !ok {
					continue
				}
				d = append(d, 100*(f-r.Fraction))
				switch {
				case f > r.Fraction:
					better++
				case f < r.Fraction:
					worse++
				}
			}
			if len(d) == 0 {
				continue
			}
			mean, sd := stat.MeanStdDev(d, nil)
			spread := "one session, no standard error"
			if len(d) > 1 {
				spread = fmt.Sprintf("standard error %.1f", sd/math.Sqrt(float64(len(d))))
			}
			out = append(out, fmt.Sprintf("%s − %s: %+.1f points (%s), %s better on %d, worse on %d of %d sessions",
				base, peer, mean, spread, base, better, worse, len(d)))
		}
	}
	return out
}

// bestPeer is the peer (a method not tunebot's) of the highest median among the warm rows
// (the study going on, "-warm") or the others, by name for ties; a variant of tunebot
// ("variant-…", variants.sh) is none.
func bestPeer(med map[string]float64, warm bool) (string, float64, bool) {
	best, bm, found := "", 0.0, false
	for name, m := range med {
		// tunebot's own rows, and its variants (variants.sh), are no peer to beat
		if strings.HasPrefix(name, "tunebot") || strings.HasPrefix(name, "variant-") || strings.HasSuffix(name, "-warm") != warm {
			continue
		}
		if !found || m > bm || (m == bm && name < best) {
			best, bm, found = name, m, true
		}
	}
	return best, bm, found
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
