package session

import (
	"fmt"
	"sort"
)

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

// VersusOf is VersusControl with the control given (nil: none at t's rung): t's rung
// evaluation against the control's, the equal-training figure that ranks every trial of a
// rung (RankFigure) and that the table, cards and page show beside it. A trial's stored score
// is measured against the baseline's rung-0 metrics; because each metric's improvement is
// divided by the baseline's own value and clipped, the score against another baseline is not
// a difference of two stored scores, so it is recomputed from the metrics with the control as
// the baseline. A final re-evaluation never enters it: the final evaluation measures what was
// chosen, it does not choose (FinalVersusOf).
func VersusOf(st Settings, control *Trial, t Trial) (Versus, bool) {
	if t.Score == nil {
		return Versus{}, false
	}
	v := Versus{Score: t.Score.Total, Rung: t.Rung}
	if !HasControl(control, t) {
		return v, true
	}
	if t.Number == 0 {
		// The control itself: 0 against itself by definition.
		return Versus{Score: 0, ControlRung: t.Rung, Rung: t.Rung}, true
	}
	s, err := st.scorer(control.Metrics).Score(t.Metrics)
	if err != nil {
		return v, true // metrics unreadable: keep the stored score and say it is against rung 0
	}
	return Versus{Score: s.Total, ControlRung: t.Rung, Rung: t.Rung}, true
}

// FinalVersusOf is t's figure on the final evaluation, on fresh seeds that chose nothing: its
// final re-evaluation against the control's (Final true) when both have one, its final score
// against rung 0's baseline when no baseline was trained as long, else VersusOf.
// The headline, the preset's figure and its verdict (VerdictOf) are this one.
func FinalVersusOf(st Settings, control *Trial, t Trial) (Versus, bool) {
	switch {
	case t.Score == nil || t.Final == nil:
		return VersusOf(st, control, t)
	case hasFinalControl(control, t):
	case control == nil || control.Rung != t.Rung:
		// No baseline trained as long: its final score against rung 0's, said so.
		return Versus{Score: t.Final.Score.Total, Rung: t.Rung, Final: true}, true
	default:
		return VersusOf(st, control, t) // the control's final evaluation has not ended
	}
	if t.Number == 0 {
		return Versus{Score: 0, ControlRung: t.Rung, Rung: t.Rung, Final: true}, true
	}
	s, err := st.scorer(control.Final.Metrics).Score(t.Final.Metrics)
	if err != nil {
		return VersusOf(st, control, t)
	}
	return Versus{Score: s.Total, ControlRung: t.Rung, Rung: t.Rung, Final: true}, true
}

// hasFinalControl reports whether control is the baseline's result at t's rung with a final
// evaluation t's final one is compared with (at rung 0 too: the baseline's rung-0 result is
// then the control, measured again on the same fresh seeds).
func hasFinalControl(control *Trial, t Trial) bool {
	return control != nil && control.Rung == t.Rung && control.Number == 0 && control.Final != nil && len(control.Final.Metrics) > 0
}

// RankFigure is the figure that ranks t among the trials of its rung, everywhere (the best,
// the promotion plans, the leaderboard, the ladder and the star): VersusOf against controls'
// result at t's rung; a trial without a score ranks last.
func RankFigure(st Settings, controls map[int]*Trial, t Trial) float64 {
	if v, ok := VersusOf(st, controls[t.Rung], t); ok {
		return v.Score
	}
	return -2
}

// Figures are the RankFigure of each of a session's trials, by trial and rung, computed once:
// a step, a page view or a chart ranks with them many times, and each is a whole §3 score.
type Figures map[TrialRef]float64

// FiguresOf computes the figures of trials, a session's trials.
func FiguresOf(st Settings, trials []Trial) Figures { return FiguresAmong(st, trials, trials) }

// FiguresAmong computes the figures of ts only, some of trials (a session's, where their
// controls are): what ranks one rung's trials scores that rung, not the whole session,
// and it runs at every trial's end, between two training jobs.
func FiguresAmong(st Settings, trials, ts []Trial) Figures {
	controls := Controls(trials)
	out := make(Figures, len(ts))
	for _, t := range ts {
		out[t.Ref()] = RankFigure(st, controls, t)
	}
	return out
}

// Of is t's figure; a trial they were not computed for ranks last.
func (f Figures) Of(t Trial) float64 {
	if v, ok := f[t.Ref()]; ok {
		return v
	}
	return -2
}

// Sort orders ts (trials of one rung, usually) best first by their figures; ties go to the
// lower trial number.
func (f Figures) Sort(ts []Trial) {
	sort.SliceStable(ts, func(i, j int) bool {
		if a, b := f.Of(ts[i]), f.Of(ts[j]); a != b {
			return a > b
		}
		return ts[i].Number < ts[j].Number
	})
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
