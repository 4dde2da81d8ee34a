package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tunebot/session"
)

// prefsScript is DeepSeek's answers, one patch of the best configuration each: on the sim
// surface at 20 iterations trial 1 scores +0.052, trial 2 (from trial 1) +0.071, trial 3
// (from trial 2) +0.063 and trial 4 (from trial 2) +0.059, every one eligible.
var prefsScript = []string{
	`{"patch": {"weights": {"action_rate_l2": -0.075}}, "rationale": "smoother", "expected_impact": {"smoothness": "+"}, "confidence": 0.5}`,
	`{"patch": {"weights": {"foot_slip": -0.375}}, "rationale": "less slip", "expected_impact": {"slip": "+"}, "confidence": 0.5}`,
	`{"patch": {"weights": {"stand_still": -1.1}}, "rationale": "stand still", "expected_impact": {"stability": "+"}, "confidence": 0.5}`,
	`{"patch": {"weights": {"foot_gait": 1.0}}, "rationale": "trot", "expected_impact": {"tracking": "0"}, "confidence": 0.5}`,
}

// terminal is a tune process driven through its terminal: what it prints for a person
// (stderr, with --json), its stdout, and its input.
type terminal struct {
	t      *testing.T
	cmd    *exec.Cmd
	human  *syncBuffer
	stdout *bytes.Buffer
	stdin  *os.File
}

// startTune runs tunebot with args (tune …) and env, reading what is typed().
func startTune(t *testing.T, env []string, args ...string) *terminal {
	t.Helper()
	tm := &terminal{t: t, human: &syncBuffer{}, stdout: &bytes.Buffer{}}
	tm.cmd, tm.stdin = startPiped(t, args, env, tm.stdout, tm.human)
	return tm
}

func (tm *terminal) typed(line string) { tm.stdin.WriteString(line + "\n") }

// see waits until the terminal has printed want.
func (tm *terminal) see(what, want string) {
	tm.t.Helper()
	if !waitUntil(60*time.Second, func() bool { return strings.Contains(tm.human.String(), want) }) {
		tm.t.Fatalf("timed out waiting for %s (%q); the terminal printed:\n%s", what, want, tm.human.String())
	}
}

// end waits for tune to end and returns its exit status and --json summary.
func (tm *terminal) end() (int, summaryJSON) {
	tm.t.Helper()
	done := make(chan error, 1)
	go func() { done <- tm.cmd.Wait() }()
	code := 0
	select {
	case err := <-done:
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			tm.t.Fatalf("tune: %v\n%s", err, tm.human.String())
		}
	case <-time.After(120 * time.Second):
		tm.t.Fatalf("the session did not end:\n%s", tm.human.String())
	}
	var sum summaryJSON
	lastJSON(tm.t, tm.stdout.String(), &sum)
	return code, sum
}

// exit waits for tune to end well and returns its --json summary.
func (tm *terminal) exit() summaryJSON {
	tm.t.Helper()
	code, sum := tm.end()
	if code != 0 {
		tm.t.Fatalf("tune exited %d:\n%s", code, tm.human.String())
	}
	return sum
}

