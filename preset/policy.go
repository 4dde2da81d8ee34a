package preset

import (
	"fmt"
	"path/filepath"

	"tunebot/session"
	"tunebot/trainer"
)

// BestPolicy locates the policy of the preset's trial under sessionsDir, for upload to
// chat. The path is the one the trainer reported and the engine stored on the trial
// (docs/design.md §4), joined to the session id, never what a person typed; the file must be
// a regular file that resolves inside sessionsDir and is at most limit bytes (limit <= 0:
// no limit). trial is the preset's trial as stored.
func BestPolicy(sessionsDir string, p session.Preset, trial session.Trial, limit int64) (path string, size int64, err error) {
	if Imported(p) {
		return "", 0, session.Userf(session.ErrNotFound, "preset %s was imported from a file, so it has no trained policy", p.Name)
	}
	if !trainer.ValidSessionID(p.SessionID) {
		return "", 0, fmt.Errorf("preset %s: session id %q is not an id", p.Name, p.SessionID)
	}
	if trial.SessionID != p.SessionID || trial.Ref() != p.Trial {
		return "", 0, fmt.Errorf("preset %s names %s of session %s, got %s of session %s",
			p.Name, p.Trial, p.SessionID, trial.Ref(), trial.SessionID)
	}
	if p.Trial.Number < 0 || p.Trial.Rung < 0 {
		return "", 0, fmt.Errorf("preset %s: negative trial reference %s", p.Name, p.Trial)
	}
	if trial.Policy == "" || !filepath.IsLocal(trial.Policy) {
		where := ""
		if trial.RunDir != "" && filepath.IsLocal(trial.RunDir) {
			// Trials trained before tunebot recorded the trainer's policy path have none.
			where = fmt.Sprintf("; look for it in run directory %s of session %s", trial.RunDir, session.Short(p.SessionID))
		}
		return "", 0, session.Userf(session.ErrNotFound, "%s of preset %s has no recorded policy%s", p.Trial, p.Name, where)
	}
	real, size, err := trainer.OpenRunFile(sessionsDir, p.SessionID, trial.Policy, fmt.Sprintf("the policy of preset %s (%s)", p.Name, p.Trial))
	if err != nil {
		return "", 0, err
	}
	if limit > 0 && size > limit {
		return real, size, session.Userf(nil, "the policy of preset %s is %s, above the %s upload limit", p.Name, session.Bytes(size), session.Bytes(limit))
	}
	return real, size, nil
}
