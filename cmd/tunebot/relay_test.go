package main

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
)

type recorder struct{ got []string }

func (r *recorder) Notify(_ context.Context, e session.Event) { r.got = append(r.got, e.Text) }

// Events the engine sends before its receivers exist (a recovery's) reach every receiver
// in order once Run starts, and Run hands over what is queued when it is stopped; a full
// queue drops rather than blocks the engine.
func TestRelayHandsEveryEventOverInOrder(t *testing.T) {
	r := newRelay(slog.New(slog.DiscardHandler))
	var want []string
	for i := range cap(r.events) + 3 {
		r.Notify(context.Background(), session.Event{Kind: session.EventSessionUpdated, Text: fmt.Sprint(i)})
		if i < cap(r.events) {
			want = append(want, fmt.Sprint(i))
		}
	}
	if got := r.dropped.Load(); got != 3 {
		t.Errorf("dropped %d events past the queue's bound, want 3", got)
	}
	a, b := &recorder{}, &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stopped before it starts: it still hands everything queued over
	r.Run(ctx, a, b)
	for _, rec := range []*recorder{a, b} {
		if diff := cmp.Diff(want, rec.got); diff != "" {
			t.Errorf("events handed over (-want +got):\n%s", diff)
		}
	}
}
