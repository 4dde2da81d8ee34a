package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/session"
)

// TestReadGrant: with no read grant on a platform everyone there may read (as before); once
// a grant names the read permission, the read commands and /tune dashboard answer only the
// people it (or a full grant) names, and anyone else is refused, audited, and gets no link.
func TestReadGrant(t *testing.T) {
	db := openStore(t)
	links := 0
	handler := func(allow bot.AllowList) *bot.Handler {
		return bot.NewHandler(bot.HandlerConfig{Store: db, Space: session.DefaultSpace(), Allow: allow,
			Dashboard: func(session.Actor) (string, time.Time, error) {
				links++
				return "http://127.0.0.1:9464/signin?token=t", time.Now(), nil
			}})
	}
	reads := []string{"status", "best", "presets", "preset list", "export p1", "chart 1", "policy p1", "schedule list", "dashboard", "why 1", "clip 1"}
	do := func(h *bot.Handler, who session.Actor, text string) string {
		return cardText(h.Do(context.Background(), bot.Interaction{Platform: "slack", User: who, Channel: "C1", Kind: bot.KindCommand, Text: text}))
	}
	refused := func(s string) bool {
		return strings.Contains(s, "not allowed") && strings.Contains(s, `"read" permission`)
	}

	open := handler(bot.Grants("slack", []string{alice.ID}, nil, nil, nil))
	for _, cmd := range reads {
		if got := do(open, eve, cmd); refused(got) {
			t.Errorf("no read grant, yet eve's %s: %s", cmd, got)
		}
	}
	if links != 1 {
		t.Fatalf("%d links issued, want eve's", links)
	}

	closed := handler(bot.Grants("slack", []string{alice.ID}, nil, []string{bob.ID}, nil))
	for _, cmd := range reads {
		if got := do(closed, eve, cmd); !refused(got) {
			t.Errorf("eve is not granted read, yet her %s: %s", cmd, got)
		}
		for _, who := range []session.Actor{bob, alice} {
			if got := do(closed, who, cmd); refused(got) {
				t.Errorf("%s may read, yet %s: %s", who.ID, cmd, got)
			}
		}
	}
	if links != 3 {
		t.Errorf("%d links issued, want one more each for bob and alice, none for eve", links)
	}
	if got := do(closed, eve, "help"); refused(got) {
		t.Errorf("help needs no permission: %s", got)
	}
	if got := do(closed, bob, "start"); !strings.Contains(got, "not allowed") {
		t.Errorf("a reader starts: %s", got)
	}
	// On another platform, without a read grant of its own, reading stays open.
	r := closed.Do(context.Background(), bot.Interaction{Platform: "discord", User: session.Actor{ID: "200000000000000009"}, Channel: "C1", Kind: bot.KindCommand, Text: "presets"})
	if refused(cardText(r)) {
		t.Errorf("discord has no read grant, yet: %s", cardText(r))
	}
	audit, err := db.Audit(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range audit {
		if e.Kind == "refused" && e.Actor.ID == eve.ID && e.Detail["permission"] == "read" {
			n += refusalCount(e)
		}
	}
	if n != len(reads) {
		t.Errorf("%d of eve's refused reads audited, want %d", n, len(reads))
	}
}
