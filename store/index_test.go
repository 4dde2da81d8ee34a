package store_test

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"tunebot/session"
	"tunebot/store"
)

// newestFirst is the list views' order, worked out here without the store.
func newestFirst(ss []session.Session) []string {
	ss = slices.Clone(ss)
	slices.SortFunc(ss, func(a, b session.Session) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	var ids []string
	for _, s := range ss {
		ids = append(ids, s.ID)
	}
	return ids
}

// pages reads every page of limit sessions and returns the ids in order and how many pages
// it took.
func pages(t *testing.T, db *store.DB, limit int) (ids []string, n int) {
	t.Helper()
	for cursor := ""; ; n++ {
		page, next, err := db.RecentSessions(context.Background(), cursor, limit)
		if err != nil {
			t.Fatalf("RecentSessions(%q, %d): %v", cursor, limit, err)
		}
		if len(page) > limit {
			t.Fatalf("a page of %d holds %d sessions", limit, len(page))
		}
		for _, s := range page {
			ids = append(ids, s.ID)
		}
		if next == "" {
			return ids, n + 1
		}
		cursor = next
	}
}

func activeIDs(t *testing.T, db *store.DB) []string {
	t.Helper()
	active, err := db.ActiveSessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range active {
		ids = append(ids, s.ID)
	}
	return ids
}

// storedSessions is a year's mix: ties on the creation time, the zero time, times before
// 1970, one session still active.
func storedSessions(n int) []session.Session {
	var out []session.Session
	for i := range n {
		created := t0.Add(time.Duration(i%40) * 7 * time.Hour) // ties every 40
		switch i {
		case 3:
			created = time.Time{}
		case 4:
			created = time.Date(1969, 12, 31, 23, 59, 59, 999, time.UTC)
		}
		state := session.StateSucceeded
		if i == n-1 { // the newest, created last: a start refuses while it is active
			state = session.StatePaused
		}
		out = append(out, newSession(fmt.Sprintf("s%03d", i), state, created))
	}
	return out
}

func TestRecentSessionsPagesThroughEverySessionOnce(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	all := storedSessions(125)
	for _, s := range all {
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	want := newestFirst(all)
	for _, limit := range []int{1, 7, 50, 125, 500} {
		got, n := pages(t, db, limit)
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Errorf("pages of %d (-want +got):\n%s", limit, diff)
		}
		if wantN := (len(all) + limit - 1) / limit; n != wantN {
			t.Errorf("pages of %d: %d pages, want %d (the last one says there is no next)", limit, n, wantN)
		}
	}
	if every, err := db.Sessions(ctx); err != nil || len(every) != len(all) || every[0].ID != want[0] {
		t.Errorf("Sessions: %d sessions, %v", len(every), err)
	}
	if n, err := db.SessionCount(ctx); err != nil || n != len(all) {
		t.Errorf("SessionCount = %d, %v; want %d", n, err, len(all))
	}
	if got := activeIDs(t, db); !slices.Equal(got, []string{"s124"}) {
		t.Errorf("ActiveSessions = %v, want [s124]", got)
	}
	for _, bad := range []string{"nothex", "00", strings.Repeat("zz", 20)} {
		_, _, err := db.RecentSessions(ctx, bad, 10)
		var ue *session.UserError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "is not a page of the session list") {
			t.Errorf("RecentSessions(%q): %v, want a refusal a person can read", bad, err)
		}
	}
	if _, _, err := db.RecentSessions(ctx, "", 0); err == nil {
		t.Error("RecentSessions with a page of 0 succeeded")
	}
}

