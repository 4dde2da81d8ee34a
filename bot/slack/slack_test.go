package slack_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	slackbot "tunebot/bot/slack"
	"tunebot/bot/slack/slacktest"
	"tunebot/session"
	"tunebot/store"
)

func openStore(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func testLogger() *slog.Logger {
	if os.Getenv("SLACK_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type rig struct {
	fake *slacktest.Server
	db   *store.DB
	ad   *slackbot.Adapter
	h    *bot.Handler
	ctx  context.Context
}

// newRig connects an adapter over Socket Mode to a fake Slack, with a handler that has
// no engine: what these tests send never reaches one.
func newRig(t testing.TB, mode string) *rig {
	t.Helper()
	fake := slacktest.New()
	t.Cleanup(fake.Close)
	db := openStore(t)
	ad, err := slackbot.New(slackbot.Config{Mode: mode, APIURL: fake.URL, Channel: "CTUNE", AllowUsers: []string{"UALICE"}, AllowGroups: []string{"SOPS"},
		BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, SigningSecret: "s3cret", Refs: db, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	h := bot.NewHandler(bot.HandlerConfig{Store: db, Space: session.DefaultSpace(), Allow: ad.Grants(), Logger: testLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	r := &rig{fake: fake, db: db, ad: ad, h: h, ctx: ctx}
	if mode == slackbot.ModeHTTP {
		close(done)
		return r
	}
	go func() { defer close(done); _ = ad.Run(ctx, h) }()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := fake.WaitConnected(wctx); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) waitResponse(t testing.TB, want string) slacktest.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	var got slacktest.Response
	err := r.fake.Wait(ctx, func(st *slacktest.State) bool {
		for _, x := range st.Responses {
			if strings.Contains(x.Text+x.Blocks, want) {
				got = x
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no response with %q: %v; have %+v", want, err, r.fake.Snapshot().Responses)
	}
	return got
}

func TestSlashHelpIsPrivate(t *testing.T) {
	r := newRig(t, slackbot.ModeSocket)
	id, err := r.fake.Send("slash_commands", r.fake.Slash("UANY", "CTUNE", "help"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.fake.WaitAck(r.ctx, id); err != nil {
		t.Fatal(err)
	}
	res := r.waitResponse(t, "/tune start")
	if res.ResponseType != "ephemeral" {
		t.Errorf("help answered %s, want ephemeral", res.ResponseType)
	}
}
