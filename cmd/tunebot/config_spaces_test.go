package main

import (
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tunebot/config"
	"tunebot/session"
)

// g1Space and go1Space are the checked-in spaces of mjlab's G1 and Go1 flat tasks.
var (
	g1Space  = filepath.Join("testdata", "spaces", "g1.yaml")
	go1Space = filepath.Join("testdata", "spaces", "go1.yaml")
)

// loadSpaces loads a config of body (with a data_dir) written into a fresh directory that
// also holds the files of extra (name → content).
func loadSpaces(t *testing.T, body string, extra map[string]string) (config.Config, error) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range extra {
		put(t, filepath.Join(dir, name), content)
	}
	return config.Load(writeConfig(t, dir, "data_dir: data\n"+body), func(string) string { return "" })
}

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

func indent(s, by string) string { return strings.ReplaceAll(s, "\n", "\n"+by) }

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
	cfg, err := config.Load(filepath.Join("..", "..", "config.example.yaml"), func(string) string { return "x" })
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

// A start that names no task while several are configured, or one that is not configured,
// is refused with the configured tasks (docs/design.md §1).
func TestStartNamesAConfiguredTask(t *testing.T) {
	cfg, err := loadSpaces(t, "reward_spaces:\n  Mjlab-Velocity-Flat-Unitree-G1: {file: g1.yaml}\n  Mjlab-Velocity-Flat-Unitree-Go1: {file: go1.yaml}\n",
		map[string]string{"g1.yaml": readFile(t, g1Space), "go1.yaml": readFile(t, go1Space)})
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		"mode=approval":                        "task: none given, and several tasks are configured (Mjlab-Velocity-Flat-Unitree-G1, Mjlab-Velocity-Flat-Unitree-Go1): name one (e.g. Mjlab-Velocity-Flat-Unitree-G1)",
		"task=Unitree-Go2-Flat":                `task: "Unitree-Go2-Flat" is not supported (supported: [Mjlab-Velocity-Flat-Unitree-G1 Mjlab-Velocity-Flat-Unitree-Go1])`,
		"task=Mjlab-Velocity-Flat-Unitree-Go1": "",
	} {
		st, err := startSettings(args, cfg.Session, cfg.NamesSpace())
		if err == nil {
			err = st.Validate()
		}
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", args, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want %q", args, err, want)
		}
	}
}

// twoTasks writes a config of the G1 and Go1 spaces with no default task into a fresh dir,
// and a file setting a G1-only weight (self_collisions -1.5).
func twoTasks(t *testing.T) (dir, cfg, file string) {
	t.Helper()
	dir = t.TempDir()
	put(t, filepath.Join(dir, "g1.yaml"), readFile(t, g1Space))
	put(t, filepath.Join(dir, "go1.yaml"), readFile(t, go1Space))
	file = filepath.Join(dir, "patch.json")
	put(t, file, `{"weights": {"self_collisions": -1.5}}`)
	cfg = writeConfig(t, dir, "data_dir: data\nreward_spaces:\n  Mjlab-Velocity-Flat-Unitree-G1: {file: g1.yaml}\n  Mjlab-Velocity-Flat-Unitree-Go1: {file: go1.yaml}\n")
	return dir, cfg, file
}

// proposal check takes the space of --task (default session.task), and names the tasks
// when there is no default.
func TestProposalCheckOfATask(t *testing.T) {
	dir, cfg, patch := twoTasks(t)
	for _, tc := range []struct {
		task string
		code int
		want string
	}{
		{"Mjlab-Velocity-Flat-Unitree-G1", 0, `"self_collisions": -1.5`},
		{"Mjlab-Velocity-Flat-Unitree-Go1", 1, "self_collisions"},
		{"", 2, "several tasks are configured (Mjlab-Velocity-Flat-Unitree-G1, Mjlab-Velocity-Flat-Unitree-Go1) and session.task names no default: give --task TASK"},
		{"Unitree-Go2-Flat", 2, "--task Unitree-Go2-Flat is not a task of the config (session.tasks: Mjlab-Velocity-Flat-Unitree-G1, Mjlab-Velocity-Flat-Unitree-Go1)"},
	} {
		code, out, errb := runCmd("proposal", "check", "--config", cfg, "--task", tc.task, patch)
		if code != tc.code || !strings.Contains(out+errb, tc.want) {
			t.Errorf("--task %q: exit %d, want %d with %q\n%s%s", tc.task, code, tc.code, tc.want, out, errb)
		}
	}
	// Issue 35 item 8: with one space, a task the config does not list is refused too, not
	// checked against the space of another.
	one := writeConfig(t, t.TempDir(), "data_dir: data\n")
	good := filepath.Join(dir, "good.json")
	put(t, good, `{"weights": {"pose": 2}}`)
	if code, out, errb := runCmd("proposal", "check", "--config", one, "--task", "Mjlab-Velocity-Flat-Unitree-G1", good); code != 2 ||
		!strings.Contains(errb, "--task Mjlab-Velocity-Flat-Unitree-G1 is not a task of the config (session.tasks: Unitree-Go2-Flat)") {
		t.Errorf("a task the config does not list: exit %d\n%s%s", code, out, errb)
	}
	if code, out, errb := runCmd("proposal", "check", "--config", one, "--task", "Unitree-Go2-Flat", good); code != 0 {
		t.Errorf("the config's own task: exit %d\n%s%s", code, out, errb)
	}
}

// TestPresetImportOfATask (issue 35 item 8): with two tasks and no default an import must
// name its task (--task); a task the config does not list is refused; the imported preset
// records its task, and show diffs it against that task's defaults.
func TestPresetImportOfATask(t *testing.T) {
	_, cfg, file := twoTasks(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 1, "several tasks are configured (Mjlab-Velocity-Flat-Unitree-G1, Mjlab-Velocity-Flat-Unitree-Go1) and session.task names no default: give --task TASK"},
		{[]string{"--task", "Unitree-Go2-Flat"}, 1, "--task Unitree-Go2-Flat is not a task of the config"},
		{[]string{"--task", "Mjlab-Velocity-Flat-Unitree-G1"}, 0, "preset g1-walk imported"},
	} {
		code, out, errb := runCmd(append([]string{"preset", "import", "g1-walk", file, "--config", cfg}, tc.args...)...)
		if code != tc.code || !strings.Contains(out+errb, tc.want) {
			t.Errorf("import %v: exit %d, want %d with %q\n%s%s", tc.args, code, tc.code, tc.want, out, errb)
		}
	}
	code, out, errb := runCmd("preset", "show", "g1-walk", "--config", cfg)
	if code != 0 || !strings.Contains(out, "task:      Mjlab-Velocity-Flat-Unitree-G1") || !regexp.MustCompile(`self_collisions +-1 → -1.5`).MatchString(out) {
		t.Errorf("show of the imported preset: exit %d\n%s%s", code, out, errb)
	}
	if code, _, errb := runCmd("preset", "list", "--task", "x", "--config", cfg); code != 2 || !strings.Contains(errb, "--task applies to import only") {
		t.Errorf("--task outside import: exit %d %s", code, errb)
	}
}