// The indexes follow every write of a session: a state that ends or resumes it, a creation
// time that moves, and not an update that was refused.
func TestSessionIndexesFollowUpdates(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	all := []session.Session{
		newSession("a", session.StateSucceeded, t0),
		newSession("b", session.StateFailed, t0.Add(time.Hour)),
		newSession("c", session.StateRunning, t0.Add(2*time.Hour)),
	}
	for _, s := range all {
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, wantOrder, wantActive []string) {
		t.Helper()
		if got, _ := pages(t, db, 2); !slices.Equal(got, wantOrder) {
			t.Errorf("%s: sessions %v, want %v", step, got, wantOrder)
		}
		if got := activeIDs(t, db); !slices.Equal(got, wantActive) {
			t.Errorf("%s: active %v, want %v", step, got, wantActive)
		}
		if n, _ := db.SessionCount(ctx); n != len(wantOrder) {
			t.Errorf("%s: SessionCount %d, want %d", step, n, len(wantOrder))
		}
	}
	check("created", []string{"c", "b", "a"}, []string{"c"})
	if err := db.CreateSession(ctx, newSession("d", session.StateQueued, t0.Add(3*time.Hour))); !errors.Is(err, session.ErrBusy) {
		t.Fatalf("a start while c runs: %v, want ErrBusy", err)
	}
	update := func(id string, fn func(*session.Session)) {
		t.Helper()
		if _, err := db.UpdateSession(ctx, id, func(s *session.Session) error { fn(s); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	update("c", func(s *session.Session) { s.State = session.StatePaused })
	check("paused", []string{"c", "b", "a"}, []string{"c"})
	update("c", func(s *session.Session) { s.State = session.StateCancelled })
	check("cancelled", []string{"c", "b", "a"}, nil)
	update("a", func(s *session.Session) { s.CreatedAt = t0.Add(5 * time.Hour) })
	check("a moved", []string{"a", "c", "b"}, nil)
	_, err := db.UpdateSession(ctx, "b", func(s *session.Session) error {
		s.State, s.CreatedAt = session.StateRunning, t0.Add(9*time.Hour)
		return errors.New("refused")
	})
	if err == nil {
		t.Fatal("the refused update succeeded")
	}
	check("refused update", []string{"a", "c", "b"}, nil)
	if err := db.CreateSession(ctx, newSession("d", session.StateQueued, t0.Add(3*time.Hour))); err != nil {
		t.Fatalf("a start once nothing is active: %v", err)
	}
	check("d started", []string{"a", "d", "c", "b"}, []string{"d"})
}

// writeVersion1 writes a data file as tunebot wrote it before the session indexes
// (schema version 1): its buckets, sessions as JSON, and the version.
func writeVersion1(t *testing.T, path string, sessions []session.Session) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"meta", "sessions", "trials", "proposals", "proposal_ids", "audit", "audit_by_session",
			"presets", "series", "outbox", "outbox_keys", "chat_refs", "schedules"} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		for _, s := range sessions {
			v, err := json.Marshal(s)
			if err != nil {
				return err
			}
			if err := tx.Bucket([]byte("sessions")).Put([]byte(s.ID), v); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), binary.BigEndian.AppendUint64(nil, 1))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A file an older tunebot wrote gets its indexes when it is first opened for writing; opened
// read-only (backup, doctor) it is left as it is, and a list says why it cannot be read.
func TestVersion1FileIsIndexedWhenOpened(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tunebot.db")
	all := storedSessions(60)
	writeVersion1(t, path, all)

	ro, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of a version 1 file: %v", err)
	}
	if _, _, err := ro.RecentSessions(ctx, "", 10); err == nil || !strings.Contains(err.Error(), "predates the session index") {
		t.Errorf("RecentSessions on a read-only version 1 file: %v", err)
	}
	ro.Close()

	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, _ := pages(t, db, 25); !slices.Equal(got, newestFirst(all)) {
		t.Errorf("after the migration, sessions %v\nwant %v", got, newestFirst(all))
	}
	if got := activeIDs(t, db); !slices.Equal(got, []string{"s059"}) {
		t.Errorf("after the migration, active %v, want [s059]", got)
	}
	if err := db.CreateSession(ctx, newSession("new", session.StateQueued, t0)); !errors.Is(err, session.ErrBusy) {
		t.Errorf("a start beside the migrated paused session: %v, want ErrBusy", err)
	}
	db.Close()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_ = b.View(func(tx *bolt.Tx) error {
		if v := binary.BigEndian.Uint64(tx.Bucket([]byte("meta")).Get([]byte("schema"))); v != store.SchemaVersion {
			t.Errorf("schema version after the migration: %d, want %d", v, store.SchemaVersion)
		}
		return nil
	})
}

func TestTrialOutlines(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	if err := db.CreateSession(ctx, newSession("s1", session.StateRunning, t0)); err != nil {
		t.Fatal(err)
	}
	var want []session.TrialOutline
	for _, tr := range []session.Trial{
		{Number: 0, State: session.TrialCompleted, StartedAt: t0, EndedAt: t0.Add(time.Minute), Metrics: session.Metrics{"fall_rate": 0.1}},
		{Number: 0, Rung: 1, State: session.TrialFailed, StartedAt: t0, Reason: "exit status 1"},
		{Number: 2, State: session.TrialTraining, RewardConfig: session.RewardConfig{Weights: map[string]float64{"pose": 1}}},
	} {
		tr.SessionID = "s1"
		if err := db.PutTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
		want = append(want, tr.Outline())
	}
	got, err := db.TrialOutlines(ctx, "s1")
	if diff := gocmp.Diff(want, got); diff != "" || err != nil {
		t.Errorf("TrialOutlines (-want +got), %v:\n%s", err, diff)
	}
	if none, err := db.TrialOutlines(ctx, "none"); err != nil || len(none) != 0 {
		t.Errorf("TrialOutlines of no session: %v, %v", none, err)
	}
}
