package session

import (
	"fmt"
	"strings"
)

// Standing is one trial's score as a headline quotes it: the mean, spread and seeds of its
// final re-evaluation when it had one, else its evaluation at its rung.
type Standing struct {
	Trial      int     `json:"trial"`
	Rung       int     `json:"rung"`
	Iterations int     `json:"iterations"`
	Score      float64 `json:"score"`
	Std        float64 `json:"std"`
	Seeds      []int   `json:"seeds"`
	// Final is true when Score and Std come from the final re-evaluation. A rung score is the
	// mean over its seeds with no spread kept, so it is shown without a "±".
	Final bool `json:"final"`
}

// StandingOf is t's standing; seeds are the session's evaluation seeds its rung score used.
func StandingOf(t Trial, evalSeeds []int) Standing {
	st := Standing{Trial: t.Number, Rung: t.Rung, Iterations: t.Iterations, Seeds: append([]int{}, evalSeeds...)}
	switch {
	case t.Final != nil:
		st.Score, st.Std, st.Seeds, st.Final = t.Final.Score.Total, t.Final.ScoreStd, append([]int{}, t.Final.Seeds...), true
	case t.Score != nil:
		st.Score = t.Score.Total
	}
	return st
}

// Comparison is a session's headline result (docs/design.md §1): its best tuned trial against
// the baseline at the same rung (the baseline carried along every rung, "control"), or, where
// no baseline trained as long, against the baseline at rung 0, said in words. A finished
// session's figure is its final evaluation on fresh seeds, which chose nothing, with its
// verdict; before that it is the rung's evaluation, which is what chose.
type Comparison struct {
	Best Standing `json:"best"`
	// Control is the baseline at Best's rung; nil when the baseline was not trained as long.
	Control *Standing `json:"control,omitempty"`
	// BaselineIterations are rung 0's iterations, what an unmatched comparison is against.
	BaselineIterations int `json:"baseline_iterations"`
	// Final is true once the session chose its preset; before that the comparison is of the
	// trials finished so far.
	Final bool `json:"final,omitempty"`
	// Versus is Best's score against Control, on their final evaluations when both have one
	// (FinalVersusOf), or against rung 0's baseline when there is no control; nil in records
	// written before it.
	Versus *Versus `json:"versus,omitempty"`
	// Chosen is Best's figure on the evaluation seeds that chose it (VersusOf), kept beside
	// the fresh seeds' so the difference the choice made shows; nil when Versus is it.
	Chosen *Chosen `json:"chosen,omitempty"`
	// Verdict is what the fresh seeds say of Versus: its standard error, lower bound and
	// whether it clears the noise; nil until the session chose its preset.
	Verdict *Verdict `json:"verdict,omitempty"`
	// Dropped says which finalists of a finished session failed a gate on their final
	// re-evaluation and what the result is instead (DroppedFinalists); "" when none did.
	Dropped string `json:"dropped,omitempty"`
}

// Chosen is a finalist's figure against the baseline trained as long on the evaluation seeds
// that chose it: what the choice saw, luck included.
type Chosen struct {
	Score float64 `json:"score"`
	Seeds []int   `json:"seeds"`
}

// Compare returns s's headline from its trials. A succeeded session compares the trial it
// saved as its preset (or, when the baseline stands, the best tuned trial it beat); any other
// compares its best eligible tuned trial at the highest rung where the baseline also has a
// result (control), or at the highest rung it reached when the baseline was not carried
// along, so a cancelled or failed session never headlines an improvement that the baseline
// at equal training beats. ok is false while no tuned trial is eligible.
func Compare(s Session, trials []Trial) (Comparison, bool) {
	seeds := s.Settings.EvalSeeds
	out := Comparison{}
	if len(s.Settings.Rungs) > 0 {
		out.BaselineIterations = s.Settings.Rungs[0]
	}
	var best *Trial
	if s.State == StateSucceeded && (s.Preset != "" || s.Outcome == OutcomeNoImprovement) {
		chosen := s.BestOf(trials)
		if chosen == nil {
			return out, false
		}
		out.Final = true
		out.Dropped = DroppedFinalists(trials, *chosen)
		if best = headlineTrial(s.Settings, trials, chosen); best == nil {
			out.Best = StandingOf(*chosen, seeds)
			return out, true
		}
	} else if best = bestComparable(s, trials); best == nil {
		return out, false
	}
	control := ControlAt(trials, best.Rung)
	out.Best, out.Control = StandingOf(*best, seeds), controlStanding(trials, best.Rung, seeds)
	if v, ok := FinalVersusOf(s.Settings, control, *best); ok {
		out.Versus = &v
	}
	if out.Versus != nil && out.Versus.Final {
		// measured on the final seeds: what the seeds that chose it saw goes beside it
		c, _ := VersusOf(s.Settings, control, *best)
		out.Chosen = &Chosen{Score: c.Score, Seeds: append([]int{}, seeds...)}
	}
	if out.Final && (best.Final != nil || bool(best.FinalFailed)) {
		// a finalist whose final evaluation failed has a verdict too: why it is unmeasured
		v := VerdictOf(s.Settings, control, *best)
		out.Verdict = &v
	}
	return out, true
}

