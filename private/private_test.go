package private_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"tunebot/private"
)

func mkdir(t *testing.T, mode os.FileMode) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return dir
}

// TestGroupWritableDataDirRefused: a data_dir group or others may write, sticky or not,
// holds keys nobody can trust and names another user could plant links at (issue 44 item 1);
// it is refused with the chmod that fixes it. The daemon's own 0700 or 0755 one is fine.
func TestGroupWritableDataDirRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o770, os.ModeSticky | 0o777, os.ModeSetgid | 0o770} {
		dir := mkdir(t, mode)
		err := private.CheckDataDir(dir)
		if err == nil || !strings.Contains(err.Error(), "writable by group or others (mode "+fmt.Sprintf("%04o", mode.Perm())) || !strings.Contains(err.Error(), "chmod 700 "+dir) {
			t.Errorf("mode %v: %v", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o700, 0o755} {
		if err := private.CheckDataDir(mkdir(t, mode)); err != nil {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
}

// TestDataDirUnderOthersWritableDirRefused: whoever can write a directory on the way to
// data_dir can rename data_dir and put one of theirs in its place, so a data_dir under a
// directory group or others may write (without the sticky bit), or under another user's, is
// refused, the message naming that directory, its mode and owner, and the fix; reached
// through a link, the directories on both ways are checked. A sticky directory of root's,
// as /tmp (where these tests run), is fine.
func TestDataDirUnderOthersWritableDirRefused(t *testing.T) {
	parent := mkdir(t, 0o777)
	data := filepath.Join(parent, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	err := private.CheckDataDir(data)
	if err == nil || !strings.Contains(err.Error(), parent+", on the way to data_dir "+data+", is writable by group or others (mode 0777, owner uid ") || !strings.Contains(err.Error(), "chmod go-w "+parent) {
		t.Errorf("under a 0777 directory: %v", err)
	}
	// Reached through a link in a private directory: the 0777 one the link leads through
	// is still on the way.
	link := filepath.Join(mkdir(t, 0o700), "data")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	if err := private.CheckDataDir(link); err == nil || !strings.Contains(err.Error(), parent+", on the way to data_dir") {
		t.Errorf("through a link into a 0777 directory: %v", err)
	}
	if err := os.Chmod(parent, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	if err := private.CheckDataDir(data); err != nil {
		t.Errorf("under a sticky 1777 directory of tunebot's user: %v", err)
	}
	if err := private.CheckDataDir(link); err != nil {
		t.Errorf("through a link under a sticky directory: %v", err)
	}
	if os.Geteuid() != 0 {
		return
	}
	// Another user's directory (uid 65534 standing for them), even sticky, is refused.
	if err := os.Chown(parent, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := private.CheckDataDir(data); err == nil || !strings.Contains(err.Error(), parent+", on the way to data_dir "+data+", belongs to uid 65534") || !strings.Contains(err.Error(), "chown root "+parent) {
		t.Errorf("under a directory of uid 65534: %v", err)
	}
	if err := os.Chown(data, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := private.CheckDataDir(data); err == nil || !strings.Contains(err.Error(), "data_dir "+data+" (mode 0700) belongs to uid 65534") || !strings.Contains(err.Error(), "chown root "+data) {
		t.Errorf("a data_dir of uid 65534: %v", err)
	}
}

// TestDataDirInsideAnotherUsersDirIsNotMade: a data_dir that does not exist yet, under a
// directory of another user (uid 65534) or reached through a link they own in a sticky
// directory, is refused by CheckWay before tunebot makes anything there (the first cut made
// data_dir inside the attacker's directory, then refused it).
func TestDataDirInsideAnotherUsersDirIsNotMade(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to stand for another user (chown)")
	}
	theirs := mkdir(t, 0o777)
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(theirs, "data")
	if err := private.CheckWay(data); err == nil || !strings.Contains(err.Error(), theirs+", on the way to data_dir "+data+", belongs to uid 65534") {
		t.Errorf("under their directory: %v", err)
	}
	sticky := mkdir(t, os.ModeSticky|0o777)
	link := filepath.Join(sticky, "link")
	if err := os.Symlink(mkdir(t, 0o700), link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(link, "data"), link} {
		if err := private.CheckWay(d); err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "is a symbolic link of uid 65534") {
			t.Errorf("through their link, %s: %v", d, err)
		}
	}
	if err := private.CheckWay(filepath.Join(mkdir(t, 0o700), "a", "b")); err != nil {
		t.Errorf("a data_dir to be made under a private directory: %v", err)
	}
}

// TestLinkBehindALinkOnTheWayIsChecked: data_dir reached through a link of tunebot's user
// that leads to a second link, in a directory others may write or owned by another user,
// passed the check (only the path as written and the one the links end at were looked
// at), and whoever could write that directory or owned that link could point data_dir
// anywhere once tunebot ran. The second link's directory and owner are on the way too.
func TestLinkBehindALinkOnTheWayIsChecked(t *testing.T) {
	target := mkdir(t, 0o700)
	open := mkdir(t, 0o777)
	if err := os.Symlink(target, filepath.Join(open, "l2")); err != nil {
		t.Fatal(err)
	}
	l1 := filepath.Join(mkdir(t, 0o700), "l1")
	if err := os.Symlink(filepath.Join(open, "l2"), l1); err != nil {
		t.Fatal(err)
	}
	if err := private.CheckDataDir(l1); err == nil || !strings.Contains(err.Error(), open+", on the way to data_dir "+l1+", is writable by group or others (mode 0777") {
		t.Errorf("through a link in a 0777 directory: %v", err)
	}
	if os.Geteuid() != 0 {
		return
	}
	// The second link another user's (uid 65534), in a sticky directory.
	if err := os.Chmod(open, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	if err := private.CheckDataDir(l1); err != nil {
		t.Fatalf("through a link of root's in a sticky directory: %v", err)
	}
	if err := os.Lchown(filepath.Join(open, "l2"), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := private.CheckWay(filepath.Join(l1, "data")); err == nil || !strings.Contains(err.Error(), filepath.Join(open, "l2")+", on the way to data_dir") || !strings.Contains(err.Error(), "is a symbolic link of uid 65534") {
		t.Errorf("through a link of uid 65534 behind one of root's: %v", err)
	}
}

// TestOwnerOnlyOpenRefusesHardLink: a key, token, store or log with a second name (a hard
// link another user made, which only protected_hardlinks otherwise stops) is refused by the
// owner-only opens, the message saying why (issue 44 item 10).
func TestOwnerOnlyOpenRefusesHardLink(t *testing.T) {
	dir, key := writtenKey(t)
	if err := os.Link(key, filepath.Join(dir, "theirs")); err != nil {
		t.Fatal(err)
	}
	if _, err := private.ReadFile(key); err == nil || !strings.Contains(err.Error(), "has 2 hard links") {
		t.Errorf("ReadFile of a hard-linked key: %v", err)
	}
	f, err := private.OpenOwn(key, os.O_APPEND|os.O_WRONLY, 0o600, "the store")
	if err == nil {
		f.Close()
	}
	if err == nil || !strings.Contains(err.Error(), key+" (the store) has 2 hard links") {
		t.Errorf("OpenOwn of a hard-linked file: %v", err)
	}
}

// writtenKey is a key "k\n" written by WriteFile as dashboard.key in a temp dir, and that dir.
func writtenKey(t *testing.T) (dir, key string) {
	t.Helper()
	dir = t.TempDir()
	key = filepath.Join(dir, "dashboard.key")
	if err := private.WriteFile(key, []byte("k\n")); err != nil {
		t.Fatal(err)
	}
	return dir, key
}

// TestReadFileRefusesWhatOthersCouldHavePlanted: a key or token is read only from a regular
// 0600 file, never through a link or from a FIFO.
func TestReadFileRefusesWhatOthersCouldHavePlanted(t *testing.T) {
	dir, key := writtenKey(t)
	if info, err := os.Stat(key); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("written: %v %v", info, err)
	}
	if b, err := private.ReadFile(key); err != nil || string(b) != "k\n" {
		t.Fatalf("read: %q %v", b, err)
	}
	if _, err := private.ReadFile(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := private.ReadFile(key); err == nil || !strings.Contains(err.Error(), "mode 0644") {
		t.Errorf("a 0644 key: %v", err)
	}
	link := filepath.Join(dir, "backup.token")
	if err := os.Symlink(key, link); err != nil {
		t.Fatal(err)
	}
	if _, err := private.ReadFile(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a linked token: %v", err)
	}
	fifo := filepath.Join(dir, "fifo.key")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := private.ReadFile(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO: %v", err)
	}
}

// TestWriteFileFollowsNoLink: writing a key over a planted link replaces the link and leaves
// its target alone; Create refuses a name a link holds.
func TestWriteFileFollowsNoLink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "backup.token")
	if err := os.Symlink(outside, path); err != nil {
		t.Fatal(err)
	}
	if err := private.Create(path, []byte("x")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over a link: %v", err)
	}
	if err := private.WriteFile(path, []byte("token\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "mine" {
		t.Errorf("the link's target was written: %q", b)
	}
	if info, err := os.Lstat(path); err != nil || !info.Mode().IsRegular() {
		t.Errorf("the link was not replaced by a file: %v %v", info, err)
	}
}

// TestOwnFilesFollowNoLink: a link planted for the sessions directory, the log or the store
// (here to a directory and a file of a temp dir standing for theirs): each is refused with a
// message naming it, and nothing is created or written through it (issue 36).
func TestOwnFilesFollowNoLink(t *testing.T) {
	dir, theirs := t.TempDir(), t.TempDir()
	victim := filepath.Join(theirs, "victim")
	if err := os.WriteFile(victim, []byte("theirs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sessions := filepath.Join(dir, "sessions")
	if err := os.Symlink(theirs, sessions); err != nil {
		t.Fatal(err)
	}
	if err := private.OwnDir(sessions, 0o755, "the sessions directory"); err == nil || !strings.Contains(err.Error(), sessions+" (the sessions directory) is a symbolic link") {
		t.Errorf("a linked sessions directory: %v", err)
	}
	for _, name := range []string{"tunebot.log", "tunebot.db"} {
		path := filepath.Join(dir, name)
		if err := os.Symlink(victim, path); err != nil {
			t.Fatal(err)
		}
		if f, err := private.OpenOwn(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600, name); err == nil || !strings.Contains(err.Error(), path+" ("+name+") is a symbolic link") {
			t.Errorf("a linked %s: %v", name, err)
			if f != nil {
				f.Write([]byte("written\n"))
				f.Close()
			}
		}
		if f, err := private.Append(path, 0o644); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
			t.Errorf("Append to a linked %s: %v", name, err)
			if f != nil {
				f.Close()
			}
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "theirs\n" {
		t.Errorf("written through a link: %q", b)
	}
	if ents, _ := os.ReadDir(theirs); len(ents) != 1 {
		t.Errorf("the linked directory holds %d entries", len(ents))
	}
}

// TestOwnFilesRefuseWhatOthersCanReach: a log open to others, a sessions directory others
// may write and a FIFO for a job's log are refused too, each naming why; the daemon's own
// fresh 0600 file and new directory are fine.
func TestOwnFilesRefuseWhatOthersCanReach(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open.log")
	if err := os.WriteFile(open, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := private.OpenOwn(open, os.O_APPEND|os.O_WRONLY, 0o600, "tunebot's log"); err == nil || !strings.Contains(err.Error(), "open to group or others (mode 0644)") {
		t.Errorf("a 0644 log: %v", err)
	}
	f, err := private.OpenOwn(filepath.Join(dir, "fresh.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600, "tunebot's log")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	writable := filepath.Join(dir, "writable")
	if err := os.Mkdir(writable, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(writable, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := private.OwnDir(writable, 0o755, "the sessions directory"); err == nil || !strings.Contains(err.Error(), "writable by group or others (mode 0777)") {
		t.Errorf("a 0777 sessions directory: %v", err)
	}
	if err := private.OwnDir(filepath.Join(dir, "new"), 0o755, "the sessions directory"); err != nil {
		t.Errorf("a new sessions directory: %v", err)
	}
	fifo := filepath.Join(dir, "train.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := private.Append(fifo, 0o644); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Append to a FIFO: %v", err)
	}
}
