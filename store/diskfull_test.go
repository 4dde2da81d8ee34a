package store_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
	"tunebot/store"
)

// TestFailedWriteOnAFullDiskLeavesTheStore: on a filesystem with no room left, a write
// that needs new pages fails with an error that says so (session.OutOfSpace), and the data
// file is as it was: it passes its check, what was written before reads the same, and once
// there is room again the same write succeeds. It mounts a small tmpfs, so it needs root
// (.ci/run has it) and skips, saying so, without.
func TestFailedWriteOnAFullDiskLeavesTheStore(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (.ci/run runs the tests as root)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mounting a tmpfs is not permitted here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	path := filepath.Join(dir, "tunebot.db")
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := session.Session{ID: "s1", State: session.StateRunning, Settings: session.DefaultSettings()}
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	key := session.SeriesKey{SessionID: "s1", Number: 1, Rung: 0, Tag: "Train/mean_reward"}
	small := fullDiskCurve(100)
	if err := db.PutSeries(ctx, key, small); err != nil {
		t.Fatal(err)
	}
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for buf := make([]byte, 64<<10); ; {
		if _, err := filler.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	big := fullDiskCurve(200_000) // megabytes of new pages
	err = db.PutSeries(ctx, session.SeriesKey{SessionID: "s1", Number: 2, Rung: 0, Tag: "Train/mean_reward"}, big)
	if err == nil || !session.OutOfSpace(err) {
		t.Fatalf("a write on a full disk: %v, want an out-of-space error", err)
	}
	if got, err := db.Series(ctx, key); err != nil || !cmp.Equal(got, small) {
		t.Fatalf("after the failed write: %d points, %v", len(got), err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := store.Check(path, store.Options{}); err != nil {
		t.Fatalf("the data file after a failed write on a full disk: %v", err)
	}
	filler.Close()
	if err := os.Remove(filler.Name()); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.PutSeries(ctx, session.SeriesKey{SessionID: "s1", Number: 2, Rung: 0, Tag: "Train/mean_reward"}, big); err != nil {
		t.Fatalf("the same write with room: %v", err)
	}
	if got, err := db.Series(ctx, key); err != nil || !cmp.Equal(got, small) {
		t.Fatalf("the earlier curve: %d points, %v", len(got), err)
	}
}

func fullDiskCurve(n int) []session.Point {
	pts := make([]session.Point, n)
	for i := range pts {
		pts[i] = session.Point{Step: int64(i), Value: float64(i%97) * 1.5}
	}
	return pts
}
