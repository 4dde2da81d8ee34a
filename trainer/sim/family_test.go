package sim_test

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/session"
	"tunebot/trainer/sim"
)

// Surface seed 0 is the demo's surface, unchanged: these are the metrics the sim gave
// before surfaces had seeds.
func TestSurfaceZeroIsTheShippedSurface(t *testing.T) {
	c := with(map[string]float64{"action_rate_l2": -0.08}, map[string]float64{"track_linear_velocity.std": 0.4})
	want := map[int]session.Metrics{
		300: {"velocity_error_linear": 0.23178797468193568, "velocity_error_angular": 0.3682310911597632, "action_acceleration": 10.991072551699881,
			"orientation_error": 0.06587851926545582, "fall_rate": 0.013280272862736812, "foot_slip": 0.09580920852480232, "mechanical_power": 147.60153775965819},
		2000: {"velocity_error_linear": 0.1701285058754327, "velocity_error_angular": 0.3042444322689114, "action_acceleration": 9.060073897089564,
			"orientation_error": 0.05003227538525254, "fall_rate": 0.007955938071452034, "foot_slip": 0.07964857033945474, "mechanical_power": 147.859767385582},
	}
	s0, err := sim.NewSurface(0)
	if err != nil {
		t.Fatal(err)
	}
	for it, w := range want {
		for _, got := range []session.Metrics{sim.Evaluate(c, it, 7), s0.Evaluate(c, it, 7)} {
			for k, v := range w {
				if got[k] != v {
					t.Errorf("iteration %d: %s = %v, want %v", it, k, got[k], v)
				}
			}
		}
	}
}

func TestSurfaceSeedsDrawDifferentProblems(t *testing.T) {
	if _, err := sim.NewSurface(-1); err == nil || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("NewSurface(-1) = %v", err)
	}
	sp := session.DefaultSpace()
	w, f := session.DefaultObjectiveWeights(), session.DefaultFloors()
	optima := map[string]bool{}
	for seed := int64(1); seed <= 6; seed++ {
		a, _ := sim.NewSurface(seed)
		b, _ := sim.NewSurface(seed)
		c := with(map[string]float64{"foot_slip": -0.5, "pose": 2}, map[string]float64{"foot_gait.period": 0.7})
		if ma, mb := a.Evaluate(c, 300, 3), b.Evaluate(c, 300, 3); !equal(ma, mb) {
			t.Errorf("surface %d is not deterministic: %v vs %v", seed, ma, mb)
		}
		// The defaults score 0 against themselves; the oracle finds better within the bounds,
		// and what it finds is a valid configuration, eligible on the noise-free surface.
		if g, ok := a.Gain(sp.Defaults(), 2000, w, f); g != 0 || !ok {
			t.Errorf("surface %d: defaults gain %v, %v", seed, g, ok)
		}
		best, gain := a.Oracle(sp, 2000, w, f)
		if err := sp.CheckConfig(best); err != nil {
			t.Errorf("surface %d: oracle config invalid: %v", seed, err)
		}
		if g, ok := a.Gain(best, 2000, w, f); !ok || g != gain || gain < 0.02 {
			t.Errorf("surface %d: oracle gain %v (recomputed %v, eligible %v), want a clear gain", seed, gain, g, ok)
		}
		optima[sim.ConfigHash(best)] = true
		checkNoise(t, a, c)
	}
	if len(optima) < 6 {
		t.Errorf("6 surfaces share optima: %d distinct", len(optima))
	}
	s0, _ := sim.NewSurface(0)
	s1, _ := sim.NewSurface(1)
	c := with(map[string]float64{"foot_slip": -0.5}, nil)
	if equal(s0.Expected(c, 300), s1.Expected(c, 300)) {
		t.Error("surface 1 is the demo's surface")
	}
}

// checkNoise checks that s's evaluations of c at 300 iterations are noisy by 1–5 % per
// metric (the fall rate: relative, like the others), over 400 evaluation seeds.
func checkNoise(t *testing.T, s *sim.Surface, c session.RewardConfig) {
	t.Helper()
	for _, name := range session.MetricNames {
		var logs []float64
		e := s.Expected(c, 300)[name]
		for seed := 0; seed < 400; seed++ {
			logs = append(logs, math.Log(s.Evaluate(c, 300, seed)[name]/e))
		}
		if _, sd := session.MeanStd(logs); sd < 0.008 || sd > 0.06 {
			t.Errorf("%s surface %d: %s noise %.3f, want 1–5 %%", s.Family(), s.Seed(), name, sd)
		}
	}
}

