package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"tunebot/session"
	"tunebot/store"
)

// tunebotBin is the real binary, built once: the sim trainer runs as its subprocess, so
// these tests cross the same process boundaries as a user's session.
var tunebotBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tunebot-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tunebotBin = filepath.Join(dir, "tunebot")
	out, err := exec.Command("go", "build", "-o", tunebotBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building tunebot: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	cluster.Down()
	os.RemoveAll(dir)
	os.Exit(code)
}

func writeConfig(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "tunebot.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// lastJSON decodes stdout, which with --json must be exactly one JSON document of the
// summary's shape and nothing else: `tunebot tune --json | jq` must parse it.
func lastJSON(t *testing.T, out string, v any) {
	t.Helper()
	if !json.Valid([]byte(out)) {
		t.Fatalf("stdout is not one JSON document:\n%s", out)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("summary: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatal("output continues after the summary")
	}
}

func TestTuneJSONSummary(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
data_dir: data
session:
  trial_count: 4
  rungs: [20, 40, 60]
  early_stop_patience: 4
`)
	cmd := exec.Command(tunebotBin, "tune", "--config", cfg, "--fallback", "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tune: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var sum summaryJSON
	lastJSON(t, stdout.String(), &sum)
	if sum.State != session.StateSucceeded || sum.Preset != "auto-tune-"+sum.Session[:8] || sum.Best == nil {
		t.Fatalf("summary: %+v", sum)
	}
	perRung := map[int]int{}
	for _, tr := range sum.Trials {
		perRung[tr.Rung]++
		if tr.State != session.TrialCompleted || tr.Score == nil || len(tr.Metrics) != 7 || len(tr.RewardConfig.Weights) != 16 {
			t.Errorf("trial %d@%d: %+v", tr.Number, tr.Rung, tr)
		}
		wantSource := session.SourceSampler
		if tr.Number == 0 {
			wantSource = session.SourceBaseline
		}
		if tr.Source != wantSource {
			t.Errorf("trial %d source %q", tr.Number, tr.Source)
		}
		if want := []int{20, 40, 60}[tr.Rung]; tr.Iterations != want {
			t.Errorf("trial %d@%d iterations %d, want %d", tr.Number, tr.Rung, tr.Iterations, want)
		}
	}
	// promote is [4, 4, 2]: every eligible rung-0 trial goes on (the baseline among them), and
	// the top 2 of those to rung 2, plus the baseline when it is not one of them (control).
	var eligible0 int
	var rung1 []trialJSON
	for _, tr := range sum.Trials {
		if tr.Rung == 0 && tr.Eligible {
			eligible0++
		}
		if tr.Rung == 1 && tr.Eligible {
			rung1 = append(rung1, tr)
		}
	}
	sort.SliceStable(rung1, func(i, j int) bool { return *rung1[i].Score > *rung1[j].Score })
	want2 := min(2, len(rung1))
	if !slices.ContainsFunc(rung1[:want2], func(tr trialJSON) bool { return tr.Number == 0 }) {
		want2++
	}
	if perRung[0] != 4 || perRung[1] != min(4, eligible0) || perRung[2] != want2 {
		t.Errorf("trials per rung %v with %d eligible at rung 0, want 4/%d/%d", perRung, eligible0, min(4, eligible0), want2)
	}
	checkSummaryExtras(t, sum)
	if _, err := os.Stat(filepath.Join(dir, "data", "sessions", sum.Session, "trial-000-rung-0", "policy.onnx")); err != nil {
		t.Errorf("run dir: %v", err)
	}
}

func TestTuneRefusesBadInputWithAReason(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"tune", "--config", filepath.Join(dir, "missing.yaml")}, "does not exist"},
		{[]string{"tune", "--trials", "3", "--fallback", "--data-dir", dir}, "trial_count: 3 is outside 4–20"},
		{[]string{"tune", "--mode", "fast", "--fallback", "--data-dir", dir}, `mode: "fast"`},
		{[]string{"tune", "--data-dir", dir}, "DEEPSEEK_API_KEY"},
		{[]string{"tune", "--resume", "--data-dir", dir}, "no interrupted"},
		{[]string{"tune", "--fallback", "--data-dir", "/proc/forbidden"}, "/proc/forbidden"},
	}
	for _, tc := range cases {
		cmd := exec.Command(tunebotBin, tc.args...)
		cmd.Env = append(os.Environ(), "DEEPSEEK_API_KEY=")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: err %v, output %q, want it to name %q", tc.args, err, out, tc.want)
		}
	}
}

// TestKillNineAndResume kills tunebot with SIGKILL again and again while the session runs,
// resumes it each time, and checks that no completed trial ever ran twice and that the
// trainer a killed tunebot left behind was ended.
func TestKillNineAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("several seconds of real subprocesses")
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
data_dir: data
session:
  trial_count: 5
  rungs: [30, 60, 90]
  early_stop_patience: 5
`)
	env := append(os.Environ(), "TUNEBOT_SIM_STEP_DELAY=4ms")
	kills := []time.Duration{400 * time.Millisecond, 900 * time.Millisecond, 250 * time.Millisecond, 1300 * time.Millisecond, 600 * time.Millisecond}
	args := []string{"tune", "--config", cfg, "--fallback", "--json"}
	finished := false
	for i, after := range kills {
		cmd := exec.Command(tunebotBin, args...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run %d ended on its own with %v:\n%s", i, err, out.String())
			}
			finished = true
		case <-time.After(after):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			// The kill may land after the session's last write: then there is nothing left
			// to resume, and the checks below apply as they are.
			finished = sessionSucceeded(t, filepath.Join(dir, "data", "tunebot.db"))
		}
		if finished {
			break
		}
		args = []string{"tune", "--config", cfg, "--json", "--resume"}
	}
	if !finished {
		cmd := exec.Command(tunebotBin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("final resume: %v\n%s", err, out)
		}
	}
	completedOnce(t, dir, "")
	// no sim trainer of this data dir may be left running
	time.Sleep(100 * time.Millisecond)
	noTrainerLeft(t, dir)
}

