package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/bot"
	"tunebot/session"
	"tunebot/store"
)

func enqueue(t *testing.T, db *store.DB, it bot.OutboxItem) bot.OutboxItem {
	t.Helper()
	if it.Platform == "" {
		it.Platform = "slack"
	}
	got, err := db.Enqueue(context.Background(), it)
	if err != nil {
		t.Fatalf("Enqueue(%+v): %v", it, err)
	}
	return got
}

// bodies returns the bodies of items, which the tests use as names.
func bodies(items []bot.OutboxItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, string(it.Body))
	}
	return out
}

func due(t *testing.T, db *store.DB, now time.Time) []bot.OutboxItem {
	t.Helper()
	items, err := db.Due(context.Background(), "slack", now, 0)
	if err != nil {
		t.Fatalf("Due: %v", err)
	}
	return items
}

func TestOutboxOrderPerThread(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	a1 := enqueue(t, db, bot.OutboxItem{Thread: "A", Body: []byte("a1"), CreatedAt: t0})
	enqueue(t, db, bot.OutboxItem{Thread: "A", Body: []byte("a2")})
	b1 := enqueue(t, db, bot.OutboxItem{Thread: "B", Body: []byte("b1")})
	enqueue(t, db, bot.OutboxItem{Platform: "discord", Thread: "A", Body: []byte("d1")})
	enqueue(t, db, bot.OutboxItem{Thread: "C", Body: []byte("c1"), NotBefore: t0.Add(time.Hour)})
	if a1.ID == 0 || b1.ID <= a1.ID || !a1.CreatedAt.Equal(t0) {
		t.Fatalf("assigned ids %d, %d, created %v", a1.ID, b1.ID, a1.CreatedAt)
	}

	steps := []struct {
		name string
		at   time.Time
		do   func()
		want []string
	}{
		{name: "heads of ready threads", at: t0, want: []string{"a1", "b1"}},
		{name: "claimed items are not offered twice", at: t0, want: nil},
		{
			name: "a failing head holds its thread",
			at:   t0,
			do: func() {
				if err := db.Retry(ctx, a1.ID, t0.Add(time.Minute), "slack: 503"); err != nil {
					t.Fatal(err)
				}
				if err := db.Delivered(ctx, b1.ID); err != nil {
					t.Fatal(err)
				}
			},
			want: nil,
		},
		{name: "retry time reached", at: t0.Add(time.Minute), want: []string{"a1"}},
		{name: "claim lapses", at: t0.Add(time.Minute + 3*time.Minute), want: []string{"a1"}},
		{
			name: "after delivery the next in thread",
			at:   t0.Add(5 * time.Minute),
			do: func() {
				if err := db.Delivered(ctx, a1.ID); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"a2"},
		},
		{name: "not before, and a2's claim lapsed", at: t0.Add(2 * time.Hour), want: []string{"a2", "c1"}},
	}
	for _, st := range steps {
		if st.do != nil {
			st.do()
		}
		if diff := cmp.Diff(st.want, bodies(due(t, db, st.at))); diff != "" {
			t.Errorf("%s: Due (-want +got):\n%s", st.name, diff)
		}
	}

	list, err := db.Due(ctx, "discord", t0, 0)
	if err != nil || len(list) != 1 || list[0].Thread != "A" || string(list[0].Body) != "d1" {
		t.Errorf("Due(discord): %+v, %v", list, err)
	}
	n, err := db.OutboxDepth(ctx)
	if err != nil || n != 3 {
		t.Errorf("OutboxDepth: %d, %v; want 3 (a2, c1, d1)", n, err)
	}
}

func TestOutboxRetryKeepsAttemptsAndError(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	it := enqueue(t, db, bot.OutboxItem{Thread: "A", Kind: "upload", Body: []byte("png")})
	for i := range 3 {
		if err := db.Retry(ctx, it.ID, t0.Add(time.Duration(i)*time.Second), fmt.Sprint("failure ", i)); err != nil {
			t.Fatal(err)
		}
	}
	got := due(t, db, t0.Add(time.Hour))
	if len(got) != 1 || got[0].Attempts != 3 || got[0].LastError != "failure 2" || !got[0].NotBefore.Equal(t0.Add(2*time.Second)) {
		t.Errorf("after 3 retries: %+v", got)
	}
	for _, fn := range []func() error{
		func() error { return db.Retry(ctx, 999, t0, "x") },
		func() error { return db.Delivered(ctx, 999) },
	} {
		if err := fn(); !errors.Is(err, session.ErrNotFound) || !strings.Contains(err.Error(), "999") {
			t.Errorf("unknown id: %v, want ErrNotFound naming it", err)
		}
	}
}