// The terminal of tune, approval mode (issue 23): "which walks better?" is asked when trial 1
// finishes above the baseline; a typed answer records one preference (a second one is
// refused as already decided) and its note reaches DeepSeek's next request; a preference
// typed on one's own orders two trials within the noise at the promotion; the plan waits
// for the person, drop and promote change which trials train at the next rung, go starts
// it; --json lists the preference and who promoted what.
func TestPreferencesAndPromotionReviewInTheTerminal(t *testing.T) {
	ds, cfg := advisorConfig(t, "session:\n  trial_count: 5\n  rungs: [20, 40, 60]\n  promote: [5, 2, 1]\n", prefsScript...)
	tm := startTune(t, []string{"DEEPSEEK_API_KEY=" + testKey}, "tune", "--config", cfg, "--mode", "approval", "--json")
	typed, see := tm.typed, tm.see
	calls := func() int { ds.mu.Lock(); defer ds.mu.Unlock(); return ds.calls }

	see("proposal 1", "type: approve 1 ")
	typed("approve 1")
	see("the A/B card", "which walks better? A: trial 1 · B: trial 0")
	const note = "trots evenly, the baseline shuffles"
	typed("prefer 1 over 0 " + note)
	see("the answer", "» you: trial 1 walks better than the baseline (trial 0) (“"+note+"”)")
	asked := calls()
	typed("prefer 0 over 1")
	see("the second answer refused", "were already compared by you at")
	for seq := 2; seq <= 4; seq++ {
		see(fmt.Sprintf("proposal %d", seq), fmt.Sprintf("type: approve %d ", seq))
		typed(fmt.Sprintf("approve %d", seq))
	}
	ds.mu.Lock()
	if len(ds.bodies) <= asked || !strings.Contains(ds.bodies[asked], note) {
		t.Errorf("the note is not in DeepSeek's next request after the answer (%d calls)", len(ds.bodies))
	}
	ds.mu.Unlock()
	// Trials 3 (+0.063) and 2 (+0.071) are within the noise of each other: the person's
	// preference puts 3 first.
	see("trial 3's result", "] trial 3 @ rung 0: score")
	typed("prefer 3 over 2 steadier")
	see("the plan", "promotion review for rung 1: trials 3, 2 and the baseline go to 40 iterations")
	typed("drop 3")
	see("the drop", "» you dropped trial 3; trial 4, next in rank, takes its place: trials 2, 4 and the baseline go to 40 iterations")
	typed("promote 1")
	see("the promote", "» you promoted trial 1 over trial 4: trials 2, 1 and the baseline go to 40 iterations")
	typed("go")
	see("rung 2's plan", "promotion review for rung 2:")
	typed("go")
	sum := tm.exit()
	checkReadmeOutline(t, tm.stdout.String())
	var rung1 []int
	for _, tr := range sum.Trials {
		if tr.Rung != 1 {
			continue
		}
		rung1 = append(rung1, tr.Number)
		if tr.Number == 1 && (tr.PromotedBy == nil || tr.PromotedBy.By != "you" || tr.PromotedBy.Action != "promote" || tr.PromotedBy.Over != 4) {
			t.Errorf("trial 1 @ rung 1 promoted_by %+v, want you over trial 4", tr.PromotedBy)
		}
		if tr.Number != 1 && tr.PromotedBy != nil {
			t.Errorf("trial %d @ rung 1 promoted_by %+v, want null", tr.Number, tr.PromotedBy)
		}
	}
	if !slices.Equal(rung1, []int{0, 1, 2}) {
		t.Errorf("rung 1 trained trials %v, want the reviewed plan 0, 1, 2", rung1)
	}
	if len(sum.Preferences) != 2 || sum.Preferences[0].Winner == nil || *sum.Preferences[0].Winner != 1 || sum.Preferences[0].Note != note ||
		sum.Preferences[0].By != "you" || sum.Preferences[1].A != 3 || *sum.Preferences[1].Winner != 3 {
		t.Errorf("preferences %+v", sum.Preferences)
	}
}

// rung1Plan is the plan tuneToReview's session waits on.
const rung1Plan = "promotion review for rung 1: trials 2, 3, 1 and the baseline go to 40 iterations"

// tuneToReview runs tune in approval mode (4 trials, DeepSeek's prefsScript), approves its
// proposals and returns once rung 1's plan (rung1Plan) waits for a person's go, with the
// config and environment to resume it with.
func tuneToReview(t *testing.T) (tm *terminal, cfg string, env []string) {
	t.Helper()
	_, cfg = advisorConfig(t, "session:\n  trial_count: 4\n  rungs: [20, 40, 60]\n", prefsScript...)
	env = []string{"DEEPSEEK_API_KEY=" + testKey}
	tm = startTune(t, env, "tune", "--config", cfg, "--json", "--mode", "approval")
	for seq := 1; seq <= 3; seq++ {
		tm.see(fmt.Sprintf("proposal %d", seq), fmt.Sprintf("type: approve %d ", seq))
		tm.typed(fmt.Sprintf("approve %d", seq))
	}
	tm.see("the plan", rung1Plan)
	return tm, cfg, env
}

