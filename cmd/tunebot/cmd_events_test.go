package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tunebot/trainer/tfevents"
)

// eventsTestdata holds real event files kept in the repository (testdata/tfevents/SOURCES.md).
const eventsTestdata = "../../testdata/tfevents"

type eventsSummary struct {
	Files int `json:"files"`
	Tags  map[string]struct {
		Count     int      `json:"count"`
		FirstStep int64    `json:"first_step"`
		LastStep  int64    `json:"last_step"`
		LastValue *float64 `json:"last_value"`
	} `json:"tags"`
}

func runEventsCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }},
		append([]string{"events"}, args...))
	return code, out.String(), errb.String()
}

func TestEventsJSONOnRealFiles(t *testing.T) {
	if _, err := os.Stat(eventsTestdata); err != nil {
		t.Fatalf("test data missing: %v (expected testdata/tfevents at the repository root)", err)
	}
	// Tag and point counts from testdata/tfevents/SOURCES.md.
	tests := []struct {
		path                string
		files, tags, points int
	}{
		{"iui-whgi_unitree_rl_gym_go2/events.out.tfevents.1745910742.son-System-Product-Name.4264.0", 1, 21, 31500},
		{"iui-whgi_unitree_rl_gym_go2/events.out.tfevents.1745910672.son-System-Product-Name.4131.0", 1, 21, 42},
		{"janosh_tensorboard-reducer/events.out.tfevents.1622543341.janoshs-mbp.lan.86862.0", 1, 1, 100},
		{"janosh_tensorboard-reducer/events.out.tfevents.1622966509.janoshs-mbp.lan.86059.0", 1, 2, 420},
		{"dfalbel_tfevents-js/events.out.tfevents.1687811641.v2", 1, 1, 1},
		{".", 5, 25, 32063}, // the whole directory: the Go2 files share their 21 tags
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			code, stdout, stderr := runEventsCmd(t, "--json", filepath.Join(eventsTestdata, tt.path))
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			var s eventsSummary
			if err := json.Unmarshal([]byte(stdout), &s); err != nil {
				t.Fatalf("output is not the JSON summary: %v\n%s", err, stdout)
			}
			n := 0
			for _, tag := range s.Tags {
				n += tag.Count
			}
			if s.Files != tt.files || len(s.Tags) != tt.tags || n != tt.points {
				t.Errorf("files %d, tags %d, points %d; want %d, %d, %d", s.Files, len(s.Tags), n, tt.files, tt.tags, tt.points)
			}
		})
	}

	code, stdout, _ := runEventsCmd(t, filepath.Join(eventsTestdata, tests[0].path), "--json")
	var s eventsSummary
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil {
		t.Fatalf("exit %d, %v", code, err)
	}
	r := s.Tags["Train/mean_reward"]
	if r.Count != 1500 || r.FirstStep != 0 || r.LastStep != 1499 || r.LastValue == nil || math.Abs(*r.LastValue-24.1968) > 1e-4 {
		t.Errorf("Train/mean_reward = %+v, want 1500 points, steps 0..1499, last ≈ 24.1968", r)
	}
}

func TestEventsTable(t *testing.T) {
	path := filepath.Join(eventsTestdata, "iui-whgi_unitree_rl_gym_go2/events.out.tfevents.1745910742.son-System-Product-Name.4264.0")
	code, stdout, stderr := runEventsCmd(t, path)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if lines[0] != "1 event file, 21 scalar tags" || len(lines) != 2+1+21 {
		t.Fatalf("unexpected table:\n%s", stdout)
	}
	var reward string
	for _, l := range lines {
		if strings.HasPrefix(l, "Train/mean_reward ") {
			reward = l
		}
	}
	if got := strings.Fields(reward); len(got) != 5 || got[1] != "1500" || got[2] != "0" || got[3] != "1499" || got[4] != "24.1968" {
		t.Errorf("Train/mean_reward row = %q", reward)
	}
	// Columns line up: every row has the same width.
	for _, l := range lines[2:] {
		if len(l) != len(lines[2]) {
			t.Errorf("row %q is %d wide, header %d", l, len(l), len(lines[2]))
		}
	}
}

