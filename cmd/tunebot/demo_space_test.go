package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tunebot/config"
	"tunebot/session"
)

const g1Task = "Mjlab-Velocity-Flat-Unitree-G1"

// `make demo TASK=… SPACE=…`: the demo tunes a space `tunebot space` printed for another
// task on the sim trainer, without mjlab, to the end, and ships its best configuration as a
// preset of that task, made by the sim.
func TestDemoTunesAGeneratedSpace(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole demo session")
	}
	dir := t.TempDir()
	file, err := filepath.Abs(filepath.Join("testdata", "spaces", "g1.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, stderr := demoJSON(t, dir, "--task", g1Task, "--space", file)
	if sum.State != session.StateSucceeded || sum.Outcome != session.OutcomeImproved || sum.Preset == "" {
		t.Fatalf("demo on the G1 space: state %s, outcome %q, preset %q; want a shipped improvement\n%s", sum.State, sum.Outcome, sum.Preset, stderr)
	}
	for _, tr := range sum.Trials {
		if _, ok := tr.RewardConfig.Weights["upright"]; !ok || len(tr.RewardConfig.Weights) != 13 {
			t.Errorf("trial %d@%d trained %v, want the G1 space's 13 terms", tr.Number, tr.Rung, tr.RewardConfig.Weights)
		}
		if tr.Clip == nil {
			t.Errorf("trial %d@%d has no clip: %s", tr.Number, tr.Rung, tr.ClipNote)
		}
	}
	show := exec.Command(tunebotBin, "preset", "show", sum.Preset)
	show.Dir = dir
	out, err := show.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "the built-in sim") || !strings.Contains(string(out), g1Task) {
		t.Errorf("preset show %s: %v\n%s\nwant the G1 task, made by the built-in sim", sum.Preset, err, out)
	}
}

// The demo finds a task's checked-in space by its name, keeps the built-in one for the
// built-in task, and names what is wrong with its flags or a space file.
func TestDemoSpaceFlags(t *testing.T) {
	dir := t.TempDir()
	load := func(o tuneOptions) (config.Config, error) {
		cfg, err := config.Load("", func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		cfg.DataDir = dir
		return cfg, demoSpace(&cfg, o, func(k string) string { return map[string]string{"DEEPSEEK_API_KEY": "pastedtokenvalue42"}[k] })
	}
	cfg, err := load(tuneOptions{demo: true, task: g1Task})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Session.Task != g1Task || cfg.Space == nil || cfg.Space.Terms[2].Name != "upright" {
		t.Errorf("--task %s: task %q, space %v", g1Task, cfg.Session.Task, cfg.Space)
	}
	for _, argv := range [][]string{cfg.Trainer.Train, cfg.Trainer.Evaluate} {
		if i := slices.Index(argv, "--reward-space"); i < 0 || i+1 >= len(argv) || argv[i+1] != "{reward_space}" {
			t.Errorf("the sim's argv %q does not pass --reward-space {reward_space}", argv)
		}
	}
	if cfg, err := load(tuneOptions{demo: true, task: session.TaskGo2Flat}); err != nil || cfg.Space != nil {
		t.Errorf("--task %s: %v, space %v; want the built-in space", session.TaskGo2Flat, err, cfg.Space)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("reward_space:\n  terms:\n    - {name: a, default: 1, min: 0.5, max: 2, act: [foot_slip]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A space file is a configuration string that leaves tunebot (stored, shown, sent to the
	// advisor): it goes through the config's secret scan.
	pasted := filepath.Join(dir, "pasted.yaml")
	if err := os.WriteFile(pasted, []byte("reward_space:\n  max_changes: 2\n  step_min: 0.5\n  step_max: 2\n  terms:\n    - {name: pastedtokenvalue42, default: 1, min: 0.5, max: 2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o    tuneOptions
		want string
	}{
		{tuneOptions{task: "T", space: pasted}, "line 6: reward_space.terms[0].name: holds the value of the secret DEEPSEEK_API_KEY"},
		{tuneOptions{space: bad}, "--space needs --task"},
		{tuneOptions{task: "Some-Lab-Task"}, "--task Some-Lab-Task has no checked-in reward space (Unitree-Go2-Flat, Mjlab-Velocity-Flat-Unitree-G1, Mjlab-Velocity-Flat-Unitree-Go1 have one)"},
		{tuneOptions{task: "../x"}, `--task "../x" must match`},
		{tuneOptions{task: "T", space: bad}, `reward space bad.yaml: yaml: unmarshal errors:` + "\n  line 3: field act not found"},
		{tuneOptions{task: "T", space: filepath.Join(dir, "none.yaml")}, "reading reward space:"},
	} {
		if _, err := load(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("demo %+v: %v, want %q", c.o, err, c.want)
		}
	}
}
