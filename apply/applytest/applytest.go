// Package applytest makes temporary trainer checkouts for the tests of reversible apply and
// of the chat commands that use it.
package applytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/apply"
)

// TrainerCfg is the trainer file of Repo: two reward weights and a param the edits of Config
// write.
const TrainerCfg = `def configure(cfg):
    cfg.rewards["foot_slip"].weight = -0.25
    cfg.rewards["is_terminated"].weight = -200.0
    cfg.rewards["foot_gait"].params["period"] = 0.6
`

// CfgFile is where Repo keeps TrainerCfg, relative to the checkout.
const CfgFile = "tasks/cfg.py"

// Git runs git in dir with an identity of its own, since a test machine may have none.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Repo makes a trainer checkout on branch main with TrainerCfg committed at CfgFile.
func Repo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	Git(t, dir, "init", "-q", "-b", "main")
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(CfgFile)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CfgFile), []byte(TrainerCfg), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "add", ".")
	Git(t, dir, "commit", "-q", "-m", "trainer")
	return dir
}

// Config applies presets to repo's CfgFile (foot_slip, is_terminated, foot_gait.period) and gates them
// with test (an argv, e.g. "true" or "false").
func Config(repo string, test ...string) apply.Config {
	edit := func(name string) apply.Edit {
		return apply.Edit{File: CfgFile, Name: name, Pattern: `cfg\.rewards\["{name}"\]\.weight = ([-0-9.eE+]+)`}
	}
	period := apply.Edit{File: CfgFile, Name: "foot_gait.period", Pattern: `\.params\["period"\] = ([0-9.]+)`}
	return apply.Config{Repo: repo, Edits: []apply.Edit{edit("foot_slip"), edit("is_terminated"), period}, Test: test, TestTimeout: time.Minute}
}
