package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
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
	rayHead.Down()
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
	cmd := exec.Command(tunebotBin, "tune", "--config", cfg, "--fallback", "--json", "--verbose")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tune: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var sum summaryJSON
	lastJSON(t, stdout.String(), &sum)
	checkReadmeOutline(t, stdout.String())
	// --verbose prints every card whole, as chat shows them, chart files included.
	for _, want := range []string{"objectives (improvement over the baseline):", "[chart] Score by trial and rung:", "trial 1 @ rung 0 started (20 iterations)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("--verbose output lacks %q", want)
		}
	}
	// A tuned trial that beats the baseline at rung 2 is saved as the preset; when none does,
	// the outcome says so and no preset of the defaults is saved (issue 28, item 2).
	switch {
	case sum.State != session.StateSucceeded:
		t.Fatalf("summary: %+v", sum)
	case sum.Outcome == session.OutcomeNoImprovement:
		if sum.Preset != "" || sum.Best != nil || !strings.Contains(stderr.String(), "no_improvement: nothing beat the defaults; they stand") {
			t.Fatalf("nothing beat the baseline, yet: %+v\n%s", sum, stderr.String())
		}
	case sum.Outcome != session.OutcomeImproved && !session.Unconfirmed(sum.Outcome) || sum.Preset != "auto-tune-"+sum.Session[:8] || sum.Best == nil:
		t.Fatalf("summary: %+v", sum)
	case sum.Outcome != session.OutcomeImproved:
		// Saved, but not as an improvement: the terminal says so (issue 43, item 2).
		// With --json, the console's card says it (stderr); the JSON carries the outcome.
		if !regexp.MustCompile(`outcome\s+` + sum.Outcome + `: `).MatchString(stderr.String()) {
			t.Errorf("outcome %s, yet the terminal does not say so:\n%s", sum.Outcome, stderr.String())
		}
	}
	// What the preset carries from the defaults, and what the model credits (issue 37).
	if sum.Preset != "" {
		if sum.Shipped == nil || sum.Shipped.Changes != len(sum.Shipped.Credit) || sum.Shipped.Changes == 0 ||
			!strings.HasPrefix(sum.Shipped.Line, fmt.Sprintf("carries %d change", sum.Shipped.Changes)) {
			t.Errorf("shipped: %+v", sum.Shipped)
		}
		if !strings.Contains(stdout.String()+stderr.String(), sum.Shipped.Line) {
			t.Errorf("the summary's line %q is not in the output", sum.Shipped.Line)
		}
	} else if sum.Shipped != nil {
		t.Errorf("no preset, yet shipped: %+v", sum.Shipped)
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
	// promote is [4, 4, 2]: every eligible rung-0 trial goes on, and the top 2 tuned trials
	// of rung 1 to rung 2; the baseline is carried along in addition (control).
	tuned := eligibleTuned(sum)
	if perRung[0] != 4 || perRung[1] != min(4, tuned[0])+1 || perRung[2] != min(2, tuned[1])+1 {
		t.Errorf("trials per rung %v with %v eligible tuned trials per rung, want 4/%d/%d", perRung, tuned, min(4, tuned[0])+1, min(2, tuned[1])+1)
	}
	checkSummaryExtras(t, sum)
	checkRounded(t, sum)
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
		{[]string{"tune", "--trials", "3", "--fallback", "--data-dir", dir}, "--trials 3 is outside 4–20"},
		{[]string{"tune", "--mode", "fast", "--fallback", "--data-dir", dir}, `--mode "fast" is not automatic or approval`},
		{[]string{"tune", "--data-dir", dir}, "DEEPSEEK_API_KEY is not set"},
		{[]string{"tune", "--data-dir", dir}, "--fallback or session.fallback: true"},
		{[]string{"tune", "--resume", "--data-dir", dir}, "no interrupted"},
		{[]string{"tune", "--from", "ab12", "--fallback", "--data-dir", dir}, "from: session ab12 does not exist"},
		{[]string{"tune", "--fallback", "--data-dir", "/proc/forbidden"}, "/proc/forbidden"},
	}
	for _, tc := range cases {
		cmd := exec.Command(tunebotBin, tc.args...)
		cmd.Env = append(os.Environ(), "DEEPSEEK_API_KEY=")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: err %v, output %q, want it to name %q", tc.args, err, out, tc.want)
		}
		// Issue 35 item 9: the terminal speaks its own syntax, and a refused start prints no
		// console banner for a session that never began.
		if strings.Contains(string(out), "from=") || strings.Contains(string(out), "reads commands here") {
			t.Errorf("%v: output %q speaks chat syntax or prints the console's banner", tc.args, out)
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
	sum, stderr := demoJSON(t, dir)
	perRung := map[int]int{}
	for _, tr := range sum.Trials {
		perRung[tr.Rung]++
	}
	// 4 tuned trials promoted to rung 1 and 2 to rung 2, each rung plus the baseline
	tuned := eligibleTuned(sum)
	if sum.State != session.StateSucceeded || perRung[0] != 12 || perRung[1] != min(4, tuned[0])+1 || perRung[2] != min(2, tuned[1])+1 || tuned[1] < 2 {
		t.Fatalf("demo: state %s, trials per rung %v with %v eligible tuned per rung (want 12/4/2 tuned, plus the baseline carried along)", sum.State, perRung, tuned)
	}
	checkSummaryExtras(t, sum)
	checkRounded(t, sum)
	if !strings.Contains(stderr, "trials:") || !strings.Contains(stderr, "session "+sum.Session[:8]) {
		t.Errorf("the trials table and progress belong on stderr:\n%s", stderr)
	}
	checkPage(t, stderr, sum)
	checkSameRung(t, stderr, sum)
	// The demo's preset says the built-in sim made it, and apply refuses it (issue 28, item 4).
	if sum.Preset != "" {
		show := exec.Command(tunebotBin, "preset", "show", sum.Preset)
		show.Dir = dir
		out, err := show.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "trainer:   the built-in sim") {
			t.Errorf("preset show %s: %v\n%s\nwant it to say the built-in sim made it", sum.Preset, err, out)
		}
	} else if sum.Outcome != session.OutcomeNoImprovement || sum.Preset != "" {
		t.Errorf("outcome %q with preset %q", sum.Outcome, sum.Preset)
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
		if !strings.Contains(stderr, fmt.Sprintf("[clip] trial %d @ rung %d", tr.Number, tr.Rung)) || !strings.Contains(stderr, *tr.Clip) {
			t.Errorf("the terminal does not name trial %d@%d's clip %s", tr.Number, tr.Rung, *tr.Clip)
		}
	}
}

