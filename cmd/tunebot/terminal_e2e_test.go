package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tunebot/bot/console"
	"tunebot/charts"
	"tunebot/session"
)

// logFile is the log a terminal front end (tune, run with the console) writes under its
// data dir; String reads it as it is now.
type logFile string

func (f logFile) String() string {
	b, _ := os.ReadFile(logPath(string(f)))
	return string(b)
}

// The run console is a page as tune's is: the log's lines (four per trial) go to the log
// file, not between the cards and the prompt; and Ctrl-D says that reading has ended
// (issue 28, items 9 and 13).
func TestRunConsoleKeepsItsLogInTheFile(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "data_dir: data\nservice: {addr: off}\n")
	cmd, stdinW, out := startDaemon(t, cfg)
	stdinW.WriteString("/tune start trials=4 rungs=20,40,60 fallback=true\n")
	waitFor(t, "the session to succeed", 60*time.Second, func() bool { return strings.Contains(out.String(), "succeeded") })
	stdinW.Close()
	waitFor(t, "the console to say input has ended", 5*time.Second, func() bool { return strings.Contains(out.String(), "input has ended") })
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "level=INFO") || strings.Contains(l, "job started") {
			t.Errorf("the console shows a log line: %q", l)
		}
	}
	if log := logFile(filepath.Join(dir, "data")).String(); !strings.Contains(log, `msg="job started"`) || !strings.Contains(log, `msg="tunebot is running"`) {
		t.Errorf("data/tunebot.log lacks the daemon's lines:\n%s", log)
	}
}

// A run that cannot start says why once, and shows no console prompt (issue 28, item 14).
func TestFailedRunSaysWhyOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "data_dir: data\nservice: {addr: \""+ln.Addr().String()+"\"}\n")
	cmd := exec.Command(tunebotBin, "run", "--config", cfg)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("run on a taken port: %v, want exit 1", err)
	}
	if strings.Contains(stdout.String(), console.Intro) || strings.Contains(stdout.String(), "tunebot is running") {
		t.Errorf("a run that failed shows the console:\n%s", stdout.String())
	}
	if n := strings.Count(stderr.String(), "address already in use"); n != 1 {
		t.Errorf("the error is said %d times, want once:\n%s", n, stderr.String())
	}
}

// The line that says how to continue a paused session names every flag that reaches it
// again: run as printed, from another directory, it resumes that very session (issue 28,
// item 6).
func TestResumeHintReachesTheSameSession(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "data_dir: elsewhere\nsession:\n  trial_count: 4\n  rungs: [10, 20, 30]\n")
	data := filepath.Join(dir, "my data")
	cmd := exec.Command(tunebotBin, "tune", "--config", "tunebot.yaml", "--data-dir", "my data", "--mode", "approval", "--fallback", "--json")
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("tune with no input: exit 0, want non-zero with the hint:\n%s", stderr.String())
	}
	var first summaryJSON
	lastJSON(t, stdout.String(), &first)
	_, hint, ok := strings.Cut(stderr.String(), "continue it with: ")
	hint, _, _ = strings.Cut(hint, "\n")
	want := "tunebot tune --resume --config " + cfg + " --data-dir '" + data + "'"
	if !ok || hint != want {
		t.Fatalf("the hint is %q, want %q:\n%s", hint, want, stderr.String())
	}
	// Run it as printed, from elsewhere: the same session comes back.
	resume := exec.Command("sh", "-c", "PATH="+filepath.Dir(tunebotBin)+":$PATH "+hint+" --json")
	resume.Dir = t.TempDir()
	stdout.Reset()
	stderr.Reset()
	resume.Stdout, resume.Stderr = &stdout, &stderr
	_ = resume.Run()
	var again summaryJSON
	lastJSON(t, stdout.String(), &again)
	if again.Session != first.Session {
		t.Errorf("the printed command reached session %q, want %q:\n%s", again.Session, first.Session, stderr.String())
	}
}

