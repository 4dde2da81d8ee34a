package apply_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/apply"
	"tunebot/apply/applytest"
	"tunebot/bot"
	"tunebot/session"
	"tunebot/session/sessiontest"
)

const envCfg = `# fake trainer config
import math

def configure(cfg):
    cfg.rewards["foot_slip"].weight = -0.25
    cfg.rewards["is_terminated"].weight = -200.0
    cfg.rewards["joint_acc_l2"].weight = -2.5e-7
    cfg.rewards["foot_gait"].params["period"] = 0.6
`

const gaitCfg = "FOOT_TARGET_HEIGHT = 0.1\nother = 1\n"

var alice = session.Actor{Platform: "slack", ID: "U1", Name: "alice"}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newRepo makes a trainer checkout on branch main with two config files.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	applytest.Git(t, dir, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, "tasks", "velocity_env_cfg.py"), envCfg)
	write(t, filepath.Join(dir, "tasks", "gait.py"), gaitCfg)
	applytest.Git(t, dir, "add", ".")
	applytest.Git(t, dir, "commit", "-q", "-m", "trainer")
	return dir
}

func rewardEdit(name string) apply.Edit {
	return apply.Edit{File: "tasks/velocity_env_cfg.py", Name: name,
		Pattern: `cfg\.rewards\["{name}"\]\.weight = ([-0-9.eE+]+)`}
}

func edits() []apply.Edit {
	return []apply.Edit{
		rewardEdit("foot_slip"),
		rewardEdit("is_terminated"),
		{File: "tasks/velocity_env_cfg.py", Name: "foot_gait.period", Pattern: `\.params\["period"\] = (?P<value>[0-9.]+)`},
		{File: "tasks/gait.py", Name: "foot_clearance.target_height", Pattern: `(?m)^FOOT_TARGET_HEIGHT = (\S+)$`, Replace: "{value}  # tunebot: {name}"},
	}
}

func testPreset() session.Preset {
	space := session.DefaultSpace()
	c := space.Defaults()
	c.Weights["foot_slip"] = -0.5
	c.Weights["is_terminated"] = -250
	c.Params["foot_gait.period"] = 0.55
	c.Params["foot_clearance.target_height"] = 0.12
	return session.Preset{Name: "auto-tune-0123abcd", SessionID: "0123abcdef", Trial: session.TrialRef{Number: 5, Rung: 2},
		Config: c, Score: 0.214, ScoreStd: 0.01, Task: "Unitree-Go2-Flat"}
}

