package trainer_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
	"tunebot/trainer"
	"tunebot/trainer/sim"
	"tunebot/trainer/tfevents"
)

// TestSimEndToEnd trains the sim through the Runner with the real tunebot binary, resumes
// it, and evaluates it.
func TestSimEndToEnd(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, simTemplates())
	ctx := context.Background()

	var progress []int
	hooks := session.JobHooks{Progress: func(it int) { progress = append(progress, it) }}
	res, err := r.Train(ctx, trainJob(dir, 20), hooks)
	if err != nil {
		t.Fatalf("train: %v", err)
	}
	if res.Iteration != 20 || res.Checkpoint != filepath.Join(dir, "model_20.pt") || res.Policy != filepath.Join(dir, "policy.onnx") {
		t.Errorf("train result %+v", res)
	}
	if len(progress) == 0 || progress[len(progress)-1] != 20 {
		t.Errorf("progress %v does not end at 20", progress)
	}
	for _, tag := range []string{"Train/mean_reward", "Episode_Reward/foot_slip", "Episode_Termination/fell_over", "Perf/total_fps"} {
		if n := len(res.Series[tag]); n != 20 {
			t.Errorf("series %s has %d points, want 20", tag, n)
		}
	}

	ev1, err := r.Evaluate(ctx, evalJob(dir, res.Checkpoint, 0, 1, 2), session.JobHooks{})
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	if ev1.Checkpoint != "model_20.pt" || ev1.Iteration != 20 || len(ev1.PerSeed) != 3 || !slices.Equal(ev1.Seeds, []int{0, 1, 2}) {
		t.Errorf("evaluation %+v", ev1)
	}
	ev2, err := r.Evaluate(ctx, evalJob(dir, res.Checkpoint, 0, 1, 2), session.JobHooks{})
	if err != nil {
		t.Fatalf("second evaluate: %v", err)
	}
	if d := cmp.Diff(ev1, ev2); d != "" {
		t.Errorf("evaluating the same checkpoint twice differs:\n%s", d)
	}
	if _, err := os.Stat(filepath.Join(dir, trainer.EvalEventsDir)); err != nil {
		t.Errorf("no evaluation events: %v", err)
	}

	// Resume to 40 in the same run dir: events are appended in a second file, the newest
	// checkpoint is model_40.pt, and evaluation events stay out of the training series.
	job := trainJob(dir, 40)
	job.Iterations, job.StartIter, job.Checkpoint = 20, 20, res.Checkpoint
	progress = nil
	res40, err := r.Train(ctx, job, hooks)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res40.Iteration != 40 || filepath.Base(res40.Checkpoint) != "model_40.pt" {
		t.Errorf("resumed result %+v", res40)
	}
	if pts := res40.Series["Train/mean_reward"]; len(pts) != 40 || pts[0].Step != 0 || pts[39].Step != 39 {
		t.Errorf("resumed series has %d points from %v", len(pts), pts)
	}
	for tag := range res40.Series {
		if strings.HasPrefix(tag, "Eval/") {
			t.Errorf("training series includes evaluation tag %s", tag)
		}
	}
	files, _ := tfevents.EventFiles(dir)
	if n := len(files); n != 4 { // two training files, two evaluation files
		t.Errorf("%d event files, want 4: %v", n, files)
	}
	ev40, err := r.Evaluate(ctx, evalJob(dir, res40.Checkpoint, 0, 1, 2), session.JobHooks{})
	if err != nil {
		t.Fatalf("evaluate resumed: %v", err)
	}
	if !(ev40.Metrics[session.MetricVelLinear] < ev1.Metrics[session.MetricVelLinear]) {
		t.Errorf("tracking did not improve from 20 to 40 iterations: %v → %v", ev1.Metrics, ev40.Metrics)
	}

	// Another configuration gives other metrics.
	other := t.TempDir()
	job = trainJob(other, 20)
	job.Config.Weights["action_rate_l2"] = -0.1
	resOther, err := r.Train(ctx, job, session.JobHooks{})
	if err != nil {
		t.Fatalf("train other: %v", err)
	}
	evOther, err := r.Evaluate(ctx, evalJob(other, resOther.Checkpoint, 0, 1, 2), session.JobHooks{})
	if err != nil {
		t.Fatalf("evaluate other: %v", err)
	}
	if !(evOther.Metrics[session.MetricActionAcc] < ev1.Metrics[session.MetricActionAcc]) {
		t.Errorf("a doubled action-rate penalty did not lower action acceleration: %v vs %v",
			evOther.Metrics[session.MetricActionAcc], ev1.Metrics[session.MetricActionAcc])
	}
}

