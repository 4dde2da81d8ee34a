package session_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"tunebot/session"
)

// copyTree snapshots what a killed tunebot leaves on disk: the store file and the run dirs,
// taken while the worker is blocked inside a job, so no write is in flight.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCrashAtEachStateThenResume(t *testing.T) {
	cases := []struct {
		name      string
		mode      string
		block     func(h *harness)
		waitFor   []string
		wantState session.State // state right after recovery
		retrain   bool          // the interrupted trial trains again after resume
	}{
		{name: "training", mode: session.ModeAutomatic,
			block:   func(h *harness) { h.tr.trainGate[session.TrialRef{2, 0}] = make(chan struct{}) },
			waitFor: []string{"train 0/0", "eval 0/0", "train 1/0", "eval 1/0", "train 2/0"}, wantState: session.StateInterrupted, retrain: true},
		{name: "evaluating", mode: session.ModeAutomatic,
			block:   func(h *harness) { h.tr.evalGate[session.TrialRef{2, 0}] = make(chan struct{}) },
			waitFor: []string{"train 0/0", "eval 0/0", "train 1/0", "eval 1/0", "train 2/0", "eval 2/0"}, wantState: session.StateInterrupted},
		{name: "promoted training", mode: session.ModeAutomatic,
			block:   func(h *harness) { h.tr.trainGate[session.TrialRef{5, 1}] = make(chan struct{}) },
			waitFor: nil, wantState: session.StateInterrupted, retrain: true},
		{name: "awaiting approval", mode: session.ModeApproval, wantState: session.StateAwaitingApproval},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newHarness(t, t.TempDir())
			ctx := context.Background()
			if tc.block != nil {
				tc.block(a)
			}
			s, err := a.eng.Start(ctx, settings(tc.mode), console)
			if err != nil {
				t.Fatal(err)
			}
			var blocked session.TrialRef
			switch {
			case tc.name == "promoted training":
				for got := ""; got != "train 5/1"; {
					got = <-a.tr.entered
				}
				blocked = session.TrialRef{5, 1}
			case tc.waitFor != nil:
				for _, j := range tc.waitFor {
					a.expect(j)
				}
				blocked = session.TrialRef{2, 0}
			default:
				a.wait(s.ID)
			}
			// "kill -9": copy the disk as it is now; the old process simply vanishes.
			bdir := t.TempDir()
			copyTree(t, a.dir, bdir)
			completedBefore := map[session.TrialRef]bool{}
			for _, tr := range a.trials(s.ID) {
				if tr.State == session.TrialCompleted {
					completedBefore[tr.Ref()] = true
				}
			}

			b := newHarness(t, bdir)
			if err := b.eng.Recover(ctx); err != nil {
				t.Fatal(err)
			}
			got, _ := b.db.Session(ctx, s.ID)
			if got.State != tc.wantState {
				t.Fatalf("after recovery: %s, want %s", got.State, tc.wantState)
			}
			if tc.waitFor != nil || tc.name == "promoted training" {
				if len(b.tr.orphans) != 1 || b.tr.orphans[0].PID != 4242 {
					t.Fatalf("orphans ended: %+v", b.tr.orphans)
				}
			}
			if tc.mode == session.ModeApproval {
				if _, err := b.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionApprove, By: console}); err != nil {
					t.Fatalf("approving after restart: %v", err)
				}
				for {
					got = b.wait(s.ID)
					if got.State != session.StateAwaitingApproval {
						break
					}
					if _, err := b.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionApprove, By: console}); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				if _, err := b.eng.Resume(ctx, s.ID, console); err != nil {
					t.Fatal(err)
				}
				got = b.wait(s.ID)
			}
			if got.State != session.StateSucceeded {
				t.Fatalf("after resume: %s (%s)", got.State, got.Reason)
			}
			for ref := range completedBefore {
				if b.tr.trains[ref] != 0 || b.tr.evals[ref] != 0 {
					t.Errorf("completed %s ran again after the crash", ref)
				}
			}
			if tc.waitFor != nil || tc.name == "promoted training" {
				wantTrain := 0
				if tc.retrain {
					wantTrain = 1
				}
				if b.tr.trains[blocked] != wantTrain || b.tr.evals[blocked] != 1 {
					t.Errorf("interrupted %s: trained %d times (want %d), evaluated %d", blocked, b.tr.trains[blocked], wantTrain, b.tr.evals[blocked])
				}
			}
			count := map[int]int{}
			for _, tr := range b.trials(s.ID) {
				count[tr.Rung]++
				if tr.State != session.TrialCompleted {
					t.Errorf("%s is %s", tr.Ref(), tr.State)
				}
			}
			if count[0] != 6 || count[1] != 4 || count[2] != 2 {
				t.Errorf("trials per rung %v", count)
			}
		})
	}
}

// A paused session runs nothing after a restart: a trial an earlier tunebot left marked as
// evaluating (it paused between the trial's training and evaluation) is unfinished, not
// running, once the engine recovers; resumed, it is evaluated and not trained again.
func TestRecoverPausedSessionHasNothingRunning(t *testing.T) {
	a := newHarness(t, t.TempDir())
	ctx := context.Background()
	s := pauseDuringBaselineTraining(a)
	base := a.trials(s.ID)[0]
	if base.State != session.TrialInterrupted || !base.Trained {
		t.Fatalf("the baseline paused before its evaluation is %s (trained %v), want interrupted and trained", base.State, base.Trained)
	}
	base.State, base.Reason = session.TrialEvaluating, "" // as an older tunebot left it
	if err := a.db.PutTrial(ctx, base); err != nil {
		t.Fatal(err)
	}
	a.eng.Shutdown(ctx)
	bdir := t.TempDir()
	copyTree(t, a.dir, bdir)

	b := newHarness(t, bdir)
	if err := b.eng.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.trials(s.ID)[0]; got.State != session.TrialInterrupted {
		t.Fatalf("after recovery the baseline is %s, want interrupted: nothing runs", got.State)
	}
	if _, err := b.eng.Resume(ctx, s.ID, console); err != nil {
		t.Fatal(err)
	}
	if got := b.wait(s.ID); got.State != session.StateSucceeded {
		t.Fatalf("after resume: %s (%s)", got.State, got.Reason)
	}
	if b.tr.trains[session.TrialRef{0, 0}] != 0 || b.tr.evals[session.TrialRef{0, 0}] != 1 {
		t.Errorf("the baseline trained %d times and was evaluated %d times after the resume, want 0 and 1", b.tr.trains[session.TrialRef{0, 0}], b.tr.evals[session.TrialRef{0, 0}])
	}
}
