package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tunebot/session"
	"tunebot/store"
)

// syncBuffer is a bytes.Buffer safe for the daemon's writers and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	if !waitUntil(d, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// waitUntil polls cond until it holds (true) or d has passed (false).
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// startDaemon runs `tunebot run --config cfg` with extra environment, its stdin a pipe the
// test writes commands to, and waits until it serves. The process is killed at cleanup.
func startDaemon(t *testing.T, cfg string, env ...string) (*exec.Cmd, *os.File, *syncBuffer) {
	t.Helper()
	return startDaemonArgs(t, []string{"run", "--config", cfg}, env...)
}

// startDaemonArgs is startDaemon with the command line args (run --config FILE …).
func startDaemonArgs(t *testing.T, args []string, env ...string) (*exec.Cmd, *os.File, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	cmd, stdinW := startPiped(t, args, env, out, out)
	waitFor(t, "the daemon to run", 10*time.Second, func() bool { return strings.Contains(out.String(), "tunebot is running") })
	return cmd, stdinW, out
}

// startPiped starts tunebot with args and env, its output to stdout and stderr, reading
// what the test writes to the returned pipe; it is killed when the test ends.
func startPiped(t *testing.T, args, env []string, stdout, stderr io.Writer) (*exec.Cmd, *os.File) {
	t.Helper()
	cmd := exec.Command(tunebotBin, args...)
	cmd.Env = append(os.Environ(), env...)
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, stdinW
}

// TestRunWithConsole runs the daemon with no chat platform: the console takes /tune
// commands from stdin, the session runs to its end, and SIGTERM stops it cleanly.
func TestRunWithConsole(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
data_dir: data
service: {addr: "127.0.0.1:0"}
`)
	cmd, stdinW, out := startDaemon(t, cfg)
	stdinW.WriteString("/tune start trials=4 rungs=20,40,60 fallback=true\n")
	waitFor(t, "the session to succeed", 30*time.Second, func() bool { return strings.Contains(out.String(), "succeeded") })
	stdinW.WriteString("/tune status\n")
	time.Sleep(300 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("daemon exit: %v\n%s", err, out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the daemon did not stop on SIGTERM:\n%s", out.String())
	}
	db, err := store.Open(filepath.Join(dir, "data", "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, _ := db.Sessions(context.Background())
	if len(all) != 1 || all[0].State != session.StateSucceeded || all[0].Owner.Platform != "console" {
		t.Fatalf("sessions: %+v", all)
	}
}

// daemonTraining starts the daemon (no service) and a 4-trial session from its console,
// and returns once the baseline trains; delay is the sim trainer's pause per step.
func daemonTraining(t *testing.T, delay string) (cfg string, cmd *exec.Cmd, stdinW *os.File, out *syncBuffer) {
	t.Helper()
	cfg = writeConfig(t, t.TempDir(), "data_dir: data\nservice: {addr: \"off\"}\n")
	cmd, stdinW, out = startDaemon(t, cfg, "TUNEBOT_SIM_STEP_DELAY="+delay)
	stdinW.WriteString("/tune start trials=4 rungs=200,400,600 fallback=true\n")
	waitFor(t, "training to start", 20*time.Second, func() bool { return strings.Contains(out.String(), "trial 0 @ rung 0 [") })
	return cfg, cmd, stdinW, out
}

// TestRunDrainsOnSIGTERM stops the daemon while a trainer job runs: the job's process
// group ends, the session becomes interrupted (resumable), and the store closes cleanly.
func TestRunDrainsOnSIGTERM(t *testing.T) {
	cfg, cmd, _, out := daemonTraining(t, "50ms")
	dir := filepath.Dir(cfg)
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, out.String())
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("shutdown took %s", took)
	}
	db, err := store.Open(filepath.Join(dir, "data", "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, _ := db.Sessions(context.Background())
	if len(all) != 1 || all[0].State != session.StateInterrupted {
		t.Fatalf("sessions after SIGTERM: %+v", all)
	}
	noTrainerLeft(t, dir)
}

// TestStatusOfAPausedSessionAfterARestart pauses a session while its baseline trains: the
// pause lands between training and evaluation, so no job of it runs, and /tune status
// must not say one does, before a restart of the daemon or after it. Resumed, the
// baseline is evaluated (not trained again) and the session goes on.
func TestStatusOfAPausedSessionAfterARestart(t *testing.T) {
	cfg, cmd, stdinW, out := daemonTraining(t, "10ms")
	stdinW.WriteString("/tune pause\n")
	waitFor(t, "the session to pause", 30*time.Second, func() bool { return strings.Contains(out.String(), "paused after its current job") })
	status := func(out *syncBuffer) string {
		n := len(out.String())
		stdinW.WriteString("/tune status\n")
		// The card is written whole, so once one of its lines is there all are.
		waitFor(t, "the status", 10*time.Second, func() bool { return strings.Contains(out.String()[n:], "CPU time") }) // the built-in sim trains on the CPU
		return out.String()[n:]
	}
	if s := status(out); strings.Contains(s, "running now") || !strings.Contains(s, "paused") {
		t.Fatalf("status of the paused session:\n%s", s)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, out.String())
	}

	// --verbose: the console then says when a trial starts, which is what is looked for below.
	_, stdinW, out = startDaemonArgs(t, []string{"run", "--config", cfg, "--verbose"}, "TUNEBOT_SIM_STEP_DELAY=0s")
	if s := status(out); strings.Contains(s, "running now") || !strings.Contains(s, "paused") {
		t.Fatalf("status after the restart:\n%s", s)
	}
	stdinW.WriteString("/tune resume\n")
	waitFor(t, "the session to succeed", 60*time.Second, func() bool { return strings.Contains(out.String(), "succeeded") })
	if strings.Contains(out.String(), "trial 0 @ rung 0 started") {
		t.Errorf("the baseline trained again after the resume:\n%s", out.String())
	}
}

// A session a person paused stays paused across a restart; run --resume, which continues
// only sessions tunebot interrupted, says so in the console instead of saying nothing
// (issue 20, item 15).
func TestRunResumeSaysAPausedSessionIsPaused(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
data_dir: data
service: {addr: "off"}
`)
	cmd, stdinW, out := startDaemon(t, cfg)
	stdinW.WriteString("start mode=approval trials=4 rungs=20,40,60 fallback=true\n")
	waitFor(t, "the first proposal", 30*time.Second, func() bool { return strings.Contains(out.String(), "type: approve 1 ") })
	stdinW.WriteString("pause\n")
	waitFor(t, "the pause", 10*time.Second, func() bool {
		return strings.Contains(out.String(), "» session ") && strings.Contains(out.String(), ": paused by you")
	})
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, out.String())
	}
	_, _, out2 := startDaemonArgs(t, []string{"run", "--config", cfg, "--resume"})
	waitFor(t, "the paused session to be named", 10*time.Second, func() bool {
		return strings.Contains(out2.String(), "is paused (paused by you): resume continues it; --resume continues only sessions tunebot itself interrupted")
	})
}
