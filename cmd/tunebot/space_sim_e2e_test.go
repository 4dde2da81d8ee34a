package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/session"
)

// The done-when of issue 35, item 7: exactly `tunebot space --task
// Mjlab-Velocity-Flat-Unitree-G1` (the adapter's python where scripts/mjlab-venv.sh puts it,
// answering as the real adapter did, trainer/mjlab/testdata), its output pasted under a
// config that names the task, passes config check and runs a whole session on the built-in
// sim with no template edit: every trial trains the G1's 13 terms and none fails.
func TestPrintedSpaceRunsOnTheSim(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole session")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, ".venv", "mjlab", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	answer, err := filepath.Abs(filepath.Join("..", "..", "trainer", "mjlab", "testdata", "g1.task.json"))
	if err != nil {
		t.Fatal(err)
	}
	spacePython(t, bin, answer)
	code, printed, stderr := runBin(t, dir, "space", "--task", g1Task)
	if code != 0 || !strings.Contains(printed, "reward_space:") {
		t.Fatalf("tunebot space --task %s: exit %d\n%s\n%s", g1Task, code, printed, stderr)
	}
	cfg := writeConfig(t, dir, fmt.Sprintf(`data_dir: %s
service: {addr: "off"}
session:
  task: %s
  tasks: [%s]
  trial_count: 6
  early_stop_patience: 6
  fallback: true
`, filepath.Join(dir, "data"), g1Task, g1Task)+printed)
	if code, stdout, stderr := runBin(t, dir, "config", "check", "--config", cfg); code != 0 {
		t.Fatalf("config check: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := runBin(t, dir, "tune", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("tune: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var sum summaryJSON
	lastJSON(t, stdout, &sum)
	if sum.State != session.StateSucceeded || len(sum.Trials) < 6 {
		t.Fatalf("the session on the printed space: state %s (%s), %d trials\n%s", sum.State, sum.Reason, len(sum.Trials), stderr)
	}
	for _, tr := range sum.Trials {
		if tr.State != session.TrialCompleted {
			t.Errorf("trial %d@%d %s: %s", tr.Number, tr.Rung, tr.State, tr.Reason)
		}
		if _, ok := tr.RewardConfig.Weights["upright"]; !ok || len(tr.RewardConfig.Weights) != 13 {
			t.Errorf("trial %d@%d trained %v, want the G1 space's 13 terms", tr.Number, tr.Rung, tr.RewardConfig.Weights)
		}
	}
}

// A failed trial's line says why, from the end of its log, not "exit status 3" alone: on the
// terminal and in the JSON summary (the card and the page show the same reason).
func TestFailedTrialSaysItsLogsEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole session")
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: \"off\"}\nsession:\n  trial_count: 4\n  fallback: true\n", filepath.Join(dir, "data")))
	code, stdout, stderr := runBinEnv(t, []string{"TUNEBOT_SIM_FAIL=exit@trial-001-rung-0"}, "tune", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("tune: exit %d\n%s\n%s", code, stdout, stderr)
	}
	const want = "train job failed: exit status 3; train.log ends: Traceback (most recent call last): ⏎ RuntimeError: sim-train: injected failure (exit) ⏎ tunebot sim-train: injected failure"
	if !strings.Contains(stderr, "] trial 1 @ rung 0 failed: "+want+"\n") {
		t.Errorf("the terminal does not say the failure with its log's end %q:\n%s", want, stderr)
	}
	// Said once, in the terminal's format: no raw slog line beside it (issue 43, item 7.1).
	if n := strings.Count(stderr, "injected failure (exit)"); n != 1 || strings.Contains(stderr, "level=") {
		t.Errorf("the terminal says the failure %d times, or shows a raw log line:\n%s", n, stderr)
	}
	var sum summaryJSON
	lastJSON(t, stdout, &sum)
	failed := 0
	for _, tr := range sum.Trials {
		if tr.State == session.TrialFailed {
			failed++
			if tr.Reason != want {
				t.Errorf("JSON: trial %d@%d's reason %q, want %q", tr.Number, tr.Rung, tr.Reason, want)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d failed trials in the JSON, want 1", failed)
	}
}
