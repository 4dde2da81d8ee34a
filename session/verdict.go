package session

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
)

// A session's reported gain is an estimate, and one it can be held to (docs/design.md §3,
// "the final evaluation"): the finalist it ships was chosen on the evaluation seeds, so
// those seeds' noise is in its favour (the winner's curse). Its gain is measured again on
// seeds that chose nothing, fresh ones, paired seed by seed with the baseline trained as
// long, and it is called an improvement only when that gain clears its own uncertainty.

// DefaultFinalEvalCount is how many fresh seeds a final evaluation draws when the session
// lists none: enough for a paired test to find a gain of a few hundredths at the sim's
// evaluation noise (bench/figures/README.md), and still a fraction of the training it checks.
const DefaultFinalEvalCount = 5

// MinFinalEvalCount and MaxFinalEvalCount bound final_eval_count: a spread needs two seeds,
// and more than sixteen would cost more than the evaluation they check is worth.
const (
	MinFinalEvalCount = 2
	MaxFinalEvalCount = 16
)

// freshSeedBase and freshSeedSpan place fresh seeds among 4-digit numbers (7301, 7302, ...),
// far from the 0, 1, 2 that evaluation seeds usually are, so a person reading them sees
// at once that they are not the seeds that chose.
const (
	freshSeedBase = 1000
	freshSeedSpan = 9000
)

// FreshSeeds are n consecutive evaluation seeds derived from the session's id, none of them
// among avoid (the evaluation seeds that chose): the same id gives the same seeds, so a
// resumed session re-evaluates on the seeds it started with.
func FreshSeeds(id string, n int, avoid []int) []int {
	h := fnv.New32a()
	h.Write([]byte(id))
	next := freshSeedBase + int(h.Sum32()%freshSeedSpan)
	out := make([]int, 0, n)
	for len(out) < n {
		if !slices.Contains(avoid, next) {
			out = append(out, next)
		}
		next++
	}
	return out
}

// VerdictLevel is the test's level: a gain is called an improvement when a one-sided paired
// t-test rejects "no gain" at 5 %, that is when its 95 % lower bound is above 0.
const VerdictLevel = 0.05

// tCritical95 is Student's t distribution's 95th percentile by degrees of freedom (1–30;
// index 0 unused), the one-sided 5 % critical value; checked against gonum in the tests.
var tCritical95 = [...]float64{0, 6.3138, 2.9200, 2.3534, 2.1318, 2.0150, 1.9432, 1.8946, 1.8595,
	1.8331, 1.8125, 1.7959, 1.7823, 1.7709, 1.7613, 1.7531, 1.7459, 1.7396, 1.7341, 1.7291,
	1.7247, 1.7207, 1.7171, 1.7139, 1.7109, 1.7081, 1.7056, 1.7033, 1.7011, 1.6991, 1.6973}

// TCritical is the one-sided 5 % critical value of Student's t with df degrees of freedom
// (df ≥ 1); past 30 it keeps 30's, a little above the true value, so the test only errs on
// the side of caution.
func TCritical(df int) float64 {
	if df < 1 {
		return math.Inf(1)
	}
	return tCritical95[min(df, len(tCritical95)-1)]
}

// Verdict is what the final evaluation says of the shipped trial's gain over the baseline
// trained as long: measured on fresh seeds, paired seed by seed, and whether it clears its
// own uncertainty. Unmeasured says why there is no test ("" when there is one).
type Verdict struct {
	// Gain is the headline's figure (Versus on the final evaluations): the trial scored
	// against the control's final mean metrics.
	Gain float64 `json:"gain"`
	// SE is Gain's standard error: the spread of the per-seed differences (each seed of both
	// scored against the control's final mean) over the square root of their number.
	SE float64 `json:"se"`
	// Lower is the one-sided 95 % lower bound, Gain − t·SE; Upper the upper one, Gain + t·SE.
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
	// Seeds are the fresh seeds the test paired: both were evaluated on them and both scored.
	// LeftOut are the chosen trial's final seeds the test could not pair (a seed's metrics did
	// not score, or the baseline has no result on it), named so the test's count adds up.
	Seeds   []int `json:"seeds"`
	LeftOut []int `json:"left_out,omitempty"`
	// Cleared is true when Lower > 0: the gain clears the noise.
	Cleared bool `json:"cleared"`
	// Test names the test in words (TestName); Unmeasured says why there is none.
	Test       string `json:"test"`
	Unmeasured string `json:"unmeasured"`
}

// Measured reports whether the verdict comes from a test.
func (v Verdict) Measured() bool { return v.Unmeasured == "" }

// TestName names the test over n fresh seeds, for every surface that reports it.
func TestName(n int) string {
	return fmt.Sprintf("one-sided paired t-test at %d %% over %d fresh seeds", int(VerdictLevel*100), n)
}

// Rounded is v with its measured numbers as a person reads them (Measured).
func (v Verdict) Rounded() Verdict {
	v.Gain, v.SE, v.Lower, v.Upper = Measured(v.Gain), Measured(v.SE), Measured(v.Lower), Measured(v.Upper)
	v.Seeds, v.LeftOut = slices.Clone(v.Seeds), slices.Clone(v.LeftOut)
	return v
}

// Text says the verdict in words: "+0.041 ± 0.012 on fresh seeds 7301–7305 (paired; 95 %
// lower bound +0.015): clears the noise", or why there was no test.
func (v Verdict) Text() string { return v.TextVersus("") }

