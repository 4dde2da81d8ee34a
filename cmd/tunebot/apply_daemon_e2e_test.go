package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/apply/applytest"
	"tunebot/session"
	"tunebot/store"
)

// savePresets puts ps in the store of dataDir before a daemon opens it.
func savePresets(t *testing.T, dataDir string, ps ...session.Preset) {
	t.Helper()
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dataDir, "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, p := range ps {
		if err := db.SavePreset(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
}

// applyConfig is a config whose apply: section edits repo (applytest.Repo), gated by `true`.
func applyConfig(t *testing.T, dir, data, repo string) string {
	t.Helper()
	return writeConfig(t, dir, fmt.Sprintf(`data_dir: %s
service: {addr: "off"}
apply:
  repo: %s
  test: ["true"]
  edits:
    - {file: %s, name: foot_slip, pattern: 'cfg\.rewards\["{name}"\]\.weight = ([-0-9.eE+]+)'}
`, data, repo, applytest.CfgFile))
}

// TestApplyWhileTheDaemonRuns (issue 28 item 7): apply diff, apply --yes (the sim rule,
// --from-sim and --partial included) and rollback work while the daemon holds the store, run by the
// daemon with its apply: section, recorded as the user the kernel names (never $USER).
func TestApplyWhileTheDaemonRuns(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	repo := applytest.Repo(t)
	cfg := applyConfig(t, dir, data, repo)
	slippy := session.DefaultSpace().Defaults()
	slippy.Weights["foot_slip"] = -0.4
	simmed := session.DefaultSpace().Defaults()
	simmed.Weights["foot_slip"] = -0.3
	wide := session.DefaultSpace().Defaults()
	wide.Weights["foot_slip"], wide.Weights["pose"], wide.Weights["is_terminated"] = -0.5, 1.5, -200
	savePresets(t, data,
		session.Preset{Name: "wide", SessionID: "s3", Config: wide, CreatedAt: time.Now()},
		session.Preset{Name: "slippy", SessionID: "s1", Config: slippy, CreatedAt: time.Now()},
		session.Preset{Name: "simmed", SessionID: "s2", Config: simmed, Trainer: session.TrainerSim, CreatedAt: time.Now()},
		session.Preset{Name: "same", SessionID: "s4", Config: simmed, CreatedAt: time.Now()})
	cmd, _, out := startDaemon(t, cfg)
	mallory := []string{"USER=mallory"}
	for _, tc := range []struct {
		args        []string
		code        int
		out, errOut string
	}{
		{[]string{"apply", "diff", "slippy"}, 0, "foot_slip: -0.25 → -0.4", ""},
		{[]string{"apply", "slippy"}, 0, "add --yes to commit these changes", ""},
		{[]string{"apply", "nosuch", "--yes"}, 1, "", "preset nosuch does not exist; tunebot preset list lists them"},
		{[]string{"apply", "simmed", "--yes"}, 1, "", "trained on the built-in sim trainer"},
		{[]string{"apply", "slippy", "--yes"}, 0, "preset slippy committed as", ""},
		{[]string{"apply", "rollback", "--yes"}, 0, "reverted", ""},
		// Issue 43: applying again after a rollback goes on a fresh branch (the rolled-back one
		// keeps its record); a checkout that holds a preset already has nothing to commit, and
		// that is no failure; one value left out "was", not "were".
		{[]string{"apply", "slippy", "--yes"}, 0, "on branch tunebot/slippy-2 (tests passed)", ""},
		{[]string{"apply", "simmed", "--yes", "--from-sim"}, 0, "(tests passed); it was made on tunebot's built-in sim trainer: its scores are the sim's, not a robot's", ""},
		{[]string{"apply", "same", "--yes"}, 0, "the trainer checkout already has every value of preset same that apply.edits writes: there is nothing to commit\n", ""},
		// Issue 35 item 1: a preset apply.edits writes only in part is shown with what is
		// left out, refused whole, and committed in part only when asked.
		{[]string{"apply", "diff", "wide"}, 0, " → -0.5\nnot written (1 of the preset's values):\n  pose = 1.5 (no edit in apply.edits names it)\n", ""},
		{[]string{"apply", "wide", "--yes"}, 1, "pose = 1.5", "preset wide cannot be applied whole"},
		{[]string{"apply", "wide", "--yes", "--partial"}, 0, "1 of its values was left out, as the commit message says", ""},
	} {
		code, stdout, stderr := runBinEnv(t, mallory, append(tc.args, "--config", cfg)...)
		if code != tc.code || !strings.Contains(stdout, tc.out) || !strings.Contains(stderr, tc.errOut) || strings.Contains(stderr, "in use") {
			t.Errorf("%v: exit %d\nstdout: %s\nstderr: %s", tc.args, code, stdout, stderr)
		}
	}
	if branches := applytest.Git(t, repo, "branch", "--list"); !strings.Contains(branches, "tunebot/slippy") || !strings.Contains(branches, "tunebot/simmed") {
		t.Errorf("the checkout's branches: %s", branches)
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, out.String())
	}
	me := currentUser(t)
	applies := 0
	for _, a := range readDataDir(t, data).Audit {
		if a.Kind == "apply" || strings.Contains(a.Kind, "rollback") {
			applies++
			if a.Actor.ID != me || a.Actor.Name == "mallory" {
				t.Errorf("%s is audited as %+v, want %s", a.Kind, a.Actor, me)
			}
		}
	}
	// slippy, its rollback, slippy again on a fresh branch, simmed, and part of wide
	if applies != 5 {
		t.Errorf("%d applies and rollbacks audited, want 5", applies)
	}
}