func newApplier(t *testing.T, repo string, test []string, mod func(*apply.Config)) (*apply.Applier, *sessiontest.AuditLog) {
	t.Helper()
	cfg := apply.Config{Repo: repo, Edits: edits(), Test: test, TestTimeout: time.Minute}
	if mod != nil {
		mod(&cfg)
	}
	log := &sessiontest.AuditLog{}
	a, err := apply.New(cfg, session.DefaultSpace(), log, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a, log
}

// snapshot is everything an undo must restore.
type snapshot struct {
	head, mainSHA, branches string
	files                   map[string]string
}

func snap(t *testing.T, repo string) snapshot {
	t.Helper()
	return snapshot{
		head:     applytest.Git(t, repo, "rev-parse", "--abbrev-ref", "HEAD"),
		mainSHA:  applytest.Git(t, repo, "rev-parse", "main"),
		branches: applytest.Git(t, repo, "for-each-ref", "--format=%(refname)", "refs/heads"),
		files: map[string]string{
			"env":  read(t, filepath.Join(repo, "tasks", "velocity_env_cfg.py")),
			"gait": read(t, filepath.Join(repo, "tasks", "gait.py")),
		},
	}
}

func TestApplyPassingTestsCommitsOnABranch(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	before := snap(t, repo)
	a, log := newApplier(t, repo, []string{"sh", "-c", `grep -q 'foot_slip"\].weight = -0.5$' tasks/velocity_env_cfg.py && echo tests ok`}, nil)
	res, err := a.Apply(ctx, testPreset(), alice)
	if err != nil {
		t.Fatalf("Apply: %v (tail %q)", err, res.TestOutputTail)
	}
	if res.Reverted || res.Branch != "tunebot/auto-tune-0123abcd" || res.Commit == "" || res.TestOutputTail != "tests ok" {
		t.Errorf("result = %+v", res)
	}
	if got := applytest.Git(t, repo, "rev-list", "--count", "main.."+res.Branch); got != "1" {
		t.Errorf("branch has %s commits over main, want 1", got)
	}
	if got := applytest.Git(t, repo, "rev-parse", res.Branch); got != res.Commit {
		t.Errorf("branch tip %s, result commit %s", got, res.Commit)
	}
	if got := applytest.Git(t, repo, "rev-parse", "main"); got != before.mainSHA {
		t.Errorf("main moved: %s → %s", before.mainSHA, got)
	}
	if got := applytest.Git(t, repo, "symbolic-ref", "--short", "HEAD"); got != res.Branch {
		t.Errorf("HEAD on %s, want the preset branch (the checkout carries the applied preset)", got)
	}
	wantEnv := strings.NewReplacer(`"foot_slip"].weight = -0.25`, `"foot_slip"].weight = -0.5`,
		`"is_terminated"].weight = -200.0`, `"is_terminated"].weight = -250.0`,
		`["period"] = 0.6`, `["period"] = 0.55`).Replace(envCfg)
	if got := read(t, filepath.Join(repo, "tasks", "velocity_env_cfg.py")); got != wantEnv {
		t.Errorf("velocity_env_cfg.py:\n%s", cmp.Diff(wantEnv, got))
	}
	if got, want := read(t, filepath.Join(repo, "tasks", "gait.py")), "FOOT_TARGET_HEIGHT = 0.12  # tunebot: foot_clearance.target_height\nother = 1\n"; got != want {
		t.Errorf("gait.py = %q, want %q", got, want)
	}
	msg := applytest.Git(t, repo, "log", "-1", "--format=%an <%ae>%n%B", res.Commit)
	for _, w := range []string{"tunebot <tunebot@localhost>", "apply preset auto-tune-0123abcd", "session 0123abcdef", "trial 5 @ rung 2", "+0.214", "alice", "foot_slip: -0.25 -> -0.5"} {
		if !strings.Contains(msg, w) {
			t.Errorf("commit message does not say %q:\n%s", w, msg)
		}
	}
	if status := applytest.Git(t, repo, "status", "--porcelain"); status != "" {
		t.Errorf("work tree not clean after apply: %s", status)
	}
	if es := log.Entries(); len(es) != 1 || es[0].Kind != "apply" || es[0].Detail["commit"] != res.Commit ||
		es[0].Detail["reverted"] != false || es[0].SessionID != "0123abcdef" {
		t.Errorf("audit = %+v", es)
	}
	// A second apply of the same preset finds its branch and refuses, saying what clears it.
	applytest.Git(t, repo, "checkout", "-q", "main")
	_, err = a.Apply(ctx, testPreset(), alice)
	for _, w := range []string{"preset auto-tune-0123abcd is applied on branch tunebot/auto-tune-0123abcd (commit " + res.Commit[:12] + ")",
		"tunebot apply rollback --yes", "git -C " + repo + " branch -D tunebot/auto-tune-0123abcd"} {
		if err == nil || !errors.Is(err, session.ErrExists) || !strings.Contains(err.Error(), w) {
			t.Errorf("applying again: %v, want ErrExists saying %q", err, w)
		}
	}
}

// TestApplyAgainAfterRollback (issue 43 item 6.3): a preset whose apply was rolled back is
// applied again on a fresh branch, <branch>-2 (then -3), from the checkout's branch as an
// apply always starts; the rolled-back branch keeps its apply and its revert.
func TestApplyAgainAfterRollback(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	a, log := newApplier(t, repo, []string{"true"}, nil)
	first, err := a.Apply(ctx, testPreset(), alice)
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range []string{"tunebot/auto-tune-0123abcd-2", "tunebot/auto-tune-0123abcd-3"} {
		rec, err := a.LastApply(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := a.Rollback(ctx, rec, alice)
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Apply(ctx, testPreset(), alice)
		if err != nil {
			t.Fatalf("applying again after rollback %d: %v", n+1, err)
		}
		if res.Branch != want || res.Commit == "" {
			t.Errorf("applying again after rollback %d: %+v, want a commit on %s", n+1, res, want)
		}
		if got := applytest.Git(t, repo, "show", res.Branch+":tasks/velocity_env_cfg.py"); !strings.Contains(got, `"foot_slip"].weight = -0.5`) {
			t.Errorf("branch %s does not hold the preset:\n%s", res.Branch, got)
		}
		if got := applytest.Git(t, repo, "rev-parse", rec.Branch); got != rb.Revert {
			t.Errorf("the rolled-back branch %s moved: %s, want its revert %s", rec.Branch, got, rb.Revert)
		}
		if last, err := a.LastApply(ctx); err != nil || last.Commit != res.Commit {
			t.Errorf("LastApply = %+v, %v; want the new apply %s", last, err, res.Commit)
		}
	}
	if got := applytest.Git(t, repo, "rev-parse", "tunebot/auto-tune-0123abcd^"); got != first.Commit {
		t.Errorf("the first branch's revert has parent %s, want the first apply %s", got, first.Commit)
	}
	if want := []string{"apply", "rollback", "apply", "rollback", "apply"}; !cmp.Equal(log.Kinds(), want) {
		t.Errorf("audit %v, want %v", log.Kinds(), want)
	}
}

// Past the bound on a preset's rolled-back branches, the refusal names the first and the
// last of them as git spells them, prefix and all.
func TestApplyRefusesPastTheRolledBackBranches(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	a, log := newApplier(t, repo, []string{"true"}, nil)
	for n := 1; n <= 20; n++ {
		branch := "tunebot/auto-tune-0123abcd"
		if n > 1 {
			branch += "-" + strconv.Itoa(n)
		}
		applytest.Git(t, repo, "branch", branch)
		commit := fmt.Sprintf("%040d", n)
		for _, kind := range []string{"apply", "rollback"} {
			if err := log.Append(ctx, session.AuditEntry{Kind: kind, Detail: map[string]any{"preset": "auto-tune-0123abcd", "branch": branch, "commit": commit}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err := a.Apply(ctx, testPreset(), alice)
	if want := "(tunebot/auto-tune-0123abcd to tunebot/auto-tune-0123abcd-20)"; !errors.Is(err, session.ErrExists) || !strings.Contains(err.Error(), want) {
		t.Errorf("apply past 20 rolled-back branches: %v, want ErrExists naming %s", err, want)
	}
}

func TestApplyFailureLeavesNoTrace(t *testing.T) {
	ctx := context.Background()
	outside := filepath.Join(t.TempDir(), "outside.py")
	write(t, outside, gaitCfg)
	tests := []struct {
		name   string
		test   []string
		mod    func(*apply.Config)
		setup  func(t *testing.T, repo string)
		want   string
		noTry  bool // refused before anything was touched, so no audit record
		inAudt bool
	}{
		{name: "tests fail", test: []string{"false"}, want: "the test command false failed (exit status 1)"},
		{name: "tests fail with output", test: []string{"sh", "-c", "echo FAILED test_rewards; exit 3"}, want: "exit status 3"},
		{name: "tests time out", test: []string{"sleep", "30"}, mod: func(c *apply.Config) { c.TestTimeout = 300 * time.Millisecond }, want: "timed out after 300ms"},
		{name: "test command missing", test: []string{"./no-such-test"}, want: "could not run"},
		{name: "pattern does not match", mod: func(c *apply.Config) {
			c.Edits = append(c.Edits, rewardEdit("stand_still"))
		}, want: "stand_still = -1 (its edit, edits[4], matches 0 times in tasks/velocity_env_cfg.py, not once)", noTry: true},
		{name: "pattern matches twice", mod: func(c *apply.Config) {
			c.Edits = append(c.Edits, apply.Edit{File: "tasks/velocity_env_cfg.py", Name: "pose", Pattern: `(cfg)\.rewards`})
		}, want: "pose = 1 (its edit, edits[4], matches 4 times", noTry: true},
		{name: "base branch at another commit", test: []string{"false"}, setup: func(t *testing.T, repo string) {
			applytest.Git(t, repo, "checkout", "-q", "-b", "dev")
			write(t, filepath.Join(repo, "tasks", "gait.py"), gaitCfg+"dev = 2\n")
			applytest.Git(t, repo, "commit", "-q", "-am", "dev change")
		}, mod: func(c *apply.Config) { c.Base = "main" }, want: "failed"},
		{name: "symlink escapes the checkout", setup: func(t *testing.T, repo string) {
			if err := os.Symlink(outside, filepath.Join(repo, "tasks", "link.py")); err != nil {
				t.Fatal(err)
			}
			applytest.Git(t, repo, "add", "tasks/link.py")
			applytest.Git(t, repo, "commit", "-q", "-m", "link")
		}, mod: func(c *apply.Config) {
			c.Edits = append(c.Edits, apply.Edit{File: "tasks/link.py", Name: "foot_clearance.target_height", Pattern: `FOOT_TARGET_HEIGHT = (\S+)`})
		}, want: "edit file tasks/link.py resolves outside the checkout", noTry: true},
		{name: "dirty tree", setup: func(t *testing.T, repo string) {
			write(t, filepath.Join(repo, "tasks", "gait.py"), gaitCfg+"# my work in progress\n")
		}, want: "has uncommitted changes (tasks/gait.py); commit or stash them first", noTry: true},
		{name: "detached head", setup: func(t *testing.T, repo string) {
			applytest.Git(t, repo, "checkout", "-q", "--detach")
		}, want: "detached HEAD", noTry: true},
		{name: "already applied", setup: func(t *testing.T, repo string) {
			applytest.Git(t, repo, "branch", "tunebot/auto-tune-0123abcd")
		}, want: "branch tunebot/auto-tune-0123abcd exists but no apply tunebot recorded is on it; to apply preset auto-tune-0123abcd, delete it: git -C ", noTry: true},
		{name: "missing base", mod: func(c *apply.Config) { c.Base = "release" }, want: "base branch release does not exist", noTry: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo := newRepo(t)
			if tc.setup != nil {
				tc.setup(t, repo)
			}
			before := snap(t, repo)
			statusBefore := applytest.Git(t, repo, "status", "--porcelain")
			a, log := newApplier(t, repo, tc.test, tc.mod)
			res, err := a.Apply(ctx, testPreset(), alice)
			if err == nil {
				t.Fatalf("Apply succeeded: %+v", res)
			}
			var ue *session.UserError
			if !errors.As(err, &ue) {
				t.Errorf("error %T is not a user error: %v", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if after := snap(t, repo); !cmp.Equal(before, after, cmp.AllowUnexported(snapshot{})) {
				t.Errorf("checkout changed:\n%s", cmp.Diff(before, after, cmp.AllowUnexported(snapshot{})))
			}
			if got := applytest.Git(t, repo, "status", "--porcelain"); got != statusBefore {
				t.Errorf("status %q, was %q", got, statusBefore)
			}
			if got := read(t, outside); got != gaitCfg {
				t.Errorf("a file outside the checkout changed: %q", got)
			}
			if tc.noTry {
				if len(log.Entries()) != 0 {
					t.Errorf("a refusal before any change was recorded as an apply: %v", log.Kinds())
				}
				return
			}
			if !res.Reverted || res.Commit != "" || res.Reason == "" {
				t.Errorf("result = %+v, want reverted with a reason and no commit", res)
			}
			if es := log.Entries(); len(es) != 1 || es[0].Detail["reverted"] != true || es[0].Detail["reason"] != res.Reason {
				t.Errorf("audit = %+v", es)
			}
			if tc.name == "tests fail with output" && res.TestOutputTail != "FAILED test_rewards" {
				t.Errorf("test output tail = %q", res.TestOutputTail)
			}
		})
	}
}

func TestRollbackIsARevertCommit(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	a, log := newApplier(t, repo, []string{"true"}, nil)
	if _, err := a.LastApply(ctx); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("LastApply before any apply: %v", err)
	}
	res, err := a.Apply(ctx, testPreset(), alice)
	if err != nil {
		t.Fatal(err)
	}
	applytest.Git(t, repo, "checkout", "-q", "main")
	rec, err := a.LastApply(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Commit != res.Commit || rec.Branch != res.Branch || rec.Preset != "auto-tune-0123abcd" || rec.By.ID != alice.ID {
		t.Errorf("LastApply = %+v, want the apply %+v", rec, res)
	}
	rb, err := a.Rollback(ctx, rec, alice)
	if err != nil {
		t.Fatal(err)
	}
	if got := applytest.Git(t, repo, "rev-parse", res.Branch+"^"); got != res.Commit {
		t.Errorf("revert's parent %s, want the apply commit %s (a new commit, not a reset)", got, res.Commit)
	}
	if got := applytest.Git(t, repo, "rev-parse", res.Branch); got != rb.Revert {
		t.Errorf("branch tip %s, want the revert %s", got, rb.Revert)
	}
	if got := applytest.Git(t, repo, "show", res.Branch+":tasks/velocity_env_cfg.py"); got != strings.TrimSpace(envCfg) {
		t.Errorf("after rollback the branch's file is:\n%s", got)
	}
	if got := applytest.Git(t, repo, "log", "-1", "--format=%s", rb.Revert); !strings.HasPrefix(got, `Revert "tunebot: apply preset auto-tune-0123abcd"`) {
		t.Errorf("revert subject %q", got)
	}
	if got := applytest.Git(t, repo, "symbolic-ref", "--short", "HEAD"); got != "main" {
		t.Errorf("HEAD on %s after rollback, want main where it was", got)
	}
	if !cmp.Equal(log.Kinds(), []string{"apply", "rollback"}) || log.Entries()[1].Detail["revert_commit"] != rb.Revert {
		t.Errorf("audit = %+v", log.Entries())
	}
	if _, err := a.LastApply(ctx); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("LastApply after the rollback: %v, want nothing left", err)
	}
	// Rolling back the same record twice would revert the revert's target again: refused
	// by git as a no-op or a conflict, and never a reset.
	if _, err := a.Rollback(ctx, rec, alice); err == nil {
		t.Errorf("a second rollback of the same apply succeeded")
	}
	if got := applytest.Git(t, repo, "rev-parse", res.Branch); got != rb.Revert {
		t.Errorf("a refused rollback moved the branch")
	}
}

func TestDiffPreviewsWithoutTouching(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	before := snap(t, repo)
	a, log := newApplier(t, repo, []string{"false"}, nil)
	p := testPreset()
	p.Config.Weights["joint_acc_l2"] = -5e-7
	p.Config.Params["foot_clearance.target_height"] = 0.1 // what the checkout holds: not shown
	pv, err := a.Diff(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	changes := pv.Changes
	want := []bot.ApplyChange{
		{File: "tasks/velocity_env_cfg.py", Line: 5, Name: "foot_slip", Old: "-0.25", New: "-0.5"},
		{File: "tasks/velocity_env_cfg.py", Line: 6, Name: "is_terminated", Old: "-200.0", New: "-250.0"},
		{File: "tasks/velocity_env_cfg.py", Line: 8, Name: "foot_gait.period", Old: "0.6", New: "0.55"},
	}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("Diff (-want +got):\n%s", diff)
	}
	wantLeft := []bot.LeftValue{{Name: "joint_acc_l2", Value: -5e-7, Why: "no edit in apply.edits names it"}}
	if diff := cmp.Diff(wantLeft, pv.Left); diff != "" {
		t.Errorf("Diff's values left out (-want +got):\n%s", diff)
	}
	if got := bot.FormatLeft(pv.Left); got != "not written (1 of the preset's values):\n  joint_acc_l2 = -5e-07 (no edit in apply.edits names it)\n" {
		t.Errorf("FormatLeft = %q", got)
	}
	text := bot.FormatChanges(changes)
	if !strings.Contains(text, "tasks/velocity_env_cfg.py:5  foot_slip: -0.25 → -0.5\n") {
		t.Errorf("FormatChanges:\n%s", text)
	}
	if after := snap(t, repo); !cmp.Equal(before, after, cmp.AllowUnexported(snapshot{})) {
		t.Errorf("Diff changed the checkout")
	}
	if len(log.Entries()) != 0 {
		t.Errorf("Diff was audited: %v", log.Kinds())
	}
	// A value that needs an exponent stays a float literal the trainer reads back exactly.
	a2, _ := newApplier(t, repo, nil, func(c *apply.Config) { c.Edits = []apply.Edit{rewardEdit("joint_acc_l2")} })
	pv, err = a2.Diff(ctx, p)
	if err != nil || len(pv.Changes) != 1 || pv.Changes[0].New != "-5e-07" {
		t.Errorf("Diff of joint_acc_l2 = %+v, %v", pv, err)
	}
}

func TestConfigCheck(t *testing.T) {
	space := session.DefaultSpace()
	good := apply.Config{Repo: "/srv/trainer", Edits: edits(), Test: []string{"pytest", "-q"}}
	if err := good.Check(space); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	tests := []struct {
		name string
		mod  func(*apply.Config)
		want string
	}{
		{"relative repo", func(c *apply.Config) { c.Repo = "trainer" }, "must be an absolute path"},
		{"no edits", func(c *apply.Config) { c.Edits = nil }, "at least one edit"},
		{"dot-dot", func(c *apply.Config) { c.Edits[0].File = "../outside.py" }, `edits[0].file: "../outside.py" is not a relative path inside the checkout`},
		{"absolute file", func(c *apply.Config) { c.Edits[0].File = "/etc/passwd" }, "is not a relative path"},
		{"git dir", func(c *apply.Config) { c.Edits[0].File = ".git/config" }, "is inside .git"},
		{"unknown name", func(c *apply.Config) { c.Edits[1].Name = "learning_rate" }, `edits[1].name: "learning_rate" is not a term or param`},
		{"no group", func(c *apply.Config) { c.Edits[0].Pattern = `weight = -0.25` }, "needs exactly one capture group"},
		{"two groups", func(c *apply.Config) { c.Edits[0].Pattern = `(a)(b)` }, "has 2 groups"},
		{"bad regexp", func(c *apply.Config) { c.Edits[0].Pattern = `(` }, "does not compile"},
		{"no value in template", func(c *apply.Config) { c.Edits[0].Replace = "1.0" }, "does not contain {value}"},
		{"shell string", func(c *apply.Config) { c.Test = []string{"pytest -q && echo ok"} }, "looks like a shell string"},
		{"bad prefix", func(c *apply.Config) { c.BranchPrefix = "a b/" }, "branch_prefix"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			c.Edits = append([]apply.Edit(nil), good.Edits...)
			tc.mod(&c)
			err := c.Check(space)
			var ie *session.InvalidError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want an invalid error saying %q", err, tc.want)
			}
			if _, err := apply.New(c, space, &sessiontest.AuditLog{}, nil); err == nil {
				t.Errorf("New accepted a config Check refuses")
			}
		})
	}
}

func TestApplyRefusesAPresetOutsideTheSpace(t *testing.T) {
	repo := newRepo(t)
	a, _ := newApplier(t, repo, nil, nil)
	p := testPreset()
	p.Config.Weights["foot_slip"] = 3
	_, err := a.Apply(context.Background(), p, alice)
	var ue *session.UserError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "does not fit the reward space") || !strings.Contains(err.Error(), "weights.foot_slip") {
		t.Errorf("Apply = %v", err)
	}
}

// A preset the built-in sim trainer made carries the real task's name; it is refused unless
// the applier is told FromSim (tunebot apply --from-sim), and the checkout is untouched.
func TestApplyRefusesASimPresetUnlessFromSim(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	before := snap(t, repo)
	a, log := newApplier(t, repo, []string{"true"}, nil)
	p := testPreset()
	p.Trainer = session.TrainerSim
	_, err := a.Apply(ctx, p, alice)
	if msg, _ := session.UserMessage(err); err == nil || !errors.Is(err, session.ErrConflict) ||
		!strings.Contains(msg, "built-in sim trainer") || !strings.Contains(msg, "--from-sim") {
		t.Fatalf("applying a sim preset: %v, want a refusal that names --from-sim", err)
	}
	if after := snap(t, repo); after.head != before.head || after.branches != before.branches || len(log.Entries()) != 0 {
		t.Errorf("a refused apply touched the checkout or the audit: %+v → %+v, %d entries", before, after, len(log.Entries()))
	}
	a.FromSim = true
	if res, err := a.Apply(ctx, p, alice); err != nil || res.Commit == "" {
		t.Errorf("with FromSim: %+v, %v; want it applied", res, err)
	}
	p.Trainer = session.TrainerMjlab
	p.Name = "mjlab-0123abcd"
	a.FromSim = false
	applytest.Git(t, repo, "checkout", "-q", "main")
	if _, err := a.Apply(ctx, p, alice); errors.Is(err, session.ErrConflict) {
		t.Errorf("an mjlab preset is refused: %v", err)
	}
}

// TestSimPresetCommitSaysTheSimMadeIt (issue 43 item 6.5): a preset of the built-in sim,
// applied whole or in part with --from-sim, goes into the trainer's history saying so: its
// subject and body say the sim made it and that its scores are the sim's, not a robot's.
func TestSimPresetCommitSaysTheSimMadeIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		partial bool
		subject string
	}{
		{"whole", false, "tunebot: apply preset auto-tune-0123abcd (built-in sim, not a robot)"},
		{"partial", true, "tunebot: apply part of preset auto-tune-0123abcd (built-in sim, not a robot)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := newRepo(t)
			a, _ := newApplier(t, repo, []string{"true"}, nil)
			a.FromSim, a.Partial = true, tc.partial
			p := testPreset()
			p.Trainer = session.TrainerSim
			if tc.partial {
				p.Config.Weights["pose"] = 1.5 // no edit names it
			}
			res, err := a.Apply(context.Background(), p, alice)
			if err != nil {
				t.Fatal(err)
			}
			body := applytest.Git(t, repo, "log", "-1", "--format=%B", res.Commit)
			for _, w := range []string{tc.subject + "\n", "made on tunebot's built-in sim trainer: its scores are the sim's, not a robot's"} {
				if !strings.Contains(body, w) {
					t.Errorf("the commit message does not say %q:\n%s", w, body)
				}
			}
		})
	}
}

