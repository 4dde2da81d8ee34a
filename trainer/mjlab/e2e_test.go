// Package mjlab_test runs a whole tunebot session against the real mjlab adapter
// (trainer/mjlab/tunebot_mjlab): real training, checkpoints, ONNX export and evaluation of
// mjlab's Go1 flat task on CPU. It needs the adapter's venv and skips without it; `make
// test-mjlab` builds the venv and sets TUNEBOT_MJLAB_VENV.
package mjlab_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// go1Config is a tunebot config for mjlab's Go1 flat task after its trainer section
// (trainer.yaml, the adapter's templates): job timeouts, the session and a reward space whose
// defaults are what `--print-defaults` prints for the installed task (Go1 has no foot_gait or
// stand_still; is_terminated, joint_acc_l2 and electrical_power are off by default and added
// from mjlab's functions when a proposal switches them on).
const go1Config = `  job_timeout: 20m
  eval_timeout: 20m
session:
  task: Mjlab-Velocity-Flat-Unitree-Go1
  tasks: [Mjlab-Velocity-Flat-Unitree-Go1]
  trial_count: 4
  rungs: [2, 3, 4]
  promote: [4, 3, 3]
  num_envs: 4
  eval_num_envs: 5
  eval_steps: 20
  eval_seeds: [0]
  final_eval_seeds: [1, 2]
  early_stop_patience: 4
  control: true
reward_space:
  max_changes: 4
  step_min: 0.5
  step_max: 2.0
  terms:
    - {name: track_linear_velocity, default: 2.0, min: 1.0, max: 4.0, may_be_zero: false}
    - {name: track_angular_velocity, default: 2.0, min: 0.5, max: 4.0, may_be_zero: false}
    - {name: body_orientation_l2, default: -1.0, min: -3.0, max: -0.1, may_be_zero: false}
    - {name: pose, default: 1.0, min: 0, max: 2.5, may_be_zero: true}
    - {name: body_ang_vel, default: 0, min: -0.2, max: 0, may_be_zero: true}
    - {name: angular_momentum, default: 0, min: -0.1, max: 0, may_be_zero: true}
    - {name: is_terminated, default: 0, min: -400, max: 0, may_be_zero: true}
    - {name: joint_acc_l2, default: 0, min: -2.0e-6, max: 0, may_be_zero: true}
    - {name: joint_pos_limits, default: -1.0, min: -30, max: -0.5, may_be_zero: false}
    - {name: action_rate_l2, default: -0.1, min: -0.4, max: -0.005, may_be_zero: false}
    - {name: foot_clearance, default: -2.0, min: -4.0, max: 0, may_be_zero: true}
    - {name: foot_slip, default: -0.1, min: -1.0, max: 0, may_be_zero: true}
    - {name: soft_landing, default: -1.0e-5, min: -5.0e-3, max: 0, may_be_zero: true}
    - {name: electrical_power, default: 0, min: -5.0e-3, max: 0, may_be_zero: true}
  params:
    - {name: track_linear_velocity.std, default: 0.5, min: 0.25, max: 1.0}
    - {name: track_angular_velocity.std, default: 0.7071067812, min: 0.35, max: 1.2}
    - {name: pose.std_standing_scale, default: 1.0, min: 0.5, max: 2.0}
    - {name: pose.std_walking_scale, default: 1.0, min: 0.5, max: 2.0}
    - {name: pose.std_running_scale, default: 1.0, min: 0.5, max: 2.0}
    - {name: pose.walking_threshold, default: 0.05, min: 0.05, max: 0.5}
    - {name: pose.running_threshold, default: 1.5, min: 1.0, max: 2.5}
    - {name: foot_clearance.target_height, default: 0.1, min: 0.06, max: 0.16}
    - {name: foot_clearance.command_threshold, default: 0.05, min: 0.02, max: 0.30}
    - {name: foot_slip.command_threshold, default: 0.05, min: 0.02, max: 0.30}
  orders:
    - {lower: pose.walking_threshold, upper: pose.running_threshold}
`

