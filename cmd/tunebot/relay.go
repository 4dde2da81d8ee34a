package main

import (
	"context"
	"log/slog"
	"sync/atomic"

	"tunebot/session"
)

// relay is the engine's notifier. It exists before the engine, and what needs the engine
// to be built (the console, the chat notifier with its charts) is built after it and
// handed to Run: everything is constructed in one order, with no setter (docs/design.md
// §6). Events wait in a bounded queue until Run forwards them; every receiver's Notify
// only enqueues, so forwarding never waits on a render.
type relay struct {
	events  chan session.Event
	dropped atomic.Int64
	log     *slog.Logger
}

var _ session.Notifier = (*relay)(nil)

func newRelay(logger *slog.Logger) *relay {
	return &relay{events: make(chan session.Event, 1024), log: logger}
}

// Notify queues e; it never blocks the engine.
func (r *relay) Notify(_ context.Context, e session.Event) {
	select {
	case r.events <- e:
	default:
		r.dropped.Add(1)
		if e.Kind != session.EventTrialProgress {
			r.log.Warn("event queue full; event dropped", "kind", e.Kind, "session", e.Session.ID)
		}
	}
}

// Run hands every event to each of to, in order, until ctx ends, then hands over what is
// still queued: stop the engine first, and no event is lost.
func (r *relay) Run(ctx context.Context, to ...session.Notifier) {
	send := func(e session.Event) {
		for _, n := range to {
			n.Notify(context.WithoutCancel(ctx), e)
		}
	}
	for {
		select {
		case e := <-r.events:
			send(e)
		case <-ctx.Done():
			for {
				select {
				case e := <-r.events:
					send(e)
				default:
					return
				}
			}
		}
	}
}
