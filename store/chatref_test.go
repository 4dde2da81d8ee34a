package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"tunebot/session"
	"tunebot/store"
)

func TestChatRefsSurviveReopenAndKeepPlatformsApart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tunebot.db")
	ctx := context.Background()
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutChatRef(ctx, "slack", "root/abc", "C1/1700000000.0001"); err != nil {
		t.Fatal(err)
	}
	if err := db.PutChatRef(ctx, "discord", "root/abc", "998877"); err != nil {
		t.Fatal(err)
	}
	if err := db.PutChatRef(ctx, "", "k", "v"); err == nil {
		t.Fatal("a ref without a platform was stored")
	}
	db.Close()
	db, err = store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct{ platform, want string }{{"slack", "C1/1700000000.0001"}, {"discord", "998877"}} {
		got, err := db.ChatRef(ctx, tc.platform, "root/abc")
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.platform, got, err, tc.want)
		}
	}
	if _, err := db.ChatRef(ctx, "slack", "root/nope"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("missing ref: %v", err)
	}
}

func TestPutTrialAuditedWritesBothOrNeither(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tr := session.Trial{SessionID: "nosuchsession", Number: 1, State: session.TrialCompleted}
	entry := session.AuditEntry{SessionID: "nosuchsession", Kind: "trial_finished"}
	if err := db.PutTrialAudited(ctx, tr, entry); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("trial of an unknown session: %v", err)
	}
	if a, _ := db.Audit(ctx, ""); len(a) != 0 {
		t.Fatalf("the audit line was written without its trial: %+v", a)
	}
	if err := db.CreateSession(ctx, session.Session{ID: "s1", State: session.StateRunning}); err != nil {
		t.Fatal(err)
	}
	tr.SessionID, entry.SessionID = "s1", "s1"
	if err := db.PutTrialAudited(ctx, tr, entry); err != nil {
		t.Fatal(err)
	}
	ts, _ := db.Trials(ctx, "s1")
	a, _ := db.Audit(ctx, "s1")
	if len(ts) != 1 || len(a) != 1 || a[0].Kind != "trial_finished" || a[0].Time.IsZero() {
		t.Fatalf("trials %+v audit %+v", ts, a)
	}
}
