package session

import "fmt"

// What a succeeded session came to (Session.Outcome). A session in which no tuned trial beat
// the baseline ends succeeded (it ran to its end) with OutcomeNoImprovement and no preset:
// saving the baseline's own configuration as a preset would offer the defaults to apply as
// if they were a result.
const (
	OutcomeImproved      = "improved"
	OutcomeNoImprovement = "no_improvement"
)

// OutcomeText says a session's outcome in words for every surface: "" when it has none (it
// has not succeeded, or it improved and its headline says how).
func (s Session) OutcomeText() string {
	if s.State != StateSucceeded || s.Outcome != OutcomeNoImprovement {
		return ""
	}
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
