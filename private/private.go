// Package private keeps the daemon's keys and tokens (the monitoring page's signing key, the
// token the CLI shows the daemon) and its socket where only the daemon's user can reach
// them: a data directory that user owns and nobody else may write (nor any directory above
// it), files that are theirs alone with no other name, written without following a link
// someone planted and read only when still so.
package private

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"tunebot/disk"
)

// maxSecret bounds a key or token file: each is a line of hex or base32.
const maxSecret = 4 << 10

// CheckDataDir refuses a data directory that a user other than tunebot's (or root) can
// write, and one under a directory such a user can write, on the way from / down to it
// (docs/design.md §7). Whoever can write data_dir could plant the dashboard key or the
// daemon's token and act as the operator, or plant a link where tunebot writes (the write
// probe, the store's compaction copy, reports/); whoever can write a directory above it
// could rename data_dir and put one of theirs in its place. A directory above with the
// sticky bit, owned by root or tunebot's user (like /tmp), is fine: others cannot rename
// or remove what is not theirs there. dir must exist. Each message names the directory,
// its mode and owner, and the chmod or chown that fixes it.
func CheckDataDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("data_dir %s: %w", dir, err)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("data_dir %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("data_dir %s is not a directory", dir)
	}
	if err := checkDataDirItself(abs, info); err != nil {
		return err
	}
	return CheckWay(abs)
}

// CheckWay refuses the way to the data directory dir, which need not exist yet: a
// directory on it, from / down, as written and as its links lead (a link's own directory
// included, however deep the links chain), that a user other than tunebot's or root owns,
// or that group or others may write without the sticky bit, and a link on it that such a
// user owns (they can point it elsewhere at any time). It runs before tunebot makes dir, so
// nothing is made inside another user's directory.
func CheckWay(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("data_dir %s: %w", dir, err)
	}
	w, err := walkWay(abs)
	if err != nil {
		return fmt.Errorf("data_dir %s: %w", dir, err)
	}
	for _, l := range w.links {
		if err := checkLink(l.path, abs, l.info); err != nil {
			return err
		}
	}
	// The nearest first: the one whose fix matters most.
	for _, d := range slices.Backward(w.dirs) {
		if err := checkAbove(d.path, abs, d.info); err != nil {
			return err
		}
	}
	return nil
}

// step is a directory or a link met on the way to the data directory, and its Lstat.
type step struct {
	path string
	info fs.FileInfo
}

// way is what walkWay met: the directories above the data directory, from / down, and the
// links, in the order the kernel follows them.
type way struct {
	dirs, links []step
}

// maxLinks bounds the links followed on the way, as the kernel's ELOOP does.
const maxLinks = 40

// walkWay resolves abs one name at a time, as the kernel does: every directory it passes
// through (on the path as written and wherever a link leads, a link's own directory too)
// and every link it follows. Where a name does not exist, the rest is what tunebot is to
// make, and the walk ends there.
func walkWay(abs string) (way, error) {
	var w way
	cur, todo, followed := "/", names(abs), 0
	for len(todo) > 0 {
		if err := w.passed(cur); err != nil {
			return w, err
		}
		name := todo[0]
		todo = todo[1:]
		if name == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		info, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return w, nil
		}
		if err != nil {
			return w, err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if followed++; followed > maxLinks {
			return w, fmt.Errorf("more than %d symbolic links on the way to it", maxLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return w, err
		}
		w.links = append(w.links, step{next, info})
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(names(target), todo...)
	}
	return w, nil
}

// passed notes dir, which the walk goes on from, as a directory above the data directory
// (once, however often the links lead through it).
func (w *way) passed(dir string) error {
	if slices.ContainsFunc(w.dirs, func(s step) bool { return s.path == dir }) {
		return nil
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("checking %s, on the way to it: %w", dir, err)
	}
	w.dirs = append(w.dirs, step{dir, info})
	return nil
}

// names are the names of path, in order, without empty ones and ".".
func names(path string) []string {
	return slices.DeleteFunc(strings.Split(path, "/"), func(n string) bool { return n == "" || n == "." })
}

// checkLink refuses a link on the way to the data directory abs (abs itself included)
// that a user other than tunebot's or root owns.
func checkLink(link, abs string, info fs.FileInfo) error {
	uid, ok := owner(info)
	if !ok || uid == 0 || uid == os.Geteuid() {
		return nil
	}
	where := fmt.Sprintf("%s, on the way to data_dir %s,", link, abs)
	if link == abs {
		where = "data_dir " + abs
	}
	return fmt.Errorf("%s is a symbolic link of %s: that user can point it elsewhere at any time; replace it with a link or directory of root's or tunebot's user",
		where, userName(uid))
}

// checkDataDirItself refuses a data directory of another user, or one group or others may
// write: sticky or not, they could create the names tunebot has not made yet.
func checkDataDirItself(dir string, info fs.FileInfo) error {
	uid, ok := owner(info)
	if ok && uid != os.Geteuid() {
		return fmt.Errorf("data_dir %s (mode %04o) belongs to %s, not to the user tunebot runs as (%s): that user could plant the dashboard key, the daemon's token, or a link where tunebot writes; "+
			"chown %s %s, or use a directory of tunebot's user", dir, info.Mode().Perm(), userName(uid), userName(os.Geteuid()), chownName(os.Geteuid()), dir)
	}
	if info.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("data_dir %s is writable by group or others (mode %04o, owner %s): whoever can write it can plant the dashboard key or the daemon's token and act as the operator, "+
			"or plant a link where tunebot writes; tunebot shares nothing through data_dir (service.shared_data_dir was removed): chmod 700 %s",
			dir, info.Mode().Perm(), ownerName(info), dir)
	}
	return nil
}

