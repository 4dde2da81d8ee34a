package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tunebot/bot/console"
	"tunebot/config"
	"tunebot/session"
	"tunebot/store"
)

// simConfig is the default config with its data dir under the test's and the sim trainer
// run by the test's tunebot binary.
func simConfig(t *testing.T) config.Config {
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	for _, argv := range [][]string{cfg.Trainer.Train, cfg.Trainer.Evaluate} {
		for i, a := range argv {
			argv[i] = strings.ReplaceAll(a, "{tunebot}", tunebotBin)
		}
	}
	return cfg
}

// followRead marks the context of follow's reads (and the test's), so that heldStore tells
// them from the engine worker's.
type followRead struct{}

// heldStore lets a test stop a read of a session where it chooses: around, when set, makes
// every read, told whether follow or the engine's worker asked.
type heldStore struct {
	session.Store
	mu     sync.Mutex
	around func(byFollow bool, read func() (session.Session, error)) (session.Session, error)
}

func (h *heldStore) Session(ctx context.Context, id string) (session.Session, error) {
	h.mu.Lock()
	around := h.around
	h.mu.Unlock()
	read := func() (session.Session, error) { return h.Store.Session(ctx, id) }
	if around == nil {
		return read()
	}
	return around(ctx.Value(followRead{}) != nil, read)
}

func (h *heldStore) hold(around func(byFollow bool, read func() (session.Session, error)) (session.Session, error)) {
	h.mu.Lock()
	h.around = around
	h.mu.Unlock()
}

// followed is an approval-mode session of tune's engine (sim trainer, numeric sampler) over
// a held store, waiting for a decision on proposal 1 with its worker gone.
type followed struct {
	eng  *session.Engine
	held *heldStore
	id   string
	env  *env
	ctx  context.Context // follow's
}

func newFollowed(t *testing.T) *followed {
	cfg := simConfig(t)
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	logger := slog.New(slog.DiscardHandler)
	f := &followed{held: &heldStore{Store: actionLog{DB: db, log: logger}},
		env: &env{getenv: func(string) string { return "" }, stdout: &syncBuffer{}, stderr: &syncBuffer{}},
		ctx: context.WithValue(context.Background(), followRead{}, true)}
	if f.eng, err = newEngine(cfg, f.env, db, f.held, logger, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.eng.Shutdown(context.Background()) })
	st := cfg.Session
	st.Mode, st.Fallback, st.TrialCount, st.Rungs = session.ModeApproval, true, 4, []int{20, 40, 60}
	s, err := f.eng.Start(f.ctx, st, console.User)
	if err != nil {
		t.Fatal(err)
	}
	if s = f.gone(t, s.ID); s.State != session.StateAwaitingApproval {
		t.Fatalf("session %s (%s), want waiting for proposal 1", s.State, s.Reason)
	}
	f.id = s.ID
	return f
}

// gone waits until session id has no worker and returns it as stored.
func (f *followed) gone(t *testing.T, id string) session.Session {
	bound := time.After(time.Minute) // against a hang
	for {
		ch := f.eng.Changed()
		if !f.eng.Running(id) {
			break
		}
		select {
		case <-ch:
		case <-bound:
			t.Fatal("the session's worker never left")
		}
	}
	s, err := f.held.Store.Session(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *followed) approve(t *testing.T) {
	if _, err := f.eng.Decide(f.ctx, session.DecideRequest{SessionID: f.id, Action: session.ActionApprove, By: console.User}); err != nil {
		t.Fatal(err)
	}
}

// toTheEnd runs follow with input ended and checks what tune leaves: the approved proposal
// run, the session paused at proposal 2, exit status 3.
func (f *followed) toTheEnd(t *testing.T) {
	ended := make(chan struct{})
	close(ended)
	s, code := follow(f.ctx, f.env, f.eng, f.id, ended)
	ps, err := f.held.Proposals(f.ctx, f.id)
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 || s.State != session.StatePaused || len(ps) != 2 || ps[0].State != session.ProposalUsed || ps[1].State != session.ProposalPending {
		states := make([]session.ProposalState, len(ps))
		for i, p := range ps {
			states[i] = p.State
		}
		t.Fatalf("follow: exit %d, session %s, proposals %v; want 3, paused, proposal 1 run and 2 waiting\n%s", code, s.State, states, f.env.stderr)
	}
	// Nobody typed pause: the session says why it paused, not "paused by you" (issue 43, item 7.3).
	if want := "paused because input ended (nobody is left to decide)"; s.Message != want {
		t.Errorf("the paused session says %q, want %q", s.Message, want)
	}
}

// A decision typed just before the input ends is recorded at once, but until the session's
// worker has acted on it the session as stored still waits for a decision. follow, which
// sees the end of input then, must not pause it: the approved proposal runs, and the
// session is paused at the next one (TestApprovalModeAtEndOfInput once lost its typed edit
// so, when the worker started by the decision was slower than follow).
func TestFollowLetsADecisionTypedBeforeTheEndRun(t *testing.T) {
	f := newFollowed(t)
	// The worker the decision starts stops before its first read of the session.
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.held.hold(func(byFollow bool, read func() (session.Session, error)) (session.Session, error) {
		if !byFollow {
			once.Do(func() { close(arrived); <-release })
		}
		return read()
	})
	f.approve(t)
	<-arrived
	s, done, err := unattended(f.ctx, f.env, f.eng, f.id)
	if err != nil || done || s.State != session.StateAwaitingApproval {
		t.Errorf("follow with the approval not yet acted on: %v, done %v, session %s; want it left as it is", err, done, s.State)
	}
	f.held.hold(nil)
	close(release)
	f.toTheEnd(t)
}

// The reverse: follow reads the session while the approved trial runs, and before it looks
// whether a worker is left, the trial ends, proposal 2 waits and the worker leaves. The
// running state it read is stale: follow must look again, and pause the session, rather
// than end with the session left waiting and not paused.
func TestFollowDoesNotEndOnAStaleRunningState(t *testing.T) {
	f := newFollowed(t)
	// The worker stops once the trial has trained, the session running.
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.held.hold(func(byFollow bool, read func() (session.Session, error)) (session.Session, error) {
		s, err := read()
		if !byFollow && s.State == session.StateRunning {
			once.Do(func() { close(arrived); <-release })
		}
		return s, err
	})
	f.approve(t)
	<-arrived
	// follow's read returns what it read only after the worker has gone on and left.
	f.held.hold(func(byFollow bool, read func() (session.Session, error)) (session.Session, error) {
		s, err := read()
		if byFollow {
			close(release)
			f.gone(t, f.id)
		}
		return s, err
	})
	s, done, err := unattended(f.ctx, f.env, f.eng, f.id)
	f.held.hold(nil)
	if err != nil || done {
		t.Errorf("follow on a stale %s state: %v, done %v; want it to look again", s.State, err, done)
	}
	f.toTheEnd(t)
}
