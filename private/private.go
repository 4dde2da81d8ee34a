// Package private keeps the daemon's keys and tokens (the monitoring page's signing key, the
// token the CLI shows the daemon) and its socket where only the daemon's user can reach
// them: a directory that user owns and nobody else may write, files that are theirs alone,
// written without following a link someone planted and read only when still so.
package private

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"tunebot/disk"
)

// SubDir is the directory inside a shared data_dir that holds the keys, the tokens and the
// socket: created 0700 by the daemon's user, and checked to stay so.
const SubDir = "private"

// maxSecret bounds a key or token file: each is a line of hex or base32.
const maxSecret = 4 << 10

// Dir checks the data directory dir and returns where the keys, tokens and socket live. A
// data directory that group or others may write, or that another user owns, is refused
// unless shared: whoever can write it could plant a key and sign in as the operator. When
// shared (service.shared_data_dir), they live in dir/private instead, which Dir creates
// (0700) and checks: a directory, not a link, the daemon's user's, closed to others.
func Dir(dir string, shared bool) (string, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("data_dir %s: %w", dir, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("data_dir %s is not a directory", dir)
	}
	if !shared {
		if info.Mode().Perm()&0o022 != 0 {
			return "", fmt.Errorf("data_dir %s is writable by group or others (mode %04o): whoever can write it can plant the dashboard key or the daemon's token and act as the operator; "+
				"chmod 700 %s, or, if it is shared on purpose, set service.shared_data_dir: true and tunebot keeps its keys in %s",
				dir, info.Mode().Perm(), dir, filepath.Join(dir, SubDir))
		}
		if uid, ok := owner(info); ok && uid != os.Geteuid() {
			return "", fmt.Errorf("data_dir %s belongs to uid %d, not to the user tunebot runs as (uid %d): that user could plant the dashboard key or the daemon's token; "+
				"use a directory of tunebot's user, or, if it is shared on purpose, set service.shared_data_dir: true and tunebot keeps its keys in %s",
				dir, uid, os.Geteuid(), filepath.Join(dir, SubDir))
		}
		return dir, nil
	}
	priv := filepath.Join(dir, SubDir)
	if err := os.Mkdir(priv, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("making %s for the keys of a shared data_dir: %w", priv, err)
	}
	if err := checkPrivate(priv); err != nil {
		return "", err
	}
	return priv, nil
}

// checkPrivate refuses a private directory that is a link, not a directory, another user's,
// or open to group or others.
func checkPrivate(priv string) error {
	info, err := os.Lstat(priv)
	if err != nil {
		return fmt.Errorf("checking %s: %w", priv, err)
	}
	fix := fmt.Sprintf("remove it (tunebot makes a new one, signing everyone out) or chmod 700 %s", priv)
	switch uid, ok := owner(info); {
	case info.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s, which holds the keys of a shared data_dir, is a symbolic link: tunebot refuses it; %s", priv, fix)
	case !info.IsDir():
		return fmt.Errorf("%s, which holds the keys of a shared data_dir, is not a directory; %s", priv, fix)
	case ok && uid != os.Geteuid():
		return fmt.Errorf("%s, which holds the keys of a shared data_dir, belongs to uid %d, not to the user tunebot runs as (uid %d); remove it and tunebot makes its own", priv, uid, os.Geteuid())
	case info.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s, which holds the keys of a shared data_dir, is open to group or others (mode %04o); %s", priv, info.Mode().Perm(), fix)
	}
	return nil
}

// WriteFile puts data at path, mode 0600, whole or not at all (disk.WriteFile): written to
// a fresh name beside it with O_EXCL, so no planted file or link is written through, then
// renamed over path (a rename replaces a link, never follows it), so a reader never sees
// half a key.
func WriteFile(path string, data []byte) error {
	return disk.WriteFile(path, data, 0o600)
}

// Create makes path with data, mode 0600, only when nothing is there (fs.ErrExist when
// something is, a link included): the first of two processes wins.
func Create(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		_ = os.Remove(path)
	}
	return werr
}

