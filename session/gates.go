package session

import (
	"fmt"
	"strings"
)

// TrackingPasses reports whether a tracking objective passes its gate (docs/design.md §3):
// at most 5 % worse than the baseline it is measured against. Every judgement of the gate
// (scores, the objectives chart) goes through it. The tolerance keeps a value exactly at the
// gate passing despite float rounding.
func TrackingPasses(tracking float64) bool { return tracking >= GateTrackingMin-1e-9 }

// FallRatePasses reports whether a fall rate passes its gate against the baseline's: at most
// GateFallRateMargin above it (0.15 + 0.02 is 0.16999999999999998, hence the tolerance).
func FallRatePasses(fallRate, baseline float64) bool {
	return fallRate <= baseline+GateFallRateMargin+1e-9
}

// Judge returns t with its gates judged as docs/design.md §3 says: against the baseline
// trained as long (control, the baseline's result at t's rung) when the session has it, and
// against the baseline's rung-0 evaluation (the stored judgement) only where none was trained.
// Its rung evaluation is judged against the control's, its final re-evaluation against the
// control's final one when both have one. The control itself passes at its rung (it is the
// baseline there). Scores stay the stored ones (rung-0 reference); only Eligible, Reasons and
// t.Reason change. control may be nil.
func Judge(st Settings, control *Trial, t Trial) Trial {
	if t.State != TrialCompleted || t.Score == nil || !HasControl(control, t) {
		return t
	}
	// judged is sc with the gates of metrics m judged against baseline, the control's.
	judged := func(sc Score, baseline, m Metrics) Score {
		if t.Number == 0 {
			sc.Eligible, sc.Reasons = true, nil
			return sc
		}
		scorer := st.scorer(baseline)
		scorer.Against = fmt.Sprintf("the baseline @ rung %d", t.Rung)
		if j, err := scorer.Score(m); err == nil {
			sc.Eligible, sc.Reasons = j.Eligible, j.Reasons
		}
		return sc
	}
	sc := judged(*t.Score, control.Metrics, t.Metrics)
	t.Score = &sc
	if t.Final != nil && control.Final != nil {
		f := *t.Final
		f.Score = judged(f.Score, control.Final.Metrics, f.Metrics)
		t.Final = &f
	}
	if t.Reason == "" || hasGateReason(t.Reason) {
		t.Reason = GateReason(t)
	}
	return t
}

// JudgeAll judges every trial of trials against its control (Judge), in place, and returns
// the indices of those whose judgement changed.
func JudgeAll(st Settings, trials []Trial) []int {
	controls := Controls(trials)
	var changed []int
	for i, t := range trials {
		j := Judge(st, controls[t.Rung], t)
		if judgementChanged(t, j) {
			trials[i] = j
			changed = append(changed, i)
		}
	}
	return changed
}

func judgementChanged(a, b Trial) bool {
	if a.Reason != b.Reason || (a.Score == nil) != (b.Score == nil) || (a.Final == nil) != (b.Final == nil) {
		return true
	}
	if a.Score != nil && (a.Score.Eligible != b.Score.Eligible || joinLines(a.Score.Reasons) != joinLines(b.Score.Reasons)) {
		return true
	}
	return a.Final != nil && (a.Final.Score.Eligible != b.Final.Score.Eligible || joinLines(a.Final.Score.Reasons) != joinLines(b.Final.Score.Reasons))
}

const (
	notEligiblePrefix = "not eligible: "
	finalFailsPrefix  = "final evaluation on "
)

func hasGateReason(r string) bool { return strings.HasPrefix(r, notEligiblePrefix) }

// GateReasons lists why a scored trial is not eligible, nil when it is: its rung
// evaluation's failed gates, else its final re-evaluation's, said so (FinalGateText).
// Every surface that says why (cards, the page, charts) takes them from here.
func GateReasons(t Trial) []string {
	switch {
	case t.Score == nil:
		return nil
	case !t.Score.Eligible:
		return t.Score.Reasons
	case t.Final != nil && !t.Final.Score.Eligible:
		return []string{FinalGateText(t)}
	}
	return nil
}

// GateReason is why a completed trial is not eligible, "" when it is: its rung evaluation's
// failed gates, or its final re-evaluation's ("final evaluation on 2 seeds fails tracking is
// 6.5% worse than ...").
func GateReason(t Trial) string {
	if r := GateReasons(t); len(r) > 0 {
		return notEligiblePrefix + joinLines(r)
	}
	return ""
}

// FinalGateText says which gates a finalist's final re-evaluation fails: "final evaluation on
// 2 seeds: tracking is 6.5% worse than the baseline @ rung 2 (limit 5%)"; "" when it passes.
func FinalGateText(t Trial) string {
	if t.Final == nil || t.Final.Score.Eligible {
		return ""
	}
	return fmt.Sprintf("%s%d seeds: %s", finalFailsPrefix, len(t.Final.Seeds), joinLines(t.Final.Score.Reasons))
}
