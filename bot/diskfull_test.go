package bot_test

import (
	"strings"
	"testing"

	"tunebot/bot"
	"tunebot/session"
)

// TestPushSaysTheDiskIsFull: a session a full disk paused buzzes the phone with the
// reason; a person's pause does not (that person knows).
func TestPushSaysTheDiskIsFull(t *testing.T) {
	s := fixtureSession()
	s.State = session.StatePaused
	s.Reason = "the data disk is full (1.2 MiB free of 6.0 MiB on /data); free space, then resume"
	c, ok := bot.PushCard(bot.PushInput{Event: session.Event{Kind: session.EventSessionUpdated, Session: s}, Trials: fixtureTrials()})
	want := "session 1a2b3c4d paused: the data disk is full (1.2 MiB free of 6.0 MiB on /data); free space, then resume"
	if got := strings.TrimSpace(bot.PushText(c)); !ok || got != want || !c.Urgent {
		t.Fatalf("push %v %q (urgent %v), want %q", ok, got, c.Urgent, want)
	}
	s.Reason = ""
	if _, ok := bot.PushCard(bot.PushInput{Event: session.Event{Kind: session.EventSessionUpdated, Session: s}}); ok {
		t.Error("a person's pause buzzes a phone")
	}
}
