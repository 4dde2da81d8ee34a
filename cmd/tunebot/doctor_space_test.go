package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// g1Config is an mjlab config for the G1 flat task with the given reward_space block.
func g1Config(python, dataDir, space string) string {
	c := strings.Replace(adapterConfig(python, dataDir), "session: {fallback: true}",
		"session: {fallback: true, task: Mjlab-Velocity-Flat-Unitree-G1, tasks: [Mjlab-Velocity-Flat-Unitree-G1]}", 1)
	return c + space
}

// doctor compares a space in the task's own names with the installed task's own terms: the
// checked-in G1 space matches (only the term it leaves out is said), and a space naming what
// the task lacks fails by name.
func TestDoctorOwnNames(t *testing.T) {
	answer, err := filepath.Abs(filepath.Join("..", "..", "trainer", "mjlab", "testdata", "g1.task.json"))
	if err != nil {
		t.Fatal(err)
	}
	check := `{"packages": {"mjlab": "1.6.0"}, "missing": [], "task": "Mjlab-Velocity-Flat-Unitree-G1", "registered": true, "error": "", "gpus": []}`
	g1 := readFile(t, filepath.Join("testdata", "spaces", "g1.yaml"))
	for _, tc := range []struct {
		name    string
		space   string
		code    int
		want    []string
		notWant []string
	}{
		{
			name:  "the checked-in space",
			space: g1,
			want: []string{
				"warn  defaults   term air_time: the task has it (0) but the reward space does not, so it is never tuned",
			},
			notWant: []string{"fail", "air_time.threshold_min", "ok    defaults"},
		},
		{
			name: "terms and params the task lacks, and a default that differs",
			space: strings.NewReplacer(
				"{name: upright, default: 1.0,", "{name: upright, default: 1.5,",
				"name: self_collisions,", "name: stand_still,",
				"name: upright.std,", "name: pose.std_walking,",
			).Replace(g1),
			code: 1,
			want: []string{
				"fail  defaults   term stand_still: task Mjlab-Velocity-Flat-Unitree-G1 has no reward term of that name, so every train job refuses it; `tunebot space --task Mjlab-Velocity-Flat-Unitree-G1` prints the task's own terms",
				"fail  defaults   param pose.std_walking: task Mjlab-Velocity-Flat-Unitree-G1 has no scalar param of that name",
				"warn  defaults   term upright: reward space default 1.5, task default 1; the baseline differs",
				"warn  defaults   term self_collisions: the task has it (-1) but the reward space does not, so it is never tuned",
				"warn  defaults   param upright.std: the task has it (0.4472135955) but the reward space does not",
			},
			notWant: []string{"param self_collisions.force_threshold: the task has it"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writeConfig(t, dir, g1Config(fakePython(t, dir, check, readFile(t, answer)), filepath.Join(dir, "data"), tc.space))
			code, out, errb := runCmd("doctor", "--config", cfg)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s\n%s", code, tc.code, out, errb)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

// A space pasted under the wrong task fails config check and doctor alike, naming the task
// it looks like and the one it is under; a space that fits but is exactly another task's is
// a warning on both.
func TestDoctorSpaceOfAnotherTask(t *testing.T) {
	g1 := readFile(t, filepath.Join("testdata", "spaces", "g1.yaml"))
	go1 := readFile(t, filepath.Join("testdata", "spaces", "go1.yaml"))
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"the G1's space under Go2", g1, 1,
			"reward_space: its names are task Mjlab-Velocity-Flat-Unitree-G1's (the same names as trainer/mjlab/spaces/g1.yaml), not task Unitree-Go2-Flat's"},
		{"the G1's file keyed by Go2", "reward_spaces:\n  Unitree-Go2-Flat: {file: g1.yaml}\n", 1,
			"reward_spaces.Unitree-Go2-Flat: its names are task Mjlab-Velocity-Flat-Unitree-G1's"},
		{"the Go1's file keyed by G1", "reward_spaces:\n  Mjlab-Velocity-Flat-Unitree-G1: {file: go1.yaml}\n", 0,
			"reward_spaces.Mjlab-Velocity-Flat-Unitree-G1: it has the same names as trainer/mjlab/spaces/go1.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range map[string]string{"g1.yaml": g1, "go1.yaml": go1} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg := writeConfig(t, dir, "data_dir: data\nsession: {fallback: true}\n"+tc.body)
			for _, cmd := range [][]string{{"config", "check"}, {"doctor"}} {
				code, out, errb := runCmd(append(cmd, "--config", cfg)...)
				if code != tc.code || !strings.Contains(out+errb, tc.want) {
					t.Errorf("%s: exit %d (want %d), output lacks %q:\n%s\n%s", cmd[0], code, tc.code, tc.want, out, errb)
				}
			}
		})
	}
}
