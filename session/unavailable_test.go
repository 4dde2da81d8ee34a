package session_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"tunebot/session"
)

// lostOnce is a trainer whose chosen job finds its cluster unavailable once: it starts as a
// Ray job, then the head stops answering. Every other job runs as the fake trainer's do.
type lostOnce struct {
	*fakeTrainer
	mu   sync.Mutex
	lose string // "train 2/0", "eval 3/0", or "final" for the first final re-evaluation
}

// lost reports whether the job named key is the one to lose, once.
func (l *lostOnce) lost(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lose != key {
		return false
	}
	l.lose = ""
	return true
}

func headGone(kind string, hooks session.JobHooks) error {
	if hooks.Started != nil {
		hooks.Started(session.Proc{RayJob: "tunebot-s-t002-r0-" + kind, Job: kind})
	}
	reason := "the Ray head at http://127.0.0.1:8265 has not answered for 30s (connection refused)"
	return &session.JobError{Job: kind, Reason: reason, Err: fmt.Errorf("%w: %s", session.ErrClusterUnavailable, reason)}
}

func (l *lostOnce) Train(ctx context.Context, job session.TrainJob, hooks session.JobHooks) (session.TrainResult, error) {
	if l.lost(fmt.Sprintf("train %d/%d", job.Trial.Number, job.Trial.Rung)) {
		l.fakeTrainer.mu.Lock()
		l.trains[job.Trial]++
		l.fakeTrainer.mu.Unlock()
		return session.TrainResult{}, headGone("train", hooks)
	}
	return l.fakeTrainer.Train(ctx, job, hooks)
}

func (l *lostOnce) Evaluate(ctx context.Context, job session.EvalJob, hooks session.JobHooks) (session.Evaluation, error) {
	key := fmt.Sprintf("eval %d/%d", job.Trial.Number, job.Trial.Rung)
	if filepath.Base(job.Output) == l.EvaluationFile(true) {
		key = "final"
	}
	if l.lost(key) {
		return session.Evaluation{}, headGone("evaluate", hooks)
	}
	return l.fakeTrainer.Evaluate(ctx, job, hooks)
}

// TestClusterUnavailablePausesAndRunsAgain: a training job, an evaluation and a final
// re-evaluation whose Ray head stopped answering each pause the session with the head's
// words, as a full disk does: no trial fails, the job the head may have lost is forgotten,
// and after a resume the trial runs again and the session finishes.
func TestClusterUnavailablePausesAndRunsAgain(t *testing.T) {
	for _, lose := range []string{"train 2/0", "eval 3/0", "final"} {
		t.Run(lose, func(t *testing.T) {
			ctx := context.Background()
			h := newHarness(t, t.TempDir())
			tr := &lostOnce{fakeTrainer: newFakeTrainer(), lose: lose}
			h.eng = diskEngine(h, tr, &fakeDisks{free: 4 << 30, total: 8 << 30}, 1<<20)
			s, err := h.eng.Start(ctx, settings(session.ModeAutomatic), console)
			if err != nil {
				t.Fatal(err)
			}
			s = h.wait(s.ID)
			if tr.lose != "" {
				t.Fatalf("no job %q ran: session %s %q", tr.lose, s.State, s.Reason)
			}
			want := "the cluster is unavailable: the Ray head at http://127.0.0.1:8265 has not answered for 30s (connection refused); resume once it is back (the interrupted trials run again)"
			if s.State != session.StatePaused || s.Reason != want {
				t.Fatalf("session %s, reason %q; want paused: %q", s.State, s.Reason, want)
			}
			for _, x := range h.trials(s.ID) {
				if x.State == session.TrialFailed || x.State == session.TrialTraining || x.State == session.TrialEvaluating {
					t.Fatalf("trial %d @ rung %d is %s (%q) in a session paused for its cluster", x.Number, x.Rung, x.State, x.Reason)
				}
				if x.Proc != nil && x.Proc.Remote() {
					t.Fatalf("trial %d @ rung %d still records Ray job %s, which a restarted head no longer knows", x.Number, x.Rung, x.Proc.RayJob)
				}
			}
			h.resumeToSuccess(h.eng, s.ID)
			if strings.HasPrefix(lose, "train") && tr.trains[session.TrialRef{Number: 2}] != 2 {
				t.Errorf("trial 2 trained %d times, want twice: once lost, once after the resume", tr.trains[session.TrialRef{Number: 2}])
			}
		})
	}
}