// A preset with values apply.edits cannot write (no edit names them, or an edit's pattern
// does not match exactly once) is refused whole, naming every such value, with nothing
// touched; Partial commits the others and its commit message says what was left out and
// that the preset's score is not the commit's.
func TestApplyRefusesAPartialPresetUnlessPartial(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	before := snap(t, repo)
	p := testPreset() // four values changed, all with edits
	for name, v := range map[string]float64{"pose": 1.5, "body_ang_vel": -0.1, "stand_still": -2, "action_rate_l2": -0.1} {
		p.Config.Weights[name] = v
	}
	p.Config.Params["pose.walking_threshold"] = 0.1
	mod := func(c *apply.Config) {
		c.Edits = []apply.Edit{rewardEdit("foot_slip"), rewardEdit("is_terminated"), rewardEdit("stand_still")}
	}
	a, log := newApplier(t, repo, []string{"true"}, mod)
	_, err := a.Apply(ctx, p, alice)
	msg, user := session.UserMessage(err)
	if err == nil || !user {
		t.Fatalf("Apply of a preset apply.edits covers in part: %v, want a refusal for a person", err)
	}
	for _, w := range []string{"cannot be applied whole", "7 of its values", "pose = 1.5 (no edit", "body_ang_vel = -0.1 (no edit", "action_rate_l2 = -0.1 (no edit",
		"foot_gait.period = 0.55 (no edit", "foot_clearance.target_height = 0.12 (no edit", "pose.walking_threshold = 0.1 (no edit",
		"stand_still = -2 (its edit, edits[2], matches 0 times", "--partial"} {
		if !strings.Contains(msg, w) {
			t.Errorf("the refusal does not say %q:\n%s", w, msg)
		}
	}
	if after := snap(t, repo); !cmp.Equal(before, after, cmp.AllowUnexported(snapshot{})) || len(log.Entries()) != 0 {
		t.Errorf("a refused apply touched the checkout or the audit: %d entries", len(log.Entries()))
	}

	a.Partial = true
	res, err := a.Apply(ctx, p, alice)
	if err != nil {
		t.Fatalf("partial apply: %v", err)
	}
	if len(res.Left) != 7 || len(res.Changes) != 2 {
		t.Errorf("partial apply wrote %+v and left %+v, want 2 written and 7 left", res.Changes, res.Left)
	}
	body := applytest.Git(t, repo, "log", "-1", "--format=%B", res.Commit)
	for _, w := range []string{"apply part of preset auto-tune-0123abcd", "7 of the preset's values are not in this commit",
		"its score below is not this commit's", "pose = 1.5 (no edit", "stand_still = -2 (its edit", "foot_slip: -0.25 -> -0.5"} {
		if !strings.Contains(body, w) {
			t.Errorf("the partial commit's message does not say %q:\n%s", w, body)
		}
	}
	if got := applytest.Git(t, repo, "show", "--stat", "--format=", res.Commit); strings.Contains(got, "gait.py") {
		t.Errorf("the partial commit touched a file no covered edit names: %s", got)
	}
	if es := log.Entries(); len(es) != 1 || len(es[0].Detail["left_out"].([]string)) != 7 {
		t.Errorf("audit = %+v, want the apply with the 7 names left out", es)
	}
}