// TestSimProgressWhileTraining watches a slowed sim run report progress as it goes.
func TestSimProgressWhileTraining(t *testing.T) {
	r := newRunner(t, simTemplates(sim.StepDelayEnv+"=60ms"))
	var progress []int
	_, err := r.Train(context.Background(), trainJob(t.TempDir(), 40), session.JobHooks{Progress: func(it int) { progress = append(progress, it) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(progress) < 2 || progress[len(progress)-1] != 40 || !slices.IsSorted(progress) {
		t.Errorf("progress %v: want several increasing values ending at 40", progress)
	}
}

// TestSimFailures runs each injected sim failure through the Runner.
func TestSimFailures(t *testing.T) {
	tests := []struct {
		fault string
		eval  bool // the fault is in evaluation
		want  string
		tail  string
	}{
		{fault: "exit", want: "exit status 3", tail: "injected failure"},
		{fault: "nockpt", want: "no model_<N>.pt checkpoint in run dir"},
		{fault: "nopolicy", want: "no policy.onnx in run dir"},
		{fault: "short", want: "newest checkpoint model_10.pt is short of the target of 20 iterations"},
		{fault: "evalexit", eval: true, want: "exit status 3", tail: "injected failure"},
		{fault: "noeval", eval: true, want: "evaluation.json was not written"},
		{fault: "badeval", eval: true, want: "metrics.mechanical_power: missing"},
		{fault: "nan", eval: true, want: "invalid evaluation.json: malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ctx := context.Background()
			faulty := newRunner(t, simTemplates(sim.FailEnv+"="+tt.fault))
			var err error
			if !tt.eval {
				_, err = faulty.Train(ctx, trainJob(dir, 20), session.JobHooks{})
			} else {
				res, terr := newRunner(t, simTemplates()).Train(ctx, trainJob(dir, 20), session.JobHooks{})
				if terr != nil {
					t.Fatal(terr)
				}
				_, err = faulty.Evaluate(ctx, evalJob(dir, res.Checkpoint, 0), session.JobHooks{})
			}
			je := jobError(t, err)
			if !strings.Contains(je.Reason, tt.want) {
				t.Errorf("reason %q does not say %q", je.Reason, tt.want)
			}
			if !strings.Contains(je.LogTail, tt.tail) {
				t.Errorf("log tail %q lacks %q", je.LogTail, tt.tail)
			}
		})
	}
}

// TestSimHangTimesOut: a sim run deaf to SIGINT is killed at its timeout.
func TestSimHangTimesOut(t *testing.T) {
	tpl := simTemplates(sim.FailEnv + "=hang")
	tpl.JobTimeout, tpl.Grace = 500*time.Millisecond, 200*time.Millisecond
	var proc session.Proc
	_, err := newRunner(t, tpl).Train(context.Background(), trainJob(t.TempDir(), 20), session.JobHooks{Started: func(p session.Proc) { proc = p }})
	if je := jobError(t, err); !strings.HasPrefix(je.Reason, "timed out after 500ms; train.log ends: ") || !strings.HasSuffix(je.Reason, "sim-train: hanging (fault injection), ignoring SIGINT") {
		t.Errorf("reason %q", je.Reason)
	}
	if left := liveMembers(t, proc.PGID); len(left) > 0 {
		t.Errorf("hung sim %v survived", left)
	}
}

// TestEvaluateRejectsWrongSeeds: an evaluation.json for other seeds than asked is refused.
func TestEvaluateRejectsWrongSeeds(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, trainer.Templates{
		Train: []string{"true"},
		Evaluate: []string{"sh", "-c", `cat > "$0" <<'E'
{"task": "Unitree-Go2-Flat", "checkpoint": "model_1.pt", "iteration": 1, "seeds": [5],
 "metrics": {"velocity_error_linear": 0.2, "velocity_error_angular": 0.3, "action_acceleration": 12,
  "orientation_error": 0.05, "fall_rate": 0.01, "foot_slip": 0.08, "mechanical_power": 150},
 "perSeed": []}
E`, "{eval_output}"},
	})
	_, err := r.Evaluate(context.Background(), evalJob(dir, "/x/model_1.pt", 0), session.JobHooks{})
	if je := jobError(t, err); je.Reason != "evaluation.json has seeds [5], asked for [0]" {
		t.Errorf("reason %q", je.Reason)
	}
}
