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
