package bot_test

import (
	"context"
	"testing"

	"tunebot/bot"
	"tunebot/session"
)

// BenchmarkNotify is the engine's side: queueing one event.
func BenchmarkNotify(b *testing.B) {
	n := bot.NewNotifier(bot.NotifierConfig{Buffer: 1})
	e := session.Event{Kind: session.EventTrialProgress, Session: fixtureSession()}
	for b.Loop() {
		n.Notify(context.Background(), e) // the buffer is full after the first: the drop path
	}
}

// BenchmarkProgressToOutbox is the notifier's side of one progress event on one platform:
// reading the trials, rendering the root card and coalescing it into the bbolt outbox.
func BenchmarkProgressToOutbox(b *testing.B) {
	ctx := context.Background()
	db := openStore(b)
	s := fixtureSession()
	if err := db.CreateSession(ctx, s); err != nil {
		b.Fatal(err)
	}
	for _, tr := range fixtureTrials() {
		tr.SessionID = s.ID
		if err := db.PutTrial(ctx, tr); err != nil {
			b.Fatal(err)
		}
	}
	n := bot.NewNotifier(bot.NotifierConfig{Queue: db, Renderer: &bot.Renderer{Records: db, Space: session.DefaultSpace()}, Platforms: []string{"slack"}, Buffer: 1})
	tr := fixtureTrials()[3]
	e := session.Event{Kind: session.EventTrialProgress, Session: s, Trial: &tr}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for b.Loop() {
		n.Notify(ctx, e)
		_ = n.Run(cancelled) // processes the queued event, then returns
	}
}