// A generated surface has scalars that do not matter, scalars whose optimum is several
// factor-2 steps away, and cliffs: somewhere in the bounds the robot falls.
func TestGeneratedSurfacesHaveIrrelevantTermsFarOptimaAndCliffs(t *testing.T) {
	sp := session.DefaultSpace()
	var irrelevant, far, cliffs int
	for seed := int64(1); seed <= 10; seed++ {
		s, _ := sim.NewSurface(seed)
		base := s.Expected(sp.Defaults(), 2000)
		// Every scalar at each of its bounds (a weight's: its smallest and largest magnitude).
		var ends [][2]session.RewardConfig
		for _, term := range sp.Terms {
			if term.Default == 0 {
				continue
			}
			lo, hi := sp.Defaults(), sp.Defaults()
			lo.Weights[term.Name], hi.Weights[term.Name] = term.Min, term.Max
			if term.Min == 0 || term.Max == 0 {
				// one bound is 0 (off): its smallest modelled magnitude instead
				lo.Weights[term.Name], hi.Weights[term.Name] = (term.Min+term.Max)/1000, term.Min+term.Max
			}
			ends = append(ends, [2]session.RewardConfig{lo, hi})
		}
		for _, p := range sp.Params {
			lo, hi := sp.Defaults(), sp.Defaults()
			lo.Params[p.Name], hi.Params[p.Name] = p.Min, p.Max
			ends = append(ends, [2]session.RewardConfig{lo, hi})
		}
		for _, e := range ends {
			a, b := s.Expected(e[0], 2000), s.Expected(e[1], 2000)
			if equal(a, base) && equal(b, base) {
				irrelevant++
			}
			for _, m := range []session.Metrics{a, b} {
				if m[session.MetricFallRate] > base[session.MetricFallRate]+0.1 {
					cliffs++
				}
			}
		}
		best, _ := s.Oracle(sp, 2000, session.DefaultObjectiveWeights(), session.DefaultFloors())
		for _, term := range sp.Terms {
			if r := best.Weights[term.Name] / term.Default; term.Default != 0 && (r > 3.9 || r < 0.26) {
				far++
			}
		}
	}
	if irrelevant == 0 || far == 0 || cliffs == 0 {
		t.Errorf("over 10 surfaces: %d irrelevant terms, %d far optima, %d cliffs; want some of each", irrelevant, far, cliffs)
	}
}

func TestEvalRefusesAnotherSurface(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	o := sim.TrainOptions{Task: session.TaskGo2Flat, RunDir: run, RewardConfig: writeConfig(t, dir, defaults()),
		Iterations: 4, Target: 4, NumEnvs: 16, SurfaceSeed: 5}
	if err := sim.Train(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	ck, err := sim.ReadCheckpoint(filepath.Join(run, "model_4.pt"))
	if err != nil || ck.SurfaceSeed != 5 {
		t.Fatalf("checkpoint surface %d, %v", ck.SurfaceSeed, err)
	}
	e := sim.EvalOptions{Task: session.TaskGo2Flat, Checkpoint: filepath.Join(run, "model_4.pt"), Output: filepath.Join(run, "ev.json"),
		Seeds: []int{0}, NumEnvs: 8, Steps: 10}
	if err := sim.Eval(context.Background(), e); err == nil || !strings.Contains(err.Error(), "surface seed 5, not 0") {
		t.Errorf("Eval on surface 0 = %v, want a surface mismatch", err)
	}
	e.SurfaceSeed = 5
	if err := sim.Eval(context.Background(), e); err != nil {
		t.Errorf("Eval on the checkpoint's surface: %v", err)
	}
	o.RunDir, o.Resume, o.Start, o.Target, o.SurfaceSeed = filepath.Join(dir, "run2"), filepath.Join(run, "model_4.pt"), 4, 8, 6
	if err := sim.Train(context.Background(), o); err == nil || !strings.Contains(err.Error(), "surface seed 5, not 6") {
		t.Errorf("resume on another surface = %v", err)
	}
}
