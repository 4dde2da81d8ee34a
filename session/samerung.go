package session

import "fmt"

// Versus is a trial's score as every surface shows it (docs/design.md §1, comparing like with
// like): against the baseline trained as long (its control, at the trial's own rung) when the
// session has that result, else against the baseline at rung 0, "trained less".
type Versus struct {
	// Score is the trial's score recomputed against the control's metrics (the §3 formula with
	// the control as the baseline), or the stored score when the control is rung 0's baseline.
	Score float64 `json:"score"`
	// ControlRung is the rung of the baseline Score is measured against.
	ControlRung int `json:"control_rung"`
	// Rung is the trial's rung; ControlRung < Rung means the baseline was trained less.
	Rung int `json:"rung"`
	// Final is true when Score compares the final re-evaluations of both (the same seeds).
	Final bool `json:"final"`
}

// Matched reports whether the comparison is at equal training.
func (v Versus) Matched() bool { return v.ControlRung == v.Rung }

// Label says what the score is against: "vs baseline @ rung 1", or "vs baseline @ rung 0,
// trained less" when no baseline was trained as long.
func (v Versus) Label() string {
	if v.Matched() {
		return fmt.Sprintf("vs baseline @ rung %d", v.ControlRung)
	}
	return fmt.Sprintf("vs baseline @ rung %d, trained less", v.ControlRung)
}

// String is the score with its label, "+0.031 vs baseline @ rung 1".
func (v Versus) String() string { return SignedScore(v.Score) + " " + v.Label() }

// ControlAt returns the baseline's completed, scored trial at rung, or nil.
func ControlAt(trials []Trial, rung int) *Trial {
	for i := range trials {
		t := &trials[i]
		if t.Rung == rung && isControl(t) {
			return t
		}
	}
	return nil
}

// isControl reports whether t is a baseline result a trial at its rung is measured against.
func isControl(t *Trial) bool {
	return t.Number == 0 && t.State == TrialCompleted && t.Score != nil && t.Metrics != nil
}

// Controls is ControlAt for every rung at once, by rung, so that a loop over trials finds
// each one's control (VersusOf) without scanning them all again.
func Controls(trials []Trial) map[int]*Trial {
	out := map[int]*Trial{}
	for i := range trials {
		t := &trials[i]
		if _, seen := out[t.Rung]; !seen && isControl(t) {
			out[t.Rung] = t
		}
	}
	return out
}

// VersusControl is t's score against the baseline at its rung among trials (ControlAt), or
// against rung 0's baseline when there is none; ok is false when t has no score. The one
// rule every surface uses to show a score above rung 0.
func VersusControl(st Settings, trials []Trial, t Trial) (Versus, bool) {
	return VersusOf(st, ControlAt(trials, t.Rung), t)
}

// HasControl reports whether control is a baseline result t's score is recomputed against
// (VersusOf, ScoreVersus): one at t's rung, above rung 0, with metrics.
func HasControl(control *Trial, t Trial) bool {
	return t.Rung > 0 && control != nil && control.Rung == t.Rung && control.Metrics != nil
}

// VersusOf is VersusControl with the control given (nil: none at t's rung). A trial's stored
// score is measured against the baseline's rung-0 metrics; because each metric's improvement
// is divided by the baseline's own value and clipped, the score against another baseline is
// not a difference of two stored scores, so it is recomputed from the metrics with the
// control as the baseline. The final re-evaluations are compared when both have one (the
// same final seeds), else the rung evaluations.
func VersusOf(st Settings, control *Trial, t Trial) (Versus, bool) {
	if t.Score == nil {
		return Versus{}, false
	}
	v := Versus{Score: t.Score.Total, Rung: t.Rung}
	if t.Final != nil {
		v.Score, v.Final = t.Final.Score.Total, true
	}
	if !HasControl(control, t) {
		return v, true
	}
	if t.Number == 0 {
		// The control itself: 0 against itself by definition.
		return Versus{Score: 0, ControlRung: t.Rung, Rung: t.Rung, Final: t.Final != nil}, true
	}
	sc := st.scorer(control.Metrics)
	mine, final := t.Metrics, false
	if t.Final != nil && control.Final != nil {
		sc.Baseline, mine, final = control.Final.Metrics, t.Final.Metrics, true
	}
	s, err := sc.Score(mine)
	if err != nil {
		return v, true // metrics unreadable: keep the stored score and say it is against rung 0
	}
	return Versus{Score: s.Total, ControlRung: t.Rung, Rung: t.Rung, Final: final}, true
}

// ScoreVersus is t's rung evaluation scored against control (the baseline at t's rung), every
// objective and improvement with it, and the control's rung; without a control at t's rung
// it is t's stored score against rung 0's baseline, and rung 0. Eligibility and its reasons
// are the trial's (Trial.Eligible, GateReasons): judged against the same control when it
// exists (Judge), so a chart drawn from this score never disagrees with them (§3).
func ScoreVersus(st Settings, control *Trial, t Trial) (sc Score, controlRung int, ok bool) {
	if t.Score == nil {
		return Score{}, 0, false
	}
	stored := *t.Score
	stored.Eligible, stored.Reasons = t.Eligible(), GateReasons(t)
	if !HasControl(control, t) {
		return stored, 0, true
	}
	s, err := st.scorer(control.Metrics).Score(t.Metrics)
	if err != nil {
		return stored, 0, true
	}
	s.Eligible, s.Reasons = stored.Eligible, stored.Reasons
	return s, t.Rung, true
}
