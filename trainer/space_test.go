package trainer_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tunebot/session"
	"tunebot/trainer"
)

// TestJobsAreToldTheTasksSpace: {reward_space} is the run dir's reward_space.json, the
// session task's space as the runner wrote it before the job (train and evaluate), so the
// sim trains a printed space without a template edit; without a space the job does not
// start, naming the task.
func TestJobsAreToldTheTasksSpace(t *testing.T) {
	dir := t.TempDir()
	sp := session.DefaultSpace()
	sp.Terms = sp.Terms[:3]
	sp.Params = nil
	sp.Orders = nil
	copyTo := func(name string) []string {
		return []string{"sh", "-c", `cp "$1" "$0/` + name + `"; exit 1`, "{run_dir}", "{reward_space}"}
	}
	r := newRunner(t, trainer.Templates{Train: copyTo("train-saw"), Evaluate: copyTo("eval-saw")})
	job := trainJob(dir, 10)
	job.Space = sp
	if _, err := r.Train(context.Background(), job, session.JobHooks{}); err == nil {
		t.Fatal("the job exits 1, yet Train succeeded")
	}
	ev := evalJob(dir, "/ckpt/model_9.pt", 0)
	ev.Space = sp
	if _, err := r.Evaluate(context.Background(), ev, session.JobHooks{}); err == nil {
		t.Fatal("the job exits 1, yet Evaluate succeeded")
	}
	for _, name := range []string{"train-saw", "eval-saw", trainer.RewardSpaceFile} {
		var got session.Space
		if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, name))), &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(got.Names(), sp.Names()) {
			t.Errorf("%s holds %v, want the job's space %v", name, got.Names(), sp.Names())
		}
	}

	job.Space = nil
	job.Settings.Task = "Some-Task"
	_, err := r.Train(context.Background(), job, session.JobHooks{})
	if err == nil || !strings.Contains(err.Error(), "the trainer templates pass {reward_space}, but task Some-Task has no reward space") {
		t.Errorf("a job with no space: %v", err)
	}
}
