package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
)

// TestAuditNewest: the newest n entries of a session or of the whole log, oldest first, as
// the tail of the whole read would give them.
func TestAuditNewest(t *testing.T) {
	db, _ := openDB(t)
	ctx := context.Background()
	for i := range 30 {
		sid := []string{"s1", "s2", ""}[i%3]
		if err := db.Append(ctx, session.AuditEntry{Time: t0, SessionID: sid, Kind: fmt.Sprintf("k%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		sid string
		n   int
	}{{"", 5}, {"s1", 4}, {"s2", 10}, {"s2", 50}, {"none", 3}, {"s1", 0}} {
		all, err := db.Audit(ctx, tc.sid)
		if err != nil {
			t.Fatal(err)
		}
		want := all[max(len(all)-tc.n, 0):]
		got, err := db.AuditNewest(ctx, tc.sid, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 && len(got) == 0 {
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("newest %d of %q (-whole log's tail +newest):\n%s", tc.n, tc.sid, diff)
		}
	}
}

// TestAppendCounted: repeats of one key within a window raise one entry's count; another key,
// or the next window, is an entry of its own.
func TestAppendCounted(t *testing.T) {
	db, _ := openDB(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 9, 0, 10, 0, time.UTC)
	refuse := func(who string, after time.Duration) {
		t.Helper()
		e := session.AuditEntry{Time: at.Add(after), SessionID: "s1", Kind: "refused", Actor: session.Actor{ID: who}, Detail: map[string]any{"command": "approve"}}
		if err := db.AppendCounted(ctx, e, who+"/approve", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1000 {
		refuse("eve", time.Duration(i)*time.Millisecond)
	}
	refuse("mallory", time.Second)
	refuse("eve", 49*time.Second) // still 09:00
	refuse("eve", 50*time.Second) // 09:01: a new window
	all, err := db.Audit(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range all {
		got = append(got, fmt.Sprintf("%s %s %v", e.Actor.ID, e.Time.Format("15:04:05"), e.Detail[session.CountKey]))
	}
	want := []string{"eve 09:00:10 1001", "mallory 09:00:11 1", "eve 09:01:00 1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}
