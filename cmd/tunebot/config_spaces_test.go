package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"tunebot/config"
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
