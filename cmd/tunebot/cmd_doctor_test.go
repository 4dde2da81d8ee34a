package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/config"
	"tunebot/session"
)

// fakePython writes an executable standing in for the adapter venv's python: it answers
// --version, `-m tunebot_mjlab check` and `-m tunebot_mjlab space` with the given outputs, so
// the doctor crosses a real process boundary without mjlab installed.
func fakePython(t *testing.T, dir, check, space string) string {
	t.Helper()
	for name, body := range map[string]string{"check.json": check, "space.json": space} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := `#!/bin/sh
case "$*" in
  --version) echo "Python 3.11.7";;
  *" check "*) cat "` + dir + `/check.json";;
  *" space "*) cat "` + dir + `/space.json";;
  *) echo "unexpected: $*" >&2; exit 3;;
esac
`
	p := filepath.Join(dir, "python")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	checkOK = `{"packages": {"mjlab": "1.6.0", "torch": "2.15.0"}, "missing": [], "task": "Unitree-Go2-Flat",
  "registered": true, "error": "", "gpus": ["NVIDIA GeForce RTX 5080"]}`
	checkCPU = `{"packages": {"mjlab": "1.6.0"}, "missing": [], "task": "Unitree-Go2-Flat", "registered": true, "error": "", "gpus": []}`
	checkBad = `{"packages": {"torch": "2.15.0"}, "missing": ["mjlab"], "task": "Unitree-Go2-Flat", "registered": false,
  "error": "task Unitree-Go2-Flat is not registered with mjlab: install unitree_rl_mjlab", "gpus": []}`
	// The default space of docs/design.md section 2, as --print-defaults prints it.
	defaultsGo2 = `{"weights": {"track_linear_velocity": 1.0, "track_angular_velocity": 1.0, "body_orientation_l2": -1.0,
  "pose": 1.0, "body_ang_vel": -0.05, "angular_momentum": -0.025, "is_terminated": -200, "joint_acc_l2": -2.5e-7,
  "joint_pos_limits": -10, "action_rate_l2": -0.05, "foot_gait": 0.5, "foot_clearance": -1.0, "foot_slip": -0.25,
  "soft_landing": -0.001, "stand_still": -1.0, "electrical_power": 0},
 "params": {"track_linear_velocity.std": 0.5, "track_angular_velocity.std": 0.7071067812,
  "pose.std_standing_scale": 1, "pose.std_walking_scale": 1, "pose.std_running_scale": 1,
  "pose.walking_threshold": 0.05, "pose.running_threshold": 1.5, "foot_gait.period": 0.6, "foot_gait.threshold": 0.56,
  "foot_clearance.target_height": 0.1, "foot_gait.command_threshold": 0.1, "foot_clearance.command_threshold": 0.1,
  "foot_slip.command_threshold": 0.1, "stand_still.command_threshold": 0.1}}`
)

// go2Space is the adapter's `space` answer for Unitree-Go2-Flat with these defaults in the
// names of its table (which holds every name of docs/design.md section 2).
func go2Space(t *testing.T, defaults string) string {
	t.Helper()
	names, err := json.Marshal(session.DefaultSpace().Names())
	if err != nil {
		t.Fatal(err)
	}
	return `{"task": "Unitree-Go2-Flat", "mjlab": "1.6.0", "terms": [{"name": "pose", "weight": 1, "function": "f", "module": "m", "params": {}, "other_params": []}],
 "table_names": ` + string(names) + `, "table_defaults": ` + defaults + `}`
}

func adapterConfig(python, dataDir string) string {
	return `
data_dir: ` + dataDir + `
session: {fallback: true}
trainer:
  python: ` + python + `
  train: ["{python}", "-m", "tunebot_mjlab", "train", "--task", "{task}", "--run-dir", "{run_dir}", "--reward-config", "{reward_config}", "--iterations", "{iterations}"]
  resume_args: ["--resume-checkpoint", "{checkpoint}"]
  evaluate: ["{python}", "-m", "tunebot_mjlab", "evaluate", "--task", "{task}", "--checkpoint", "{checkpoint}", "--output", "{eval_output}"]
`
}