// summary is the part of `tunebot tune --json` this test reads.
type summary struct {
	Session  string `json:"session"`
	State    string `json:"state"`
	Preset   string `json:"preset"`
	Reason   string `json:"reason"`
	Outcome  string `json:"outcome"`
	Headline string `json:"headline"`
	Trials   []struct {
		Number     int                `json:"number"`
		Rung       int                `json:"rung"`
		Iterations int                `json:"iterations"`
		State      string             `json:"state"`
		Score      *float64           `json:"score"`
		Metrics    map[string]float64 `json:"metrics"`
		Reason     string             `json:"reason"`
		Clip       *string            `json:"clip"`
		ClipNote   string             `json:"clip_note"`
		Final      *struct {
			Seeds []int `json:"seeds"`
		} `json:"final"`
	} `json:"trials"`
}

func venvPython(t *testing.T) string {
	t.Helper()
	venv := os.Getenv("TUNEBOT_MJLAB_VENV")
	if venv == "" {
		t.Skip("TUNEBOT_MJLAB_VENV is not set: run `make test-mjlab` to build the adapter's venv and run this test")
	}
	py := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("TUNEBOT_MJLAB_VENV=%s has no bin/python: %v", venv, err)
	}
	return py
}

func buildTunebot(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tunebot")
	out, err := exec.Command("go", "build", "-o", bin, "tunebot/cmd/tunebot").CombinedOutput()
	if err != nil {
		t.Fatalf("building tunebot: %v\n%s", err, out)
	}
	return bin
}

// TestTuneSessionWithRealMjlab runs `tunebot tune` with 4 trials (every eligible one promoted) and rungs of 2, 3 and 4
// iterations against the adapter: every trial must train, resume, export, evaluate and
// render its clip (OSMesa, on CPU) for real, and the session must end with a preset.
func TestTuneSessionWithRealMjlab(t *testing.T) {
	py := venvPython(t)
	bin := buildTunebot(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tunebot.yaml")
	section, err := os.ReadFile("trainer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("data_dir: data\n"+string(section)+go1Config), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "tune", "--config", cfg, "--fallback", "--json")
	// The adapter picks MuJoCo's OpenGL backend itself: OSMesa here, as there is no GPU.
	cmd.Env = append(withoutEnv(os.Environ(), "MUJOCO_GL"), "TUNEBOT_MJLAB_PYTHON="+py, "DEEPSEEK_API_KEY=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tune: %v\nstderr:\n%s\nstdout:\n%s", err, tail(stderr.String()), tail(stdout.String()))
	}
	out := stdout.String()
	i := strings.LastIndex(out, "\n{\n")
	var sum summary
	if err := json.Unmarshal([]byte(out[i+1:]), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, tail(out))
	}
	// What a 4-iteration training comes to is up to the simulation: a preset, or (honestly)
	// nothing beat the baseline, and then none is saved.
	if sum.State != "succeeded" || (sum.Preset == "") != (sum.Outcome == "no_improvement") {
		t.Fatalf("session ended %s, outcome %q (preset %q, reason %q): %s\n%s", sum.State, sum.Outcome, sum.Preset, sum.Reason, sum.Headline, tail(out))
	}
	// The top rung's choice and the baseline beside it were measured by the adapter's own
	// evaluation on the fresh seeds 1 and 2, never the evaluation seed 0 that chose.
	measured := 0
	for _, tr := range sum.Trials {
		if tr.Final != nil {
			measured++
			if fmt.Sprint(tr.Final.Seeds) != "[1 2]" || tr.Rung != 2 {
				t.Errorf("trial %d@%d measured on seeds %v, want rung 2's choice on [1 2]", tr.Number, tr.Rung, tr.Final.Seeds)
			}
		}
	}
	if measured < 2 {
		t.Errorf("%d trials measured on the fresh seeds, want the top rung's choice and the baseline (%s)", measured, sum.Headline)
	}
	perRung := map[int]int{}
	for _, tr := range sum.Trials {
		perRung[tr.Rung]++
		if tr.State != "completed" || tr.Score == nil || len(tr.Metrics) != 7 {
			t.Errorf("trial %d@%d: state %s, reason %q, metrics %v", tr.Number, tr.Rung, tr.State, tr.Reason, tr.Metrics)
		}
		if want := []int{2, 3, 4}[tr.Rung]; tr.Iterations != want {
			t.Errorf("trial %d@%d: %d iterations, want %d", tr.Number, tr.Rung, tr.Iterations, want)
		}
	}
	// Which proposals stay eligible after 2 iterations is up to the sampler and the
	// simulation; the baseline is promoted along every rung (control), so both resumes run.
	if perRung[0] != 4 || perRung[1] < 1 || perRung[1] > 4 || perRung[2] < 1 || perRung[2] > 4 {
		t.Errorf("trials per rung %v, want 4 at rung 0 and the baseline plus up to 3/3 promoted", perRung)
	}
	checkClips(t, py, sum)
	// The baseline resumed its own checkpoint at each rung and reached that rung's target.
	sess := filepath.Join(dir, "data", "sessions", sum.Session)
	for run, files := range map[string][]string{
		"trial-000-rung-1": {"model_2.pt", "policy.onnx", "evaluation.json", "reward_config.json"},
		"trial-000-rung-2": {"model_3.pt", "policy.onnx", "evaluation.json", "reward_config.json"},
	} {
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(sess, run, f)); err != nil {
				t.Errorf("%s: %v", run, err)
			}
		}
	}
}

