package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/session"
)

func runSimCmd(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}, args)
	return code, out.String(), errb.String()
}

func TestSimCommands(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := json.Marshal(session.DefaultSpace().Defaults())
	rc := filepath.Join(dir, "reward_config.json")
	os.WriteFile(rc, cfg, 0o644)
	run := filepath.Join(dir, "run")
	train := []string{"sim-train", "--task", session.TaskGo2Flat, "--run-dir", run, "--reward-config", rc,
		"--iterations", "4", "--target-iterations", "4", "--start-iteration", "0", "--seed", "1", "--num-envs", "8"}
	out := filepath.Join(run, "evaluation.json")
	eval := []string{"sim-eval", "--task", session.TaskGo2Flat, "--checkpoint", filepath.Join(run, "model_4.pt"),
		"--output", out, "--seeds", "0,1", "--num-envs", "8", "--steps", "10", "--run-dir", run}

	if code, _, stderr := runSimCmd(t, nil, train...); code != 0 {
		t.Fatalf("sim-train exited %d: %s", code, stderr)
	}
	if code, _, stderr := runSimCmd(t, nil, eval...); code != 0 {
		t.Fatalf("sim-eval exited %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(out); err != nil {
		t.Fatal(err)
	} else if _, err := session.DecodeEvaluation(b); err != nil {
		t.Errorf("sim-eval wrote an invalid evaluation: %v", err)
	}

	tests := []struct {
		name string
		vars map[string]string
		args []string
		code int
		want string
	}{
		{"unknown flag", nil, append(train, "--bogus"), 2, "flag provided but not defined"},
		{"stray argument", nil, append(train, "extra"), 2, "unexpected arguments"},
		{"unknown fault", map[string]string{"TUNEBOT_SIM_FAIL": "boom"}, train, 2, "unknown fault mode(s) boom"},
		{"bad step delay", map[string]string{"TUNEBOT_SIM_STEP_DELAY": "soon"}, train, 2, "is not a duration"},
		{"injected exit", map[string]string{"TUNEBOT_SIM_FAIL": "exit"}, train, 3, "injected failure"},
		{"missing config", nil, []string{"sim-train", "--task", "T", "--run-dir", run, "--reward-config", filepath.Join(dir, "none.json"),
			"--iterations", "1", "--target-iterations", "1", "--num-envs", "1"}, 1, "reading reward config"},
		{"bad seeds", nil, []string{"sim-eval", "--task", "T", "--checkpoint", "x", "--output", out, "--seeds", "0,a"}, 2, `"a" is not a non-negative integer`},
		{"missing checkpoint", nil, []string{"sim-eval", "--task", "T", "--checkpoint", filepath.Join(dir, "model_9.pt"), "--output", out}, 1, "reading checkpoint"},
		{"wrong task", nil, append(append([]string{}, eval...), "--task", "Other-Task"), 1, "was trained on Unitree-Go2-Flat, not Other-Task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runSimCmd(t, tt.vars, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.want)
			}
		})
	}
}
