package bot

import (
	"context"
	"sync"

	"tunebot/session"
)

// CheckoutGate keeps session starts and applies (or rollbacks) to the trainer checkout
// apart: an apply switches the checkout's branch, rewrites files and runs the trainer's
// tests, and a session started meanwhile would train on whatever the checkout held at that
// moment. Every start, from chat or from a schedule, goes through the same gate. The zero
// value is ready to use.
type CheckoutGate struct {
	mu       sync.Mutex
	applying bool
}

// Start runs start (an engine's Start) unless an apply or rollback is running, in which
// case it fails with session.ErrCheckoutBusy. No apply can begin while start runs, so an
// apply that begins after it finds the new session active and refuses.
func (g *CheckoutGate) Start(ctx context.Context, e Engine, st session.Settings, owner session.Actor) (session.Session, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.applying {
		return session.Session{}, session.Userf(session.ErrCheckoutBusy, "a preset is being applied to the trainer checkout (its tests are running); start again when it has finished")
	}
	return e.Start(ctx, st, owner)
}

// BeginApply marks an apply or rollback as running; it returns false when one already is.
// The caller checks that no session is active after it, and calls EndApply when done.
func (g *CheckoutGate) BeginApply() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.applying {
		return false
	}
	g.applying = true
	return true
}

// EndApply marks the apply or rollback begun with BeginApply as finished.
func (g *CheckoutGate) EndApply() {
	g.mu.Lock()
	g.applying = false
	g.mu.Unlock()
}
