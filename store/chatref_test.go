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