// checkClips decodes every trial's clip with the venv's ffmpeg (imageio-ffmpeg's): each
// is an H.264 MP4 of 5 s at 30 frames a second, 480×360, with its poster frame, and two
// different policies (the baseline and trial 1, both at rung 0) walk differently.
func checkClips(t *testing.T, py string, sum summary) {
	t.Helper()
	out, err := exec.Command(py, "-c", "import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())").Output()
	if err != nil {
		t.Fatalf("finding the venv's ffmpeg: %v", err)
	}
	ffmpeg := strings.TrimSpace(string(out))
	const w, h, frames = 480, 360, 150
	decoded := map[string][32]byte{}
	for _, tr := range sum.Trials {
		ref := fmt.Sprintf("trial %d@%d", tr.Number, tr.Rung)
		if tr.Clip == nil {
			t.Errorf("%s has no clip: %s", ref, tr.ClipNote)
			continue
		}
		if !strings.HasSuffix(*tr.Clip, "clip.mp4") {
			t.Errorf("%s's clip is %s, want an MP4", ref, *tr.Clip)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(*tr.Clip), "clip-poster.png")); err != nil {
			t.Errorf("%s has no poster frame: %v", ref, err)
		}
		var raw, stderr bytes.Buffer
		dec := exec.Command(ffmpeg, "-v", "error", "-i", *tr.Clip, "-f", "rawvideo", "-pix_fmt", "rgb24", "-")
		dec.Stdout, dec.Stderr = &raw, &stderr
		if err := dec.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("%s's clip does not decode: %v %s", ref, err, stderr.String())
			continue
		}
		if raw.Len() != frames*w*h*3 {
			t.Errorf("%s's clip decodes to %d bytes, want %d frames of %d×%d", ref, raw.Len(), frames, w, h)
		}
		decoded[fmt.Sprintf("%d@%d", tr.Number, tr.Rung)] = sha256.Sum256(raw.Bytes())
	}
	if a, b := decoded["0@0"], decoded["1@0"]; a == b {
		t.Error("the baseline's and trial 1's clips are the same video: two policies should walk differently")
	}
}

func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func tail(s string) string {
	if len(s) > 6000 {
		return "…" + s[len(s)-6000:]
	}
	return s
}