func TestDoctor(t *testing.T) {
	cases := []struct {
		name     string
		config   func(dir string) string
		wantCode int
		want     []string // lines (or parts of lines) that must appear
		notWant  []string
	}{
		{
			name: "built-in sim trainer",
			config: func(dir string) string {
				return "data_dir: " + filepath.Join(dir, "data") + "\nsession: {fallback: true}\n"
			},
			wantCode: 0,
			want: []string{"ok    config", "ok    advisor    none (DEEPSEEK_API_KEY is not set): the numeric sampler proposes",
				"ok    chat       no chat platform enabled", "ok    trainer    built-in sim trainer: nothing to check", "ok    data dir"},
			notWant: []string{"python"},
		},
		{
			// tune refuses this config: doctor must not pass it (issue 20).
			name:     "no advisor and no fallback",
			config:   func(dir string) string { return "data_dir: " + filepath.Join(dir, "data") + "\n" },
			wantCode: 1,
			want: []string{"fail  advisor    no advisor and no fallback: DEEPSEEK_API_KEY is not set",
				"set DEEPSEEK_API_KEY, or let the numeric sampler propose with session.fallback: true in the config (tunebot tune --fallback does it for one session)",
				"some checks failed"},
			// doctor takes no --fallback: it never suggests it as its own flag (issue 28).
			notWant: []string{"propose with --fallback"},
		},
		{
			// run would not start without the platform's tokens.
			name: "a chat platform without its tokens",
			config: func(dir string) string {
				return "data_dir: " + filepath.Join(dir, "data") + "\nsession: {fallback: true}\nchat:\n  slack: {enabled: true, channel: C0123, allow_users: [U0123]}\n"
			},
			wantCode: 1,
			want:     []string{"fail  chat       chat slack: slack: SLACK_APP_TOKEN is not set", "SLACK_BOT_TOKEN is not set: run would not start"},
		},
		{
			name: "adapter ready on a GPU machine",
			config: func(dir string) string {
				return adapterConfig(fakePython(t, dir, checkOK, go2Space(t, defaultsGo2)), filepath.Join(dir, "data"))
			},
			wantCode: 0,
			want: []string{"ok    python     ", "Python 3.11.7", "ok    packages   mjlab 1.6.0, torch 2.15.0",
				"ok    task       Unitree-Go2-Flat is registered", "ok    gpus       1 visible: NVIDIA GeForce RTX 5080",
				"ok    defaults   the reward space's defaults match task Unitree-Go2-Flat (16 weights, 14 params)",
				"ok    program    trainer.train and trainer.evaluate start executable files"},
		},
		{
			name: "CPU only and defaults that differ: warnings, still usable",
			config: func(dir string) string {
				d := strings.Replace(defaultsGo2, `"foot_slip": -0.25`, `"foot_slip": -0.1`, 1)
				d = strings.Replace(d, `"stand_still": -1.0, `, ``, 1)
				return adapterConfig(fakePython(t, dir, checkCPU, go2Space(t, d)), filepath.Join(dir, "data"))
			},
			wantCode: 0,
			want: []string{"warn  gpus       none visible: training runs on CPU",
				"warn  defaults   term foot_slip: reward space default -0.25, task default -0.1",
				"warn  defaults   term stand_still: the task has no such term (reward space default -1)"},
			notWant: []string{"fail"},
		},
		{
			name: "missing package and unregistered task",
			config: func(dir string) string {
				return adapterConfig(fakePython(t, dir, checkBad, go2Space(t, defaultsGo2)), filepath.Join(dir, "data"))
			},
			wantCode: 1,
			want: []string{"fail  packages   missing mjlab: pip install -r trainer/mjlab/requirements.txt",
				"fail  task       task Unitree-Go2-Flat is not registered with mjlab: install unitree_rl_mjlab",
				"some checks failed"},
			notWant: []string{"defaults"},
		},
		{
			name: "python not there",
			config: func(dir string) string {
				return adapterConfig(filepath.Join(dir, "venv", "bin", "python"), filepath.Join(dir, "data"))
			},
			wantCode: 1,
			want: []string{"fail  python", "is not an executable file: create the venv with scripts/mjlab-venv.sh",
				`fail  program    trainer.train: the trainer executable "`, `/venv/bin/python" ({python}, trainer.python) does not exist: every trial would fail at once`,
				`fail  program    trainer.evaluate: the trainer executable "`},
		},
		{
			// Every trial would fail at once on such a template: doctor names each and its path.
			name: "template programs not there",
			config: func(dir string) string {
				return "data_dir: " + filepath.Join(dir, "data") + "\nsession: {fallback: true}\n" + `trainer:
  workdir: ` + dir + `
  python: ` + fakePython(t, dir, checkOK, go2Space(t, defaultsGo2)) + `
  train: ["python3.11-not-installed", "train.py", "--reward-config", "{reward_config}", "--iterations", "{iterations}"]
  evaluate: ["bin/eval", "--checkpoint", "{checkpoint}", "--output", "{eval_output}"]
`
			},
			wantCode: 1,
			want: []string{`fail  program    trainer.train: the trainer executable "python3.11-not-installed" was not found on PATH: every trial would fail at once`,
				`fail  program    trainer.evaluate: the trainer executable "`, `/bin/eval" does not exist: every trial would fail at once`},
		},
		{
			name: "data dir not writable",
			config: func(dir string) string {
				return "data_dir: /proc/tunebot-doctor\n"
			},
			wantCode: 1,
			want:     []string{"fail  data dir   /proc/tunebot-doctor cannot be created"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "tunebot.yaml")
			if err := os.WriteFile(cfg, []byte(tc.config(dir)), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
			code := dispatch(context.Background(), e, []string{"doctor", "--config", cfg})
			out := stdout.String()
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

// Which trainer makes a preset is recorded on it: the built-in sim, the mjlab adapter, or
// any other command (issue 28, item 4).
func TestTrainerKind(t *testing.T) {
	sim := config.Default().Trainer
	mjlab := config.TrainerConfig{Train: []string{"{python}", "-m", adapterModule, "train"}, Evaluate: []string{"{python}", "-m", adapterModule, "evaluate"}}
	other := config.TrainerConfig{Train: []string{"./train.sh"}, Evaluate: []string{"./eval.sh"}}
	for _, tc := range []struct {
		t    config.TrainerConfig
		want string
	}{{sim, session.TrainerSim}, {mjlab, session.TrainerMjlab}, {other, session.TrainerCommand}} {
		if got := trainerKind(tc.t); got != tc.want {
			t.Errorf("trainerKind(%v) = %q, want %q", tc.t.Train, got, tc.want)
		}
	}
}
