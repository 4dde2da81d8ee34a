package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"tunebot/apply/applytest"
	"tunebot/session"
)

// spaceFile writes sp as a space file (a reward_space block, as tunebot space prints it).
func spaceFile(t *testing.T, path string, sp *session.Space) {
	t.Helper()
	out, err := yaml.Marshal(map[string]*session.Space{"reward_space": sp})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The done-when of issue 30, item 3: one installation configured with two tasks (the sim
// trainer; each task a copy of the built-in space, task B's with its own foot_slip default)
// runs a session of each, one after the other, saves a preset from each, and apply and a
// start from a preset refuse to cross tasks; a start that names no task, or an unknown
// one, is refused with the configured tasks.
func TestTwoTasksInOneInstallation(t *testing.T) {
	const taskA, taskB = "Sim-Quadruped-A", "Sim-Quadruped-B"
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := twoTaskConfig(t, dir, data, taskA, taskB)

	// No default task: a start names one, and an unknown one is refused, both with the list.
	for _, args := range [][]string{{}, {"--task", "Sim-Biped"}} {
		code, _, stderr := runBin(t, dir, append([]string{"tune", "--config", cfg}, args...)...)
		if code != 1 || !strings.Contains(stderr, taskA) || !strings.Contains(stderr, taskB) {
			t.Errorf("tune %v: exit %d, want a refusal naming %s and %s:\n%s", args, code, taskA, taskB, stderr)
		}
	}
	presets := tuneEachTask(t, dir, cfg, data, taskA, taskB)
	presetsStayWithTheirTask(t, dir, cfg, presets, taskA, taskB)
}

// twoTaskConfig writes the installation's config: tasks A and B, each a copy of the
// built-in space (B's foot_slip default -0.3), and apply to a checkout that trains task A.
func twoTaskConfig(t *testing.T, dir, data, taskA, taskB string) string {
	t.Helper()
	repo := applytest.Repo(t)
	spaceFile(t, filepath.Join(dir, "a.yaml"), session.DefaultSpace())
	b := session.DefaultSpace()
	for i := range b.Terms {
		if b.Terms[i].Name == "foot_slip" {
			b.Terms[i].Default = -0.3
		}
	}
	spaceFile(t, filepath.Join(dir, "b.yaml"), b)
	return writeConfig(t, dir, fmt.Sprintf(`data_dir: %s
service: {addr: "off"}
session:
  trial_count: 6            # the demo's rungs and enough trials that each session beats its
  early_stop_patience: 6    # baseline and saves a preset (rungs of 20-60 iterations did not)
  fallback: true
  seed: 1                   # each session beats its baseline, and A's preset moves foot_slip
  final_eval_seeds: [100, 101, 102, 103, 104]   # fixed, so what each session comes to does not depend on its id
reward_spaces:
  %s: {file: a.yaml}
  %s: {file: b.yaml}
apply:
  task: %s
  repo: %s
  test: ["true"]
  edits:
    - {file: %s, name: foot_slip, pattern: 'cfg\.rewards\["{name}"\]\.weight = ([-0-9.eE+]+)'}
`, data, taskA, taskB, taskA, repo, applytest.CfgFile))
}

// tuneEachTask runs a session of each task, one after the other, checks that each says its
// task, trains its own task's defaults and succeeds, and returns each task's preset.
func tuneEachTask(t *testing.T, dir, cfg, data, taskA, taskB string) map[string]string {
	t.Helper()
	outputs := map[string]string{} // task → what its tune printed
	for _, task := range []string{taskA, taskB} {
		code, stdout, stderr := runBin(t, dir, "tune", "--config", cfg, "--task", task)
		outputs[task] = stdout
		if code != 0 {
			t.Fatalf("tune --task %s: exit %d\n%s\n%s", task, code, stdout, stderr)
		}
		if !strings.Contains(stdout, "(task "+task+",") {
			t.Errorf("tune --task %s does not say its task:\n%s", task, stdout)
		}
	}
	st := readDataDir(t, data)
	if len(st.Sessions) != 2 {
		t.Fatalf("%d sessions, want 2", len(st.Sessions))
	}
	for id, s := range st.Sessions {
		var baseline session.Trial
		for _, tr := range st.Trials[id] {
			if tr.Number == 0 && tr.Rung == 0 {
				baseline = tr
			}
		}
		// Each session's baseline trains its own task's defaults.
		want := map[string]float64{taskA: -0.25, taskB: -0.3}[s.Settings.Task]
		if got := baseline.RewardConfig.Weights["foot_slip"]; want == 0 || got != want {
			t.Errorf("session of task %q: baseline foot_slip %g, want %g", s.Settings.Task, got, want)
		}
		if s.State != session.StateSucceeded {
			t.Errorf("session of task %s is %s: %s", s.Settings.Task, s.State, s.Reason)
		}
	}
	presets := map[string]string{} // task → its session's preset
	for _, p := range st.Presets {
		presets[p.Task] = p.Name
	}
	if presets[taskA] == "" || presets[taskB] == "" {
		t.Fatalf("presets by task: %v; want one from each session\n%s:\n%s\n%s:\n%s", presets, taskA, outputs[taskA], taskB, outputs[taskB])
	}
	return presets
}

// presetsStayWithTheirTask: apply, to a checkout that trains task A, refuses task B's
// preset and commits task A's (in part, when asked), and a session of task A never starts
// from task B's preset.
func presetsStayWithTheirTask(t *testing.T, dir, cfg string, presets map[string]string, taskA, taskB string) {
	t.Helper()
	// A preset is applied only to its own task: the checkout trains task A.
	code, _, stderr := runBin(t, dir, "apply", presets[taskB], "--yes", "--from-sim", "--config", cfg)
	if code != 1 || !strings.Contains(stderr, "tuned on task "+taskB+", not "+taskA) {
		t.Errorf("apply of task B's preset to task A's checkout: exit %d\n%s", code, stderr)
	}
	// Its checkout's apply.edits write foot_slip alone, so the preset goes in only in part,
	// when asked (issue 35 item 1), and the output says so.
	// --unconfirmed: whether its gain clears the noise is not what this test is about.
	if code, stdout, stderr := runBin(t, dir, "apply", presets[taskA], "--yes", "--from-sim", "--partial", "--unconfirmed", "--config", cfg); code != 0 ||
		!strings.Contains(stdout, "part of preset "+presets[taskA]+" committed as") {
		t.Errorf("apply of task A's own preset: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// And a session of one task never starts from another's preset.
	code, _, stderr = runBin(t, dir, "tune", "--config", cfg, "--task", taskA, "--preset", presets[taskB])
	if code != 1 || !strings.Contains(stderr, "tuned on task "+taskB+", not "+taskA) {
		t.Errorf("tune --task %s --preset %s: exit %d\n%s", taskA, presets[taskB], code, stderr)
	}
}