// checkSameRung checks that every trial above rung 0 is compared with the baseline trained as
// long (issue 28, item 1): in --json (versus, control_rung) and on each trial's terminal line,
// the control trains first at its rung, so no promoted trial falls back to rung 0.
func checkSameRung(t *testing.T, stderr string, sum summaryJSON) {
	t.Helper()
	above := 0
	for _, tr := range sum.Trials {
		if tr.Rung == 0 || tr.Score == nil {
			continue
		}
		above++
		if tr.Versus == nil || tr.Versus.ControlRung != tr.Rung || tr.Versus.Rung != tr.Rung {
			t.Errorf("trial %d@%d: versus %+v, want it against the baseline @ rung %d", tr.Number, tr.Rung, tr.Versus, tr.Rung)
			continue
		}
		line := fmt.Sprintf("trial %d @ rung %d: score %+.3f vs baseline @ rung %d\n", tr.Number, tr.Rung, tr.Versus.Score, tr.Rung)
		if tr.Number != 0 && tr.Versus.Final {
			continue // its line was printed before its final re-evaluation
		}
		if !strings.Contains(stderr, line) {
			t.Errorf("the terminal does not say %q", strings.TrimSpace(line))
		}
	}
	if above == 0 || sum.Versus == nil || sum.Versus.ControlRung != sum.Versus.Rung || sum.Versus.Rung == 0 {
		t.Errorf("%d trials above rung 0; the best's versus %+v, want it at the top rung against its baseline", above, sum.Versus)
	}
	if strings.Contains(stderr, "trained less") {
		t.Errorf("a trial is compared with the baseline trained less though it trains first at each rung:\n%s", stderr)
	}
}

// checkRounded checks that every reward value of the summary (each trial's configuration,
// each proposal's patch and edit) has at most session.SignificantDigits significant
// digits: the sampler's arithmetic must not reach a preset as -399.99999944548205.
func checkRounded(t *testing.T, sum summaryJSON) {
	t.Helper()
	check := func(where string, c session.RewardConfig) {
		for _, m := range []map[string]float64{c.Weights, c.Params} {
			for k, v := range m {
				if short, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', session.SignificantDigits, 64), 64); short != v {
					t.Errorf("%s: %s is %v, not rounded to %d significant digits", where, k, v, session.SignificantDigits)
				}
			}
		}
	}
	for _, tr := range sum.Trials {
		check(fmt.Sprintf("trial %d @ rung %d", tr.Number, tr.Rung), tr.RewardConfig)
	}
	for _, p := range sum.Proposals {
		check(fmt.Sprintf("proposal %d", p.Seq), p.Patch)
		if p.Edited != nil {
			check(fmt.Sprintf("proposal %d as edited", p.Seq), *p.Edited)
		}
	}
	checkMeasured(t, sum)
}

