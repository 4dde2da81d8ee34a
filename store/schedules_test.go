package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/schedule"
	"tunebot/session"
	"tunebot/store"
)

type noStarter struct{}

func (noStarter) StartScheduled(context.Context, schedule.Entry) (string, error) {
	return "", errors.New("not in this test")
}

// Schedules live in the data file: what a scheduler adds and removes is what the next
// daemon on the same file finds, oldest first, every field kept.
func TestSchedulesPersistAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	db, path := openDB(t)
	bob := session.Actor{Platform: "slack", ID: "U2", Name: "bob"}
	s1, err := schedule.New(schedule.Options{Store: db, Starter: noStarter{}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s1.Add(ctx, "0 2 * * *", "trials=8", "wait", bob)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s1.Add(ctx, "@weekly", "", "", bob)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s1.Add(ctx, "@daily", "mode=approval", "skip", bob)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Remove(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteSchedule(ctx, b.ID); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("deleting a removed schedule: %v, want ErrNotFound", err)
	}
	if err := db.PutSchedule(ctx, schedule.Entry{}); err == nil {
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
	ids := func(es []schedule.Entry) (out []string) {
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	if diff := cmp.Diff([]string{a.ID, c.ID}, ids(got)); diff != "" {
		t.Fatalf("schedules after reopening (-want +got):\n%s", diff)
	}
	if e := got[0]; e.Spec != "0 2 * * *" || e.Args != "trials=8" || e.IfBusy != "wait" || e.CreatedBy != bob || !e.CreatedAt.Equal(a.CreatedAt) {
		t.Errorf("entry after reopening: %+v, want %+v", e, a)
	}
	// A later write replaces the entry whole (the scheduler records each run this way).
	e := got[0]
	e.LastResult = "started session s1"
	if err := db2.PutSchedule(ctx, e); err != nil {
		t.Fatal(err)
	}
	if again, _ := db2.Schedules(ctx); len(again) != 2 || again[0].LastResult != "started session s1" {
		t.Errorf("after replacing: %+v", again)
	}
}
