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