func TestOutboxCoalescesByKey(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	card := enqueue(t, db, bot.OutboxItem{Thread: "A", Key: "root", Kind: "update", Body: []byte("v1"), CreatedAt: t0})
	enqueue(t, db, bot.OutboxItem{Thread: "A", Body: []byte("msg")})
	other := enqueue(t, db, bot.OutboxItem{Platform: "discord", Thread: "A", Key: "root", Body: []byte("discord v1")})
	if err := db.Retry(ctx, card.ID, t0.Add(time.Minute), "rate limited"); err != nil {
		t.Fatal(err)
	}

	v2 := enqueue(t, db, bot.OutboxItem{Thread: "A", Key: "root", Kind: "update", Body: []byte("v2"), CreatedAt: t0.Add(time.Hour)})
	if v2.ID != card.ID || !v2.CreatedAt.Equal(t0) || v2.Attempts != 1 || v2.LastError != "rate limited" || !v2.NotBefore.Equal(t0.Add(time.Minute)) {
		t.Errorf("replacement: %+v; want id %d, created %v, 1 attempt, backoff kept", v2, card.ID, t0)
	}
	if n, _ := db.OutboxDepth(ctx); n != 3 {
		t.Errorf("OutboxDepth after coalescing: %d, want 3", n)
	}
	if diff := cmp.Diff([]string{"v2"}, bodies(due(t, db, t0.Add(time.Minute)))); diff != "" {
		t.Errorf("Due after coalescing (-want +got):\n%s", diff)
	}

	// v2 is now being sent; an update must queue behind it, not vanish into it.
	v3 := enqueue(t, db, bot.OutboxItem{Thread: "A", Key: "root", Body: []byte("v3")})
	if v3.ID == card.ID {
		t.Fatal("an update replaced the item being delivered")
	}
	v4 := enqueue(t, db, bot.OutboxItem{Thread: "A", Key: "root", Body: []byte("v4")})
	if v4.ID != v3.ID {
		t.Errorf("v4 got id %d, want to replace v3 (%d)", v4.ID, v3.ID)
	}
	if err := db.Delivered(ctx, card.ID); err != nil {
		t.Fatal(err)
	}
	// Delivering the old item must leave the key pointing at the new one.
	v5 := enqueue(t, db, bot.OutboxItem{Thread: "A", Key: "root", Body: []byte("v5")})
	if v5.ID != v3.ID {
		t.Errorf("v5 got id %d, want to replace v3 (%d)", v5.ID, v3.ID)
	}
	got := due(t, db, t0.Add(2*time.Minute))
	if diff := cmp.Diff([]string{"msg"}, bodies(got)); diff != "" {
		t.Errorf("Due (-want +got):\n%s", diff)
	}
	if err := db.Delivered(ctx, got[0].ID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v5"}, bodies(due(t, db, t0.Add(2*time.Minute)))); diff != "" {
		t.Errorf("Due (-want +got):\n%s", diff)
	}
	d, err := db.Due(ctx, "discord", t0, 0)
	if err != nil || len(d) != 1 || d[0].ID != other.ID {
		t.Errorf("the same key on another platform was touched: %+v, %v", d, err)
	}
}

