package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
	"tunebot/store"
)

// Schedules live in the data file: what is put and deleted is what the next daemon on the
// same file finds, oldest first, every field kept.
func TestSchedulesPersistAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	db, path := openDB(t)
	bob := session.Actor{Platform: "slack", ID: "U2", Name: "bob"}
	a := store.Schedule{ID: "a", Spec: "0 2 * * *", Args: "trials=8", IfBusy: "wait", CreatedBy: bob, CreatedAt: t0}
	b := store.Schedule{ID: "b", Spec: "@weekly", IfBusy: "skip", CreatedBy: bob, CreatedAt: t0.Add(time.Minute)}
	c := store.Schedule{ID: "c", Spec: "@daily", Args: "mode=approval", IfBusy: "skip", CreatedBy: bob, CreatedAt: t0.Add(2 * time.Minute)}
	for _, s := range []store.Schedule{c, a, b} {
		if err := db.PutSchedule(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.DeleteSchedule(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteSchedule(ctx, b.ID); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("deleting a removed schedule: %v, want ErrNotFound", err)
	}
	if err := db.PutSchedule(ctx, store.Schedule{}); err == nil {
		t.Error("a schedule without an id was saved")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db2, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	got, err := db2.Schedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.Schedule{a, c}, got); diff != "" {
		t.Fatalf("schedules after reopening (-want +got):\n%s", diff)
	}
	// A later write replaces the record whole (the scheduler records each run this way).
	e := got[0]
	e.LastRun, e.LastResult = t0.Add(time.Hour), "started session s1"
	if err := db2.PutSchedule(ctx, e); err != nil {
		t.Fatal(err)
	}
	if again, _ := db2.Schedules(ctx); len(again) != 2 || again[0] != e {
		t.Errorf("after replacing: %+v, want first %+v", again, e)
	}
}