// TextVersus is Text with what the gain is against after it ("vs baseline @ rung 2", Versus.Label),
// for a surface that shows the verdict without the headline around it (the page's list).
func (v Verdict) TextVersus(label string) string {
	if !v.Measured() {
		return "not measured on fresh seeds: " + v.Unmeasured
	}
	if label != "" {
		label = " " + label
	}
	return fmt.Sprintf("%s ± %s%s on fresh seeds %s (paired, 95 %% lower bound %s%s): %s",
		SignedScore(v.Gain), Spread(v.SE), label, SeedRange(v.Seeds), SignedScore(v.Lower), v.leftOutWords(), v.noiseWord())
}

// leftOutWords names the seeds the test left out, "" when it paired them all.
func (v Verdict) leftOutWords() string {
	if len(v.LeftOut) == 0 {
		return ""
	}
	return "; seed(s) " + seedList(v.LeftOut) + " left out: no paired score"
}

// noiseWord says whether a measured gain clears the noise, as the verdict line and the
// headline both say it.
func (v Verdict) noiseWord() string {
	if v.Cleared {
		return "clears the noise"
	}
	return "within the noise"
}

// SeedRange lists seeds compactly: "7301–7305" for a run, "4,9,12" otherwise (seedList).
func SeedRange(seeds []int) string {
	if n := len(seeds); n > 2 {
		run := true
		for i := 1; i < n; i++ {
			run = run && seeds[i] == seeds[i-1]+1
		}
		if run {
			return fmt.Sprintf("%d–%d", seeds[0], seeds[n-1])
		}
	}
	return seedList(seeds)
}

// VerdictOf tests trial t's gain over control, the baseline trained as long (its result at
// t's rung), on their final evaluations: the per-seed differences of their scores, each seed
// scored against the control's final mean metrics (the reference of VersusOf's final figure),
// paired by seed. Without both final evaluations on two or more common seeds, each with its
// per-seed metrics, the gain is unmeasured and says why.
func VerdictOf(st Settings, control *Trial, t Trial) Verdict {
	v := Verdict{}
	switch {
	case control == nil || control.Rung != t.Rung:
		v.Unmeasured = "no baseline was trained as long (control: false), so there is no comparison at equal training"
		return v
	case bool(t.FinalFailed):
		// The job's own words (its log's end) stay in the trial's reason: the verdict goes
		// into the headline, the push and the preset, and quotes nothing a trainer wrote.
		v.Unmeasured = fmt.Sprintf("its final evaluation failed (trial %d @ rung %d's reason says why)", t.Number, t.Rung)
		return v
	case t.Final == nil:
		v.Unmeasured = "it has no final evaluation"
		return v
	case bool(control.FinalFailed):
		v.Unmeasured = fmt.Sprintf("the baseline's final evaluation failed (trial 0 @ rung %d's reason says why)", control.Rung)
		return v
	case !hasFinalControl(control, t):
		v.Unmeasured = "the baseline trained as long has no final evaluation"
		return v
	}
	fv, ok := FinalVersusOf(st, control, t)
	if !ok || !fv.Final {
		// FinalVersusOf falls back to the rung's figure, the one that chose: never a gain
		// measured on fresh seeds.
		v.Unmeasured = fmt.Sprintf("trial %d @ rung %d's final mean metrics do not score against the baseline's (missing or non-finite)", t.Number, t.Rung)
		return v
	}
	v.Gain = fv.Score
	var d []float64
	v.Seeds, d = pairedDiffs(st, control, t)
	for _, seed := range t.Final.Seeds {
		if !slices.Contains(v.Seeds, seed) {
			v.LeftOut = append(v.LeftOut, seed)
		}
	}
	if len(d) < 2 {
		v.Unmeasured = fmt.Sprintf("the final evaluations share %d seed(s) with per-seed results; a spread needs 2", len(d))
		return v
	}
	v.SE = StdErr(d)
	v.Lower, v.Upper = v.Gain-TCritical(len(d)-1)*v.SE, v.Gain+TCritical(len(d)-1)*v.SE
	v.Cleared, v.Test = v.Lower > 0, TestName(len(d))
	return v
}

// StdErr is the standard error of xs's mean: the sample standard deviation (n − 1 in the
// denominator, as a t-test needs) over √n; 0 for fewer than two values.
func StdErr(xs []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	// MeanStd's is the population deviation, √(ss/n); the sample one over √n is √(ss/(n−1))/√n,
	// that is the population one over √(n−1).
	_, std := MeanStd(xs)
	return std / math.Sqrt(n-1)
}

// seedScores scores each seed's metrics of per with sc, in order: the seeds and their scores,
// a seed whose metrics do not score left out.
func seedScores(sc Scorer, per []SeedMetrics) (seeds []int, scores []float64) {
	for _, ps := range per {
		if s, err := sc.Score(ps.Metrics); err == nil {
			seeds, scores = append(seeds, ps.Seed), append(scores, s.Total)
		}
	}
	return seeds, scores
}

// pairedDiffs are t's per-seed scores less control's on the seeds both final evaluations
// report, each scored against the control's final mean metrics, and those seeds.
func pairedDiffs(st Settings, control *Trial, t Trial) (paired []int, d []float64) {
	sc := st.scorer(control.Final.Metrics)
	theirs := map[int]float64{}
	cs, cScores := seedScores(sc, control.Final.PerSeed)
	for k, seed := range cs {
		theirs[seed] = cScores[k]
	}
	seeds, mine := seedScores(sc, t.Final.PerSeed)
	for k, seed := range seeds {
		if c, ok := theirs[seed]; ok {
			paired, d = append(paired, seed), append(d, mine[k]-c)
			delete(theirs, seed) // a seed listed twice counts once
		}
	}
	return paired, d
}

// overlaps reports whether a and b share a seed.
func overlaps(a, b []int) bool {
	return slices.ContainsFunc(a, func(v int) bool { return slices.Contains(b, v) })
}
