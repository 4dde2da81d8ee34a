package sim_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/session"
	"tunebot/trainer/sim"
	"tunebot/trainer/tfevents"
)

var seeds = []int{0, 1, 2}

// mean evaluates cfg on the seeds and averages, as an evaluation job does.
func mean(cfg session.RewardConfig, it int) session.Metrics {
	out := session.Metrics{}
	for _, s := range seeds {
		for k, v := range sim.Evaluate(cfg, it, s) {
			out[k] += v / float64(len(seeds))
		}
	}
	return out
}

func defaults() session.RewardConfig { return session.DefaultSpace().Defaults() }

func with(weights, params map[string]float64) session.RewardConfig {
	c := defaults()
	for k, v := range weights {
		c.Weights[k] = v
	}
	for k, v := range params {
		c.Params[k] = v
	}
	return c
}

func TestEvaluateIsDeterministicAndVaries(t *testing.T) {
	a := sim.Evaluate(defaults(), 300, 1)
	if b := sim.Evaluate(defaults(), 300, 1); !equal(a, b) {
		t.Errorf("same arguments, different metrics: %v vs %v", a, b)
	}
	if b := sim.Evaluate(defaults(), 300, 2); equal(a, b) {
		t.Error("another seed gave identical metrics")
	}
	if b := sim.Evaluate(with(map[string]float64{"foot_slip": -0.3}, nil), 300, 1); equal(a, b) {
		t.Error("another configuration gave identical metrics")
	}
	for _, name := range session.MetricNames {
		if v, ok := a[name]; !ok || v < 0 {
			t.Errorf("metric %s = %v, %v", name, v, ok)
		}
	}
}

func equal(a, b session.Metrics) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return len(a) == len(b)
}

func TestDefaultsAreSound(t *testing.T) {
	m := mean(defaults(), 2000)
	want := session.Metrics{session.MetricVelLinear: 0.21, session.MetricVelAngular: 0.30, session.MetricActionAcc: 12,
		session.MetricOrientation: 0.05, session.MetricFootSlip: 0.08, session.MetricPower: 150}
	for k, w := range want {
		if m[k] < 0.8*w || m[k] > 1.2*w {
			t.Errorf("default %s = %.4g, want about %g", k, m[k], w)
		}
	}
	if f := m[session.MetricFallRate]; f > 0.03 {
		t.Errorf("defaults fall %.3f of the time", f)
	}
}

func TestMetricsImproveWithIterations(t *testing.T) {
	early, late := mean(defaults(), 50), mean(defaults(), 900)
	for _, name := range session.MetricNames {
		if !(late[name] < early[name]) {
			t.Errorf("%s did not improve from 50 to 900 iterations: %.4g → %.4g", name, early[name], late[name])
		}
	}
}

// TestResponseDirections: each change moves its metric the way a person would expect.
func TestResponseDirections(t *testing.T) {
	base := mean(defaults(), 900)
	tests := []struct {
		name    string
		cfg     session.RewardConfig
		metric  string
		lower   bool
		atLeast float64 // relative change
	}{
		{"stronger action rate penalty smooths", with(map[string]float64{"action_rate_l2": -0.1}, nil), session.MetricActionAcc, true, 0.2},
		{"stronger slip penalty slips less", with(map[string]float64{"foot_slip": -0.5}, nil), session.MetricFootSlip, true, 0.1},
		{"power penalty saves power", with(map[string]float64{"electrical_power": -0.002}, nil), session.MetricPower, true, 0.15},
		{"narrower kernel tracks better", with(nil, map[string]float64{"track_linear_velocity.std": 0.35}), session.MetricVelLinear, true, 0.1},
		{"stronger orientation penalty", with(map[string]float64{"body_orientation_l2": -2}, nil), session.MetricOrientation, true, 0.1},
		{"far too strong smoothing hurts tracking", with(map[string]float64{"action_rate_l2": -0.2}, nil), session.MetricVelLinear, false, 0.2},
		{"far too strong smoothing falls", with(map[string]float64{"action_rate_l2": -0.2}, nil), session.MetricFallRate, false, 3},
		{"too weak orientation falls", with(map[string]float64{"body_orientation_l2": -0.1}, nil), session.MetricFallRate, false, 10},
		{"cheap termination falls", with(map[string]float64{"is_terminated": -50}, nil), session.MetricFallRate, false, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mean(tt.cfg, 900)[tt.metric]
			rel := (got - base[tt.metric]) / base[tt.metric]
			if tt.lower {
				rel = -rel
			}
			if rel < tt.atLeast {
				t.Errorf("%s: %.4g → %.4g (relative %.3f, want at least %.3f)", tt.metric, base[tt.metric], got, rel, tt.atLeast)
			}
		})
	}
}

