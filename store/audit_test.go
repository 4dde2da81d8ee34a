package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/secret"
	"tunebot/session"
	"tunebot/store"
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

// TestAuditStoresNoSecret: a secret's value that reached an audit entry, in any field (the
// kind, the actor, a model name in the detail, a nested list, a map key, a struct), is
// masked as the entry is written by Append, AppendCounted and PutTrialAudited: neither the
// log read back nor the data file holds it (issue 36: advisor.model: "m-${DEEPSEEK_API_KEY}"
// put the key in the audit the page shows).
func TestAuditStoresNoSecret(t *testing.T) {
	const key = "sk-deepseek-0123456789"
	path := filepath.Join(t.TempDir(), "tunebot.db")
	db, err := store.Open(path, store.Options{Timeout: time.Second, Redact: secret.NewRedactor(key)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type reason struct{ Why string }
	entries := []session.AuditEntry{
		{Time: t0, SessionID: "s1", Kind: "advisor_call", Actor: session.System,
			Detail: map[string]any{"requested_model": "m-" + key, "usage": map[string]any{"prompt_tokens": 12}, "tries": []any{"x", map[string]string{key: "y<" + key + ">"}}}},
		{Time: t0, SessionID: "s1", Kind: "note-" + key, Actor: session.Actor{Platform: "slack", ID: "U1", Name: key, Where: "C1"},
			Detail: map[string]any{"why": reason{Why: "a \"" + key + "\""}}},
	}
	for _, e := range entries {
		if err := db.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AppendCounted(ctx, session.AuditEntry{Time: t0, SessionID: "s1", Kind: "refused", Detail: map[string]any{"command": key}}, "k", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendCounted(ctx, session.AuditEntry{Time: t0, SessionID: "s1", Kind: "refused", Detail: map[string]any{"command": key}}, "k", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateSession(ctx, session.Session{ID: "s1", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutTrialAudited(ctx, session.Trial{SessionID: "s1", Number: 1}, session.AuditEntry{Time: t0, SessionID: "s1", Kind: "trial", Detail: map[string]any{"log": key}}); err != nil {
		t.Fatal(err)
	}
	all, err := db.Audit(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	newest, err := db.AuditNewest(ctx, "s1", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 || len(newest) != 4 || strings.Contains(fmt.Sprint(all, newest), key) || !strings.Contains(fmt.Sprint(all), "m-"+secret.Mask) {
		t.Errorf("the audit read back holds the key or lost entries: %v", all)
	}
	if n, _ := all[2].Detail[session.CountKey].(float64); n != 2 || all[0].Seq == 0 || all[0].Detail["usage"].(map[string]any)["prompt_tokens"] != 12.0 {
		t.Errorf("the redacted entries lost their numbers: %v", all)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if raw, err := os.ReadFile(path); err != nil || bytes.Contains(raw, []byte(key)) {
		t.Errorf("the data file holds the key (%v)", err)
	}
}

// TestThreeMegabyteAuditStringStoredCut: a failed proposal of a hostile advisor stored a
// 3 MB audit entry (its problems, its error), seven of them grew the store by 30 MB and one
// read of the session used up a page's read allowance (issue 44, table item 7). Every
// string of an entry is stored cut to session.TextLimit, saying so, after the redactor has
// masked the secrets in it whole.
func TestThreeMegabyteAuditStringStoredCut(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{Timeout: time.Second, Redact: secret.NewRedactor(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	// The key straddles the cut: cut first, its first half would be stored raw.
	huge := strings.Repeat("weights.bogus: unknown term; ", session.TextLimit/29)[:session.TextLimit-60] + key + strings.Repeat(" and more", 350_000)
	e := session.AuditEntry{Time: t0, SessionID: "s1", Kind: "proposer_choice", Detail: map[string]any{
		"outcome": "error: " + huge, "nested": map[string]any{"problems": []any{huge, huge}}, "trial": 3,
	}}
	if err := db.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err := db.Audit(ctx, "s1")
	if err != nil || len(got) != 1 {
		t.Fatalf("audit: %v, %d entries", err, len(got))
	}
	buf, _ := json.Marshal(got[0])
	if len(buf) > 4*session.TextLimit || !strings.Contains(string(buf), "… (cut to 4096 of") {
		t.Errorf("the stored entry is %d bytes, want a few KB saying it was cut", len(buf))
	}
	if strings.Contains(string(buf), key[:8]) {
		t.Errorf("a cut split the key: part of it is stored")
	}
	if got[0].Detail["trial"] != 3.0 {
		t.Errorf("detail trial = %v, want 3", got[0].Detail["trial"])
	}
}
