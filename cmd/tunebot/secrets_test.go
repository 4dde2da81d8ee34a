package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"tunebot/config"
)

// TestLogsRedactSecrets: whatever a log line carries (a trainer's or a test's output, an
// error quoting a URL), the values of tunebot's secrets never reach the log file or the
// terminal.
func TestLogsRedactSecrets(t *testing.T) {
	const key, hook, cred = "sk-planted-0123456789", "https://hooks.example/services/T0/B0/planted", "tk_planted_credential"
	t.Setenv("DEEPSEEK_API_KEY", key)
	t.Setenv("TUNEBOT_WEBHOOK_URL", hook)
	creds := t.TempDir() // systemd's LoadCredential=NTFY_TOKEN:…
	if err := os.WriteFile(filepath.Join(creds, "NTFY_TOKEN"), []byte(cred+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CREDENTIALS_DIRECTORY", creds)
	for _, format := range []string{"text", "json"} {
		var daemon, term bytes.Buffer
		newLogger(config.LogConfig{Level: "debug", Format: format}, &daemon).Error("test output: "+key, "err", "posting to "+hook+": 404", "token", cred)
		dir := t.TempDir()
		logger, closeLog, err := consoleLogger(config.LogConfig{Level: "debug", Format: format}, dir, &term)
		if err != nil {
			t.Fatal(err)
		}
		logger.Error("test output: "+key, "err", "posting to "+hook+": 404", "token", cred)
		closeLog()
		file, err := os.ReadFile(filepath.Join(dir, "tunebot.log"))
		if err != nil {
			t.Fatal(err)
		}
		for where, out := range map[string]string{"daemon log": daemon.String(), "log file": string(file), "terminal": term.String()} {
			if strings.Contains(out, key) || strings.Contains(out, "planted") || !strings.Contains(out, "[redacted]") {
				t.Errorf("%s (%s) not redacted: %s", where, format, out)
			}
		}
	}
}

// TestDaemonEnvironIsUnreadableToSameUser: a process of tunebot's own user (the trainer,
// say) cannot read the daemon's /proc/<pid>/environ, where its secrets are, while it can
// read that of any other process of the user. Root reads every process's environ, so as
// root both the daemon and the reader run as nobody.
func TestDaemonEnvironIsUnreadableToSameUser(t *testing.T) {
	const planted = "sk-planted-environ-0123456789"
	as := unprivileged(t)
	bin, cfg := stageForUser(t)

	// The control: a process of the same user that did not protect itself is readable, so
	// a refusal below is the daemon's doing.
	other := as.startSleep(t, planted)
	// (Failures name what was read, never print it: it is an environment.)
	if out, err := as.readEnviron(other.Process.Pid); err != nil || !strings.Contains(out, planted) {
		t.Fatalf("control: the user cannot read its own unprotected process's environ (%v; %d bytes read); this machine cannot show the protection", err, len(out))
	}

	daemon := as.command(planted, bin, "run", "--config", cfg)
	startUntilRunning(t, daemon)
	out, err := as.readEnviron(daemon.Process.Pid)
	if err == nil || strings.Contains(out, planted) {
		t.Fatalf("a process of the daemon's user read its environ: %d bytes, the planted key among them: %v", len(out), strings.Contains(out, planted))
	}
	if !strings.Contains(out, "Permission denied") {
		t.Errorf("the read failed, but not for want of permission: %.200q", out)
	}
}

// asUser is the command prefix that runs a process as the unprivileged user of
// TestDaemonEnvironIsUnreadableToSameUser: none for a test that is not root, setpriv to
// nobody for one that is (root bypasses the protection).
type asUser []string

// unprivileged is the prefix for this machine; as root without setpriv the test is skipped.
func unprivileged(t *testing.T) asUser {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv is missing: as root this test needs it to run the daemon and the reader as an unprivileged user (root bypasses the protection)")
	}
	return asUser{setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"}
}

// stageForUser puts everything the unprivileged user needs in a temp dir it can reach: a
// copy of the binary, a data dir of that user alone (as run demands) and a config naming it.
func stageForUser(t *testing.T) (bin, cfg string) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin = filepath.Join(dir, "tunebot")
	b, err := os.ReadFile(tunebotBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(data, 65534, 65534); err != nil { // nobody
			t.Fatal(err)
		}
	}
	cfg = filepath.Join(dir, "tunebot.yaml")
	if err := os.WriteFile(cfg, []byte("data_dir: "+data+"\nservice: {addr: \"off\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return bin, cfg
}

// command is argv run as the user, with planted as DEEPSEEK_API_KEY in its environment.
func (as asUser) command(planted string, argv ...string) *exec.Cmd {
	argv = append(append([]string(nil), as...), argv...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "DEEPSEEK_API_KEY="+planted)
	return cmd
}

// readEnviron is what the user reads of /proc/<pid>/environ, or the error cat says.
func (as asUser) readEnviron(pid int) (string, error) {
	argv := append(append([]string(nil), as...), "cat", fmt.Sprintf("/proc/%d/environ", pid))
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	return string(out), err
}

// startSleep starts a sleep of the user with planted in its environment, killed when the
// test ends, and returns once it is sleep: until setpriv has exec'd sleep, the process is
// setpriv after its change of user, which the kernel makes non-dumpable.
func (as asUser) startSleep(t *testing.T, planted string) *exec.Cmd {
	t.Helper()
	other := as.command(planted, "sleep", "1000")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	for i := 0; ; i++ {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", other.Process.Pid))
		if err == nil && strings.TrimSpace(string(comm)) == "sleep" {
			return other
		}
		if i == 500 {
			t.Fatalf("the control process never became sleep (%v)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startUntilRunning starts daemon, a tunebot run, and returns once it says it is running;
// its stdin, which the console reads, stays open until the test ends, when SIGTERM stops it.
func startUntilRunning(t *testing.T, daemon *exec.Cmd) {
	t.Helper()
	stdin, err := daemon.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close() })
	pr, pw := io.Pipe()
	daemon.Stdout, daemon.Stderr = pw, pw
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { err := daemon.Wait(); pw.Close(); exited <- err }()
	t.Cleanup(func() { daemon.Process.Signal(syscall.SIGTERM); <-exited })
	sc := bufio.NewScanner(pr)
	var log strings.Builder
	for !strings.Contains(log.String(), "tunebot is running") {
		if !sc.Scan() {
			t.Fatalf("the daemon ended before it ran:\n%s", log.String())
		}
		log.WriteString(sc.Text() + "\n")
	}
	go io.Copy(io.Discard, pr)
}
