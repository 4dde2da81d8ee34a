package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// config check names what makes a task run: a session.task the installation does not list
// points at session.tasks and reward_spaces, and sim templates that do not pass
// {reward_space} while a task's space is not the built-in one are named before a job fails.
func TestConfigCheckNamesWhatATaskNeeds(t *testing.T) {
	g1 := readFile(t, filepath.Join("testdata", "spaces", "g1.yaml"))
	oldTrain := `trainer:
  train: ["{tunebot}", "sim-train", "--task", "{task}", "--run-dir", "{run_dir}", "--reward-config", "{reward_config}", "--iterations", "{iterations}", "--target-iterations", "{target_iterations}", "--start-iteration", "{start_iteration}"]
`
	for _, tc := range []struct {
		name, body string
		want       []string // "" for ok
	}{
		{"a task session.tasks lacks, its space pasted",
			"data_dir: d\nsession:\n  task: " + g1Task + "\n" + g1,
			[]string{`line 3: session.task: "` + g1Task + `" is not supported (supported: [Unitree-Go2-Flat]); list it in session.tasks (the tasks this installation runs, with its reward_space), or give each task its space under reward_spaces`}},
		{"a task with no space at all",
			"data_dir: d\nsession:\n  task: " + g1Task + "\n",
			[]string{"list it in session.tasks and paste its space as reward_space (`tunebot space --task " + g1Task + "` prints one), or give each task its space under reward_spaces"}},
		{"the default templates pass the space",
			"data_dir: d\nsession:\n  task: " + g1Task + "\n  tasks: [" + g1Task + "]\n" + g1, nil},
		{"older sim templates without the space",
			"data_dir: d\nsession:\n  task: " + g1Task + "\n  tasks: [" + g1Task + "]\n" + oldTrain + g1,
			[]string{`trainer.train: the built-in sim trainer is not told the reward space of task ` + g1Task + ` (its names are not the built-in Go2 space's), so its first job would fail: add "--reward-space", "{reward_space}" to trainer.train and trainer.evaluate`}},
		{"older sim templates on the built-in space", "data_dir: d\n" + oldTrain, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tunebot.yaml")
			if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errb := runCmd("config", "check", "--config", path)
			if tc.want == nil {
				if code != 0 || out != path+": ok\n" {
					t.Fatalf("exit %d\n%s%s", code, out, errb)
				}
				return
			}
			_, probs, _ := strings.Cut(errb, "\n")
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s%s", code, out, errb)
			}
			wantLines(t, probs, "  - ", tc.want...)
		})
	}
}
