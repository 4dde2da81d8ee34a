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

// PolicyFile is the exported policy a training job leaves in its run directory.
const PolicyFile = "policy.onnx"

// Session ids are hex (session.newID); anything else is not an id and never becomes a path.
var sessionIDRE = regexp.MustCompile(`^[0-9a-f]{1,64}$`)

// BestPolicy locates the policy.onnx of the preset's trial under sessionsDir, for upload to
// chat. The path is built only from the session id and trial number and rung, never from
// what a person typed; the file must be a regular file that resolves inside sessionsDir and
// is at most limit bytes (limit <= 0: no limit). trial is the preset's trial as stored.
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
	// The engine names run directories trial-NNN-rung-R (docs/design.md §4).
	runDir := filepath.Join(root, p.SessionID, fmt.Sprintf("trial-%03d-rung-%d", p.Trial.Number, p.Trial.Rung))
	found, err := findPolicy(runDir)
	if err != nil {
		return "", 0, err
	}
	if found == "" {
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
		return real, st.Size(), session.Userf(nil, "the policy of preset %s is %s, above the %s upload limit", p.Name, human(st.Size()), human(limit))
	}
	return real, st.Size(), nil
}

// findPolicy looks for policy.onnx at the top of dir, then below it (exporters differ on
// where they put it). WalkDir never follows a symlinked directory, and only regular files
// count, so a link cannot lead the search elsewhere.
func findPolicy(dir string) (string, error) {
	top := filepath.Join(dir, PolicyFile)
	if st, err := os.Lstat(top); err == nil && st.Mode().IsRegular() {
		return top, nil
	}
	var found string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil
		}
		if !d.IsDir() && d.Name() == PolicyFile && d.Type().IsRegular() {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("looking for %s in %s: %w", PolicyFile, dir, err)
	}
	return found, nil
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func human(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