// checkAbove refuses a directory above the data directory that a user other than
// tunebot's or root owns, or that group or others may write without the sticky bit.
func checkAbove(above, dataDir string, info fs.FileInfo) error {
	uid, ok := owner(info)
	if !ok {
		return nil // no owners here: nothing to check
	}
	if uid != 0 && uid != os.Geteuid() {
		fix := "chown root " + above
		if os.Geteuid() != 0 {
			fix += fmt.Sprintf(" (or chown %s %s)", chownName(os.Geteuid()), above)
		}
		return fmt.Errorf("%s, on the way to data_dir %s, belongs to %s (mode %04o): that user can rename data_dir and put a directory of theirs in its place; "+
			"%s, or move data_dir under directories only root or tunebot's user own",
			above, dataDir, userName(uid), info.Mode().Perm(), fix)
	}
	if info.Mode().Perm()&0o022 != 0 && info.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("%s, on the way to data_dir %s, is writable by group or others (mode %04o, owner %s): whoever can write it can rename data_dir and put a directory of theirs in its place; "+
			"chmod go-w %s (or chmod +t %s, as /tmp is, if others must make files there), or move data_dir elsewhere",
			above, dataDir, info.Mode().Perm(), userName(uid), above, above)
	}
	return nil
}

// userName is uid as messages show it: "uid 1000 (alice)".
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return fmt.Sprintf("uid %d (%s)", uid, u.Username)
	}
	return fmt.Sprintf("uid %d", uid)
}

// chownName is uid as chown takes it: the user's name when it has one.
func chownName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(uid)
}

// ownerName is the owner of the file info describes, as messages show it.
func ownerName(info fs.FileInfo) string {
	if uid, ok := owner(info); ok {
		return userName(uid)
	}
	return "unknown"
}

// WriteFile puts data at path, mode 0600, whole or not at all (disk.WriteFile): written to
// a fresh name beside it with O_EXCL, so no planted file or link is written through, then
// renamed over path (a rename replaces a link, never follows it), so a reader never sees
// half a key.
func WriteFile(path string, data []byte) error {
	return disk.WriteFile(path, data, 0o600)
}

// Create makes path with data, mode 0600, only when nothing is there (fs.ErrExist when
// something is, a link or a FIFO included, which is neither followed nor waited on): the
// first of two processes wins.
func Create(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow|nonBlock, 0o600)
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
// with another name (a hard link), another user's, or open to group or others (it must be
// 0600): such a file may have been planted, or read by someone else. A missing file is an error wrapping fs.ErrNotExist.
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
	case links(info) > 1:
		return nil, fmt.Errorf("%s has %d hard links: another name for it may be someone else's way to read or write it, so tunebot refuses it; remove it and tunebot makes a new one", path, links(info))
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
// the daemon's user alone: never through a link, never a FIFO's blocking open, a regular
// file with no other name (a hard link), the daemon user's, closed to group and others.
// The store and tunebot.log are opened so, like the keys: a link planted for either made
// the daemon write to a file of someone else's choosing (issue 36). what names the file in
// messages.
func OpenOwn(path string, flag int, perm os.FileMode, what string) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollow|nonBlock, perm)
	if err != nil {
		if isLoop(err) {
			return nil, fmt.Errorf("%s (%s) is a symbolic link: tunebot refuses it, as it would write where the link points; remove the link", path, what)
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
// directory, not a link, the daemon user's, writable by nobody else (others may read it).
// The directories tunebot writes under data_dir (sessions/, reports/, reports/<session8>)
// are made so: a link planted for one put what tunebot writes in a directory someone else
// chose (issues 36 and 44).
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
		return fmt.Errorf("%s (%s) is a symbolic link: tunebot refuses it, as it would write where the link points; remove the link and tunebot makes the directory", dir, what)
	case !info.IsDir():
		return fmt.Errorf("%s (%s) is not a directory; remove it and tunebot makes one", dir, what)
	case ok && uid != os.Geteuid():
		return fmt.Errorf("%s (%s) belongs to %s, not to the user tunebot runs as (%s): tunebot refuses it; move it aside and tunebot makes its own", dir, what, userName(uid), userName(os.Geteuid()))
	case info.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s (%s) is writable by group or others (mode %04o): whoever can write it can plant links there; chmod go-w %s", dir, what, info.Mode().Perm(), dir)
	}
	return nil
}

// checkOwn refuses an opened file that is not regular, has another name (a hard link), is
// another user's, or is open to group or others; fix is what the message tells a person to
// do.
func checkOwn(info fs.FileInfo, path, what, fix string) error {
	switch uid, ok := owner(info); {
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s (%s) is not a regular file: tunebot refuses it; %s", path, what, fix)
	case links(info) > 1:
		return fmt.Errorf("%s (%s) has %d hard links: another name for it may be someone else's way to read or write it, so tunebot refuses it; remove the other name (find it with find / -samefile %s)", path, what, links(info), path)
	case ok && uid != os.Geteuid():
		return fmt.Errorf("%s (%s) belongs to %s, not to the user tunebot runs as (%s): it may have been planted, so tunebot refuses it; move it aside", path, what, userName(uid), userName(os.Geteuid()))
	case info.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s (%s) is open to group or others (mode %04o): tunebot keeps it to its own user; %s", path, what, info.Mode().Perm(), fix)
	}
	return nil
}
