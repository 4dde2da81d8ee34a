package trainer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/session"
	"tunebot/trainer"
)

// TestEvaluationWithManyMetricNames: issue 36's attack, an evaluation.json naming 15,000
// extra metrics in its mean and in its seed's metrics, is cut to the seven of the contract
// and at most session.MaxExtraMetrics others per map, and evaluate.log says what was left
// out; a perSeed longer than the seeds fails the trial by count.
func TestEvaluationWithManyMetricNames(t *testing.T) {
	full := `"velocity_error_linear": 0.2, "velocity_error_angular": 0.3, "action_acceleration": 12, "orientation_error": 0.05, "fall_rate": 0.01, "foot_slip": 0.08, "mechanical_power": 150`
	var extra strings.Builder
	for i := range 15000 {
		fmt.Fprintf(&extra, `, "m%05d": 1`, i)
	}
	staged := filepath.Join(t.TempDir(), "evaluation.json")
	body := `{"seeds": [0], "metrics": {` + full + extra.String() + `}, "perSeed": [{"seed": 0, "metrics": {` + full + extra.String() + `}}]}`
	if err := os.WriteFile(staged, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := newRunner(t, trainer.Templates{Train: []string{"true"}, Evaluate: []string{"cp", staged, "{eval_output}"}})
	ev, err := r.Evaluate(context.Background(), evalJob(dir, "/ckpt/model_1.pt", 0), session.JobHooks{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Metrics) != session.NumMetrics+session.MaxExtraMetrics || len(ev.PerSeed) != 1 || len(ev.PerSeed[0].Metrics) != session.NumMetrics+session.MaxExtraMetrics {
		t.Errorf("kept %d names in the mean, %d seeds, want %d names", len(ev.Metrics), len(ev.PerSeed), session.NumMetrics+session.MaxExtraMetrics)
	}
	log := readFile(t, filepath.Join(dir, trainer.EvaluateLog))
	if !strings.Contains(log, "evaluation.json names more metrics than the seven of the evaluation contract: kept at most 8 other names (of at most 64 bytes) per metrics map, left out 29984 names in 2 maps") {
		t.Errorf("evaluate.log does not say what was left out:\n%s", log)
	}

	body = `{"seeds": [0], "metrics": {` + full + `}, "perSeed": [` + strings.Repeat(`{"seed": 0, "metrics": {`+full+`}}, `, 5000) + `{"seed": 0, "metrics": {` + full + `}}]}`
	if err := os.WriteFile(staged, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = r.Evaluate(context.Background(), evalJob(t.TempDir(), "/ckpt/model_1.pt", 0), session.JobHooks{})
	if je := jobError(t, err); je.Reason != "invalid evaluation.json: perSeed has 5001 entries, more than the 1 seeds" {
		t.Errorf("reason %q", je.Reason)
	}
}

// TestJobLogFollowsNoLink: a train.log a trainer (or another user) planted as a link to a
// file of the daemon's user is refused with a message naming it, and nothing is written
// through it.
func TestJobLogFollowsNoLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, trainer.TrainLog)); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, shellTemplates(`touch "$0/model_9.pt" "$0/policy.onnx"`))
	_, err := r.Train(context.Background(), trainJob(dir, 10), session.JobHooks{})
	if err == nil || !strings.Contains(err.Error(), "train.log is a symbolic link: tunebot appends to no file through a link") {
		t.Errorf("train over a linked train.log: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "mine\n" {
		t.Errorf("written through the link: %q", b)
	}
}

// TestRunDirInputsFollowNoLink: a reward_config.json or reward_space.json an earlier job
// planted in the run dir as a link to a file of the daemon's user is replaced, never
// written through, when the runner writes the next job's inputs.
func TestRunDirInputsFollowNoLink(t *testing.T) {
	for _, name := range []string{trainer.RewardConfigFile, trainer.RewardSpaceFile} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, []byte("mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			r := newRunner(t, shellTemplates("exit 1", "{reward_space}"))
			if _, err := r.Train(context.Background(), trainJob(dir, 10), session.JobHooks{}); err == nil {
				t.Fatal("the job exits 1, yet Train succeeded")
			}
			if b, _ := os.ReadFile(victim); string(b) != "mine\n" {
				t.Errorf("written through the link: %.40q", b)
			}
			if info, err := os.Lstat(filepath.Join(dir, name)); err != nil || !info.Mode().IsRegular() {
				t.Errorf("%s is not the runner's own file: %v", name, err)
			}
		})
	}
}