// checkMeasured checks that every measured number of the summary (scores, spreads,
// metrics) has at most session.SignificantDigits significant digits and none is a
// negative zero (issue 28, item 11: -3.065342329708454e-05).
func checkMeasured(t *testing.T, sum summaryJSON) {
	t.Helper()
	check := func(where string, v float64) {
		if short, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', session.SignificantDigits, 64), 64); short != v || v == 0 && math.Signbit(v) {
			t.Errorf("%s is %v, not a measured number of %d significant digits", where, v, session.SignificantDigits)
		}
	}
	for _, tr := range sum.Trials {
		where := fmt.Sprintf("trial %d @ rung %d", tr.Number, tr.Rung)
		if tr.Score != nil {
			check(where+" score", *tr.Score)
		}
		for k, v := range tr.Metrics {
			check(where+" metric "+k, v)
		}
		if tr.Final != nil {
			check(where+" final score", tr.Final.Score)
			check(where+" final std", tr.Final.Std)
		}
		if tr.Versus != nil { // issue 35 item 9: versus.score rounded like the rest
			check(where+" versus score", tr.Versus.Score)
		}
	}
	if sum.Versus != nil {
		check("versus score", sum.Versus.Score)
	}
	for name, st := range map[string]*session.Standing{"best": sum.Best, "control": sum.Control} {
		if st != nil {
			check(name+" score", st.Score)
			check(name+" std", st.Std)
		}
	}
}

// checkPage checks that a terminal session without --verbose reads as one page (issue 20,
// item 13: the demo printed 801 lines, 142 of them chart paths, and its headline three
// times): a line per trial and one naming its clip, the trials table and the headline once, no chart paths.
func checkPage(t *testing.T, text string, sum summaryJSON) {
	t.Helper()
	lines := strings.Count(text, "\n")
	// Each trial has its line and one naming its clip (issue 21), beside some progress.
	if lines > 2*len(sum.Trials)+2*len(sum.Trials)+20 {
		t.Errorf("the terminal printed %d lines for %d trials; want about two lines per trial (its result, its clip) and the table:\n%s", lines, len(sum.Trials), text)
	}
	for what, n := range map[string]int{sum.Headline: 1, "trials:\n": 1, "[chart]": 0, "objectives (improvement": 0, "started (": 0} {
		if got := strings.Count(text, what); got != n {
			t.Errorf("%q printed %d times, want %d", what, got, n)
		}
	}
	for _, tr := range sum.Trials {
		if !strings.Contains(text, fmt.Sprintf("] trial %d @ rung %d: score", tr.Number, tr.Rung)) {
			t.Errorf("no line for trial %d @ rung %d", tr.Number, tr.Rung)
		}
	}
}

// eligibleTuned counts the eligible trials other than the baseline at each rung.
func eligibleTuned(sum summaryJSON) map[int]int {
	n := map[int]int{}
	for _, tr := range sum.Trials {
		if tr.Number != 0 && tr.Eligible {
			n[tr.Rung]++
		}
	}
	return n
}

