package disk_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"tunebot/disk"
	"tunebot/session"
)

// TestWriteIsWholeOrNothing: a write that runs out of space half-way leaves the file as it
// was (or absent) and no partial copy beside it; the error says why, so the caller can
// tell a full disk.
func TestWriteIsWholeOrNothing(t *testing.T) {
	full := func(w io.Writer) error {
		if _, err := w.Write([]byte("half a chart")); err != nil {
			return err
		}
		return &fs.PathError{Op: "write", Path: "chart.png", Err: syscall.ENOSPC}
	}
	dir := t.TempDir()
	fresh, old := filepath.Join(dir, "fresh.png"), filepath.Join(dir, "old.json")
	if err := disk.WriteFile(old, []byte(`{"whole": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fresh, old} {
		err := disk.Write(path, 0o644, full)
		if err == nil || !session.OutOfSpace(err) {
			t.Fatalf("%s: %v, want an out-of-space error", path, err)
		}
	}
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a half-written %s was left: %v", fresh, err)
	}
	if b, err := os.ReadFile(old); err != nil || string(b) != `{"whole": true}` {
		t.Fatalf("%s: %q %v", old, b, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left beside it: %v", ents)
	}
	if info, _ := os.Stat(old); info.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", info.Mode())
	}
}

func TestUsageAndReserve(t *testing.T) {
	dir := t.TempDir()
	u, err := disk.Usage(dir)
	if err != nil || u.Total <= 0 || u.Free < 0 || u.Free > u.Total || u.Path != dir {
		t.Fatalf("%+v %v", u, err)
	}
	if _, err := disk.Usage(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing path measured")
	}
	if u.Free < 4*disk.ReserveSize {
		t.Skipf("%s has too little room for the reserve", dir)
	}
	w := disk.NewWatch(dir)
	w.Restore()
	if info, err := os.Stat(w.Reserve); err != nil || info.Size() != disk.ReserveSize {
		t.Fatalf("reserve: %v %v", info, err)
	}
	w.Release()
	if _, err := os.Stat(w.Reserve); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("reserve after release: %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"2GiB": 2 << 30, "512MiB": 512 << 20, "1.5 GB": 1_500_000_000, "4096": 4096, "10B": 10, "3KB": 3000} {
		if got, err := disk.ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1GiB", "2 GiBs", "1e30GB"} {
		if _, err := disk.ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) took it", in)
		}
	}
}

// TestReleaseIfFull: on a full disk the reserve is released, giving a start its room; on a
// disk with room it stays. It mounts a small tmpfs: root only (.ci/run), else it skips.
func TestReleaseIfFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (.ci/run runs the tests as root)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mounting a tmpfs is not permitted here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	w := disk.NewWatch(dir)
	w.Restore()
	if w.ReleaseIfFull() {
		t.Fatal("released with room to spare")
	}
	if _, err := os.Stat(w.Reserve); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for buf := make([]byte, 64<<10); ; {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	if !w.ReleaseIfFull() {
		t.Fatal("a full disk kept its reserve")
	}
	if u, err := disk.Usage(dir); err != nil || u.Free < disk.ReserveSize {
		t.Fatalf("after the release: %+v %v", u, err)
	}
	w.Restore() // less than twice the reserve is free: it is not taken back yet
	if _, err := os.Stat(w.Reserve); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the reserve came back on a full disk: %v", err)
	}
}

// TestUsagesOfTwoLikeFilesystems: two empty tmpfs mounts of the same size are two
// filesystems, though their free and total bytes are the same; a directory on one is not a
// third. It mounts them: root only (.ci/run), else it skips.
func TestUsagesOfTwoLikeFilesystems(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount two tmpfs (.ci/run runs the tests as root)")
	}
	var mounts []string
	for range 2 {
		dir := t.TempDir()
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", dir).CombinedOutput(); err != nil {
			t.Skipf("mounting a tmpfs is not permitted here: %v: %s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
		mounts = append(mounts, dir)
	}
	got := disk.Usages(mounts...)
	if len(got) != 2 || got[0].Path != mounts[0] || got[1].Path != mounts[1] {
		t.Fatalf("Usages of two tmpfs of one size: %+v", got)
	}
	if got[0].Free != got[1].Free || got[0].Total != got[1].Total {
		t.Fatalf("two empty tmpfs of one size differ (%+v): the test shows nothing", got)
	}
	sub := filepath.Join(mounts[0], "sessions")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := disk.Usages(mounts[0], sub); len(got) != 1 || got[0].Path != mounts[0] {
		t.Fatalf("Usages of a tmpfs and a directory on it: %+v", got)
	}
}