// A tune killed (kill -9) while its promotion plan waits for a person's go: tune --resume
// shows the plan again, the review resumes where it was, and go goes on (issue 23).
func TestKillDuringPromotionReviewResumesIt(t *testing.T) {
	tm, cfg, env := tuneToReview(t)
	if err := tm.cmd.Process.Kill(); err != nil { // SIGKILL: nothing is cleaned up
		t.Fatal(err)
	}
	_ = tm.cmd.Wait()

	tm = startTune(t, env, "tune", "--config", cfg, "--json", "--resume")
	tm.see("the plan shown again", rung1Plan)
	tm.typed("go")
	tm.see("rung 2's plan", "promotion review for rung 2:")
	tm.typed("go")
	sum := tm.exit()
	rung1 := 0
	for _, tr := range sum.Trials {
		if tr.Rung == 1 {
			rung1++
		}
	}
	if sum.State != "succeeded" || rung1 != 4 {
		t.Errorf("after the resumed review: %s with %d trials at rung 1, want succeeded with the plan's 4", sum.State, rung1)
	}
}

// Input ends while the promotion plan waits for a person's go (approval mode): nobody is
// left to say go, so tune pauses the session at once, as one waiting for a decision, and
// exits 3 with the --resume line, rather than when the plan's 15 minutes run out; tune
// --resume goes on from the plan.
func TestEndOfInputDuringPromotionReview(t *testing.T) {
	tm, cfg, env := tuneToReview(t)
	tm.stdin.Close()
	code, sum := tm.end()
	if code != 3 || sum.State != session.StatePaused || !strings.Contains(tm.human.String(), "continue it with: tunebot tune --resume --config "+cfg) {
		t.Fatalf("exit %d, session %s; want 3, paused, with the --resume line:\n%s", code, sum.State, tm.human.String())
	}
	if !strings.Contains(tm.human.String(), "is paused; its promotion plan waits for --resume") {
		t.Errorf("tune does not say the plan waits:\n%s", tm.human.String())
	}
	for _, tr := range sum.Trials {
		if tr.Rung > 0 {
			t.Fatalf("trial %d @ rung %d started: the plan went ahead without a go", tr.Number, tr.Rung)
		}
	}

	tm = startTune(t, env, "tune", "--config", cfg, "--json", "--resume")
	tm.see("the plan shown again", rung1Plan)
	tm.typed("go")
	tm.see("rung 2's plan", "promotion review for rung 2:")
	tm.typed("go")
	if sum = tm.exit(); sum.State != session.StateSucceeded {
		t.Errorf("after the resumed review: %s, want succeeded", sum.State)
	}
}