func TestOutboxExpire(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	old := enqueue(t, db, bot.OutboxItem{Thread: "A", Key: "progress", Body: []byte("old"), Expires: t0.Add(time.Minute)})
	enqueue(t, db, bot.OutboxItem{Thread: "A", Body: []byte("next"), Expires: t0.Add(time.Hour)})
	enqueue(t, db, bot.OutboxItem{Thread: "B", Body: []byte("forever")})
	if err := db.Retry(ctx, old.ID, t0.Add(time.Hour), "down"); err != nil {
		t.Fatal(err)
	}
	// An expired head no longer holds its thread, even before Expire removes it.
	if diff := cmp.Diff([]string{"next", "forever"}, bodies(due(t, db, t0.Add(time.Minute)))); diff != "" {
		t.Errorf("Due with an expired head (-want +got):\n%s", diff)
	}
	gone, err := db.Expire(ctx, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"old"}, bodies(gone)); diff != "" || gone[0].Attempts != 1 {
		t.Errorf("Expire (-want +got):\n%s%+v", diff, gone)
	}
	if n, _ := db.OutboxDepth(ctx); n != 2 {
		t.Errorf("OutboxDepth after expiry: %d, want 2", n)
	}
	// The key of an expired item is free again.
	again := enqueue(t, db, bot.OutboxItem{Thread: "A", Key: "progress", Body: []byte("new")})
	if again.ID == old.ID {
		t.Error("an expired item was replaced instead of a new one queued")
	}
	if gone, err := db.Expire(ctx, t0.Add(time.Minute)); err != nil || len(gone) != 0 {
		t.Errorf("second Expire: %v, %v", gone, err)
	}
	if gone, err := db.Expire(ctx, t0.Add(2*time.Hour)); err != nil || len(gone) != 1 || string(gone[0].Body) != "next" {
		t.Errorf("Expire later: %v, %v", bodies(gone), err)
	}
}

func TestOutboxFull(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{MaxOutbox: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	first := enqueue(t, db, bot.OutboxItem{Thread: "A", Key: "root", Body: []byte("1")})
	enqueue(t, db, bot.OutboxItem{Thread: "A", Body: []byte("2")})
	enqueue(t, db, bot.OutboxItem{Thread: "B", Body: []byte("3")})
	_, err = db.Enqueue(ctx, bot.OutboxItem{Platform: "slack", Thread: "C", Kind: "message", Body: []byte("4")})
	if !errors.Is(err, session.ErrBusy) || !strings.Contains(err.Error(), "outbox is full") {
		t.Errorf("Enqueue into a full outbox: %v, want ErrBusy saying it is full", err)
	}
	// Coalescing adds nothing, so it still works when full.
	if got := enqueue(t, db, bot.OutboxItem{Thread: "A", Key: "root", Body: []byte("1b")}); got.ID != first.ID {
		t.Errorf("coalescing into a full outbox made a new item %d", got.ID)
	}
	if err := db.Delivered(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	enqueue(t, db, bot.OutboxItem{Thread: "C", Body: []byte("4")})
	if n, _ := db.OutboxDepth(ctx); n != 3 {
		t.Errorf("OutboxDepth: %d, want 3", n)
	}
}

// TestOutboxFlakySink runs a sender loop against a platform that fails 50 times, then works:
// every item arrives exactly once and each thread in order.
func TestOutboxFlakySink(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	want := map[string][]string{}
	for i := range 30 {
		thread := fmt.Sprint("T", i%3)
		body := fmt.Sprint(thread, "-", i)
		enqueue(t, db, bot.OutboxItem{Thread: thread, Body: []byte(body)})
		want[thread] = append(want[thread], body)
	}
	got := map[string][]string{}
	failures := 0
	now := t0
	for round := 0; round < 1000; round++ {
		items, err := db.Due(ctx, "slack", now, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if failures < 50 {
				failures++
				if err := db.Retry(ctx, it.ID, now.Add(time.Duration(it.Attempts+1)*time.Second), "unavailable"); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got[it.Thread] = append(got[it.Thread], string(it.Body))
			if err := db.Delivered(ctx, it.ID); err != nil {
				t.Fatal(err)
			}
		}
		if n, _ := db.OutboxDepth(ctx); n == 0 {
			break
		}
		now = now.Add(time.Second)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

// BenchmarkDueFullOutbox measures the sender's poll against a full outbox of 10000 items
// in 100 threads, as during a long chat outage.
func BenchmarkDueFullOutbox(b *testing.B) {
	ctx := context.Background()
	db, _ := openDB(b)
	for i := range 10000 {
		it := bot.OutboxItem{Platform: "slack", Thread: fmt.Sprint("T", i%100), Kind: "message", Body: make([]byte, 300)}
		if _, err := db.Enqueue(ctx, it); err != nil {
			b.Fatal(err)
		}
	}
	now := t0
	for b.Loop() {
		now = now.Add(time.Hour) // past every claim of the previous round
		if _, err := db.Due(ctx, "slack", now, 10); err != nil {
			b.Fatal(err)
		}
	}
}
