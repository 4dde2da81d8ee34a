package trainer

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

// ValidSessionID reports whether id is a session id, and so may become part of a path.
func ValidSessionID(id string) bool { return sessionIDRE.MatchString(id) }

// OpenRunFile finds a file the engine recorded on a trial (a policy, a clip): rel is the
// path as stored, relative to the session's directory under sessionsDir, never what a
// person typed. The file must exist, resolve (symlinks followed) inside sessionsDir and be
// a regular file; what names the file in errors. It returns the resolved path and its
// size. A missing file is a session.ErrNotFound user error.
func OpenRunFile(sessionsDir, sessionID, rel, what string) (string, int64, error) {
	if !ValidSessionID(sessionID) {
		return "", 0, fmt.Errorf("%s: session id %q is not an id", what, sessionID)
	}
	if rel == "" || !filepath.IsLocal(rel) {
		return "", 0, fmt.Errorf("%s: recorded path %q is not inside the session directory", what, rel)
	}
	root, err := filepath.EvalSymlinks(sessionsDir)
	if err != nil {
		return "", 0, fmt.Errorf("resolving sessions directory: %w", err)
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return "", 0, fmt.Errorf("resolving sessions directory: %w", err)
	}
	found := filepath.Join(root, sessionID, rel)
	if _, err := os.Lstat(found); errors.Is(err, fs.ErrNotExist) {
		return "", 0, session.Userf(session.ErrNotFound, "%s is no longer on disk", what)
	}
	real, err := filepath.EvalSymlinks(found)
	if err != nil {
		return "", 0, fmt.Errorf("resolving %s: %w", found, err)
	}
	if !within(root, real) {
		return "", 0, fmt.Errorf("%s resolves outside the sessions directory (%s)", what, real)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", 0, fmt.Errorf("reading %s: %w", what, err)
	}
	if !st.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s is not a regular file", what)
	}
	return real, st.Size(), nil
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
