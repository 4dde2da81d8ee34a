// Package bottest holds what the chat tests of several packages share: a trainer and an
// advisor that tests never reach, and a finished trial with a policy.onnx to download.
package bottest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"tunebot/session"
	"tunebot/trainer"
)

// NoTrainer is a trainer the tests never reach: the sessions they build are paused or
// finished, so nothing starts a job.
type NoTrainer struct{ trainer.Layout }

// Train implements session.Trainer.
func (NoTrainer) Train(context.Context, session.TrainJob, session.JobHooks) (session.TrainResult, error) {
	return session.TrainResult{}, errors.New("no trainer in this test")
}

// Evaluate implements session.Trainer.
func (NoTrainer) Evaluate(context.Context, session.EvalJob, session.JobHooks) (session.Evaluation, error) {
	return session.Evaluation{}, errors.New("no trainer in this test")
}

// EndOrphan implements session.Trainer.
func (NoTrainer) EndOrphan(context.Context, session.Proc) error { return nil }

// NoAdvisor is an advisor the tests never reach.
type NoAdvisor struct{}

// Propose implements session.Advisor.
func (NoAdvisor) Propose(context.Context, session.ProposalRequest) (session.Suggestion, error) {
	return session.Suggestion{}, errors.New("no advisor in this test")
}

// Records is what PolicyTrial writes to.
type Records interface {
	session.SessionStore
	session.TrialStore
}

// PolicyTrial stores p's session as succeeded with p's trial completed, writes data as
// that trial's policy.onnx in the engine's layout under sessionsDir, and returns the
// file's path: the state /tune policy reads.
func PolicyTrial(t testing.TB, st Records, sessionsDir string, p session.Preset, data []byte) string {
	t.Helper()
	ctx := context.Background()
	s := session.Session{ID: p.SessionID, State: session.StateSucceeded, Settings: session.DefaultSettings(), Owner: session.Actor{ID: "x"}}
	if err := st.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	runDir := trainer.Layout{}.RunDir(p.Trial)
	tr := session.Trial{SessionID: p.SessionID, Number: p.Trial.Number, Rung: p.Trial.Rung, State: session.TrialCompleted,
		RunDir: runDir, Policy: filepath.Join(runDir, trainer.PolicyFile)}
	if err := st.PutTrial(ctx, tr); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(sessionsDir, p.SessionID, runDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sessionsDir, p.SessionID, tr.Policy)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
