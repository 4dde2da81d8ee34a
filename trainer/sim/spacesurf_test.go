package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"tunebot/session"
	"tunebot/trainer/mjlab"
	"tunebot/trainer/sim"
)

const g1Task = "Mjlab-Velocity-Flat-Unitree-G1"

// g1Space is the checked-in space of mjlab's G1 flat task, as `tunebot space` printed it.
func g1Space(t *testing.T) *session.Space { return checkedInSpace(t, g1Task) }

// checkedInSpace is the checked-in space of task.
func checkedInSpace(t *testing.T, task string) *session.Space {
	t.Helper()
	data, ok := mjlab.CheckedInSpace(task)
	if !ok {
		t.Fatalf("no checked-in space for %s", task)
	}
	var doc struct {
		Space *session.Space `yaml:"reward_space"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil || doc.Space == nil {
		t.Fatalf("G1 space: %v", err)
	}
	return doc.Space
}

// oddSpace names nothing the sim knows: a term and a param without acts, a param whose
// lowers says which way helps.
func oddSpace() *session.Space {
	return &session.Space{
		Terms: []session.Term{
			{Name: "stay_alive", Default: 1, Min: 0.5, Max: 2, Acts: []string{session.MetricFallRate}},
			{Name: "hop_height", Default: -0.5, Min: -1, Max: -0.25},
			{Name: "arm_swing", Default: 0.2, Min: 0, Max: 0.4, MayBeZero: true, Acts: []string{session.MetricPower, "no_such_metric"}},
		},
		Params: []session.Param{
			{Name: "stay_alive.margin", Default: 0.3, Min: 0.1, Max: 0.5, Acts: []string{session.MetricOrientation}, Lowers: session.LowersDown},
			{Name: "hop_height.kernel", Default: 1, Min: 0.5, Max: 2},
		},
		MaxChanges: 4, StepMin: 0.5, StepMax: 2,
	}
}

// moved is cfg with one scalar of sp at value x.
func moved(sp *session.Space, name string, x float64) session.RewardConfig {
	c := sp.Defaults()
	if _, ok := sp.Term(name); ok {
		c.Weights[name] = x
	} else {
		c.Params[name] = x
	}
	return c
}

// bounds are a scalar's bounds in sp.
func bounds(sp *session.Space, name string) (lo, hi float64, acts []string) {
	if t, ok := sp.Term(name); ok {
		return t.Min, t.Max, t.Acts
	}
	p, _ := sp.Param(name)
	return p.Min, p.Max, p.Acts
}

// On the demo surface of a space other than the built-in one, every scalar moves each metric
// its acts declares (one of its bounds changes that metric by more than 1 %), and one that
// declares none still moves some metric a little.
func TestSpaceSurfaceMovesEveryDeclaredMetric(t *testing.T) {
	for _, sp := range []*session.Space{g1Space(t), oddSpace()} {
		s, err := sim.NewSpaceSurface(sp, sim.FamilyGeneric, 0)
		if err != nil {
			t.Fatal(err)
		}
		base := s.Expected(sp.Defaults(), 2000)
		for _, name := range sp.Names() {
			lo, hi, acts := bounds(sp, name)
			change := map[string]float64{}
			for _, x := range []float64{lo, hi} {
				c := moved(sp, name, x)
				if sp.CheckConfig(c) != nil {
					continue // an order between params: the other bound
				}
				for metric, v := range s.Expected(c, 2000) {
					change[metric] = math.Max(change[metric], math.Abs(math.Log(v/base[metric])))
				}
			}
			declared := 0
			for _, metric := range acts {
				if !strings.Contains(strings.Join(session.MetricNames, " "), metric) {
					continue
				}
				declared++
				if change[metric] < 0.01 {
					t.Errorf("%s: %s declares %s, but its bounds move it by %.4f (log)", sp.Terms[0].Name, name, metric, change[metric])
				}
			}
			if declared == 0 {
				most := 0.0
				for _, c := range change {
					most = math.Max(most, c)
				}
				if most < 1e-4 || most > 0.1 {
					t.Errorf("%s declares no metric: its bounds move the metrics by at most %.4f (log), want a small effect", name, most)
				}
			}
		}
	}
}

// A space's surfaces are deterministic per seed and space: the same arguments give the same
// numbers, another seed or a space with other bounds another problem; the defaults score 0
// and the demo's surface (seed 0) has a clear gain within the bounds.
func TestSpaceSurfaceIsDeterministicAndKeyedBySpace(t *testing.T) {
	g1 := g1Space(t)
	other := g1Space(t)
	other.Terms[2].Max = 2.5 // upright: the same names, other bounds
	w, f := session.DefaultObjectiveWeights(), session.DefaultFloors()
	probe := g1.Defaults()
	for k, x := range probe.Weights {
		probe.Weights[k] = x * 1.5
	}
	for _, fam := range sim.Families {
		seen := map[string]string{}
		for _, seed := range []int64{0, 3, 4} {
			a, errA := sim.NewSpaceSurface(g1, fam, seed)
			b, errB := sim.NewSpaceSurface(g1Space(t), fam, seed)
			c, errC := sim.NewSpaceSurface(other, fam, seed)
			if errA != nil || errB != nil || errC != nil {
				t.Fatal(errA, errB, errC)
			}
			if ma, mb := a.Evaluate(probe, 500, 1), b.Evaluate(probe, 500, 1); !equal(ma, mb) {
				t.Errorf("%s %d: not deterministic: %v vs %v", fam, seed, ma, mb)
			}
			ea, _ := json.Marshal(a.Expected(probe, 2000))
			ec, _ := json.Marshal(c.Expected(probe, 2000))
			if seed != 0 && bytes.Equal(ea, ec) {
				t.Errorf("%s %d: a space with other bounds draws the same surface", fam, seed)
			}
			if prev, ok := seen[string(ea)]; ok {
				t.Errorf("%s %d: the same surface as seed %s", fam, seed, prev)
			}
			seen[string(ea)] = string(rune('0' + seed))
			if g, ok := a.Gain(g1.Defaults(), 2000, w, f); g != 0 || !ok {
				t.Errorf("%s %d: the defaults gain %v, %v", fam, seed, g, ok)
			}
		}
	}
	for _, task := range mjlab.CheckedInTasks() {
		sp := checkedInSpace(t, task)
		demo, _ := sim.NewSpaceSurface(sp, sim.FamilyGeneric, 0)
		best, gain := demo.Oracle(sp, 2000, w, f)
		t.Logf("the demo surface of %s: best gain %.3f", task, gain)
		if err := sp.CheckConfig(best); err != nil || gain < 0.1 {
			t.Errorf("the demo surface of %s: best gain %.3f (%v), want a clear one (≥ 0.1)", task, gain, err)
		}
	}
}

// The built-in space, given or not, and a space with its names but other bounds, keep the
// built-in surfaces exactly (the frozen families and the hand-made seed 0).
func TestBuiltInSpaceKeepsItsSurfaces(t *testing.T) {
	wider := session.DefaultSpace()
	wider.Terms[0].Max = 4
	wider.Terms[0], wider.Terms[1] = wider.Terms[1], wider.Terms[0]
	c := with(map[string]float64{"foot_slip": -0.5, "pose": 2}, map[string]float64{"foot_gait.period": 0.7})
	for _, fam := range sim.Families {
		for _, seed := range []int64{0, 2, 9} {
			want, _ := sim.NewFamilySurface(fam, seed)
			for _, sp := range []*session.Space{nil, session.DefaultSpace(), wider} {
				got, err := sim.NewSpaceSurface(sp, fam, seed)
				if err != nil {
					t.Fatal(err)
				}
				if mg, mw := got.Evaluate(c, 300, 2), want.Evaluate(c, 300, 2); !equal(mg, mw) {
					t.Errorf("%s %d: %v, want the built-in surface's %v", fam, seed, mg, mw)
				}
			}
		}
	}
}

// The sim trains and evaluates on a space whose names it has never seen: the events carry
// each term's reward, evaluation.json the same seven metrics, and a checkpoint is refused on
// another space than its own.
func TestSimTrainsAndEvaluatesAnySpace(t *testing.T) {
	sp := oddSpace()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	ctx := context.Background()
	o := sim.TrainOptions{Task: "Odd-Task", RunDir: run, RewardConfig: writeConfig(t, dir, sp.Defaults()),
		Iterations: 8, Target: 8, NumEnvs: 16, Space: sp}
	if err := sim.Train(ctx, o); err != nil {
		t.Fatal(err)
	}
	events, _ := filepath.Glob(filepath.Join(run, "events.out.tfevents.*"))
	if len(events) != 1 {
		t.Fatalf("event files %v", events)
	}
	data, _ := os.ReadFile(events[0])
	for _, term := range sp.Terms {
		if !bytes.Contains(data, []byte("Episode_Reward/"+term.Name)) {
			t.Errorf("no Episode_Reward/%s in the events", term.Name)
		}
	}
	ck := filepath.Join(run, "model_8.pt")
	e := sim.EvalOptions{Task: "Odd-Task", Checkpoint: ck, Output: filepath.Join(run, "evaluation.json"), Seeds: []int{0, 1},
		NumEnvs: 8, Steps: 10, Space: sp}
	if err := sim.Eval(ctx, e); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(e.Output)
	var ev session.Evaluation
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	for _, name := range session.MetricNames {
		if x, ok := ev.Metrics[name]; !ok || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			t.Errorf("evaluation.json: %s = %v, %v", name, x, ok)
		}
	}
	if len(ev.Metrics) != len(session.MetricNames) {
		t.Errorf("evaluation.json has %d metrics, want the %d of §3", len(ev.Metrics), len(session.MetricNames))
	}
	e.Space = nil
	if err := sim.Eval(ctx, e); err == nil || !strings.Contains(err.Error(), "not the built-in reward space") {
		t.Errorf("Eval on the built-in space = %v, want the space mismatch named", err)
	}
	e.Space = g1Space(t)
	if err := sim.Eval(ctx, e); err == nil || !strings.Contains(err.Error(), "was trained on reward space "+sim.SpaceKey(sp)) {
		t.Errorf("Eval on the G1 space = %v, want the space mismatch named", err)
	}
	// A configuration of another space is refused by name before anything trains.
	o.RunDir, o.Space = filepath.Join(dir, "run2"), nil
	if err := sim.Train(ctx, o); err == nil || !strings.Contains(err.Error(), "it names arm_swing, hop_height, hop_height.kernel, stay_alive, stay_alive.margin, which the built-in Go2 reward space lacks: pass the space it belongs to with --reward-space FILE") {
		t.Errorf("Train of the odd config on the built-in space = %v, want its unknown term named", err)
	}
}
