package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/session"
)

// A compaction that fails after its copy is written, or whose copy is damaged, leaves the
// data file byte for byte as it was, no copy beside it, and the store working on it.
func TestCompactFailureLeavesTheFileAsItWas(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(path string) error
		want  string
	}{
		{"fails after the copy", func(string) error { return errors.New("disk full") }, "disk full"},
		{"the copy is damaged", func(path string) error {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			// Garble the pages past the meta pages: the tree the check walks.
			_, err = f.WriteAt(bytes.Repeat([]byte{0xa5}, 16<<10), 16<<10)
			return err
		}, "failed its check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "tunebot.db")
			db := compactable(t, dir)
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			was, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			afterCompactCopy = tc.fault
			defer func() { afterCompactCopy = nil }()
			_, _, err = db.Compact(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compact: %v, want an error with %q", err, tc.want)
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(was, now) {
				t.Errorf("the data file changed (%d bytes, was %d)", len(now), len(was))
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
				t.Errorf("files left beside the data file: %v", left)
			}
			if err := db.CreateSession(ctx, session.Session{ID: "s2", State: session.StateFailed, CreatedAt: t0.Add(time.Hour)}); err != nil {
				t.Fatalf("the store after a failed compaction: %v", err)
			}
			db.Close()
			if err := Check(path, Options{}); err != nil {
				t.Fatalf("the data file after a failed compaction: %v", err)
			}
		})
	}
}

// compactable opens a store at dir/tunebot.db with a session whose thinned curve left free
// pages for Compact to drop.
func compactable(t *testing.T, dir string) *DB {
	t.Helper()
	ctx := context.Background()
	db, err := Open(filepath.Join(dir, "tunebot.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := db.CreateSession(ctx, session.Session{ID: "s1", State: session.StateSucceeded, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	pts := make([]session.Point, 5000)
	for i := range pts {
		pts[i] = session.Point{Step: int64(i), Value: float64(i)}
	}
	if err := db.PutSeries(ctx, session.SeriesKey{SessionID: "s1", Tag: "loss"}, pts); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.PruneSeries(ctx, "s1", 0, false); err != nil {
		t.Fatal(err)
	}
	return db
}

// theirStore is a valid data file of another user's making (a temp dir standing for
// theirs), holding one session "theirs", and its bytes.
func theirStore(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "theirs.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateSession(context.Background(), session.Session{ID: "theirs", State: session.StateFailed, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// TestCompactionTempSwappedForLinkIsNotFollowed (issue 44 item 2): another user swapped
// .tunebot.db.compact-* for a link (here to a valid data file of theirs) while prune
// compacted; the copy was reopened by name, so the live store became their file and the
// real data went to an unlinked inode. Now the copy is never reopened by name: the swap is
// found before the rename, the data file stays as it was, a regular file with the daemon's
// data, their file is untouched and the store goes on working.
func TestCompactionTempSwappedForLinkIsNotFollowed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := compactable(t, dir)
	path := filepath.Join(dir, "tunebot.db")
	was, _ := os.ReadFile(path)
	theirs, theirBytes := theirStore(t)
	afterCompactCopy = func(tmp string) error {
		if err := os.Remove(tmp); err != nil {
			return err
		}
		return os.Symlink(theirs, tmp)
	}
	defer func() { afterCompactCopy = nil }()
	if _, _, err := db.Compact(ctx); err == nil || !strings.Contains(err.Error(), "is no longer the compacted copy tunebot made (now a symbolic link)") {
		t.Errorf("Compact with its copy swapped for a link: %v", err)
	}
	if info, err := os.Lstat(path); err != nil || !info.Mode().IsRegular() {
		t.Fatalf("the data file is no longer a regular file: %v %v", info, err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(was, now) {
		t.Errorf("the data file changed (%d bytes, was %d)", len(now), len(was))
	}
	if now, _ := os.ReadFile(theirs); !bytes.Equal(theirBytes, now) {
		t.Errorf("their file was written (%d bytes, was %d)", len(now), len(theirBytes))
	}
	if _, err := db.Session(ctx, "s1"); err != nil {
		t.Errorf("the store lost its data: %v", err)
	}
	if _, err := db.Session(ctx, "theirs"); err == nil {
		t.Errorf("the store is their file")
	}
	if err := db.CreateSession(ctx, session.Session{ID: "s2", State: session.StateFailed, CreatedAt: time.Now()}); err != nil {
		t.Errorf("the store after the refused compaction: %v", err)
	}
}

// TestCompactionDataFileSwappedAfterRenameFailsLoudly: were the data file's name swapped
// for a link the moment the copy was renamed there, Compact says so, with what to do,
// rather than report success; the store keeps the daemon's data open.
func TestCompactionDataFileSwappedAfterRenameFailsLoudly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := compactable(t, dir)
	theirs, theirBytes := theirStore(t)
	afterCompactRename = func(path string) {
		os.Remove(path)
		os.Symlink(theirs, path)
	}
	defer func() { afterCompactRename = nil }()
	_, _, err := db.Compact(ctx)
	if err == nil || !strings.Contains(err.Error(), "the moment it was renamed there") || !strings.Contains(err.Error(), "tunebot backup") {
		t.Errorf("Compact with the data file swapped after the rename: %v", err)
	}
	if now, _ := os.ReadFile(theirs); !bytes.Equal(theirBytes, now) {
		t.Errorf("their file was written")
	}
	if _, err := db.Session(ctx, "s1"); err != nil {
		t.Errorf("the store lost its data: %v", err)
	}
}
