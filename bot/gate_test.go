package bot_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/session"
)

// countingEngine counts starts; a start blocks until release is closed when it is set.
type countingEngine struct {
	bot.Engine
	mu      sync.Mutex
	starts  int
	entered chan struct{}
	release chan struct{}
}

func (e *countingEngine) Start(context.Context, session.Settings, session.Actor) (session.Session, error) {
	e.mu.Lock()
	e.starts++
	e.mu.Unlock()
	if e.release != nil {
		close(e.entered)
		<-e.release
	}
	return session.Session{ID: "s1"}, nil
}

func (e *countingEngine) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.starts
}

// TestCheckoutGate: no session starts while an apply holds the trainer checkout, and no
// apply begins while a start is on its way; every start, chat's and the scheduler's, goes
// through the one gate.
func TestCheckoutGate(t *testing.T) {
	ctx := context.Background()
	st := session.DefaultSettings()
	var g bot.CheckoutGate
	eng := &countingEngine{}

	if !g.BeginApply() {
		t.Fatal("BeginApply on an idle gate refused")
	}
	if g.BeginApply() {
		t.Error("a second apply began while one was running")
	}
	_, err := g.Start(ctx, eng, st, alice)
	if !errors.Is(err, session.ErrCheckoutBusy) || !errors.Is(err, session.ErrBusy) {
		t.Fatalf("start during an apply: %v, want ErrCheckoutBusy (an ErrBusy)", err)
	}
	// The chat handler shares the gate and answers privately, naming the reason.
	h := bot.NewHandler(bot.HandlerConfig{Engine: eng, Store: openStore(t), Space: session.DefaultSpace(), Gate: &g,
		Allow: bot.AllowList{{Platform: "test", Users: []string{alice.ID}}}})
	if r, _ := h.Handle(ctx, bot.Interaction{Platform: "test", User: alice, Kind: bot.KindCommand, Text: "start"}, nil); !r.Private || !strings.Contains(r.Text, "being applied") {
		t.Errorf("chat start during an apply answered %+v", r)
	}
	if n := eng.count(); n != 0 {
		t.Fatalf("the engine started %d sessions during an apply", n)
	}
	g.EndApply()
	if _, err := g.Start(ctx, eng, st, alice); err != nil || eng.count() != 1 {
		t.Fatalf("start after the apply: %v (%d starts)", err, eng.count())
	}

	// An apply that asks while a start is under way waits for it, and then finds the
	// session (here: the start having returned) rather than racing it.
	eng.entered, eng.release = make(chan struct{}), make(chan struct{})
	started := make(chan error, 1)
	go func() { _, err := g.Start(ctx, eng, st, bob); started <- err }()
	<-eng.entered
	began := make(chan bool, 1)
	go func() { began <- g.BeginApply() }()
	select {
	case <-began:
		t.Fatal("an apply began while a start was under way")
	case <-time.After(50 * time.Millisecond):
	}
	close(eng.release)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if !<-began {
		t.Error("the apply did not begin after the start finished")
	}
}
