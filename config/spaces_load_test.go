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
	cfg, err := config.Load(filepath.Join("..", "config.example.yaml"), func(string) string { return "x" })
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
