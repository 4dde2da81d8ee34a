package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tunebot/config"
	"tunebot/session"
)

// g1Space and go1Space are the checked-in spaces of mjlab's G1 and Go1 flat tasks.
var (
	g1Space  = filepath.Join("..", "trainer", "mjlab", "spaces", "g1.yaml")
	go1Space = filepath.Join("..", "trainer", "mjlab", "spaces", "go1.yaml")
)

// loadSpaces loads a config of body (with a data_dir) written into a fresh directory that
// also holds the files of extra (name → content).
func loadSpaces(t *testing.T, body string, extra map[string]string) (config.Config, error) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range extra {
		writeFile(t, filepath.Join(dir, name), content)
	}
	return config.Load(writeFile(t, filepath.Join(dir, "tunebot.yaml"), "data_dir: data\n"+body), func(string) string { return "" })
}

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func indent(s, by string) string { return strings.ReplaceAll(s, "\n", "\n"+by) }

// reward_spaces holds a space per task, inline or as a space file next to the config; its
// keys are the tasks sessions may run, and the default task is session.task, the only task,
// or with several none (each start names one).
func TestRewardSpacesLoad(t *testing.T) {
	g1, go1 := readFile(t, g1Space), readFile(t, go1Space)
	files := map[string]string{"g1.yaml": g1, "go1.yaml": go1}
	inline := strings.TrimPrefix(go1[strings.Index(go1, "reward_space:"):], "reward_space:")
	for _, tc := range []struct {
		name, body string
		task       string
	}{
		{"two files, no default", "reward_spaces:\n  Mjlab-Velocity-Flat-Unitree-G1: {file: g1.yaml}\n  Mjlab-Velocity-Flat-Unitree-Go1: {file: go1.yaml}\n", ""},
		{"a file and an inline space, a default", "session: {task: Mjlab-Velocity-Flat-Unitree-Go1}\nreward_spaces:\n  Mjlab-Velocity-Flat-Unitree-G1: {file: g1.yaml}\n  Mjlab-Velocity-Flat-Unitree-Go1:" + indent(inline, "  ") + "\n", "Mjlab-Velocity-Flat-Unitree-Go1"},
		{"one task is the default", "reward_spaces:\n  Mjlab-Velocity-Flat-Unitree-G1: {file: g1.yaml}\n", "Mjlab-Velocity-Flat-Unitree-G1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadSpaces(t, tc.body, files)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Session.Task != tc.task {
				t.Errorf("default task %q, want %q", cfg.Session.Task, tc.task)
			}
			if !slices.Equal(cfg.Session.Tasks, cfg.Tasks()) || len(cfg.Session.Tasks) == 0 {
				t.Errorf("session.tasks %v, want the keys of reward_spaces %v", cfg.Session.Tasks, cfg.Tasks())
			}
			for _, task := range cfg.Tasks() {
				sp := cfg.SpaceOf(task)
				want := map[string]string{"Mjlab-Velocity-Flat-Unitree-G1": "self_collisions", "Mjlab-Velocity-Flat-Unitree-Go1": "foot_slip"}[task]
				if _, ok := sp.Term(want); !ok || sp.Check() != nil {
					t.Errorf("task %s: its space lacks %s or fails its check", task, want)
				}
			}
			if _, ok := cfg.SpaceOf("Mjlab-Velocity-Flat-Unitree-G1").Term("self_collisions"); !ok {
				t.Error("the G1's space is not the G1 file's")
			}
		})
	}
}

