package preset

import (
	"fmt"
	"path/filepath"

	"tunebot/session"
	"tunebot/trainer"
)

// BestPolicy opens the policy of the preset's trial under sessionsDir, for upload to chat.
// The path is the one the trainer reported and the engine stored on the trial
// (docs/design.md §4), joined to the session id, never what a person typed; the file is
// opened once through trainer.OpenRunFile (inside sessionsDir, a regular file, at most
// trainer.MaxPolicyBytes) and must be at most limit bytes (limit <= 0: no limit beyond
// that cap); a larger one is refused with its path on the GPU machine. trial is the
// preset's trial as stored. The caller reads the returned file and closes it.
func BestPolicy(sessionsDir string, p session.Preset, trial session.Trial, limit int64) (*trainer.RunFile, error) {
	if Imported(p) {
		return nil, session.Userf(session.ErrNotFound, "preset %s was imported from a file, so it has no trained policy", p.Name)
	}
	if !trainer.ValidSessionID(p.SessionID) {
		return nil, fmt.Errorf("preset %s: session id %q is not an id", p.Name, p.SessionID)
	}
	if trial.SessionID != p.SessionID || trial.Ref() != p.Trial {
		return nil, fmt.Errorf("preset %s names %s of session %s, got %s of session %s",
			p.Name, p.Trial, p.SessionID, trial.Ref(), trial.SessionID)
	}
	if p.Trial.Number < 0 || p.Trial.Rung < 0 {
		return nil, fmt.Errorf("preset %s: negative trial reference %s", p.Name, p.Trial)
	}
	if trial.Policy == "" || !filepath.IsLocal(trial.Policy) {
		where := ""
		if trial.RunDir != "" && filepath.IsLocal(trial.RunDir) {
			// Trials trained before tunebot recorded the trainer's policy path have none.
			where = fmt.Sprintf("; look for it in run directory %s of session %s", trial.RunDir, session.Short(p.SessionID))
		}
		return nil, session.Userf(session.ErrNotFound, "%s of preset %s has no recorded policy%s", p.Trial, p.Name, where)
	}
	f, err := trainer.OpenRunFile(sessionsDir, p.SessionID, trial.Policy, trainer.MaxPolicyBytes, fmt.Sprintf("the policy of preset %s (%s)", p.Name, p.Trial))
	if err != nil {
		return nil, err
	}
	if limit > 0 && f.Size() > limit {
		f.Close()
		return nil, session.Userf(nil, "the policy of preset %s is %s, above the %s upload limit; on the GPU machine it is %s",
			p.Name, session.Bytes(f.Size()), session.Bytes(limit), f.Path())
	}
	return f, nil
}