// TestBetterConfigReachable: one legal proposal away from the defaults lies a clearly
// better, eligible configuration, so tuning has something to find.
func TestBetterConfigReachable(t *testing.T) {
	space := session.DefaultSpace()
	patch := session.Patch{
		Weights: map[string]float64{"action_rate_l2": -0.1, "body_orientation_l2": -2, "foot_slip": -0.5},
		Params:  map[string]float64{"track_linear_velocity.std": 0.35},
	}
	cfg, err := space.Validate(defaults(), patch, nil)
	if err != nil {
		t.Fatalf("the patch is not legal: %v", err)
	}
	for _, it := range []int{20, 100, 300, 2000} {
		sc := session.Scorer{Baseline: mean(defaults(), it), Weights: session.DefaultObjectiveWeights(), Floors: session.DefaultFloors()}
		s, err := sc.Score(mean(cfg, it))
		if err != nil {
			t.Fatal(err)
		}
		if !s.Eligible || s.Total < 0.1 {
			t.Errorf("at %d iterations the better config scores %.3f (eligible %v, %v)", it, s.Total, s.Eligible, s.Reasons)
		}
	}
}

func TestParseFaults(t *testing.T) {
	f, err := sim.ParseFaults("exit@trial-003, nan")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mode, path string
		want       bool
	}{
		{"exit", "/d/trial-003-rung-0", true},
		{"exit", "/d/trial-004-rung-0", false},
		{"nan", "/anything", true},
		{"hang", "/anything", false},
	}
	for _, tt := range tests {
		if got := f.Has(tt.mode, tt.path); got != tt.want {
			t.Errorf("Has(%s, %s) = %v", tt.mode, tt.path, got)
		}
	}
	if _, err := sim.ParseFaults("exit,explode"); err == nil || !strings.Contains(err.Error(), "explode") {
		t.Errorf("unknown mode: %v", err)
	}
}

func writeConfig(t *testing.T, dir string, cfg session.RewardConfig) string {
	t.Helper()
	b, _ := json.Marshal(cfg)
	p := filepath.Join(dir, "reward_config.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTrainRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	good := sim.TrainOptions{Task: session.TaskGo2Flat, RunDir: filepath.Join(dir, "run"), RewardConfig: writeConfig(t, dir, defaults()),
		Iterations: 8, Target: 8, NumEnvs: 16}
	if err := sim.Train(context.Background(), good); err != nil {
		t.Fatalf("good run: %v", err)
	}
	bad := defaults()
	bad.Weights["action_rate_l2"] = 0
	badDir := t.TempDir()
	tests := []struct {
		name string
		edit func(*sim.TrainOptions)
		want string
	}{
		{"inconsistent iterations", func(o *sim.TrainOptions) { o.Target = 9 }, "is not --target-iterations 9"},
		{"missing config", func(o *sim.TrainOptions) { o.RewardConfig = filepath.Join(dir, "nope.json") }, "reading reward config"},
		{"invalid config", func(o *sim.TrainOptions) { o.RewardConfig = writeConfig(t, badDir, bad) }, "action_rate_l2"},
		{"start without checkpoint", func(o *sim.TrainOptions) { o.Start, o.Target = 4, 12 }, "without --resume-checkpoint"},
		{"checkpoint at another iteration", func(o *sim.TrainOptions) {
			o.Resume, o.Start, o.Target = filepath.Join(good.RunDir, "model_8.pt"), 6, 14
		}, "is at iteration 8"},
		{"not a checkpoint", func(o *sim.TrainOptions) { o.Resume, o.Start, o.Target = o.RewardConfig, 8, 16 }, "not a sim checkpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			o.RunDir = filepath.Join(t.TempDir(), "run")
			tt.edit(&o)
			err := sim.Train(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Train = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

func TestTrainWritesTheContract(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	o := sim.TrainOptions{Task: session.TaskGo2Flat, RunDir: run, RewardConfig: writeConfig(t, dir, defaults()),
		Iterations: 8, Target: 8, NumEnvs: 16}
	if err := sim.Train(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"model_2.pt", "model_4.pt", "model_6.pt", "model_8.pt", "policy.onnx"} {
		if _, err := os.Stat(filepath.Join(run, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	ck, err := sim.ReadCheckpoint(filepath.Join(run, "model_8.pt"))
	if err != nil || ck.Iteration != 8 || ck.ConfigHash != sim.ConfigHash(defaults()) || !ck.Config.Equal(defaults()) {
		t.Errorf("checkpoint %+v, %v", ck, err)
	}
	series, err := tfevents.ReadAll(run)
	if err != nil {
		t.Fatal(err)
	}
	for _, term := range session.DefaultSpace().Terms {
		if n := len(series["Episode_Reward/"+term.Name]); n != 8 {
			t.Errorf("Episode_Reward/%s has %d points", term.Name, n)
		}
	}
	out := filepath.Join(run, "evaluation.json")
	if err := sim.Eval(context.Background(), sim.EvalOptions{Task: session.TaskGo2Flat, Checkpoint: filepath.Join(run, "model_8.pt"),
		Output: out, Seeds: []int{4, 2}, NumEnvs: 8, Steps: 10}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	ev, err := session.DecodeEvaluation(b)
	if err != nil || ev.Iteration != 8 || ev.Checkpoint != "model_8.pt" || len(ev.PerSeed) != 2 || ev.PerSeed[0].Seed != 4 {
		t.Errorf("evaluation %+v, %v", ev, err)
	}
}