// ReadFile reads the key or token at path, refusing one that is a link, not a regular file,
// another user's, or open to group or others (it must be 0600): such a file may have been
// planted, or read by someone else. A missing file is an error wrapping fs.ErrNotExist.
func ReadFile(path string) ([]byte, error) {
	// O_NONBLOCK: a FIFO planted in its place must not hang the open.
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow|nonBlock, 0)
	if err != nil {
		if isLoop(err) {
			return nil, fmt.Errorf("%s is a symbolic link: tunebot reads its keys and tokens only from files of its own; remove it and tunebot makes a new one", path)
		}
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch uid, ok := owner(info); {
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file: tunebot refuses it; remove it and tunebot makes a new one", path)
	case ok && uid != os.Geteuid():
		return nil, fmt.Errorf("%s belongs to uid %d, not to the user tunebot runs as (uid %d): it may have been planted, so tunebot refuses it; remove it and tunebot makes a new one", path, uid, os.Geteuid())
	case info.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("%s is open to group or others (mode %04o): a key or token must be 0600 and tunebot's user's alone, so tunebot refuses it; remove it and tunebot makes a new one (or chmod 600 it if nobody else could have read or written it)",
			path, info.Mode().Perm())
	case info.Size() > maxSecret:
		return nil, fmt.Errorf("%s is %d bytes, larger than any key or token tunebot writes (%d): tunebot refuses it", path, info.Size(), maxSecret)
	}
	return io.ReadAll(io.LimitReader(f, maxSecret))
}

// Append opens path for appending (a job's log in a run directory), created with perm when
// missing, never through a link (O_NOFOLLOW: a trainer or another user could plant one
// pointing at a file of the daemon's user) and never a FIFO or a device, whose open or
// write could hang or reach elsewhere.
func Append(path string, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY|noFollow|nonBlock, perm)
	if err != nil {
		if isLoop(err) {
			return nil, fmt.Errorf("%s is a symbolic link: tunebot appends to no file through a link", path)
		}
		if info, lerr := os.Lstat(path); lerr == nil && !info.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file: tunebot appends to no FIFO or device", path) // a FIFO without a reader: ENXIO
		}
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file: tunebot appends to no FIFO or device", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenOwn opens path (flag as os.OpenFile's, created with perm when missing) as a file of
// the daemon's user alone: never through a link, a regular file, the daemon user's, closed
// to group and others. In a shared data_dir (service.shared_data_dir) the store and
// tunebot.log are opened so, like the keys: a link planted for either made the daemon
// append to a file of someone else's choosing (issue 36). what names the file in messages.
func OpenOwn(path string, flag int, perm os.FileMode, what string) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollow|nonBlock, perm)
	if err != nil {
		if isLoop(err) {
			return nil, fmt.Errorf("%s (%s) is a symbolic link: in a shared data_dir tunebot refuses it, as another user may have planted it; remove the link", path, what)
		}
		return nil, err
	}
	info, err := f.Stat()
	if err == nil {
		err = checkOwn(info, path, what, "remove it, or chmod 600 it if nobody else could have written it")
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OwnDir makes dir with perm when missing and checks it is the daemon user's own: a
// directory, not a link, the daemon user's, writable by nobody else (others may read it, as
// a shared data_dir's run directories are meant to be read). In a shared data_dir the
// sessions directory is checked so: a link planted for it put every run directory in a
// directory another user owns (issue 36).
func OwnDir(dir string, perm os.FileMode, what string) error {
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("making %s (%s): %w", dir, what, err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("checking %s (%s): %w", dir, what, err)
	}
	switch uid, ok := owner(info); {
	case info.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s (%s) is a symbolic link: in a shared data_dir tunebot refuses it, as another user may have planted it; remove the link and tunebot makes the directory", dir, what)
	case !info.IsDir():
		return fmt.Errorf("%s (%s) is not a directory; remove it and tunebot makes one", dir, what)
	case ok && uid != os.Geteuid():
		return fmt.Errorf("%s (%s) belongs to uid %d, not to the user tunebot runs as (uid %d): in a shared data_dir tunebot refuses it; move it aside and tunebot makes its own", dir, what, uid, os.Geteuid())
	case info.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s (%s) is writable by group or others (mode %04o): whoever can write it can plant links there; chmod go-w %s", dir, what, info.Mode().Perm(), dir)
	}
	return nil
}

// checkOwn refuses an opened file that is not regular, another user's, or open to group or
// others; fix is what the message tells a person to do.
func checkOwn(info fs.FileInfo, path, what, fix string) error {
	switch uid, ok := owner(info); {
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s (%s) is not a regular file: tunebot refuses it; %s", path, what, fix)
	case ok && uid != os.Geteuid():
		return fmt.Errorf("%s (%s) belongs to uid %d, not to the user tunebot runs as (uid %d): in a shared data_dir it may have been planted, so tunebot refuses it; move it aside", path, what, uid, os.Geteuid())
	case info.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s (%s) is open to group or others (mode %04o): in a shared data_dir tunebot keeps it to its own user; %s", path, what, info.Mode().Perm(), fix)
	}
	return nil
}