// config check names the task of every problem in reward_spaces: a space that fails its
// check, a file that is missing or not a space file, both forms at once, and reward_space
// set beside reward_spaces.
func TestRewardSpacesProblemsNameTheTask(t *testing.T) {
	files := map[string]string{"g1.yaml": readFile(t, g1Space), "junk.yaml": "reward_space:\n  terms: []\n  colour: red\n", "empty.yaml": "# nothing yet\n", "other.yaml": "session: {}\n"}
	body := `reward_space: {max_changes: 4}
session: {task: Mjlab-Velocity-Flat-Unitree-G1}
reward_spaces:
  Mjlab-Velocity-Flat-Unitree-G1: {file: g1.yaml}
  Task-Bad-Bounds:
    max_changes: 4
    step_min: 0.5
    step_max: 2
    terms: [{name: upright, default: 1, min: 2, max: 0.5}]
  Task-Missing: {file: nope.yaml}
  Task-Junk: {file: junk.yaml}
  Task-Empty: {file: empty.yaml}
  Task-Both: {file: g1.yaml, max_changes: 4}
  Task-Other: {file: other.yaml}
`
	_, err := loadSpaces(t, body, files)
	var ie *session.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("want the problems named, got %v", err)
	}
	text := strings.Join(ie.Problems, "\n") + "\n"
	for _, w := range []string{
		"reward_space: set together with reward_spaces",
		"reward_spaces.Task-Bad-Bounds.term upright: bounds [2, 0.5] are not an interval",
		"reward_spaces.Task-Missing.file: ",
		"nope.yaml does not exist",
		"reward_spaces.Task-Junk.file: junk.yaml is not a space file",
		"colour",
		"reward_spaces.Task-Empty.file: empty.yaml holds no reward_space block",
		"reward_spaces.Task-Both: give either file or the space's own keys",
		"reward_spaces.Task-Other.file: other.yaml is not a space file (a reward_space block, as tunebot space prints it): line 1: field session not found\n",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("problems lack %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, "Mjlab-Velocity-Flat-Unitree-G1") || strings.Contains(text, "Task-Both.step") {
		t.Errorf("the good task is named among the problems:\n%s", text)
	}
}

