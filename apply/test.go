package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"tunebot/secret"
)

// Bounds of the test output kept for chat: enough for a failing assertion, small enough
// for a message.
const (
	tailBytes = 4 << 10
	tailLines = 40
)

// runTest runs argv in dir with a timeout, in its own process group so that a timeout
// ends the test runner's children too, in the trainer's environment without tunebot's
// secrets. It returns the output's tail, secret values redacted (it goes to chat), and an
// error that says in words why the tests did not pass. An empty argv is no gate.
func runTest(ctx context.Context, dir string, argv []string, timeout time.Duration, redact *secret.Redactor) (string, error) {
	if len(argv) == 0 {
		return "", nil
	}
	for i, a := range argv {
		// A child's command line is seen by every user of the machine (ps): refused, not
		// masked, since a masked argument would run another test.
		if redact.String(a) != a {
			return "", fmt.Errorf("the test command was not run: its argument %d holds the value of one of tunebot's secrets, which every user of the machine would see (ps)", i)
		}
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = secret.Strip(os.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out := &tail{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	text := redact.String(out.String())
	switch {
	case err == nil:
		return text, nil
	case errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return text, fmt.Errorf("the test command timed out after %s", timeout)
	case ctx.Err() != nil:
		return text, fmt.Errorf("the apply was cancelled while the tests ran: %w", ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return text, fmt.Errorf("the test command %s failed (%s)", argv[0], ee.ProcessState)
	}
	return text, fmt.Errorf("the test command %s could not run: %w", argv[0], err)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > tailBytes {
		b = b[len(b)-tailBytes:]
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return strings.Join(lines, "\n")
}