// TestApplyOnAFullDiskLeavesTheFilesWhole: a write of an edited file that fails half-way (a
// full disk; here a file size limit, which fails a write the same way) leaves the file in
// the checkout as it was, not cut short, and the apply is undone. The apply runs in a child
// process of the test binary, so that the limit holds no write of the test run's own.
func TestApplyOnAFullDiskLeavesTheFilesWhole(t *testing.T) {
	if repo := os.Getenv(fsizeChildRepo); repo != "" {
		applyUnderFileSizeLimit(t, repo)
		return
	}
	repo := newRepo(t)
	long := envCfg + "# " + strings.Repeat("padding ", 2<<10) + "\n" // 16 KiB, over the limit
	write(t, filepath.Join(repo, "tasks", "velocity_env_cfg.py"), long)
	applytest.Git(t, repo, "commit", "-q", "-am", "a long config")
	before := snap(t, repo)
	child := exec.Command(os.Args[0], "-test.run=^TestApplyOnAFullDiskLeavesTheFilesWhole$", "-test.v")
	child.Env = append(os.Environ(), fsizeChildRepo+"="+repo)
	if out, err := child.CombinedOutput(); err != nil {
		t.Fatalf("the apply under a file size limit: %v\n%s", err, out)
	}
	if after := snap(t, repo); !cmp.Equal(before, after, cmp.AllowUnexported(snapshot{})) {
		t.Errorf("checkout changed:\n%.2000s", cmp.Diff(before, after, cmp.AllowUnexported(snapshot{})))
	}
	if got := applytest.Git(t, repo, "status", "--porcelain"); got != "" {
		t.Errorf("status %q", got)
	}
}

// fsizeChildRepo names, to the child process of TestApplyOnAFullDiskLeavesTheFilesWhole,
// the checkout it applies to.
const fsizeChildRepo = "TUNEBOT_TEST_APPLY_FSIZE_REPO"

// applyUnderFileSizeLimit applies testPreset to repo with no file written past 8 KiB: git's
// own writes (a ref, a reflog line, the index) stay under it, the long config does not. The
// runtime ignores the SIGXFSZ a write past the limit raises: the write fails with EFBIG.
func applyUnderFileSizeLimit(t *testing.T, repo string) {
	a, _ := newApplier(t, repo, nil, nil)
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	limit.Cur = 8 << 10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	res, err := a.Apply(context.Background(), testPreset(), alice)
	if err == nil || !strings.Contains(err.Error(), "could not write tasks/velocity_env_cfg.py") {
		t.Fatalf("Apply: %+v, %v; want it to say the file could not be written", res, err)
	}
}