// preset import says how to start from the preset in a shell, and tune --preset does it:
// the baseline runs the preset's configuration (issue 28, item 14).
func TestTuneStartsFromAPreset(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "data_dir: data\nsession:\n  trial_count: 4\n  rungs: [10, 20, 30]\n")
	full := session.DefaultSpace().Defaults()
	full.Weights["pose"] = 1.5
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runBin(t, dir, "preset", "import", "mine", writeFile(t, "p.json", string(b)), "--config", cfg)
	if code != 0 || !strings.Contains(stdout, "start a session from it with tunebot tune --preset mine") {
		t.Fatalf("preset import: exit %d, %q %q; want the shell's command to start from it", code, stdout, stderr)
	}
	code, sum, errs := tuneBinary(t, "", nil, "tune", "--config", cfg, "--preset", "mine", "--fallback", "--json")
	if code != 0 || len(sum.Trials) == 0 {
		t.Fatalf("tune --preset: exit %d:\n%s", code, errs)
	}
	// The start message says where the session starts (issue 43, item 7.4).
	if first, _, _ := strings.Cut(errs, "\n"); !strings.Contains(first, "; it starts from preset mine; data in ") {
		t.Errorf("the start message does not name the preset: %q", first)
	}
	base := sum.Trials[0]
	if base.Number != 0 || base.Source != session.SourcePreset || base.RewardConfig.Weights["pose"] != 1.5 {
		t.Errorf("the baseline is %+v; want the preset's configuration (pose 1.5), source preset", base)
	}
	if code, _, errs := runBin(t, dir, "tune", "--config", cfg, "--preset", "nope", "--fallback", "--json"); code == 0 || !strings.Contains(errs, `preset "nope" does not exist`) {
		t.Errorf("tune --preset nope: exit %d, %q; want the missing preset named", code, errs)
	}
}

// A drop that leaves no trial to take its place is in --json: plan_changes records every
// promote and drop a person typed (issue 28, item 14).
func TestDropWithNoReplacementIsInTheSummary(t *testing.T) {
	tm, _, _ := tuneToReview(t)
	tm.typed("drop 1")
	tm.see("the drop", "» you dropped trial 1; no other trial passed the gates to take its place")
	tm.typed("go")
	tm.see("rung 2's plan", "promotion review for rung 2:")
	tm.typed("go")
	sum := tm.exit()
	checkReadmeOutline(t, tm.stdout.String())
	if len(sum.PlanChanges) != 1 {
		t.Fatalf("plan_changes %+v, want the one drop", sum.PlanChanges)
	}
	c := sum.PlanChanges[0]
	if c.Rung != 1 || c.Action != session.ReviewDrop || c.Trial != 1 || c.Other != nil || c.By != "you" || c.At.IsZero() {
		t.Errorf("plan change %+v; want you dropped trial 1 of rung 1's plan, nobody in its place", c)
	}
}

