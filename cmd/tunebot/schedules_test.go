package main

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/bot"
	"tunebot/schedule"
	"tunebot/session"
	"tunebot/store"
)

type noStarter struct{}

func (noStarter) StartScheduled(context.Context, bot.ScheduleEntry) (string, error) {
	return "", errors.New("not in this test")
}

// What a scheduler adds and removes through the data file is what the next daemon's
// scheduler finds, every field of its entries kept.
func TestSchedulerEntriesPersistInTheStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tunebot.db")
	db, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	bob := session.Actor{Platform: "slack", ID: "U2", Name: "bob"}
	s1, err := schedule.New(schedule.Options{Store: scheduleStore{db}, Starter: noStarter{}})
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
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db2, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	got, err := scheduleStore{db2}.Schedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a.Next, c.Next = time.Time{}, time.Time{} // filled in by List, never stored
	if diff := cmp.Diff([]bot.ScheduleEntry{a, c}, got); diff != "" {
		t.Fatalf("entries after reopening (-want +got):\n%s", diff)
	}
	e := got[0]
	e.LastRun, e.LastResult = a.CreatedAt.Add(time.Hour), "started session s1"
	if err := (scheduleStore{db2}).PutSchedule(ctx, e); err != nil {
		t.Fatal(err)
	}
	if again, _ := (scheduleStore{db2}).Schedules(ctx); len(again) != 2 || again[0] != e {
		t.Errorf("after replacing: %+v, want first %+v", again, e)
	}
}
