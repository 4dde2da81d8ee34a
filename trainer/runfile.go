package trainer

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"

	"tunebot/session"
)

// Session ids are hex (session.newID); anything else is not an id and never becomes a path.
var sessionIDRE = regexp.MustCompile(`^[0-9a-f]{1,64}$`)

// ValidSessionID reports whether id is a session id, and so may become part of a path.
func ValidSessionID(id string) bool { return sessionIDRE.MatchString(id) }

// OpenRunFile opens a file the engine recorded on a trial (a policy, a clip) through
// OpenBounded, with sessionsDir as the root: rel is the path as stored, relative to the
// session's directory, never what a person typed; limit is the cap of its kind and what
// names the file in errors. A missing file is a session.ErrNotFound user error. The caller
// closes the file.
func OpenRunFile(sessionsDir, sessionID, rel string, limit int64, what string) (*RunFile, error) {
	if !ValidSessionID(sessionID) {
		return nil, fmt.Errorf("%s: session id %q is not an id", what, sessionID)
	}
	if rel == "" || !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("%s: recorded path %q is not inside the session directory", what, rel)
	}
	f, err := OpenBounded(sessionsDir, filepath.Join(sessionID, rel), limit, what)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, session.Userf(session.ErrNotFound, "%s is no longer on disk", what)
	}
	return f, err
}
