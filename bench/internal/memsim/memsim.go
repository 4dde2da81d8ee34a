// Package memsim is the sim trainer in-process, for the benchmarks that run hundreds of
// whole sessions: the same surface and the same evaluation (sim.Surface.Evaluation, which
// sim-eval writes to evaluation.json), without the subprocesses and event files, so that
// they run in minutes. A checkpoint is a small JSON file, as the engine resumes promoted
// trials from it.
package memsim

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"tunebot/session"
	"tunebot/trainer"
	"tunebot/trainer/sim"
)

// Trainer trains and evaluates on Surf. Evaluation seeds are offset by Rep*1000: each
// repetition of a session is another realisation of the noise, as another training run
// would be.
type Trainer struct {
	trainer.Layout
	Surf *sim.Surface
	Rep  int
	// NoiseFree evaluates the noise-free surface (a diagnostic: how much of a gap is the
	// noise's, never part of a reported table).
	NoiseFree bool
	// Flat evaluates every configuration as the defaults, with its own noise (flatten): a
	// problem on which nothing beats the defaults.
	Flat bool
}

var _ session.Trainer = Trainer{}

type checkpoint struct {
	Config    session.RewardConfig `json:"config"`
	Iteration int                  `json:"iteration"`
}

// Train writes the checkpoint of job's configuration at its target iteration.
func (m Trainer) Train(_ context.Context, job session.TrainJob, _ session.JobHooks) (session.TrainResult, error) {
	if err := os.MkdirAll(job.RunDir, 0o755); err != nil {
		return session.TrainResult{}, err
	}
	path := filepath.Join(job.RunDir, fmt.Sprintf("model_%d.pt", job.Target))
	data, err := json.Marshal(checkpoint{Config: job.Config, Iteration: job.Target})
	if err != nil {
		return session.TrainResult{}, err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return session.TrainResult{}, err
	}
	return session.TrainResult{Checkpoint: path, Iteration: job.Target, Policy: path}, nil
}

// Evaluate evaluates the checkpoint's configuration on the surface, on job's seeds.
func (m Trainer) Evaluate(_ context.Context, job session.EvalJob, _ session.JobHooks) (session.Evaluation, error) {
	data, err := os.ReadFile(job.Checkpoint)
	if err != nil {
		return session.Evaluation{}, err
	}
	var ck checkpoint
	if err := json.Unmarshal(data, &ck); err != nil {
		return session.Evaluation{}, err
	}
	seeds := make([]int, len(job.Seeds))
	for i, s := range job.Seeds {
		seeds[i] = s + 1000*m.Rep
	}
	ev := m.Surf.Evaluation(ck.Config, ck.Iteration, seeds)
	if m.Flat {
		m.flatten(&ev, ck.Config, ck.Iteration)
	}
	if m.NoiseFree {
		ev.Metrics = m.Surf.Expected(ck.Config, ck.Iteration)
		for i := range ev.PerSeed {
			ev.PerSeed[i].Metrics = ev.Metrics
		}
	}
	ev.Task, ev.Checkpoint = job.Settings.Task, filepath.Base(job.Checkpoint)
	return ev, nil
}

// EndOrphan has nothing to end: no process outlives a job.
func (Trainer) EndOrphan(context.Context, session.Proc) error { return nil }
