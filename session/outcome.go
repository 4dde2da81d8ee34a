package session

import "fmt"

// What a succeeded session came to (Session.Outcome). Its gain is measured on fresh seeds
// against the baseline trained as long (Verdict, docs/design.md §3):
//   - OutcomeImproved: the gain clears its own uncertainty; the preset is the result.
//   - OutcomeWithinNoise: the chosen finalist's gain on the fresh seeds does not clear the
//     noise either way (its 95 % bounds hold 0). Its preset is saved, so nothing is lost and a
//     later session can build on it, but it is marked so, and apply asks for it to be
//     acknowledged: a careful user applies a change that may be noise only knowingly. It is
//     saved whatever the sign of the measured gain within the noise, so that whether a
//     preset ships never turns on the fresh seeds' luck (which would bias the figure the
//     preset reports upward).
//   - OutcomeUnmeasured: no measurement at equal training on fresh seeds was possible
//     (control: false, a failed final evaluation, final mean metrics that do not score, no
//     per-seed results); saved and marked as within the noise is.
//   - OutcomeNoImprovement: no tuned trial beat the baseline at the rung that chose, or the
//     fresh seeds put the chosen one below it beyond the noise (its 95 % upper bound below 0);
//     no preset is saved, since the baseline's configuration would be offered to apply as if
//     it were a result.
const (
	OutcomeImproved      = "improved"
	OutcomeWithinNoise   = "within_noise"
	OutcomeUnmeasured    = "unmeasured"
	OutcomeNoImprovement = "no_improvement"
)

// OutcomeOf is the outcome of a session whose chosen finalist, a tuned trial, has verdict v:
// improved only when its gain clears the noise, no improvement when the fresh seeds put it
// below the baseline beyond the noise, else within the noise.
func OutcomeOf(v Verdict) string {
	switch {
	case !v.Measured():
		return OutcomeUnmeasured
	case v.Cleared:
		return OutcomeImproved
	case v.Upper < 0:
		return OutcomeNoImprovement
	}
	return OutcomeWithinNoise
}

// Unconfirmed reports whether outcome names a preset whose gain was not shown to clear the
// noise (within the noise, or unmeasured): apply asks for it to be acknowledged.
func Unconfirmed(outcome string) bool {
	return outcome == OutcomeWithinNoise || outcome == OutcomeUnmeasured
}

// OutcomeText says a session's outcome in words for every surface: "" when it has none (it
// has not succeeded, or it improved and its headline says how).
func (s Session) OutcomeText() string {
	if s.State != StateSucceeded {
		return ""
	}
	switch s.Outcome {
	case OutcomeWithinNoise:
		return "the gain is within the noise: not an improvement its spread clears"
	case OutcomeUnmeasured:
		return "the gain was not measured at equal training on fresh seeds: not an improvement anyone has shown"
	case OutcomeNoImprovement:
		return s.unimprovedText()
	}
	return ""
}

// unimprovedText is OutcomeText of a session that ended OutcomeNoImprovement.
func (s Session) unimprovedText() string {
	if b := s.BuiltOn; b != nil && b.Start == FromBest {
		// The baseline was the earlier session's best, not the defaults: name it.
		if b.Trial == 0 {
			return fmt.Sprintf("nothing beat session %s's baseline, the configuration it started from; it stands", short(b.Session))
		}
		if b.Preset != "" {
			return fmt.Sprintf("nothing beat the earlier best (preset %s, session %s's trial %d); it stands", b.Preset, short(b.Session), b.Trial)
		}
		return fmt.Sprintf("nothing beat the earlier best (session %s's trial %d, which saved no preset); it stands", short(b.Session), b.Trial)
	}
	if s.Settings.Preset != "" {
		return "nothing beat the baseline (preset " + s.Settings.Preset + "); it stands"
	}
	return "nothing beat the defaults; they stand"
}

// OutcomeLine is the outcome with what became of the preset, as the summary, the phone push
// and the terminal say it: "within_noise: the gain is within the noise: …; saved as preset X,
// marked so: apply asks you to acknowledge it", or "no_improvement: …; no preset saved"; ""
// for a session that improved (its headline says how) or has not succeeded.
func (s Session) OutcomeLine() string {
	o := s.OutcomeText()
	switch {
	case o == "":
		return ""
	case s.Outcome == OutcomeNoImprovement:
		return s.Outcome + ": " + o + "; no preset saved"
	}
	return fmt.Sprintf("%s: %s; saved as preset %s, marked so: apply asks you to acknowledge it", s.Outcome, o, s.Preset)
}
