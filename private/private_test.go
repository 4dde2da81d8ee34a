package private_test

import (
	"errors"
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

// TestDirRefusesAnOpenDataDir: a data_dir group or others may write holds keys nobody can
// trust, unless it is shared on purpose, and then the keys go to a private subdirectory.
func TestDirRefusesAnOpenDataDir(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o770, 0o1777} {
		dir := mkdir(t, mode)
		if _, err := private.Dir(dir, false); err == nil || !strings.Contains(err.Error(), "writable by group or others") || !strings.Contains(err.Error(), "service.shared_data_dir") {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o700, 0o755} {
		dir := mkdir(t, mode)
		if got, err := private.Dir(dir, false); err != nil || got != dir {
			t.Errorf("mode %04o: %q %v", mode, got, err)
		}
	}

	dir := mkdir(t, 0o777)
	got, err := private.Dir(dir, true)
	if err != nil || got != filepath.Join(dir, private.SubDir) {
		t.Fatalf("shared: %q %v", got, err)
	}
	if info, err := os.Lstat(got); err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Fatalf("the private subdirectory: %v %v", info, err)
	}
	// Opened up, or swapped for a link to a directory others write, it is refused.
	if err := os.Chmod(got, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := private.Dir(dir, true); err == nil || !strings.Contains(err.Error(), "open to group or others") {
		t.Errorf("a 0755 private subdirectory: %v", err)
	}
	os.Remove(got)
	if err := os.Symlink(mkdir(t, 0o700), got); err != nil {
		t.Fatal(err)
	}
	if _, err := private.Dir(dir, true); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a linked private subdirectory: %v", err)
	}
}

// TestReadFileRefusesWhatOthersCouldHavePlanted: a key or token is read only from a regular
// 0600 file, never through a link or from a FIFO.
func TestReadFileRefusesWhatOthersCouldHavePlanted(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "dashboard.key")
	if err := private.WriteFile(key, []byte("k\n")); err != nil {
		t.Fatal(err)
	}
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

// TestSharedFilesFollowNoLink: in a shared data_dir another user may plant a link for the
// sessions directory, the log or the store (here to a directory and a file of a temp dir
// standing for theirs): each is refused with a message naming it, and nothing is created or
// written through it (issue 36).
func TestSharedFilesFollowNoLink(t *testing.T) {
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

	// Their own, or open to others: refused too; the daemon's own 0600 file is fine.
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
