package store_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"tunebot/session"
	"tunebot/store"
)

// TestTotalsAreKeptByWrites: the running totals, kept by each write, equal the totals added
// up from the records afterwards, which is what a file written before them gets (schema
// version 2, opened for writing); opened read-only, such a file's totals are added up.
func TestTotalsAreKeptByWrites(t *testing.T) {
	ctx := context.Background()
	db, path := openDB(t)
	for i := range 6 {
		id := fmt.Sprintf("s%d", i)
		if err := db.CreateSession(ctx, session.Session{ID: id, State: session.StateRunning, GPUSeconds: 5, CreatedAt: t0.Add(time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		for n := range 3 {
			tr := session.Trial{SessionID: id, Number: n, Rung: n % 2, State: session.TrialTraining, StartedAt: t0}
			if err := db.PutTrial(ctx, tr); err != nil {
				t.Fatal(err)
			}
			tr.State, tr.EndedAt = session.TrialCompleted, t0.Add(time.Duration(n+1)*time.Minute)
			e := session.AuditEntry{SessionID: id, Kind: "trial_finished", Actor: session.System}
			if err := db.PutTrialAudited(ctx, tr, e); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.DeleteTrial(ctx, id, session.TrialRef{Number: 2}); err != nil {
			t.Fatal(err)
		}
		if err := db.Append(ctx, session.AuditEntry{SessionID: id, Kind: "advisor_call", Actor: session.System,
			Detail: map[string]any{"outcome": "invalid: x", "usage": map[string]any{"prompt_tokens": 7, "completion_tokens": 3}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.UpdateSession(ctx, id, func(s *session.Session) error { s.State, s.GPUSeconds = session.StateSucceeded, 30; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := db.Totals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := session.Totals{
		Sessions:       map[session.State]int{session.StateSucceeded: 6},
		Trials:         map[session.TrialState]int{session.TrialCompleted: 12},
		TrialDurations: map[int]session.Durations{0: {Count: 6, Sum: 6 * 60}, 1: {Count: 6, Sum: 6 * 120}},
		GPUSeconds:     180,
		AdvisorCalls:   map[string]int{"invalid": 6},
		AdvisorTokens:  map[string]int64{"prompt": 42, "completion": 18},
	}
	if diff := cmp.Diff(want, kept); diff != "" {
		t.Errorf("running totals (-want +got):\n%s", diff)
	}
	db.Close()

	// The same file as a version 2 tunebot left it: no totals.
	asVersion(t, path, 2, func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Delete([]byte("totals")) })
	eachOpening(t, path, func(db *store.DB, ro bool) {
		summed, err := db.Totals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(kept, summed); diff != "" {
			t.Errorf("read-only %v: totals added up from the records (-kept by writes +added up):\n%s", ro, diff)
		}
	})
}

// asVersion rewrites the data file at path as a tunebot of schema version left it: undo
// (when not nil) takes away what that version did not keep, and the file says version.
func asVersion(t *testing.T, path string, version uint64, undo func(tx *bolt.Tx) error) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		if undo != nil {
			if err := undo(tx); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), binary.BigEndian.AppendUint64(nil, version))
	})
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
}

// eachOpening opens the data file at path read-only, then for writing, and passes each to
// check before closing it.
func eachOpening(t *testing.T, path string, check func(db *store.DB, readOnly bool)) {
	t.Helper()
	for _, ro := range []bool{true, false} {
		db, err := store.Open(path, store.Options{ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		check(db, ro)
		db.Close()
	}
}

// TestAdvisorTokensAreCounted: each session's advisor tokens, kept as its calls are
// audited, equal session.AdvisorTokens of its audit; a file written before the counts
// (schema version 3) gets them when opened for writing, and adds them up when opened
// read-only.
func TestAdvisorTokensAreCounted(t *testing.T) {
	ctx := context.Background()
	db, path := openDB(t)
	call := func(sid string, tokens any) session.AuditEntry {
		return session.AuditEntry{SessionID: sid, Kind: session.AuditKindAdvisorCall, Actor: session.System,
			Detail: map[string]any{"outcome": "ok", "usage": map[string]any{"total_tokens": tokens}}}
	}
	for _, e := range []session.AuditEntry{
		call("s1", 100), call("s2", 7), call("s1", 250.0), call("", 40), call("s2", nil),
		{SessionID: "s1", Kind: "trial_finished", Detail: map[string]any{"usage": map[string]any{"total_tokens": 999}}},
	} {
		if err := db.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	check := func(db *store.DB, when string) {
		t.Helper()
		for _, sid := range []string{"s1", "s2", "s3"} {
			entries, err := db.Audit(ctx, sid)
			if err != nil {
				t.Fatal(err)
			}
			got, err := db.AdvisorTokensUsed(ctx, sid)
			if want := session.AdvisorTokens(entries); err != nil || got != want {
				t.Errorf("%s: session %s used %d tokens (%v), its audit says %d", when, sid, got, err, want)
			}
		}
		if got, _ := db.AdvisorTokensUsed(ctx, "s1"); got != 350 {
			t.Errorf("%s: s1 used %d tokens, want 350", when, got)
		}
	}
	check(db, "kept by writes")
	db.Close()

	// The same file as a version 3 tunebot left it: no counts.
	asVersion(t, path, 3, func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("advisor_tokens")) })
	eachOpening(t, path, func(db *store.DB, ro bool) {
		check(db, fmt.Sprintf("a version 3 file opened read-only %v", ro))
	})
}
