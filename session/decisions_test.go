package session_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"tunebot/session"
	"tunebot/store"
)

// A decision or a resume that lands while the session's worker has read its last snapshot
// and is about to leave must still be acted on: the worker runs again instead of leaving the
// session waiting forever with an approved proposal, or "running" with nobody running it.
func TestWakeWhileTheWorkerLeavesIsNotLost(t *testing.T) {
	cases := []struct {
		name string
		mode string
		// setUp runs after Start; wake runs once, inside the exit window, when ready says so.
		setUp func(h *harness, id string)
		ready func(s session.Session) bool
		wake  func(h *harness, id string) error
		check func(t *testing.T, h *harness, s session.Session)
	}{
		{
			name:  "approve",
			mode:  session.ModeApproval,
			setUp: func(h *harness, id string) {},
			ready: func(s session.Session) bool { return s.State == session.StateAwaitingApproval },
			wake: func(h *harness, id string) error {
				_, err := h.eng.Decide(context.Background(), session.DecideRequest{SessionID: id, Action: session.ActionApprove, By: console})
				return err
			},
			check: func(t *testing.T, h *harness, s session.Session) {
				ps, err := h.db.Proposals(context.Background(), s.ID)
				if err != nil {
					t.Fatal(err)
				}
				if s.State != session.StateAwaitingApproval || len(ps) != 2 || ps[0].State != session.ProposalUsed || ps[1].State != session.ProposalPending {
					t.Fatalf("session %s with proposals %v: the approval made in the exit window was never run", s.State, proposalStates(ps))
				}
			},
		},
		{
			name: "resume",
			mode: session.ModeAutomatic,
			setUp: func(h *harness, id string) {
				h.expect("train 0/0")
				if _, err := h.eng.Pause(context.Background(), id, console); err != nil {
					h.t.Fatal(err)
				}
				close(h.tr.trainGate[session.TrialRef{Number: 0, Rung: 0}])
			},
			ready: func(s session.Session) bool { return s.State == session.StatePaused },
			wake: func(h *harness, id string) error {
				_, err := h.eng.Resume(context.Background(), id, console)
				return err
			},
			check: func(t *testing.T, h *harness, s session.Session) {
				if s.State != session.StateSucceeded {
					t.Fatalf("session %s after a resume in the exit window, want succeeded", s.State)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, t.TempDir())
			h.tr.trainGate[session.TrialRef{Number: 0, Rung: 0}] = make(chan struct{})
			if tc.mode == session.ModeApproval {
				close(h.tr.trainGate[session.TrialRef{Number: 0, Rung: 0}])
			}
			var once sync.Once
			woke := make(chan error, 1)
			session.SetBeforeWorkerExit(h.eng, func(id string) {
				s, err := h.db.Session(context.Background(), id)
				if err != nil || !tc.ready(s) {
					return
				}
				once.Do(func() { woke <- tc.wake(h, id) })
			})
			s, err := h.eng.Start(context.Background(), settings(tc.mode), console)
			if err != nil {
				t.Fatal(err)
			}
			tc.setUp(h, s.ID)
			s = h.wait(s.ID)
			select {
			case err := <-woke:
				if err != nil {
					t.Fatalf("%s in the exit window: %v", tc.name, err)
				}
			default:
				t.Fatalf("the worker never left with the session ready for a %s (state %s)", tc.name, s.State)
			}
			tc.check(t, h, s)
		})
	}
}

func proposalStates(ps []session.Proposal) []session.ProposalState {
	out := make([]session.ProposalState, len(ps))
	for i, p := range ps {
		out[i] = p.State
	}
	return out
}

// decisionSignals is a notifier that hands each ready proposal to the test and tells the
// worker hook when a proposal has been decided, or will not be (its session is ending).
type decisionSignals struct {
	ready chan session.Proposal
	mu    sync.Mutex
	done  map[string]chan struct{} // proposal or session id → closed when decided / ending
}

func (d *decisionSignals) signal(id string) chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	ch, ok := d.done[id]
	if !ok {
		ch = make(chan struct{})
		d.done[id] = ch
	}
	return ch
}

func (d *decisionSignals) Notify(ctx context.Context, e session.Event) {
	switch e.Kind {
	case session.EventProposalReady:
		d.ready <- *e.Proposal
	case session.EventDecision:
		close(d.signal(e.Proposal.ID))
	}
}

