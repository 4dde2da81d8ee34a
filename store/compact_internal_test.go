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
			db, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
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
