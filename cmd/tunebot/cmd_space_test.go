package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The reward spaces checked in for mjlab's G1 and Go1 flat tasks (trainer/mjlab/spaces),
// as `tunebot space` printed them; testdata/spaces holds copies so this package's tests
// read only their own files.
var spaceFiles = map[string]struct{ task, answer string }{
	"g1.yaml":  {"Mjlab-Velocity-Flat-Unitree-G1", "g1.task.json"},
	"go1.yaml": {"Mjlab-Velocity-Flat-Unitree-Go1", "go1.task.json"},
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// spacePython stands in for the adapter venv's python: it answers
// `-m tunebot_mjlab space --task TASK` with answer, as the real adapter printed it (kept in
// trainer/mjlab/testdata), or fails as Python does when the task is unknown.
func spacePython(t *testing.T, dir, answer string) string {
	t.Helper()
	script := `#!/bin/sh
case "$*" in
  "-m tunebot_mjlab space --task "*) cat '` + answer + `';;
  *) echo "tunebot_mjlab: unexpected: $*" >&2; exit 3;;
esac
`
	p := filepath.Join(dir, "python")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// config check accepts each checked-in space as it is under its own task, and refuses the
// file alone, whose session.task is the default Go2's; the copies in testdata are the
// checked-in files.
func TestSpaceFilesPassConfigCheck(t *testing.T) {
	for name, f := range spaceFiles {
		t.Run(name, func(t *testing.T) {
			copy := filepath.Join("testdata", "spaces", name)
			if readFile(t, copy) != readFile(t, filepath.Join("..", "..", "trainer", "mjlab", "spaces", name)) {
				t.Fatalf("%s differs from trainer/mjlab/spaces/%s: copy it again", copy, name)
			}
			cfg := writeConfig(t, t.TempDir(), "session: {task: "+f.task+", tasks: ["+f.task+"]}\n"+readFile(t, copy))
			code, out, errb := runCmd("config", "check", "--config", cfg)
			if code != 0 || out != cfg+": ok\n" || errb != "" {
				t.Fatalf("config check: exit %d\nstdout: %s\nstderr: %s", code, out, errb)
			}
			code, _, errb = runCmd("config", "check", "--config", copy)
			if code != 1 || !strings.Contains(errb, "reward_space: its names are task "+f.task+"'s") {
				t.Errorf("config check of the file alone: exit %d, want 1 naming task %s\n%s", code, f.task, errb)
			}
		})
	}
}

// tunebot space, given the adapter's answer for the installed task, prints the checked-in
// file byte for byte.
func TestSpacePrintsTheCheckedInFiles(t *testing.T) {
	for name, f := range spaceFiles {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			answer, err := filepath.Abs(filepath.Join("..", "..", "trainer", "mjlab", "testdata", f.answer))
			if err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "tunebot.yaml")
			if err := os.WriteFile(cfg, []byte("trainer:\n  python: "+spacePython(t, dir, answer)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errb := runCmd("space", "--task", f.task, "--config", cfg)
			if code != 0 || errb != "" {
				t.Fatalf("exit %d\nstderr: %s", code, errb)
			}
			if want := readFile(t, filepath.Join("testdata", "spaces", name)); out != want {
				t.Fatalf("tunebot space printed\n%s\nwant (testdata/spaces/%s)\n%s", out, name, want)
			}
		})
	}
}

func TestSpaceRefusals(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"task": "Mjlab-Velocity-Flat-Unitree-G1", "terms": [], "surprise": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "tunebot.yaml")
	if err := os.WriteFile(cfg, []byte("trainer:\n  python: "+spacePython(t, dir, bad)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"space", "--config", cfg}, 2, "tunebot space: --task TASK is required"},
		{[]string{"space", "--task", "Mjlab-Velocity-Flat-Unitree-G1", "--config", cfg}, 1,
			`the adapter's description of task Mjlab-Velocity-Flat-Unitree-G1 is not what tunebot reads: json: unknown field "surprise"`},
		{[]string{"space", "--task", "Other", "--config", cfg}, 1,
			`the adapter's description of task Other is not what tunebot reads: json: unknown field "surprise"`},
	} {
		code, _, errb := runCmd(tc.args...)
		if code != tc.code || !strings.Contains(errb, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errb, tc.code, tc.want)
		}
	}
	if err := os.WriteFile(bad, []byte(`{"task": "Other", "mjlab": "1.6.0", "terms": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errb := runCmd("space", "--task", "Mjlab-Velocity-Flat-Unitree-G1", "--config", cfg)
	if want := `the adapter described task "Other" with 0 reward terms, asked for Mjlab-Velocity-Flat-Unitree-G1`; code != 1 || !strings.Contains(errb, want) {
		t.Errorf("exit %d, stderr %q; want %q", code, errb, want)
	}
}
