package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/session"
)

// TestPushSaysTheDiskIsFull: a session a full disk or its cluster paused buzzes the phone
// with the reason; a person's pause does not (that person knows).
func TestPushSaysTheDiskIsFull(t *testing.T) {
	for _, reason := range []string{
		"the data disk is full (1.2 MiB free of 6.0 MiB on /data); free space, then resume",
		"the cluster is unavailable: the Ray head at http://10.0.0.5:8265 has not answered for 2m0s (connection refused); resume once it is back (the interrupted trials run again)",
	} {
		s := fixtureSession()
		s.State, s.Reason = session.StatePaused, reason
		c, ok := bot.PushCard(bot.PushInput{Event: session.Event{Kind: session.EventSessionUpdated, Session: s}, Trials: fixtureTrials()})
		want := "session 1a2b3c4d paused: " + reason
		if got := strings.TrimSpace(bot.PushText(c)); !ok || got != want || !c.Urgent {
			t.Fatalf("push %v %q (urgent %v), want %q", ok, got, c.Urgent, want)
		}
		s.Reason = ""
		if _, ok := bot.PushCard(bot.PushInput{Event: session.Event{Kind: session.EventSessionUpdated, Session: s}}); ok {
			t.Error("a person's pause buzzes a phone")
		}
	}
}

// TestNotifierPushesTheDiskFullPause: the notifier queues that line for the phone (issue
// 39: "a phone push says paused: the data disk is full"), not only PushCard: a session's
// update is no event a phone hears otherwise.
func TestNotifierPushesTheDiskFullPause(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	s := fixtureSession()
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	n := bot.NewNotifier(bot.NotifierConfig{Queue: db, Renderer: &bot.Renderer{Records: db, Space: session.DefaultSpace()},
		Platforms: []string{"slack"}, Push: []string{"ntfy"}, Buffer: 4})
	paused := s
	paused.State, paused.Reason = session.StatePaused, "the data disk is full (1.2 MiB free of 6.0 MiB on /data); free space, then resume"
	byPerson := s
	byPerson.State = session.StatePaused
	n.Notify(ctx, session.Event{Kind: session.EventSessionUpdated, Session: byPerson, Text: "paused by alice"})
	n.Notify(ctx, session.Event{Kind: session.EventSessionUpdated, Session: paused, Text: "session paused: " + paused.Reason})
	cctx, cancel := context.WithCancel(ctx)
	cancel() // Run drains what is queued, then returns
	if err := n.Run(cctx); err != nil {
		t.Fatal(err)
	}
	items, err := db.Due(ctx, "ntfy", time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, it := range items {
		m, err := bot.DecodeMessage(it.Body)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSpace(bot.PushText(m.Card)))
	}
	want := "session 1a2b3c4d paused: " + paused.Reason
	if len(lines) != 1 || lines[0] != want {
		t.Errorf("pushed %q, want only %q", lines, want)
	}
}