// TestApplyThroughTheDaemonNamesItsCheckout (issue 43 item 6.2): an apply the daemon runs
// says so, naming the checkout its apply: section changes and the --config it did not read,
// and says plainly when that config names another checkout.
func TestApplyThroughTheDaemonNamesItsCheckout(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	repo, other := applytest.Repo(t), applytest.Repo(t)
	cfg := applyConfig(t, dir, data, repo)
	otherCfg := applyConfig(t, t.TempDir(), data, other)
	slippy := session.DefaultSpace().Defaults()
	slippy.Weights["foot_slip"] = -0.4
	savePresets(t, data, session.Preset{Name: "slippy", SessionID: "s1", Config: slippy, CreatedAt: time.Now()},
		session.Preset{Name: "slippier", SessionID: "s2", Config: slippy, CreatedAt: time.Now()})
	startDaemon(t, cfg)
	for _, tc := range []struct {
		name, cfg, preset string
		want              []string
		not               string
	}{
		{"its own config", cfg, "slippy", []string{"a running tunebot holds the data file: applying with its apply: section (repo " + repo + "), not " + cfg + "'s"}, "another checkout"},
		{"another config", otherCfg, "slippier", []string{"applying with its apply: section (repo " + repo + "), not " + otherCfg + "'s",
			otherCfg + " names another checkout (apply.repo " + other + "), which is left as it is"}, "\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runBinEnv(t, nil, "apply", tc.preset, "--yes", "--config", tc.cfg)
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("want %q in stdout:\n%s", w, stdout)
				}
			}
			if code != 0 || strings.Contains(stdout, tc.not) {
				t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			runBinEnv(t, nil, "apply", "rollback", "--yes", "--config", tc.cfg)
		})
	}
	if log := applytest.Git(t, other, "log", "--oneline"); strings.Contains(log, "slipp") {
		t.Errorf("the checkout the daemon does not apply to changed: %s", log)
	}
}

// A daemon without an apply: section says so, and that the command's --config is not
// what counts while it runs.
func TestApplyThroughADaemonWithoutApply(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: \"off\"}\n", data))
	withApply := applyConfig(t, t.TempDir(), data, applytest.Repo(t))
	startDaemon(t, cfg)
	code, stdout, stderr := runBin(t, dir, "apply", "diff", "slippy", "--config", withApply)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "apply is not configured in the running tunebot: its config has no apply: section") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

// TestStoreCommandsWhileTuneRuns (issue 28 item 7): a foreground tune holds the store and
// serves the same socket as the daemon, so preset and apply work beside it; an apply that
// would change the checkout is refused while tune's session uses it.
func TestStoreCommandsWhileTuneRuns(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := applyConfig(t, dir, data, applytest.Repo(t))
	slippy := session.DefaultSpace().Defaults()
	slippy.Weights["foot_slip"] = -0.4
	savePresets(t, data, session.Preset{Name: "slippy", SessionID: "s1", Config: slippy, CreatedAt: time.Now()})
	tm := startTune(t, []string{"DEEPSEEK_API_KEY="}, "tune", "--config", cfg, "--fallback", "--mode", "approval", "--json")
	tm.see("proposal 1", "type: approve 1 ")
	for _, tc := range []struct {
		args        []string
		code        int
		out, errOut string
	}{
		{[]string{"preset", "list"}, 0, "slippy", ""},
		{[]string{"preset", "show", "slippy"}, 0, "foot_slip", ""},
		{[]string{"apply", "diff", "slippy"}, 0, "foot_slip: -0.25 → -0.4", ""},
		{[]string{"apply", "slippy", "--yes"}, 1, "", "uses the trainer checkout; apply or roll back after it ends"},
	} {
		code, stdout, stderr := runBinEnv(t, nil, append(tc.args, "--config", cfg)...)
		if code != tc.code || !strings.Contains(stdout, tc.out) || !strings.Contains(stderr, tc.errOut) || strings.Contains(stderr, "in use") || strings.Contains(stderr, "no token") {
			t.Errorf("%v: exit %d\nstdout: %s\nstderr: %s", tc.args, code, stdout, stderr)
		}
	}
	tm.typed("cancel")
	tm.end()
	if _, err := os.Stat(filepath.Join(data, "backup.token")); err == nil {
		t.Error("tune left its socket's token behind")
	}
}