// completedOnce checks the data dir's only session: it succeeded, every trial completed,
// and each completed exactly once (a trial resumed after a crash never ran twice).
func completedOnce(t *testing.T, dir, logs string) {
	t.Helper()
	db, err := store.Open(filepath.Join(dir, "data", "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	all, _ := db.Sessions(ctx)
	if len(all) != 1 || all[0].State != session.StateSucceeded {
		t.Fatalf("sessions: %+v\n%s", all, logs)
	}
	audit, _ := db.Audit(ctx, all[0].ID)
	finishedRuns := map[string]int{}
	for _, a := range audit {
		if a.Kind == "trial_finished" && a.Detail["state"] == "completed" {
			finishedRuns[fmt.Sprint(a.Detail["trial"], "@", a.Detail["rung"])]++
		}
	}
	trials, _ := db.Trials(ctx, all[0].ID)
	for _, tr := range trials {
		if tr.State != session.TrialCompleted {
			t.Errorf("%s is %s: %s", tr.Ref(), tr.State, tr.Reason)
		}
		if n := finishedRuns[fmt.Sprint(tr.Number, "@", tr.Rung)]; n != 1 {
			t.Errorf("%s completed %d times", tr.Ref(), n)
		}
	}
}

// sessionSucceeded reports whether the data file's only session has succeeded.
func sessionSucceeded(t *testing.T, path string) bool {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		return false
	}
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, err := db.Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(all) == 1 && all[0].State == session.StateSucceeded
}

// TestDemoFromAFreshDirectory is the README's first command on a fresh clone: the demo
// runs in the current directory with its relative ./data, to a 12-trial session with 4
// trials at rung 1 and 2 at rung 2.
func TestDemoFromAFreshDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole demo session")
	}
	dir := t.TempDir()
	cmd := exec.Command(tunebotBin, "demo", "--json")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo: %v\n%s\n%s", err, stderr.String(), stdout.String())
	}
	var sum summaryJSON
	lastJSON(t, stdout.String(), &sum)
	perRung := map[int]int{}
	for _, tr := range sum.Trials {
		perRung[tr.Rung]++
	}
	// 4 promoted to rung 1 and 2 to rung 2, each plus the baseline unless it is one of them
	if sum.State != session.StateSucceeded || perRung[0] != 12 || perRung[1] < 4 || perRung[1] > 5 || perRung[2] < 2 || perRung[2] > 3 {
		t.Fatalf("demo: state %s, trials per rung %v (want 12/4/2, plus the baseline carried along)", sum.State, perRung)
	}
	checkSummaryExtras(t, sum)
	if !strings.Contains(stderr.String(), "trials:") || !strings.Contains(stderr.String(), "session "+sum.Session[:8]) {
		t.Errorf("the trials table and progress belong on stderr:\n%s", stderr.String())
	}
	if want := filepath.Join(dir, "data", "sessions", sum.Session); sum.Outputs["session_dir"] != want {
		t.Errorf("outputs at %v, want %s", sum.Outputs["session_dir"], want)
	}
	pngs, _ := filepath.Glob(filepath.Join(dir, "data", "reports", sum.Session[:8], "*.png"))
	if len(pngs) < 18 {
		t.Errorf("%d chart PNGs in the reports directory, want every trial's report", len(pngs))
	}
	// Every trial has a clip of its policy: in --json, on disk, and named on the terminal
	// (issue 21).
	for _, tr := range sum.Trials {
		if tr.Clip == nil {
			t.Errorf("trial %d@%d has no clip in --json: %s", tr.Number, tr.Rung, tr.ClipNote)
			continue
		}
		data, err := os.ReadFile(*tr.Clip)
		if err != nil || !bytes.HasPrefix(data, []byte("GIF89a")) {
			t.Errorf("trial %d@%d's clip %s: %v", tr.Number, tr.Rung, *tr.Clip, err)
		}
		if !strings.Contains(stderr.String(), fmt.Sprintf("[clip] trial %d @ rung %d", tr.Number, tr.Rung)) || !strings.Contains(stderr.String(), *tr.Clip) {
			t.Errorf("the terminal does not name trial %d@%d's clip %s", tr.Number, tr.Rung, *tr.Clip)
		}
	}
}