// TestPreferencesOnThePageInChromium drives the monitoring page in Chromium (issue 23): the
// A/B card with both trials' clips playing side by side, a click with a note that records
// the preference (a second answer refused as already decided), the answers listed with what
// they do; the promotion plan with drop, promote and Go, and the halving ladder saying who
// promoted which trial over which.
func TestPreferencesOnThePageInChromium(t *testing.T) {
	chromium, shots := needChromium(t)
	ds := &fakeDeepSeek{script: prefsScript}
	dsSrv := httptest.NewServer(ds)
	defer dsSrv.Close()
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: data\nservice: {addr: %q}\nadvisor:\n  base_url: %s\n", addr, dsSrv.URL))
	_, stdin, _ := startDaemon(t, cfg, "DEEPSEEK_API_KEY="+testKey)
	link := dashboardLink(t, cfg)
	base := "http://" + addr
	b := startBrowser(t, chromium)
	b.navigate(link)
	b.waitJS("the sign-in button", `!!document.querySelector("#signin")`)
	b.eval(`setTimeout(() => document.querySelector("#signin").click(), 0)`)
	b.waitJS("the sessions page", `location.pathname === "/" && !!document.querySelector("#session-list")`)
	stdin.WriteString("/tune start mode=approval trials=5 rungs=20,40,60 promote=5,1,1\n")
	b.waitJS("the new session", `!!document.querySelector("#sessions tbody tr")`)
	b.navigate(base + b.evalString(`document.querySelector("#sessions tbody a").getAttribute("href")`))
	sid := b.evalString(`location.pathname.split("/")[2]`)
	approve := func(seq int) {
		t.Helper()
		b.waitJS(fmt.Sprintf("proposal %d", seq), fmt.Sprintf(`!!document.querySelector('#decide [data-proposal="%d"] #approve')`, seq))
		b.eval(`document.querySelector("#approve").click()`)
		b.waitJS(fmt.Sprintf("proposal %d approved", seq), fmt.Sprintf(`(document.querySelector("#decide-msg")||{}).textContent.includes("proposal %d approved by operator")`, seq))
	}
	approve(1)
	b.waitJS("the A/B card with both clips playing", `(() => { const ps = [...document.querySelectorAll("#prefer-card .clip-side .clip-player")];
		return ps.length === 2 && ps.every((p) => p.complete && p.naturalWidth > 0) })()`)
	if got := b.evalString(`[...document.querySelectorAll("#prefer-card .clip-side")].map((s) => s.dataset.trial).join(" ")`); got != "1@0 0@0" {
		t.Errorf("the card's sides %q, want A trial 1 and B the baseline", got)
	}
	b.screenshot(filepath.Join(shots, "prefs-1-card.png"))
	b.eval(`document.querySelector("#prefer-note").value = "` + noteOfCard + `"; document.querySelector("#prefer-a").click()`)
	b.waitJS("the answer", `(document.querySelector("#prefer-msg")||{}).textContent.includes("operator: trial 1 walks better than the baseline (trial 0)")`)
	b.waitJS("the answer listed", `(document.querySelector('#preferences li[data-seq="1"]')||{}).textContent.includes("shuffles its hind feet")`)
	// A second answer (a page that had not refreshed) is one decision too many.
	if got := b.evalString(`fetch("/api/sessions/` + sid + `/prefer", {method: "POST", headers: {"Content-Type": "application/json"},
		body: JSON.stringify({card: "1", answer: "b"})}).then((r) => r.json()).then((d) => d.text)`); !strings.Contains(got, "already compared by operator") {
		t.Errorf("a second answer from the page: %q", got)
	}
	for seq := 2; seq <= 4; seq++ {
		approve(seq)
	}
	b.waitJS("the promotion plan", `(document.querySelector("#review-line")||{}).textContent.includes("promotion review for rung 1: trial 2 and the baseline go to 40 iterations")`)
	b.screenshot(filepath.Join(shots, "prefs-2-plan.png"))
	b.eval(`document.querySelector("#review-trial").value = "2"; document.querySelector("#drop").click()`)
	b.waitJS("the drop", `(document.querySelector("#review-msg")||{}).textContent.includes("operator dropped trial 2; trial 3, next in rank, takes its place")`)
	b.eval(`document.querySelector("#review-trial").value = "4"; document.querySelector("#promote").click()`)
	b.waitJS("the promote", `(document.querySelector("#review-msg")||{}).textContent.includes("operator promoted trial 4 over trial 3")`)
	b.eval(`document.querySelector("#go").click()`)
	b.waitJS("the ladder naming who promoted trial 4", `[...document.querySelectorAll("#ladder .promoted-by")].some((e) => e.textContent.includes("promoted by operator over trial 3"))`)
	b.screenshot(filepath.Join(shots, "prefs-3-ladder.png"))
}