func TestEventsBadInput(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "events.out.tfevents.1.host.corrupt")
	if err := os.WriteFile(corrupt, bytes.Repeat([]byte{7}, 40), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"no path", nil, 2, "no PATH"},
		{"unknown flag", []string{"--csv", dir}, 2, "unknown flag --csv"},
		{"missing path", []string{filepath.Join(dir, "nope")}, 1, filepath.Join(dir, "nope") + ": no such file"},
		{"no event files", []string{empty}, 1, "no event files"},
		{"corrupt file", []string{"--json", corrupt}, 1, "corrupt event file " + corrupt + " at byte 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runEventsCmd(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr containing %q", code, stderr, tt.code, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

func TestEventsNonFinite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.out.tfevents.1.host.0")
	w, err := tfevents.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Scalar("Loss/value_function", 3, math.NaN(), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runEventsCmd(t, "--json", path)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var s eventsSummary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	if v := s.Tags["Loss/value_function"]; v.Count != 1 || v.LastValue != nil {
		t.Errorf("NaN last value = %+v, want count 1 and last_value null", v)
	}
}

// TestEventsOverSeveralRuns gives two runs' event files, the later run first: first and
// last step are by step, not by the order of the arguments, and the last value is the
// value at the largest step.
func TestEventsOverSeveralRuns(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, from, to int64, value float64) string {
		path := filepath.Join(dir, name, "events.out.tfevents.1.host.0")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := tfevents.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		for step := from; step <= to; step += 100 {
			if err := w.Scalar("Train/mean_reward", step, value+float64(step), time.Unix(step, 0)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	early := write("rung0", 0, 200, 0)     // steps 0..200
	later := write("rung1", 300, 900, 0.5) // steps 300..900, last value 900.5
	code, stdout, stderr := runEventsCmd(t, "--json", later, early)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var s eventsSummary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	r := s.Tags["Train/mean_reward"]
	if r.Count != 10 || r.FirstStep != 0 || r.LastStep != 900 || r.LastValue == nil || *r.LastValue != 900.5 {
		t.Errorf("Train/mean_reward = count %d, steps %d..%d, last %v; want 10, 0..900, 900.5", r.Count, r.FirstStep, r.LastStep, r.LastValue)
	}
	_, table, _ := runEventsCmd(t, later, early)
	if f := strings.Fields(strings.Split(strings.TrimSpace(table), "\n")[3]); len(f) != 5 || f[2] != "0" || f[3] != "900" || f[4] != "900.5" {
		t.Errorf("table row %v, want FIRST STEP 0, LAST STEP 900, LAST VALUE 900.5:\n%s", f, table)
	}
}

// TestEventsReadsBounded: tunebot events opens what it is given through the bounded reader
// (issue 36): a FIFO named like an event file is refused at once rather than waited on
// (os.Open blocked on it for good), and a link out of the directory given is not followed.
func TestEventsReadsBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "events.out.tfevents.1.host.1.0")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "events.out.tfevents.2.host.1.0")
	w, err := tfevents.Create(outside)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Scalar("Outside/secret", 1, 0.5, time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(run, "events.out.tfevents.3.host.1.0")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{{fifo, "named pipe"}, {run, "leads outside"}} {
		type result struct {
			code           int
			stdout, stderr string
		}
		done := make(chan result, 1)
		go func() {
			code, stdout, stderr := runEventsCmd(t, "--json", tc.path)
			done <- result{code, stdout, stderr}
		}()
		select {
		case r := <-done:
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stdout, "Outside/secret") {
				t.Errorf("events %s: exit %d, %q %q; want a refusal saying %q", tc.path, r.code, r.stdout, r.stderr, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("events %s is still reading after 10 s", tc.path)
		}
	}
}