// TestBaselineIsCarriedInAddition runs a session whose tuned trials all score below the
// baseline (a fake DeepSeek proposes three changes that make the sim robot worse): the
// baseline is carried to every rung in addition to the promote[r] best tuned trials, never
// in place of one, so rung 2 still gets its two tuned finalists.
func TestBaselineIsCarriedInAddition(t *testing.T) {
	_, cfg := advisorConfig(t, "session:\n  trial_count: 4\n  rungs: [20, 40, 60]\n  promote: [4, 3, 2]\n",
		`{"patch": {"weights": {"action_rate_l2": -0.035}}, "rationale": "smoother", "expected_impact": {}, "confidence": 0.5}`,
		`{"patch": {"weights": {"body_orientation_l2": -0.5}}, "rationale": "looser", "expected_impact": {}, "confidence": 0.5}`,
		`{"patch": {"weights": {"track_linear_velocity": 2}}, "rationale": "track", "expected_impact": {}, "confidence": 0.5}`)
	code, sum, stderr := tuneBinary(t, "", []string{"DEEPSEEK_API_KEY=" + testKey}, "tune", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	rungs := map[int][]trialJSON{}
	for _, tr := range sum.Trials {
		rungs[tr.Rung] = append(rungs[tr.Rung], tr)
	}
	// What this test is about: the baseline is among the 2 best of rung 1.
	r1 := slices.Clone(rungs[1])
	sort.SliceStable(r1, func(i, j int) bool { return *r1[i].Score > *r1[j].Score })
	if len(r1) < 2 || !slices.ContainsFunc(r1[:2], func(tr trialJSON) bool { return tr.Number == 0 }) || eligibleTuned(sum)[0] != 3 {
		t.Fatalf("the test needs 3 eligible tuned trials and the baseline among the 2 best of rung 1; pick proposals the sim scores lower (rung 1: %d trials, eligible tuned per rung %v)", len(r1), eligibleTuned(sum))
	}
	if len(r1) != 4 {
		t.Fatalf("rung 1 holds %d trials, want the 3 tuned ones (promote[1]) and the baseline", len(r1))
	}
	want := []int{0}
	for _, tr := range r1 {
		if tr.Number != 0 && len(want) < 3 {
			want = append(want, tr.Number)
		}
	}
	slices.Sort(want)
	var top []int
	for _, tr := range rungs[2] {
		top = append(top, tr.Number)
	}
	slices.Sort(top)
	if !slices.Equal(top, want) {
		t.Fatalf("rung 2 holds trials %v, want %v: the baseline and the 2 best tuned trials of rung 1", top, want)
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
	// The final evaluation measures the trial the top rung chose and the baseline beside it,
	// on fresh seeds that chose nothing (never the evaluation seeds 0, 1, 2), and nothing when
	// the rung chose the baseline (issue 43, item 1).
	finals := 0
	for _, tr := range sum.Trials {
		if tr.Final == nil {
			continue
		}
		finals++
		if tr.Rung != top || len(tr.Final.Seeds) != session.DefaultFinalEvalCount || slices.ContainsFunc(tr.Final.Seeds, func(s int) bool { return s <= 2 }) || tr.Final.Std < 0 {
			t.Errorf("trial %d@%d final %+v, want trials of rung %d only, on %d fresh seeds", tr.Number, tr.Rung, tr.Final, top, session.DefaultFinalEvalCount)
		}
		if sum.Best != nil && tr.Number == sum.Best.Trial && tr.Rung == sum.Best.Rung &&
			(sum.Best.Score != tr.Final.Score || sum.Best.Std != tr.Final.Std || !slices.Equal(sum.Best.Seeds, tr.Final.Seeds)) {
			t.Errorf("best %+v, want its final evaluation %+v", *sum.Best, *tr.Final)
		}
		if tr.Number == 0 && (sum.Control == nil || sum.Control.Score != tr.Final.Score || sum.Control.Rung != top) {
			t.Errorf("control %+v, want the baseline's final at rung %d %+v", sum.Control, top, *tr.Final)
		}
	}
	if (sum.Verdict != nil) != (finals >= 2) || sum.Control == nil || sum.Headline == "" {
		t.Errorf("%d finals, verdict %+v, control %+v, headline %q", finals, sum.Verdict, sum.Control, sum.Headline)
	}
	if v := sum.Verdict; v != nil && (!strings.Contains(sum.Headline, "on fresh seeds "+session.SeedRange(v.Seeds)+", which chose nothing") || v.Test == "") {
		t.Errorf("verdict %+v: the headline %q does not say the fresh seeds it was measured on", v, sum.Headline)
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

// tuneBinary runs tunebot with stdin and returns its exit code and the --json summary; a
// run that does not end within a minute (it waited for input that will never come) fails.
func tuneBinary(t *testing.T, stdin string, env []string, args ...string) (int, summaryJSON, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tunebotBin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("tune %v still waited a minute after its input ended:\n%s", args, stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var sum summaryJSON
	lastJSON(t, stdout.String(), &sum)
	return code, sum, stderr.String()
}

// TestApprovalModeAtEndOfInput: in approval mode, once input ends (</dev/null, Ctrl-D)
// nobody can decide; the session is paused instead of waiting forever, the command exits
// non-zero saying how to go on, and nothing is lost: --resume shows the proposal again and
// a decision typed then (an edit with float noise, rounded) runs.
func TestApprovalModeAtEndOfInput(t *testing.T) {
	_, cfg := advisorConfig(t, "session:\n  trial_count: 4\n  rungs: [10, 20, 30]\n",
		`{"patch": {"params": {"foot_gait.period": 0.45}}, "rationale": "quicker", "expected_impact": {}, "confidence": 0.5}`,
		`{"patch": {"params": {"foot_gait.period": 0.5}}, "rationale": "quicker", "expected_impact": {}, "confidence": 0.5}`)
	env := []string{"DEEPSEEK_API_KEY=" + testKey}
	code, sum, stderr := tuneBinary(t, "", env, "tune", "--config", cfg, "--mode", "approval", "--json")
	if code == 0 || !strings.Contains(stderr, "continue it with: tunebot tune --resume --config "+cfg) {
		t.Fatalf("exit %d, want non-zero with the --resume hint:\n%s", code, stderr)
	}
	if sum.State != session.StatePaused || len(sum.Proposals) != 1 || sum.Proposals[0].State != session.ProposalPending ||
		len(sum.Trials) != 1 || sum.Trials[0].State != session.TrialCompleted {
		t.Fatalf("after the input ended: state %s, proposals %+v, trials %d; want paused with the baseline done and proposal 1 waiting", sum.State, sum.Proposals, len(sum.Trials))
	}

	refusedWhilePaused(t, env, cfg, sum.Session)

	code, sum, stderr = tuneBinary(t, "edit 1 foot_gait.period=0.45 is_terminated=-399.99999944548205\n", env, "tune", "--config", cfg, "--resume", "--json")
	if code == 0 || sum.State != session.StatePaused {
		t.Fatalf("resumed: exit %d, state %s, want paused again at proposal 2:\n%s", code, sum.State, stderr)
	}
	p := sum.Proposals[0]
	if p.State != session.ProposalUsed || p.Edited == nil || p.Edited.Weights["is_terminated"] != -400 {
		t.Fatalf("proposal 1 %+v, want edited to is_terminated -400 and run", p)
	}
	ran := false
	for _, tr := range sum.Trials {
		if tr.Number == 1 {
			ran = tr.State == session.TrialCompleted && tr.RewardConfig.Weights["is_terminated"] == -400 && tr.RewardConfig.Params["foot_gait.period"] == 0.45
		}
	}
	if !ran || len(sum.Proposals) != 2 || sum.Proposals[1].State != session.ProposalPending {
		t.Fatalf("trials %+v, proposals %+v: want trial 1 run as edited and proposal 2 waiting", sum.Trials, sum.Proposals)
	}
	checkRounded(t, sum)
}

// refusedWhilePaused: a new tune while session id is paused at the end of input is refused
// naming that session (its short id, what it waits for) and the commands that resume or
// cancel it, never the id the refused session would have had.
func refusedWhilePaused(t *testing.T, env []string, cfg, id string) {
	t.Helper()
	cmd := exec.Command(tunebotBin, "tune", "--config", cfg)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	resume := "tunebot tune --resume --config " + cfg
	want := []string{"session " + session.Short(id) + " is paused (waiting for a decision on proposal 1)",
		"resume it: " + resume, "cancel it: " + resume + ", then type cancel"}
	for _, w := range want {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("a new tune while %s is paused: want %q in:\n%s", session.Short(id), w, stderr.String())
		}
	}
	if err == nil || strings.Contains(stderr.String(), "creating session") || strings.Contains(stderr.String(), id) {
		t.Errorf("a new tune while %s is paused: %v, want refused without the store's ids:\n%s", session.Short(id), err, stderr.String())
	}
}

// tuneJSON runs `tunebot tune --config cfg --fallback --json` to its end with env added to
// this process's environment and returns its summary and what it printed on stderr; a tune
// that fails fails the test with its stderr.
func tuneJSON(t *testing.T, cfg string, env ...string) (summaryJSON, string) {
	t.Helper()
	cmd := exec.Command(tunebotBin, "tune", "--config", cfg, "--fallback", "--json")
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tune: %v\n%s", err, stderr.String())
	}
	var sum summaryJSON
	lastJSON(t, stdout.String(), &sum)
	return sum, stderr.String()
}

// demoJSON runs `tunebot demo --json args…` in dir to its end and returns its summary and
// what it printed on stderr; a demo that fails fails the test with both outputs.
func demoJSON(t *testing.T, dir string, args ...string) (summaryJSON, string) {
	t.Helper()
	cmd := exec.Command(tunebotBin, append([]string{"demo", "--json"}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo %v: %v\n%s\n%s", args, err, stderr.String(), stdout.String())
	}
	var sum summaryJSON
	lastJSON(t, stdout.String(), &sum)
	return sum, stderr.String()
}