// The example config and a config of the one reward_space load as before: no tasks of
// their own, session.task the default, the space the one given.
func TestOneRewardSpaceLoadsAsBefore(t *testing.T) {
	cfg, err := config.Load(filepath.Join("..", "config.example.yaml"), func(string) string { return "x-set-by-the-test" })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Session.Task != session.TaskGo2Flat || len(cfg.Spaces) != 0 || cfg.SpaceOf(cfg.Session.Task) == nil {
		t.Errorf("config.example.yaml: task %q, %d spaces", cfg.Session.Task, len(cfg.Spaces))
	}
	one, err := loadSpaces(t, "session: {task: Mjlab-Velocity-Flat-Unitree-Go1, tasks: [Mjlab-Velocity-Flat-Unitree-Go1]}\n"+readFile(t, go1Space), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := one.SpaceOf("anything").Term("upright"); !ok || one.EngineSpace() != one.Space || one.TaskSpaces() != nil {
		t.Error("a config of one reward_space does not serve it for every session")
	}
}

// A space whose names are clearly another known task's (a checked-in space, the built-in Go2
// names) is refused when it is keyed by a known task it does not fit, naming both tasks, since
// its sessions would ship presets labelled with the wrong task. A space that fits its task
// (the Go1 table reads the Go2 names; a trimmed space), one of unknown names, and one keyed
// by a task tunebot does not know load; one that fits but is exactly another's is a warning.
func TestSpaceOfAnotherTask(t *testing.T) {
	const (
		g1task  = "Mjlab-Velocity-Flat-Unitree-G1"
		go1task = "Mjlab-Velocity-Flat-Unitree-Go1"
	)
	g1, go1 := readFile(t, g1Space), readFile(t, go1Space)
	files := map[string]string{"g1.yaml": g1, "go1.yaml": go1}
	// The G1's space cut down to its velocity terms and two penalties only it and the Go1 have.
	trimmedG1 := "reward_space:\n  max_changes: 2\n  step_min: 0.5\n  step_max: 2.0\n  terms:\n" +
		"    - {name: track_linear_velocity, default: 2.0, min: 1.0, max: 4.0}\n" +
		"    - {name: track_angular_velocity, default: 2.0, min: 1.0, max: 4.0}\n" +
		"    - {name: upright, default: 1.0, min: 0.5, max: 2.0}\n" +
		"    - {name: dof_pos_limits, default: -1.0, min: -2.0, max: -0.5}\n"
	unknown := "reward_space:\n  max_changes: 2\n  step_min: 0.5\n  step_max: 2.0\n  terms:\n" +
		"    - {name: arm_swing, default: 1.0, min: 0.5, max: 2.0}\n    - {name: tail_wag, default: -1.0, min: -2.0, max: -0.5}\n"
	go2Names := "session: {task: " + go1task + ", tasks: [" + go1task + "]}\n" // the built-in space under Go1
	for _, tc := range []struct {
		name, body string
		want       []string // the problem's words; none: it loads
		warn       string
	}{
		{name: "the G1's space pasted as reward_space under Go2", body: g1,
			want: []string{"reward_space: its names are task " + g1task + "'s (the same names as trainer/mjlab/spaces/g1.yaml)", "not task Unitree-Go2-Flat's, which session.task names", "set session.task"}},
		{name: "a trimmed G1 space under Go2", body: trimmedG1,
			want: []string{"reward_space: its names are task " + g1task + "'s (all 4 of its names are in trainer/mjlab/spaces/g1.yaml)", "not task Unitree-Go2-Flat's"}},
		{name: "the G1's file keyed by Go2", body: "reward_spaces:\n  Unitree-Go2-Flat: {file: g1.yaml}\n",
			want: []string{"reward_spaces.Unitree-Go2-Flat: its names are task " + g1task + "'s", "not task Unitree-Go2-Flat's, the task it is keyed by", "key it by " + g1task}},
		{name: "the G1's file keyed by Go1", body: "reward_spaces:\n  " + go1task + ": {file: g1.yaml}\n  " + g1task + ": {file: g1.yaml}\n",
			want: []string{"reward_spaces." + go1task + ": its names are task " + g1task + "'s", "not task " + go1task + "'s"}},
		{name: "the built-in space under G1", body: "session: {task: " + g1task + ", tasks: [" + g1task + "]}\n",
			want: []string{"reward_space: not set, so task " + g1task + " (session.task) is tuned in the built-in space, whose names are task Unitree-Go2-Flat's", "`tunebot space --task " + g1task + "`"}},
		{name: "the G1's space under G1", body: "session: {task: " + g1task + ", tasks: [" + g1task + "]}\n" + g1},
		{name: "the trimmed space under G1", body: "session: {task: " + g1task + ", tasks: [" + g1task + "]}\n" + trimmedG1},
		{name: "the built-in space under Go1, whose table reads it", body: go2Names},
		{name: "both checked-in files under their tasks", body: "reward_spaces:\n  " + g1task + ": {file: g1.yaml}\n  " + go1task + ": {file: go1.yaml}\n"},
		{name: "the G1's space under a task tunebot does not know", body: "reward_spaces:\n  Mjlab-Velocity-Rough-Unitree-G1: {file: g1.yaml}\n"},
		{name: "names nobody knows under Go2", body: unknown},
		{name: "the Go1's space under G1: it fits, but is exactly the Go1's", body: "reward_spaces:\n  " + g1task + ": {file: go1.yaml}\n",
			warn: "reward_spaces." + g1task + ": it has the same names as trainer/mjlab/spaces/go1.yaml, task " + go1task + "'s space"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadSpaces(t, tc.body, files)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				warnings := strings.Join(cfg.Warnings, "\n")
				if tc.warn == "" && warnings != "" || !strings.Contains(warnings, tc.warn) {
					t.Errorf("warnings %q, want %q", warnings, tc.warn)
				}
				return
			}
			var ie *session.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("want the space refused, got %v", err)
			}
			text := strings.Join(ie.Problems, "\n")
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("problems lack %q:\n%s", w, text)
				}
			}
		})
	}
}