// DroppedFinalists says which trials at chosen's rung or above passed the gates at their rung
// but failed one on their final re-evaluation, and what the result is instead: "trial 2's
// final evaluation on 2 seeds fails a gate: tracking is 6.5% worse than the baseline @ rung 2
// (limit 5%); the result falls back to rung 1". "" when none did.
func DroppedFinalists(trials []Trial, chosen Trial) string {
	var parts []string
	top := chosen.Rung
	for _, t := range trials {
		if t.Rung < chosen.Rung || t.State != TrialCompleted || t.Score == nil || !t.Score.Eligible || t.Final == nil || t.Final.Score.Eligible {
			continue
		}
		top = max(top, t.Rung)
		parts = append(parts, fmt.Sprintf("trial %d's final evaluation on %d seeds fails a gate: %s", t.Number, len(t.Final.Seeds), joinLines(t.Final.Score.Reasons)))
	}
	if len(parts) == 0 {
		return ""
	}
	instead := fmt.Sprintf("the result is trial %d", chosen.Number)
	switch {
	case chosen.Rung < top:
		instead = fmt.Sprintf("the result falls back to rung %d", chosen.Rung)
	case chosen.Number == 0:
		instead = "the baseline stands"
	}
	return strings.Join(parts, "; ") + "; " + instead
}

// controlStanding is the standing of the baseline's completed, scored result at rung, nil
// when there is none.
func controlStanding(trials []Trial, rung int, seeds []int) *Standing {
	b := controlResult(trials, rung)
	if b == nil {
		return nil
	}
	st := StandingOf(*b, seeds)
	return &st
}

// controlResult is the baseline's completed, scored trial at rung, nil when there is none.
func controlResult(trials []Trial, rung int) *Trial {
	if b := findRung(trials, 0, rung); b != nil && b.State == TrialCompleted && b.Score != nil {
		return b
	}
	return nil
}

// headlineTrial is what a succeeded session headlines for the trial it chose: that trial,
// or, when the baseline won, the best eligible tuned trial it beat at its rung by the rung's
// figure (nil: none).
func headlineTrial(st Settings, trials []Trial, chosen *Trial) *Trial {
	if chosen.Number != 0 {
		return chosen
	}
	var tuned []Trial
	for _, t := range trials {
		if t.Rung == chosen.Rung && t.Number != 0 && t.Eligible() {
			tuned = append(tuned, t)
		}
	}
	if len(tuned) == 0 {
		return nil
	}
	FiguresAmong(st, trials, tuned).Sort(tuned)
	return findRung(trials, tuned[0].Number, tuned[0].Rung)
}

// bestComparable is an unfinished session's best eligible tuned trial at the highest rung
// where it can be compared at equal training (with control on, the baseline has a result
// there), nil when there is none.
func bestComparable(s Session, trials []Trial) *Trial {
	top := -1
	var best *Trial
	figs := FiguresOf(s.Settings, trials)
	for i := range trials {
		t := &trials[i]
		if t.Number == 0 || !t.Eligible() { // Eligible counts a final re-evaluation's gates too
			continue
		}
		if s.Settings.Control && t.Rung > 0 && controlResult(trials, t.Rung) == nil {
			continue // its rung has no baseline result yet: not comparable at equal training
		}
		if t.Rung > top || (t.Rung == top && figs.Of(*t) > figs.Of(*best)) {
			top, best = t.Rung, t
		}
	}
	return best
}

// Headline says the comparison in one line, for chat, the terminal and the digest.
func (c Comparison) Headline() string {
	if c.Dropped != "" {
		return c.Dropped + ". " + c.headline()
	}
	return c.headline()
}

