package bot_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"tunebot/bot"
	"tunebot/session"
)

// TestReadCommandsAreRateLimited: each person may send Burst read commands at once, then
// one every Every; over it they are told to slow down and when to try again. Other people,
// and commands that are not reads, are not held back. agent needs the start permission.
func TestReadCommandsAreRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t)
		agentCalls := 0
		h := bot.NewHandler(bot.HandlerConfig{Store: db, Space: session.DefaultSpace(),
			ReadLimit: bot.RateLimit{Burst: 3, Every: 10 * time.Second},
			Allow:     bot.AllowList{{Platform: "slack", Users: []string{alice.ID}}},
			Agent:     func(context.Context) (string, error) { agentCalls++; return "deepseek-v4-flash answered", nil }})
		do := func(who session.Actor, text string) string {
			r := h.Do(context.Background(), bot.Interaction{Platform: "slack", User: who, Channel: "C1", Kind: bot.KindCommand, Text: text})
			return cardText(r)
		}
		slow := func(s string) bool { return strings.Contains(s, "slow down") }

		for _, cmd := range []string{"presets", "preset show p1", "export p1"} {
			if got := do(bob, cmd); slow(got) {
				t.Fatalf("%s within the burst: %s", cmd, got)
			}
		}
		for _, cmd := range []string{"chart 1", "clip 1", "policy p1", "status", "best", "schedule list", "dashboard"} {
			if got := do(bob, cmd); !slow(got) || !strings.Contains(got, "try again in 10s") || !strings.Contains(got, "3 of these commands at once, then one every 10s") {
				t.Errorf("%s past the burst: %q", cmd, got)
			}
		}
		if got := do(alice, "presets"); slow(got) {
			t.Errorf("another person is held back: %s", got)
		}
		if got := do(bob, "help"); slow(got) {
			t.Errorf("help is limited: %s", got)
		}

		time.Sleep(4 * time.Second)
		if got := do(bob, "presets"); !strings.Contains(got, "try again in 6s") {
			t.Errorf("4 s later: %q", got)
		}
		time.Sleep(6 * time.Second)
		if got := do(bob, "presets"); slow(got) {
			t.Errorf("a token refilled after 10 s, yet: %s", got)
		}
		if got := do(bob, "presets"); !slow(got) {
			t.Errorf("only one token refilled, yet a second command passed: %s", got)
		}

		// agent is a paid call: the start permission, and the same limit.
		if got := do(bob, "agent"); !strings.Contains(got, `needs the "start" permission`) || agentCalls != 0 {
			t.Errorf("agent by a person without start: %q (%d calls)", got, agentCalls)
		}
		if got := do(alice, "agent"); !strings.Contains(got, "advisor connection works") || agentCalls != 1 {
			t.Errorf("agent by alice: %q (%d calls)", got, agentCalls)
		}
		do(alice, "agent")
		do(alice, "agent") // her limiter refilled while bob waited: 3 calls in all
		if got := do(alice, "agent"); !slow(got) || agentCalls != 3 {
			t.Errorf("agent past alice's burst: %q (%d calls)", got, agentCalls)
		}
	})
}

func TestRateLimitCheck(t *testing.T) {
	for _, tc := range []struct {
		l  bot.RateLimit
		ok bool
	}{
		{bot.RateLimit{}, true},
		{bot.RateLimit{Burst: 1, Every: time.Second}, true},
		{bot.RateLimit{Burst: 0, Every: time.Second}, false},
		{bot.RateLimit{Burst: 5}, false},
		{bot.RateLimit{Burst: 5, Every: -time.Second}, false},
	} {
		if err := tc.l.Check(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.l, err)
		}
	}
}
