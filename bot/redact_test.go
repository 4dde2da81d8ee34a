package bot_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/secret"
	"tunebot/session"
)

const plantedKey = "sk-planted-deepseek-0123456789"

// TestChatRedactsSecrets: a secret that reaches a reply (an advisor error quoting the key)
// or a card (a failed trial's log tail) is masked before it is sent or queued.
func TestChatRedactsSecrets(t *testing.T) {
	ctx := context.Background()
	x := secret.NewRedactor(plantedKey)
	db := openStore(t)

	h := bot.NewHandler(bot.HandlerConfig{Store: db, Space: session.DefaultSpace(), Redact: x,
		Allow: bot.AllowList{{Platform: "slack", Users: []string{alice.ID}}},
		Agent: func(context.Context) (string, error) { return "", errors.New("401: invalid key " + plantedKey) }})
	r := h.Do(ctx, bot.Interaction{Platform: "slack", User: alice, Kind: bot.KindCommand, Text: "agent"})
	if strings.Contains(r.Text, plantedKey) || !strings.Contains(r.Text, "invalid key [redacted]") {
		t.Errorf("agent reply: %q", r.Text)
	}

	s := fixtureSession()
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	tr := fixtureTrials()[1]
	tr.SessionID, tr.State, tr.Reason, tr.Score = s.ID, session.TrialFailed, "train.log tail: using key "+plantedKey, nil
	if err := db.PutTrial(ctx, tr); err != nil {
		t.Fatal(err)
	}
	n := bot.NewNotifier(bot.NotifierConfig{Queue: db, Renderer: &bot.Renderer{Records: db, Space: session.DefaultSpace()},
		Platforms: []string{"slack"}, Redact: x, Buffer: 4})
	n.Notify(ctx, session.Event{Kind: session.EventTrialFinished, Session: s, Trial: &tr, Text: "trial failed: " + plantedKey})
	cctx, cancel := context.WithCancel(ctx)
	cancel() // Run drains what is queued, then returns
	if err := n.Run(cctx); err != nil {
		t.Fatal(err)
	}
	var bodies strings.Builder
	for items, _ := db.Due(ctx, "slack", time.Now(), 0); len(items) > 0; items, _ = db.Due(ctx, "slack", time.Now(), 0) {
		for _, it := range items {
			bodies.Write(it.Body)
			db.Delivered(ctx, it.ID)
		}
	}
	if strings.Contains(bodies.String(), plantedKey) || !strings.Contains(bodies.String(), "using key [redacted]") {
		t.Errorf("queued cards not redacted:\n%s", bodies.String())
	}
}

// TestMessageHoldingASecretIsRefused: a command whose text holds a secret's value (a run
// name, a preset name) is not acted on, so the secret reaches no store, job or card.
func TestMessageHoldingASecretIsRefused(t *testing.T) {
	f := newOps(t, opsOptions{redact: secret.NewRedactor(plantedKey)})
	r := f.cmd(alice, "start fallback=true trials=4 name="+plantedKey)
	if !strings.Contains(r.Text, "holds the value of one of tunebot's secrets") || strings.Contains(r.Text, plantedKey) {
		t.Errorf("start with a secret run name: %+v", r)
	}
	if all, err := f.db.Sessions(context.Background()); err != nil || len(all) != 0 {
		t.Errorf("sessions stored: %d (%v)", len(all), err)
	}
	if r := f.cmd(alice, "start fallback=true trials=4 name=go2-run"); !strings.Contains(r.Text, "started by alice") {
		t.Errorf("start without a secret: %+v", r)
	}
}
