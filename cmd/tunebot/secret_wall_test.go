package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"tunebot/advisor"
	"tunebot/bot"
	"tunebot/config"
	"tunebot/session"
)

// TestSecondWallAsTheDaemonWiresIt: should a secret's value get past the config check into
// chat.ntfy.topic or advisor.model (the attacks of issue 36), the daemon's own wiring still
// sends it nowhere: the ntfy sink newPushes builds posts to a masked topic, the advisor
// deepSeekConfig configures sends and audits a masked model, and the store openStore opens
// masks it in any audit entry, which is what the page's audit view reads.
func TestSecondWallAsTheDaemonWiresIt(t *testing.T) {
	const slack = "xoxb-0123456789-wall"
	t.Setenv("SLACK_BOT_TOKEN", slack)
	t.Setenv("DEEPSEEK_API_KEY", testKey)
	var mu sync.Mutex
	var heard []string
	push := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		heard = append(heard, r.Method+" "+r.URL.String()+" "+fmt.Sprint(r.Header))
		mu.Unlock()
	}))
	defer push.Close()
	ds := &fakeDeepSeek{script: []string{`{"ok": true}`}}
	dsSrv := httptest.NewServer(ds)
	defer dsSrv.Close()

	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Chat.Ntfy = config.NtfyConfig{Server: push.URL, Topic: "tb-" + slack}
	cfg.Advisor.BaseURL, cfg.Advisor.Model = dsSrv.URL, "m-"+testKey
	_, sinks, err := newPushes(cfg, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	card := bot.Card{Title: "session finished", Blocks: []bot.Block{bot.Text("done")}}
	if err := sinks["ntfy"].Deliver(context.Background(), bot.Delivery{ID: 1, Message: bot.Message{Event: session.EventSessionFinished, Card: card}}); err != nil {
		t.Fatal(err)
	}
	db, err := openStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d, err := advisor.NewDeepSeek(deepSeekConfig(cfg.Advisor), testKey, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Test(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := db.Append(context.Background(), session.AuditEntry{SessionID: "s1", Kind: "note", Actor: session.System,
		Detail: map[string]any{"said": "topic tb-" + slack}}); err != nil {
		t.Fatal(err)
	}
	audit, err := db.Audit(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	page, err := session.NewestAudit(context.Background(), db, "s1", 10)
	if err != nil {
		t.Fatal(err)
	}
	ds.mu.Lock()
	sent := strings.Join(ds.bodies, "\n")
	ds.mu.Unlock()
	mu.Lock()
	pushed := strings.Join(heard, "\n")
	mu.Unlock()
	for what, text := range map[string]string{"the push server": pushed, "DeepSeek": sent, "the store's audit": fmt.Sprint(audit), "the page's audit view": fmt.Sprint(page)} {
		if strings.Contains(text, slack) || strings.Contains(text, testKey) {
			t.Errorf("%s holds a secret:\n%s", what, text)
		}
		if !strings.Contains(text, "redacted") {
			t.Errorf("%s shows no masked value:\n%s", what, text)
		}
	}
}