// The terminal of tune, approval mode, no advisor (issue 28, item 13): a typed decision is
// said once; edit says the change that runs and why shows it before the proposer's reasons;
// help lists no daemon command and dashboard says it comes with the daemon; a preference's
// answer promises no DeepSeek; "lower foot_slip" asks for less slip, and a later feedback
// that turns it round is pointed out.
func TestTuneTerminalSaysWhatHappens(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "data_dir: data\nsession:\n  trial_count: 4\n  rungs: [10, 20, 30]\n")
	tm := startTune(t, []string{"DEEPSEEK_API_KEY="}, "tune", "--config", cfg, "--fallback", "--mode", "approval", "--json")
	tm.see("proposal 1", "type: approve 1 ")
	// The edit sets a weight the proposal changes to ×1.2 of its old value, so it stays
	// within the space's 4 changes whatever the sampler proposed.
	term, old := firstChangedWeight(t, tm.human.String())
	edited := fmt.Sprintf("%.4g", 1.2*old)
	tm.typed(fmt.Sprintf("edit 1 %s=%s", term, edited))
	tm.see("the edit's answer", "» proposal 1 edited and approved by you; it runs: ")
	tm.typed("why 1")
	tm.see("why of the edited proposal", "edited by you before it ran; the change that runs:")
	tm.typed("help")
	tm.see("help", "come with the daemon: tunebot run --config FILE")
	tm.typed("dashboard")
	tm.see("dashboard", "» the monitoring page (dashboard) comes with the daemon")
	tm.see("trial 1's result", "] trial 1 @ rung 0: score")
	tm.typed("prefer 1 over 0 smoother")
	tm.see("the preference's answer", "no advisor is configured, so no prompt reads a note")
	tm.see("proposal 2", "type: approve 2 ")
	tm.typed("reject 2 lower foot_slip")
	tm.see("the feedback read", "» read: foot_slip no weaker.")
	tm.see("proposal 3", "type: approve 3 ")
	tm.typed("reject 3 weaker foot_slip")
	tm.see("the contradiction", `this contradicts earlier feedback: "foot_slip no stronger" replaces "foot_slip no weaker" (asked when rejecting proposal 2)`)
	tm.stdin.Close()
	tm.end()
	text := tm.human.String()
	if !strings.Contains(text, fmt.Sprintf("%s %.4g → %s (×1.20)", term, old, edited)) {
		t.Errorf("the edit's answer does not show the change that runs:\n%s", text)
	}
	// the answer says it ("» proposal 2 rejected by you"); no stamp line repeats it
	// ("[12:00:00] proposal 2: rejected by you at …")
	for said, want := range map[string]int{"edited and approved by you": 1, "rejected by you": 2} {
		if n := strings.Count(text, said); n != want {
			t.Errorf("%q is said %d times, want %d:\n%s", said, n, want, text)
		}
	}
	for _, daemon := range []string{"    start [mode=", "    schedule add", "service.addr", "DeepSeek's next prompt lists"} {
		if strings.Contains(text, daemon) {
			t.Errorf("the terminal of tune says %q:\n%s", daemon, text)
		}
	}
}

// Numbers as a person reads them (issue 28, item 11): preset show prints a session's
// metrics with 4 significant digits and its score without a negative zero, and an import
// that rounds a value says which.
func TestPresetNumbersAsAPersonReadsThem(t *testing.T) {
	dir := t.TempDir()
	// fixed final seeds: a preset is saved whatever the session's id (fresh seeds come from it);
	// 12 trials, since 4 at 10 iterations found nothing to save on the demo surface once the
	// sampler stopped predicting a loss for every param move (issue 45)
	cfg := writeConfig(t, dir, "data_dir: data\nsession:\n  trial_count: 12\n  rungs: [10, 20, 30]\n  final_eval_seeds: [100, 101, 102, 103, 104]\n")
	code, sum, errs := tuneBinary(t, "", nil, "tune", "--config", cfg, "--fallback", "--json")
	if code != 0 || sum.Preset == "" {
		t.Fatalf("tune: exit %d, preset %q:\n%s", code, sum.Preset, errs)
	}
	code, stdout, stderr := runBin(t, dir, "preset", "show", sum.Preset, "--config", cfg)
	if code != 0 {
		t.Fatalf("preset show: exit %d %s", code, stderr)
	}
	_, metrics, ok := strings.Cut(stdout, "metrics (lower is better):\n")
	if !ok {
		t.Fatalf("preset show lists no metrics:\n%s", stdout)
	}
	for _, l := range strings.Split(metrics, "\n") {
		f := strings.Fields(l)
		if len(f) != 2 || !strings.HasPrefix(l, "    ") {
			break
		}
		if v, err := strconv.ParseFloat(f[1], 64); err != nil || len(strings.TrimLeft(strings.NewReplacer("-", "", ".", "").Replace(strings.Split(f[1], "e")[0]), "0")) > session.SignificantDigits || v == 0 && strings.HasPrefix(f[1], "-") {
			t.Errorf("preset show prints metric %s as %s; want 4 significant digits", f[0], f[1])
		}
	}
	if strings.Contains(stdout, "-0.000") {
		t.Errorf("preset show prints a negative zero:\n%s", stdout)
	}

	full := session.DefaultSpace().Defaults()
	full.Weights["pose"] = 1.23456
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runBin(t, dir, "preset", "import", "fine", writeFile(t, "p.json", string(b)), "--config", cfg)
	if code != 0 || !strings.Contains(stdout, "rounded to 4 significant digits: weights.pose 1.23456 → 1.235") {
		t.Errorf("preset import of pose 1.23456: exit %d, %q %q; want it to say the value was rounded", code, stdout, stderr)
	}
	if _, stdout, _ := runBin(t, dir, "preset", "import", "plain", writeFile(t, "q.json", `{"weights": {"pose": 1.5}}`), "--config", cfg); strings.Contains(stdout, "rounded") {
		t.Errorf("an import that rounds nothing says %q", stdout)
	}
}

