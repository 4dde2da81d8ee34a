package apply

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"tunebot/secret"
)

// git runs git subprocesses in one checkout with a fixed identity, so commits work on a
// machine without a global git config and never depend on a caller's environment. Its
// environment is the trainer's, without tunebot's secrets (secret.Strip): the checkout's
// hooks run in it. It is where strings leave apply for the checkout and for ps: every
// argument (a branch name, a commit message, a path) passes the redactor on its way to
// git's command line, and git's messages, which reach chat, on their way back.
type git struct {
	repo   string
	env    []string
	redact *secret.Redactor
}

func newGit(repo, name, email string, redact *secret.Redactor) git {
	var env []string
	for _, kv := range secret.Strip(os.Environ()) {
		// A GIT_DIR or GIT_INDEX_FILE inherited from a hook would point git elsewhere.
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "GIT_") || k == "LC_ALL" || k == "LANG" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"GIT_AUTHOR_NAME="+name, "GIT_AUTHOR_EMAIL="+email,
		"GIT_COMMITTER_NAME="+name, "GIT_COMMITTER_EMAIL="+email,
		"GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=true", "LC_ALL=C")
	return git{repo: repo, env: env, redact: redact}
}

// run runs git -C repo args... and returns its trimmed standard output. A failure carries
// git's own message.
func (g git) run(ctx context.Context, args ...string) (string, error) {
	out, err := g.raw(ctx, args...)
	return strings.TrimSpace(string(out)), err
}

// raw is run without trimming, for file contents.
func (g git) raw(ctx context.Context, args ...string) ([]byte, error) {
	argv := make([]string, 0, len(args)+2)
	argv = append(argv, "-C", g.repo)
	for _, a := range args {
		argv = append(argv, g.redact.String(a))
	}
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Env = g.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		msg = g.redact.String(msg)
		return nil, &gitError{args: argv[2:], msg: lastLines(msg, 6), err: err}
	}
	return out.Bytes(), nil
}

type gitError struct {
	args []string
	msg  string
	err  error
}

func (e *gitError) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.args, " "), e.err, e.msg)
}
func (e *gitError) Unwrap() error { return e.err }

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
