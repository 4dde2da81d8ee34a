package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// taskPython is a fake adapter python that answers check and space for each task of
// answers (task → the adapter's space answer), and refuses any other task.
func taskPython(t *testing.T, dir string, answers map[string]string) string {
	t.Helper()
	script := "#!/bin/sh\ncase \"$*\" in\n  --version) echo \"Python 3.11.7\";;\n"
	i := 0
	for task, answer := range answers {
		i++
		check := `{"packages": {"mjlab": "1.6.0"}, "missing": [], "task": "` + task + `", "registered": true, "error": "", "gpus": []}`
		for name, body := range map[string]string{"check": check, "space": answer} {
			f := filepath.Join(dir, name+string(rune('0'+i))+".json")
			if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			script += "  *\" " + name + " --task " + task + "\"*) cat \"" + f + "\";;\n"
		}
	}
	script += "  *) echo \"unexpected: $*\" >&2; exit 3;;\nesac\n"
	p := filepath.Join(dir, "python")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// doctor compares every configured task's space with the installed task (issue 30, item
// 7): with reward_spaces of the G1 and the Go1, each task is checked as registered and its
// own space compared in its own names, each line naming its task.
func TestDoctorEveryConfiguredTask(t *testing.T) {
	const g1, go1 = "Mjlab-Velocity-Flat-Unitree-G1", "Mjlab-Velocity-Flat-Unitree-Go1"
	answers := map[string]string{}
	for task, file := range map[string]string{g1: "g1.task.json", go1: "go1.task.json"} {
		answers[task] = readFile(t, filepath.Join("..", "..", "trainer", "mjlab", "testdata", file))
	}
	dir := t.TempDir()
	// The Go1's space moves one default; the G1's is the checked-in file as it is.
	put(t, filepath.Join(dir, "g1.yaml"), readFile(t, filepath.Join("testdata", "spaces", "g1.yaml")))
	put(t, filepath.Join(dir, "go1.yaml"), strings.Replace(readFile(t, filepath.Join("testdata", "spaces", "go1.yaml")),
		"{name: upright, default: 1.0,", "{name: upright, default: 1.5,", 1))
	body := adapterConfig(taskPython(t, dir, answers), filepath.Join(dir, "data")) +
		"reward_spaces:\n  " + g1 + ": {file: g1.yaml}\n  " + go1 + ": {file: go1.yaml}\n"
	cfg := writeConfig(t, dir, body)
	code, out, errb := runCmd("doctor", "--config", cfg)
	if code != 0 {
		t.Errorf("exit %d, want 0 (only warnings)\n%s\n%s", code, out, errb)
	}
	for _, w := range []string{
		"valid (tasks " + g1 + ", " + go1 + ")",
		"ok    task " + g1 + " " + g1 + " is registered",
		"ok    task " + go1 + " " + go1 + " is registered",
		"warn  defaults " + g1 + " term air_time: the task has it (0) but the reward space does not",
		"warn  defaults " + go1 + " term upright: reward space default 1.5, task default 1",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "defaults "+g1+" term upright") {
		t.Errorf("the Go1's moved default is said of the G1:\n%s", out)
	}
}

func put(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
