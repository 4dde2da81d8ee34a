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
	var as []string // the command prefix that runs a process as the unprivileged user
	if os.Geteuid() == 0 {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("setpriv is missing: as root this test needs it to run the daemon and the reader as an unprivileged user (root bypasses the protection)")
		}
		as = []string{setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"}
	}
	// Everything the unprivileged user needs: the binary, the config, a data dir.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "tunebot")
	b, err := os.ReadFile(tunebotBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	// The data dir is the daemon user's alone, as run demands.
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(data, 65534, 65534); err != nil { // nobody
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "tunebot.yaml")
	if err := os.WriteFile(cfg, []byte("data_dir: "+data+"\nservice: {addr: \"off\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	start := func(argv ...string) *exec.Cmd {
		t.Helper()
		argv = append(append([]string(nil), as...), argv...)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "DEEPSEEK_API_KEY="+planted)
		return cmd
	}
	readEnviron := func(pid int) (string, error) {
		argv := append(append([]string(nil), as...), "cat", fmt.Sprintf("/proc/%d/environ", pid))
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		return string(out), err
	}

	// The control: a process of the same user that did not protect itself is readable, so
	// a refusal below is the daemon's doing.
	other := start("sleep", "1000")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	// Until setpriv has exec'd sleep, the process is setpriv after its change of user, which
	// the kernel makes non-dumpable: read the control only once it is sleep.
	for i := 0; ; i++ {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", other.Process.Pid))
		if err == nil && strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		if i == 500 {
			t.Fatalf("the control process never became sleep (%v)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// (Failures name what was read, never print it: it is an environment.)
	if out, err := readEnviron(other.Process.Pid); err != nil || !strings.Contains(out, planted) {
		t.Fatalf("control: the user cannot read its own unprotected process's environ (%v; %d bytes read); this machine cannot show the protection", err, len(out))
	}

	daemon := start(bin, "run", "--config", cfg)
	stdin, err := daemon.StdinPipe() // the console reads it; open until the end
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	pr, pw := io.Pipe()
	daemon.Stdout, daemon.Stderr = pw, pw
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { err := daemon.Wait(); pw.Close(); exited <- err }()
	defer func() { daemon.Process.Signal(syscall.SIGTERM); <-exited }()
	sc := bufio.NewScanner(pr)
	var log strings.Builder
	for !strings.Contains(log.String(), "tunebot is running") {
		if !sc.Scan() {
			t.Fatalf("the daemon ended before it ran:\n%s", log.String())
		}
		log.WriteString(sc.Text() + "\n")
	}
	go io.Copy(io.Discard, pr)

	out, err := readEnviron(daemon.Process.Pid)
	if err == nil || strings.Contains(out, planted) {
		t.Fatalf("a process of the daemon's user read its environ: %d bytes, the planted key among them: %v", len(out), strings.Contains(out, planted))
	}
	if !strings.Contains(out, "Permission denied") {
		t.Errorf("the read failed, but not for want of permission: %.200q", out)
	}
}