func (c Comparison) headline() string {
	b := c.Best
	if b.Trial == 0 {
		return "no tuned trial beat the baseline"
	}
	who := fmt.Sprintf("trial %d @ rung %d", b.Trial, b.Rung)
	if c.Control == nil {
		return fmt.Sprintf("%s (%d iterations) scores %s vs the baseline at %d iterations (rung 0)%s: no baseline was trained as long (control off), so this is not a comparison at equal training",
			who, b.Iterations, signedStd(b), c.BaselineIterations, onSeeds(b))
	}
	if v := c.Versus; v != nil && v.Matched() && v.Final {
		return c.freshHeadline(who)
	}
	if b.Rung == 0 {
		return fmt.Sprintf("%s scores %s vs the baseline @ rung 0 (same %d iterations, seeds %s)%s", who, signedStd(b), b.Iterations, seedList(b.Seeds), c.chosenOnly())
	}
	k := *c.Control
	seeds := "the same seeds " + seedList(b.Seeds)
	if seedList(b.Seeds) != seedList(k.Seeds) {
		seeds = fmt.Sprintf("seeds %s (baseline: %s)", seedList(b.Seeds), seedList(k.Seeds))
	}
	// The two scores are on one reference and the gain is their difference: against the
	// control's own metrics (VersusControl, where it scores 0) when the session has them,
	// else both against the baseline's rung-0 evaluation, said so.
	mine, theirs, ref := signedStd(b), signedStd(k), "both vs baseline @ rung 0"
	diff := b.Score - k.Score
	if v := c.Versus; v != nil && v.Matched() {
		diff, mine, theirs, ref = v.Score, SignedScore(v.Score), SignedScore(0), "both "+v.Label()
	}
	verdict := SignedScore(diff) + " over the baseline"
	if diff <= 0 {
		verdict = "the baseline is ahead by " + Spread(-diff)
	}
	return fmt.Sprintf("%s scores %s, the baseline %s (%s) at the same %d iterations on %s: %s%s",
		who, mine, theirs, ref, b.Iterations, seeds, verdict, c.chosenOnly())
}

// chosenOnly is what a finished session's headline adds when the figure it shows is the one
// the seeds that chose the trial saw, because its final evaluation on fresh seeds did not
// measure it (a failed final evaluation, mean metrics that do not score): that the figure may
// overstate, and why there is no other. "" otherwise.
func (c Comparison) chosenOnly() string {
	if !c.Final || c.Verdict == nil || c.Verdict.Measured() {
		return ""
	}
	return " (on the seeds that chose it, so it may overstate the gain; " + c.Verdict.Text() + ")"
}

// freshHeadline is the headline of a trial measured with the baseline trained as long on
// fresh seeds (the final evaluation): the gain with its standard error, the verdict, and the
// figure on the seeds that chose it, so the difference the choice made is in plain view.
func (c Comparison) freshHeadline(who string) string {
	b, v := c.Best, c.Versus
	gain := SignedScore(v.Score)
	se, test := "", ""
	if d := c.Verdict; d != nil && d.Measured() {
		se = " ± " + Spread(d.SE)
		test = fmt.Sprintf(" (paired, 95 %% lower bound %s%s: %s)", SignedScore(d.Lower), d.leftOutWords(), d.noiseWord())
	} else if d != nil {
		test = " (" + d.Text() + ")"
	}
	verdict := gain + se + " over the baseline"
	if v.Score <= 0 {
		verdict = "the baseline is ahead by " + Spread(-v.Score) + se
		if d := c.Verdict; d != nil && d.Measured() && d.Upper < 0 {
			test = fmt.Sprintf(" (paired, 95 %% upper bound %s: the baseline is better)", SignedScore(d.Upper))
		}
	}
	where := "fresh seeds " + SeedRange(b.Seeds) + ", which chose nothing"
	if ch := c.Chosen; ch != nil && overlaps(b.Seeds, ch.Seeds) {
		// measured before final evaluations ran on fresh seeds: say it, as it may overstate
		where = "seeds " + seedList(b.Seeds) + ", which also chose it (a final evaluation from before fresh seeds: it may overstate the gain)"
	}
	line := fmt.Sprintf("%s scores %s, the baseline %s (both %s) at the same %d iterations on %s: %s%s",
		who, gain, SignedScore(0), v.Label(), b.Iterations, where, verdict, test)
	if ch := c.Chosen; ch != nil {
		line += fmt.Sprintf("; chosen at %s on seeds %s", SignedScore(ch.Score), seedList(ch.Seeds))
	}
	return line
}

// onSeeds says where a standing was measured: " on fresh seeds 7301–7305" for a final
// evaluation, "" for a rung's.
func onSeeds(s Standing) string {
	if s.Final {
		return " on fresh seeds " + SeedRange(s.Seeds)
	}
	return ""
}

func signedStd(s Standing) string {
	if s.Final && len(s.Seeds) > 1 {
		return SignedScore(s.Score) + " ± " + Spread(s.Std)
	}
	return SignedScore(s.Score)
}

func seedList(seeds []int) string {
	parts := make([]string, len(seeds))
	for i, v := range seeds {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}
