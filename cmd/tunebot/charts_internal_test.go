package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
	"tunebot/store"
)

func pts(steps ...int64) []session.Point {
	out := make([]session.Point, len(steps))
	for i, s := range steps {
		out[i] = session.Point{Step: s, Value: float64(s)}
	}
	return out
}

// A promoted trial's curve runs through its lower rungs: segments join where the resumed
// run starts (its checkpoint's iteration logged again is dropped once), and a tag whose
// steps restart with each run (wall-clock seconds) keeps only its own rung.
func TestLineage(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	put := func(number, rung int, tag string, p []session.Point) {
		t.Helper()
		if err := db.PutSeries(ctx, session.SeriesKey{SessionID: "s", Number: number, Rung: rung, Tag: tag}, p); err != nil {
			t.Fatal(err)
		}
	}
	put(3, 0, "it", pts(0, 1, 2))
	put(3, 1, "it", pts(3, 4, 5)) // continues after 2
	put(3, 2, "it", pts(5, 6, 7)) // logs its checkpoint's iteration 5 again
	put(3, 0, "clock", pts(0, 10, 20))
	put(3, 1, "clock", pts(0, 30, 60))
	put(3, 2, "only-top", pts(6, 7))
	put(4, 0, "it", pts(0, 1)) // another trial's curve stays out
	for _, tc := range []struct {
		ref  session.TrialRef
		tag  string
		want []session.Point
		err  bool
	}{
		{session.TrialRef{Number: 3, Rung: 0}, "it", pts(0, 1, 2), false},
		{session.TrialRef{Number: 3, Rung: 2}, "it", pts(0, 1, 2, 3, 4, 5, 6, 7), false},
		{session.TrialRef{Number: 3, Rung: 1}, "clock", pts(0, 30, 60), false},
		{session.TrialRef{Number: 3, Rung: 2}, "only-top", pts(6, 7), false},
		{session.TrialRef{Number: 3, Rung: 1}, "only-top", nil, true},
	} {
		got, err := lineage(ctx, db, "s", tc.ref, tc.tag)
		if (err != nil) != tc.err {
			t.Errorf("lineage(%v, %s): error %v, want error %v", tc.ref, tc.tag, err, tc.err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("lineage(%v, %s) (-want +got):\n%s", tc.ref, tc.tag, diff)
		}
	}
}
