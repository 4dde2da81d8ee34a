package apply_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/apply"
	"tunebot/apply/applytest"
	"tunebot/session"
	"tunebot/session/sessiontest"
)

// Planted secrets: values no test output would contain by chance.
const (
	plantedKey   = "sk-planted-deepseek-0123456789"
	plantedToken = "xoxb-planted-slack-9876543210"
)

// TestApplyKeepsSecretsFromTestsAndHooks: the trainer's test command and the checkout's git
// hooks run without tunebot's secrets in their environment, and a secret they find some
// other way and print never reaches the result, the error, the audit or the log.
func TestApplyKeepsSecretsFromTestsAndHooks(t *testing.T) {
	t.Setenv("DEEPSEEK_API_KEY", plantedKey)
	t.Setenv("SLACK_BOT_TOKEN", plantedToken)
	ctx := context.Background()
	dir := t.TempDir()
	// Where a test or hook finds a key without the environment (a .env file, another
	// process): only redaction keeps it out of chat.
	leak := filepath.Join(dir, "leak")
	write(t, leak, "found "+plantedKey+"\n")
	hookEnv := filepath.Join(dir, "hook-env")

	for _, tc := range []struct {
		name string
		hook string // pre-commit hook body; "" for none
		test []string
		want string
	}{
		{name: "test command prints env and a found key", test: []string{"sh", "-c", `env; cat "$1"; exit 1`, "sh", leak},
			want: "the test command sh failed"},
		{name: "pre-commit hook prints env and a found key", hook: fmt.Sprintf("env > %q\nenv >&2\ncat %q >&2\nexit 1\n", hookEnv, leak), test: []string{"true"},
			want: "git commit failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := newRepo(t)
			if tc.hook != "" {
				write(t, filepath.Join(repo, ".git", "hooks", "pre-commit"), "#!/bin/sh\n"+tc.hook)
				if err := os.Chmod(filepath.Join(repo, ".git", "hooks", "pre-commit"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var logged strings.Builder
			audit := &sessiontest.AuditLog{}
			a, err := apply.New(apply.Config{Repo: repo, Edits: edits(), Test: tc.test}, session.DefaultSpace(), audit,
				slog.New(slog.NewTextHandler(&logged, nil)))
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Apply(ctx, testPreset(), alice)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("apply: %v, want an error with %q", err, tc.want)
			}
			entries, _ := audit.Audit(ctx, "")
			seen := map[string]string{
				"test output": res.TestOutputTail, "reason": res.Reason, "error": err.Error(),
				"audit": fmt.Sprint(entries), "log": logged.String(),
			}
			if tc.hook != "" {
				seen["hook environment"] = read(t, hookEnv)
			}
			for where, text := range seen {
				for _, s := range []string{plantedKey, plantedToken, "DEEPSEEK_API_KEY", "SLACK_BOT_TOKEN"} {
					if strings.Contains(text, s) {
						t.Errorf("%s contains %s:\n%s", where, s, text)
					}
				}
			}
			// The found key was printed and masked, not lost with the rest of the output.
			masked := map[bool]string{true: res.Reason, false: res.TestOutputTail}[tc.hook != ""]
			if !strings.Contains(masked, "found [redacted]") {
				t.Errorf("the found key is not shown masked:\n%s", masked)
			}
			if tc.hook == "" && !strings.Contains(res.TestOutputTail, "PATH=") {
				t.Errorf("the test's env output is missing:\n%s", res.TestOutputTail)
			}
			if got := applytest.Git(t, repo, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
				t.Errorf("HEAD on %s after the failed apply", got)
			}
		})
	}
}

// The commit message leaves tunebot for git's history: what it quotes (a chat name, a value
// the checkout held) passes the redactor like every string that leaves.
func TestApplyCommitMessageIsRedacted(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", plantedToken)
	repo := newRepo(t)
	a, _ := newApplier(t, repo, []string{"true"}, nil)
	res, err := a.Apply(context.Background(), testPreset(), session.Actor{Platform: "slack", ID: "U7", Name: "ann " + plantedToken})
	if err != nil {
		t.Fatal(err)
	}
	if msg := applytest.Git(t, repo, "log", "-1", "--format=%B", res.Commit); strings.Contains(msg, plantedToken) || !strings.Contains(msg, "Applied by ann [redacted] (slack).") {
		t.Errorf("the commit message does not mask the secret:\n%s", msg)
	}
}

// TestSecretNotInGitBranch: a preset named after a run_name that held a key (or an
// apply.branch_prefix that does) made a branch named after the key in the trainer checkout,
// and put the key on git's command line, which ps shows (issue 44, item 4). The apply is
// refused before git is called, and the error masks the key.
func TestSecretNotInGitBranch(t *testing.T) {
	t.Setenv("DEEPSEEK_API_KEY", plantedKey)
	for name, tc := range map[string]struct {
		preset, prefix string
	}{
		"preset name":   {preset: "go2-" + plantedKey},
		"branch prefix": {preset: "go2", prefix: "x" + plantedKey + "/"},
	} {
		t.Run(name, func(t *testing.T) {
			repo := newRepo(t)
			a, audit := newApplier(t, repo, []string{"true"}, func(c *apply.Config) { c.BranchPrefix = tc.prefix })
			p := testPreset()
			p.Name = tc.preset
			res, err := a.Apply(context.Background(), p, alice)
			if err == nil || strings.Contains(err.Error(), plantedKey) || !strings.Contains(err.Error(), "would hold the value of one of tunebot's secrets") {
				t.Errorf("apply: %v", err)
			}
			entries, _ := audit.Audit(context.Background(), "")
			if branches := applytest.Git(t, repo, "branch", "--list"); strings.Contains(branches, "sk-planted") || strings.Contains(branches, "redacted") ||
				strings.Contains(fmt.Sprint(res.Branch, res.Reason, entries), plantedKey) {
				t.Errorf("the key reached a branch, the result or the audit:\n%s\n%+v\n%v", branches, res, entries)
			}
		})
	}
}

// TestCredentialsDirectoryNotInheritedByTestsAndGit: with the daemon's keys in systemd's
// credentials directory, apply's test command and the checkout's hooks inherited
// CREDENTIALS_DIRECTORY and read every key from it (issue 44, item 6); they inherit neither
// it nor a variable naming a file in it.
func TestCredentialsDirectoryNotInheritedByTestsAndGit(t *testing.T) {
	creds := t.TempDir()
	write(t, filepath.Join(creds, "DEEPSEEK_API_KEY"), plantedKey+"\n")
	t.Setenv("CREDENTIALS_DIRECTORY", creds)
	t.Setenv("KEY_FILE", filepath.Join(creds, "DEEPSEEK_API_KEY"))
	repo := newRepo(t)
	dump := t.TempDir()
	hook := filepath.Join(repo, ".git", "hooks", "pre-commit")
	write(t, hook, "#!/bin/sh\nenv > "+filepath.Join(dump, "hook-env")+"\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	a, _ := newApplier(t, repo, []string{"sh", "-c", "env > " + filepath.Join(dump, "test-env")}, nil)
	if _, err := a.Apply(context.Background(), testPreset(), alice); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"hook-env", "test-env"} {
		env := read(t, filepath.Join(dump, f))
		if strings.Contains(env, "CREDENTIALS_DIRECTORY") || strings.Contains(env, creds) || !strings.Contains(env, "PATH=") {
			t.Errorf("%s holds the credentials directory:\n%s", f, env)
		}
	}
}