// checkSummaryExtras checks what the summary says beyond the trials: the finalists' final
// re-evaluations, the best as the final mean that chose it, every proposal, and the
// baseline at the top rung (control, on by default).
func checkSummaryExtras(t *testing.T, sum summaryJSON) {
	t.Helper()
	top, rung0 := 0, 0
	for _, tr := range sum.Trials {
		top = max(top, tr.Rung)
		if tr.Rung == 0 {
			rung0++
		}
	}
	finals := 0
	for _, tr := range sum.Trials {
		if tr.Final == nil {
			continue
		}
		finals++
		if tr.Rung != top || len(tr.Final.Seeds) != 3 || tr.Final.Std < 0 {
			t.Errorf("trial %d@%d final %+v, want finalists of rung %d only, on 3 seeds", tr.Number, tr.Rung, tr.Final, top)
		}
		if sum.Best != nil && tr.Number == sum.Best.Trial && tr.Rung == sum.Best.Rung &&
			(sum.Best.Score != tr.Final.Score || sum.Best.Std != tr.Final.Std || !slices.Equal(sum.Best.Seeds, tr.Final.Seeds)) {
			t.Errorf("best %+v, want the final mean that chose it %+v", *sum.Best, *tr.Final)
		}
		if tr.Number == 0 && (sum.Control == nil || sum.Control.Score != tr.Final.Score || sum.Control.Rung != top) {
			t.Errorf("control %+v, want the baseline's final at rung %d %+v", sum.Control, top, *tr.Final)
		}
	}
	if finals < 2 || sum.Control == nil || sum.Headline == "" {
		t.Errorf("%d finals, control %+v, headline %q", finals, sum.Control, sum.Headline)
	}
	if len(sum.Proposals) != rung0-1 {
		t.Errorf("%d proposals for %d rung-0 trials", len(sum.Proposals), rung0)
	}
	for i, p := range sum.Proposals {
		if p.Seq != i+1 || p.State != session.ProposalUsed || p.Source != session.SourceSampler || p.Patch.Len() == 0 {
			t.Errorf("proposal %+v", p)
		}
	}
}

// noTrainerLeft fails t if a sim trainer started under dir is still running.
func noTrainerLeft(t *testing.T, dir string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(dir)) && bytes.Contains(b, []byte("sim-")) {
			t.Errorf("trainer left running: %s", bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
}