// firstChangedWeight is the first weight in the "proposed change" table of the terminal's
// text, and its old value.
func firstChangedWeight(t *testing.T, text string) (string, float64) {
	t.Helper()
	_, table, ok := strings.Cut(text, "proposed change:")
	if !ok {
		t.Fatalf("no proposed change in:\n%s", text)
	}
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || strings.Contains(f[0], ".") || !strings.HasPrefix(f[3], "×") {
			continue
		}
		if old, err := strconv.ParseFloat(f[1], 64); err == nil {
			return f[0], old
		}
	}
	t.Fatalf("no changed weight in the proposed change:\n%s", table)
	return "", 0
}

// Charts a full disk kept from being saved are drawn again when the session resumes: here
// the baseline's report is removed while the session is paused (issue 43, item 7.2).
func TestResumeRedrawsLostCharts(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "data_dir: data\nservice: {addr: off}\nsession:\n  mode: approval\n  fallback: true\n  trial_count: 4\n  rungs: [10, 20, 30]\n")
	if code, out, errOut := runBin(t, dir, "tune", "--config", cfg); code != 3 {
		t.Fatalf("tune with no input: exit %d, want 3 (paused)\n%s%s", code, out, errOut)
	}
	lost, _ := filepath.Glob(filepath.Join(dir, "data", "reports", "*", "t000-r0-*.png"))
	if len(lost) != len(charts.ReportNames(session.TrialRef{})) {
		t.Fatalf("the baseline's report before the resume: %v", lost)
	}
	for _, f := range lost {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errOut := runBin(t, dir, "tune", "--resume", "--config", cfg); code != 3 {
		t.Fatalf("tune --resume with no input: exit %d, want 3 (paused again)\n%s%s", code, out, errOut)
	}
	for _, f := range lost {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("not drawn again on resume: %v", err)
		}
	}
}

// tune's start message says what a second session builds on, as chat's does (issue 43,
// item 7.4; docs/design.md §1).
func TestTuneStartSaysWhatItBuildsOn(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "data_dir: data\nservice: {addr: off}\nsession:\n  fallback: true\n  trial_count: 4\n  rungs: [10, 20, 30]\n")
	code, first, errs := tuneBinary(t, "", nil, "tune", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("the first session: exit %d\n%s", code, errs)
	}
	code, _, errs = tuneBinary(t, "", nil, "tune", "--config", cfg, "--from", first.Session[:6], "--json")
	if code != 0 {
		t.Fatalf("the second session: exit %d\n%s", code, errs)
	}
	line, _, _ := strings.Cut(errs, "\n")
	if want := "; it builds on session " + first.Session[:8] + ": 4 trials, each weighted 0.5, starting from its best configuration (trial "; !strings.Contains(line, want) {
		t.Errorf("the start message %q does not say %q", line, want)
	}
}