// next returns the session's next ready proposal. It fails the test when the session's
// worker has left while the newest proposal is already decided: nobody will ever run it.
func (d *decisionSignals) next(t *testing.T, eng *session.Engine, db session.Store, id string) session.Proposal {
	t.Helper()
	for {
		changed := eng.Changed()
		select {
		case p := <-d.ready:
			return p
		default:
		}
		if !eng.Running(id) {
			s, err := db.Session(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			ps, err := db.Proposals(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if last := ps[len(ps)-1]; s.State != session.StateAwaitingApproval || last.State != session.ProposalPending {
				t.Fatalf("nobody runs session %s (%s): its newest proposal %d is %s; the decision was lost", session.Short(id), s.State, last.Seq, last.State)
			}
			// Announced but not yet delivered: it comes.
		}
		select {
		case p := <-d.ready:
			return p
		case <-changed:
		}
	}
}

// Decisions racing the worker's exit, 1,000 times: each one is taken as soon as its
// proposal is announced, while the worker that announced it may still be leaving. In turn,
// the worker's exit is not held, or is held until the decision is recorded (so Decide's
// wake-up races the unregistering), or until then and a yield. After every decision the
// session must reach its next proposal: none may be left decided with nobody to run it.
func TestDecisionsRacingWorkerExitsAreNeverLost(t *testing.T) {
	const decisions, perSession = 1000, 50
	h := newHarness(t, t.TempDir())
	// Its own store, without an fsync per commit: the race is in memory, not on the disk.
	db, err := store.Open(filepath.Join(h.dir, "race.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h.db = db
	// 50 proposals a session, none equal to one tried or rejected before: small steps of one
	// weight, as rejected configurations may not come back.
	h.adv.fn = func(req session.ProposalRequest) (session.Suggestion, error) {
		for f := 1.01; f < 2; f += 0.01 {
			p := session.Patch{Weights: map[string]float64{"track_linear_velocity": req.Base.Weights["track_linear_velocity"] * f}}
			if !triedAlready(req, p) {
				return session.Suggestion{Patch: p, Rationale: "raise tracking", Confidence: 0.6, Model: "fake-model"}, nil
			}
		}
		return session.Suggestion{}, &session.UserError{Msg: "out of patches"}
	}
	sig := &decisionSignals{ready: make(chan session.Proposal, 4), done: map[string]chan struct{}{}}
	eng, err := session.NewEngine(session.EngineConfig{Store: configStore{db}, Trainer: h.tr, Advisor: h.adv,
		Notifier: sig, Space: session.DefaultSpace(), SessionsDir: h.dir + "/sessions"})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	t.Cleanup(func() { close(stop) }) // runs first: no hook waits through the shutdown
	var exits sync.Mutex
	exit, held := 0, 0
	session.SetBeforeWorkerExit(eng, func(id string) {
		exits.Lock()
		exit++
		mode := exit % 3
		exits.Unlock()
		ps, err := h.db.Proposals(context.Background(), id)
		if mode == 0 || err != nil || len(ps) == 0 || ps[len(ps)-1].State != session.ProposalPending {
			return
		}
		select {
		case <-sig.signal(ps[len(ps)-1].ID):
			exits.Lock()
			held++
			exits.Unlock()
		case <-sig.signal(id):
		case <-stop:
		}
		if mode == 2 {
			runtime.Gosched()
		}
	})
	ctx := context.Background()
	st := settings(session.ModeApproval)
	st.TrialCount, st.Patience = 20, 20
	for round := 0; round < decisions; {
		s, err := eng.Start(ctx, st, console)
		if err != nil {
			t.Fatal(err)
		}
		// Rejections keep a session proposing; its last decision is an approval, which
		// runs a trial before the next proposal.
		for i := range perSession {
			p := sig.next(t, eng, h.db, s.ID)
			action, feedback := session.ActionReject, fmt.Sprint("round ", round)
			if i == perSession-1 {
				action, feedback = session.ActionApprove, ""
			}
			if _, err := eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, ProposalID: p.ID, Action: action, Feedback: feedback, By: console}); err != nil {
				t.Fatalf("decision %d: %v", round, err)
			}
			round++
		}
		sig.next(t, eng, h.db, s.ID)
		if n := len(h.trials(s.ID)); n != 2 {
			t.Fatalf("session %s has %d trials, want the baseline and the approved one", session.Short(s.ID), n)
		}
		close(sig.signal(s.ID))
		if _, err := eng.Cancel(ctx, s.ID, console); err != nil {
			t.Fatal(err)
		}
	}
	exits.Lock()
	t.Logf("%d decisions; %d worker exits, %d of them held until their decision was recorded", decisions, exit, held)
	exits.Unlock()
}

// decisionTexts keeps the text of every decision event.
type decisionTexts struct {
	mu    sync.Mutex
	texts []string
}

func (d *decisionTexts) Notify(ctx context.Context, e session.Event) {
	if e.Kind == session.EventDecision {
		d.mu.Lock()
		d.texts = append(d.texts, e.Text)
		d.mu.Unlock()
	}
}

// An approval given while the session is paused is kept, the answer says how to run it, and
// resume runs it.
func TestApprovalWhilePausedRunsOnResume(t *testing.T) {
	h := newHarness(t, t.TempDir())
	texts := &decisionTexts{}
	eng, err := session.NewEngine(session.EngineConfig{Store: configStore{h.db}, Trainer: h.tr, Advisor: h.adv,
		Notifier: texts, Space: session.DefaultSpace(), SessionsDir: h.dir + "/sessions"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := eng.Start(ctx, settings(session.ModeApproval), console)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = eng.Wait(ctx, s.ID); err != nil || s.State != session.StateAwaitingApproval {
		t.Fatalf("session %s, %v; want awaiting_approval", s.State, err)
	}
	if _, err := eng.Pause(ctx, s.ID, console); err != nil {
		t.Fatal(err)
	}
	p, err := eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionApprove, By: console})
	if err != nil || p.State != session.ProposalApproved {
		t.Fatalf("approval while paused: %s, %v", p.State, err)
	}
	if s, err = eng.Wait(ctx, s.ID); err != nil || s.State != session.StatePaused || len(h.trials(s.ID)) != 1 {
		t.Fatalf("after the approval: session %s with %d trials (%v); want paused, nothing run", s.State, len(h.trials(s.ID)), err)
	}
	if _, err := eng.Resume(ctx, s.ID, console); err != nil {
		t.Fatal(err)
	}
	if s, err = eng.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	ps, err := h.db.Proposals(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	trials := h.trials(s.ID)
	if s.State != session.StateAwaitingApproval || ps[0].State != session.ProposalUsed || len(trials) != 2 ||
		trials[1].ProposalID != p.ID || trials[1].State != session.TrialCompleted {
		t.Fatalf("after resume: session %s, proposals %v, %d trials; want the approved proposal run as trial 1", s.State, proposalStates(ps), len(trials))
	}
	eng.Shutdown(ctx) // delivers the queued events
	want := "proposal 1 approved by " + console.String() + "; the session is paused: `resume` to run it"
	if len(texts.texts) != 1 || texts.texts[0] != want {
		t.Fatalf("decision announcements %q, want [%q]", texts.texts, want)
	}
}

// A session's worker is settled only once it has taken in every decision: one that lands
// as the worker leaves is recorded at once, but the state as stored still says
// awaiting_approval until the worker has started the trial, and whoever acts on a session
// that waits for people (tune once its input has ended) must not take that state for the
// truth. Once the trial ran and the next proposal waits, the worker has left: settled.
func TestSettledOnlyOnceTheWorkerTookTheDecisionIn(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	gate := make(chan struct{})
	h.tr.trainGate[session.TrialRef{Number: 1, Rung: 0}] = gate
	type look struct {
		state   session.State
		settled bool
		err     error
	}
	var once sync.Once
	inWindow := make(chan look, 1)
	session.SetBeforeWorkerExit(h.eng, func(id string) {
		if s, err := h.db.Session(ctx, id); err != nil || s.State != session.StateAwaitingApproval {
			return
		}
		once.Do(func() {
			_, err := h.eng.Decide(ctx, session.DecideRequest{SessionID: id, Action: session.ActionApprove, By: console})
			s, _ := h.db.Session(ctx, id)
			inWindow <- look{s.State, h.eng.Settled(id), err}
		})
	})
	s, err := h.eng.Start(ctx, settings(session.ModeApproval), console)
	if err != nil {
		t.Fatal(err)
	}
	h.expect("train 0/0")
	h.expect("eval 0/0")
	h.expect("train 1/0") // the approval made in the exit window runs
	if l := <-inWindow; l.err != nil || l.state != session.StateAwaitingApproval || l.settled {
		t.Fatalf("right after the decision: %v, stored state %s, settled %v; want awaiting_approval as stored and not settled", l.err, l.state, l.settled)
	}
	if h.eng.Settled(s.ID) {
		t.Fatal("settled while trial 1 trains")
	}
	close(gate)
	s = h.wait(s.ID)
	ps, err := h.db.Proposals(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !h.eng.Settled(s.ID) || s.State != session.StateAwaitingApproval || len(ps) != 2 || ps[1].State != session.ProposalPending {
		t.Fatalf("after trial 1: settled %v, %s, proposals %v; want settled, waiting for proposal 2", h.eng.Settled(s.ID), s.State, proposalStates(ps))
	}
}
