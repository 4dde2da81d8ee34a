package trainer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"tunebot/session"
)

// Caps on the files a trainer writes, per kind (docs/design.md §4), besides MaxClipBytes
// and MaxPosterBytes: each is far above what a working trainer writes, so a file over one
// is a mistake (or a link to something else) and is refused before a byte of it is read.
const (
	// MaxEvaluationBytes bounds an evaluation JSON: a few metrics and seeds take a few KiB.
	MaxEvaluationBytes = 1 << 20
	// MaxEventFileBytes bounds one event file: a long run's scalars take tens of MiB.
	MaxEventFileBytes = 512 << 20
	// MaxPolicyBytes bounds a policy: an exported ONNX policy takes KiB to a few MiB.
	MaxPolicyBytes = 1 << 30
)

// RunFile is a file a trainer wrote, opened once by OpenBounded. Every read goes to that
// descriptor, never to the name again, and never past the size the file had when it was
// opened, so swapping the file afterwards changes nothing that is read.
type RunFile struct {
	f    *os.File
	st   fs.FileInfo
	path string
	what string
}

// RefusedError is a file a trainer wrote that OpenBounded will not read; Reason names the
// file and why ("evaluation.json is a named pipe (FIFO), not a regular file"). It is
// wrapped in a session user error, so the message reaches the person who asked.
type RefusedError struct{ What, Reason string }

func (e *RefusedError) Error() string { return e.What + " refused: " + e.Reason }

func refused(what, format string, args ...any) error {
	e := &RefusedError{What: what, Reason: fmt.Sprintf(format, args...)}
	return &session.UserError{Msg: e.Error(), Err: e}
}

// OpenBounded is the one way tunebot opens a file a trainer wrote (STYLE rule 12): name
// is opened relative to root, following a link only while it stays inside root; the open
// never blocks (O_NONBLOCK, so a FIFO opens and is then refused); the open descriptor is
// fstat'ed and must be a regular file of at most limit bytes. what names the file in
// errors ("the evaluation of trial 3 @ rung 0"). A missing file is an error satisfying
// errors.Is(err, fs.ErrNotExist); a refused one is a session user error wrapping a
// *RefusedError.
func OpenBounded(root, name string, limit int64, what string) (*RunFile, error) {
	if !filepath.IsLocal(name) {
		return nil, refused(what, "%q is not inside %s", name, root)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", what, err)
	}
	defer r.Close()
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err != nil {
		// os.Root's error for a link out of it is unexported; its text is stable.
		if e := unwrapPath(err); e.Error() == "path escapes from parent" {
			return nil, refused(what, "%s leads outside %s (a link is followed only inside it)", name, root)
		}
		return nil, refused(what, "opening %s inside %s: %v", name, root, unwrapPath(err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, refused(what, "%s is %s, not a regular file", name, fileType(st.Mode()))
	}
	if st.Size() > limit {
		f.Close()
		return nil, refused(what, "%s is %s, over the %s it may be", name, session.Bytes(st.Size()), session.Bytes(limit))
	}
	return &RunFile{f: f, st: st, path: filepath.Join(root, name), what: what}, nil
}

// unwrapPath drops a *fs.PathError's operation and path, which the message already says.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fileType says in words what a file that is not a regular file is.
func fileType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a link"
	}
	return "not a plain file"
}

// Size is the file's size when it was opened; no read goes past it.
func (f *RunFile) Size() int64 { return f.st.Size() }

// Path is where the file was found (root joined with its name), for messages.
func (f *RunFile) Path() string { return f.path }

// Stat is the open descriptor's fstat, taken when the file was opened.
func (f *RunFile) Stat() fs.FileInfo { return f.st }

// Section reads the file from its start up to Size, from the one descriptor: what
// http.ServeContent streams a clip from.
func (f *RunFile) Section() *io.SectionReader { return io.NewSectionReader(f.f, 0, f.st.Size()) }

// File is the open descriptor, for a reader that must see the file grow (an event file
// being written); it is closed with f.
func (f *RunFile) File() *os.File { return f.f }

// ReadAll reads the whole file (Size bytes, within the cap it was opened with).
func (f *RunFile) ReadAll() ([]byte, error) {
	data := make([]byte, f.st.Size())
	if _, err := io.ReadFull(f.Section(), data); err != nil {
		return nil, fmt.Errorf("reading %s: the file shrank while it was read (%w)", f.what, err)
	}
	return data, nil
}

// Close closes the descriptor.
func (f *RunFile) Close() error { return f.f.Close() }
