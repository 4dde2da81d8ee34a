package preset

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"tunebot/session"
)

// Session ids are hex (session.newID); anything else is not an id and never becomes a path.
var sessionIDRE = regexp.MustCompile(`^[0-9a-f]{1,64}$`)

// BestPolicy locates the policy of the preset's trial under sessionsDir, for upload to
// chat. The path is the one the trainer reported and the engine stored on the trial
// (docs/design.md §4), joined to the session id, never what a person typed; the file must be
// a regular file that resolves inside sessionsDir and is at most limit bytes (limit <= 0:
// no limit). trial is the preset's trial as stored.
func BestPolicy(sessionsDir string, p session.Preset, trial session.Trial, limit int64) (path string, size int64, err error) {
	if Imported(p) {
		return "", 0, session.Userf(session.ErrNotFound, "preset %s was imported from a file, so it has no trained policy", p.Name)
	}
	if !sessionIDRE.MatchString(p.SessionID) {
		return "", 0, fmt.Errorf("preset %s: session id %q is not an id", p.Name, p.SessionID)
	}
	if trial.SessionID != p.SessionID || trial.Ref() != p.Trial {
		return "", 0, fmt.Errorf("preset %s names %s of session %s, got %s of session %s",
			p.Name, p.Trial, p.SessionID, trial.Ref(), trial.SessionID)
	}
	if p.Trial.Number < 0 || p.Trial.Rung < 0 {
		return "", 0, fmt.Errorf("preset %s: negative trial reference %s", p.Name, p.Trial)
	}
	root, err := filepath.EvalSymlinks(sessionsDir)
	if err != nil {
		return "", 0, fmt.Errorf("resolving sessions directory: %w", err)
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return "", 0, fmt.Errorf("resolving sessions directory: %w", err)
	}
	if trial.Policy == "" || !filepath.IsLocal(trial.Policy) {
		where := ""
		if trial.RunDir != "" && filepath.IsLocal(trial.RunDir) {
			// Trials trained before tunebot recorded the trainer's policy path have none.
			where = fmt.Sprintf("; look for it in run directory %s of session %s", trial.RunDir, session.Short(p.SessionID))
		}
		return "", 0, session.Userf(session.ErrNotFound, "%s of preset %s has no recorded policy%s", p.Trial, p.Name, where)
	}
	found := filepath.Join(root, p.SessionID, trial.Policy)
	if _, err := os.Lstat(found); errors.Is(err, fs.ErrNotExist) {
		return "", 0, session.Userf(session.ErrNotFound, "the policy of preset %s (%s) is no longer on disk", p.Name, p.Trial)
	}
	real, err := filepath.EvalSymlinks(found)
	if err != nil {
		return "", 0, fmt.Errorf("resolving %s: %w", found, err)
	}
	if !within(root, real) {
		return "", 0, fmt.Errorf("policy of preset %s resolves outside the sessions directory (%s)", p.Name, real)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", 0, fmt.Errorf("reading policy of preset %s: %w", p.Name, err)
	}
	if !st.Mode().IsRegular() {
		return "", 0, fmt.Errorf("policy of preset %s is not a regular file", p.Name)
	}
	if limit > 0 && st.Size() > limit {
		return real, st.Size(), session.Userf(nil, "the policy of preset %s is %s, above the %s upload limit", p.Name, session.Bytes(st.Size()), session.Bytes(limit))
	}
	return real, st.Size(), nil
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
