package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/dashboard"
	"tunebot/preset"
	"tunebot/session"
	"tunebot/store"
)

// runBinEnv runs the built binary with args and env added to the test's environment.
func runBinEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(tunebotBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if xe, ok := err.(*exec.ExitError); ok {
		return xe.ExitCode(), stdout.String(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// TestLocalRoutesAreNotOnTCP (issue 27 item 6): the routes of the tunebot command (backup,
// prune, the operator's link and rotation) are not served on the TCP listener at all, not
// even to loopback with the right tokens and no forwarding header, as a plain reverse proxy
// (nginx's proxy_pass, ssh -L, socat) would send them; the command reaches them on the
// daemon's socket, 0600, in the data dir.
func TestLocalRoutesAreNotOnTCP(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	addr := freeAddr(t)
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: %q}\n", data, addr))
	cmd, _, out := startDaemon(t, cfg)
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()

	token, err := os.ReadFile(filepath.Join(data, backupTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	key, err := dashboard.ReadKey(filepath.Join(data, dashboardKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, path, token string }{
		{http.MethodGet, "/backup", strings.TrimSpace(string(token))},
		{http.MethodPost, "/prune", strings.TrimSpace(string(token))},
		{http.MethodPost, "/api/link", dashboard.OperatorToken(key)},
		{http.MethodPost, "/api/rotate", dashboard.OperatorToken(key)},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+addr+tc.path, strings.NewReader(`{"options":{}}`))
		req.Header.Set("Authorization", "Bearer "+tc.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s on the TCP listener: %d, want 404", tc.method, tc.path, resp.StatusCode)
		}
	}
	info, err := os.Lstat(filepath.Join(data, "tunebot.sock"))
	if err != nil || info.Mode().Type() != os.ModeSocket || info.Mode().Perm() != 0o600 {
		t.Fatalf("the daemon's socket: %v %v", info, err)
	}
	// The command still reaches them, through the socket.
	if code, stdout, stderr := runBinEnv(t, nil, "dashboard", "link", "--config", cfg); code != 0 || !strings.Contains(stdout, "/signin?token=") {
		t.Errorf("dashboard link: exit %d %s%s\n%s", code, stdout, stderr, out.String())
	}
	if code, stdout, stderr := runBinEnv(t, nil, "backup", "--config", cfg, filepath.Join(dir, "copy.db")); code != 0 {
		t.Errorf("backup: exit %d %s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runBinEnv(t, nil, "dashboard", "rotate", "--config", cfg); code != 0 || strings.Contains(stdout, "no daemon") {
		t.Errorf("dashboard rotate: exit %d %s%s", code, stdout, stderr)
	}
}

// TestPresetCommandsWhileTheDaemonRuns (issue 28 item 7): preset list, show, export and
// import work while the daemon holds the store, through its socket, and an import is
// approved by the user the kernel names, not by $USER (issue 27 item 9's rule).
func TestPresetCommandsWhileTheDaemonRuns(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: \"off\"}\n", data))
	space := session.DefaultSpace()
	c := space.Defaults()
	c.Weights["foot_slip"] = -0.4
	file := filepath.Join(dir, "in.json")
	if err := os.WriteFile(file, preset.Export(session.Preset{Config: c}), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := space.Defaults()
	bad.Weights["foot_slip"] = 2
	badFile := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(badFile, preset.Export(session.Preset{Config: bad}), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, _, out := startDaemon(t, cfg)
	if _, err := store.Open(filepath.Join(data, "tunebot.db"), store.Options{ReadOnly: true, Timeout: 100 * time.Millisecond}); err == nil {
		t.Fatal("the daemon does not hold the data file")
	}
	mallory := []string{"USER=mallory"}
	exported := filepath.Join(dir, "out.json")
	for _, tc := range []struct {
		args        []string
		code        int
		out, errOut string
	}{
		{[]string{"preset", "list", "--config", cfg}, 0, "no presets yet", ""},
		{[]string{"preset", "import", "slippy", file, "--config", cfg}, 0, "preset slippy imported", ""},
		{[]string{"preset", "import", "slippy", file, "--config", cfg}, 1, "", "preset slippy already exists"},
		{[]string{"preset", "import", "g1", file, "--task", "Mjlab-Velocity-Flat-Unitree-G1", "--config", cfg}, 1, "", "--task Mjlab-Velocity-Flat-Unitree-G1 is not a task of the config"},
		{[]string{"preset", "import", "go2", file, "--task", "Unitree-Go2-Flat", "--config", cfg}, 0, "preset go2 imported", ""},
		{[]string{"preset", "import", "broken", badFile, "--config", cfg}, 1, "", badFile + ": weights.foot_slip: 2 is outside its bounds [-1, 0]\n"},
		{[]string{"preset", "list", "--config", cfg}, 0, "slippy", ""},
		{[]string{"preset", "show", "slippy", "--config", cfg}, 0, "foot_slip", ""},
		{[]string{"preset", "show", "nosuch", "--config", cfg}, 1, "", "preset nosuch does not exist; tunebot preset list lists them"},
		{[]string{"preset", "export", "slippy", "-o", exported, "--config", cfg}, 0, "", "written to"},
	} {
		code, stdout, stderr := runBinEnv(t, mallory, tc.args...)
		if code != tc.code || !strings.Contains(stdout, tc.out) || !strings.Contains(stderr, tc.errOut) || strings.Contains(stderr, "in use") {
			t.Errorf("%v: exit %d\nstdout: %s\nstderr: %s", tc.args[:2], code, stdout, stderr)
		}
	}
	if got, err := os.ReadFile(exported); err != nil || string(got) != string(preset.Export(session.Preset{Config: c})) {
		t.Errorf("the export differs from the file imported: %v\n%s", err, got)
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, out.String())
	}
	got := readDataDir(t, data)
	me := currentUser(t)
	for _, p := range got.Presets {
		if p.Task != "Unitree-Go2-Flat" {
			t.Errorf("preset %s imported through the daemon records task %q, want the one it was imported for", p.Name, p.Task)
		}
	}
	if approvers := fmt.Sprint(got.Presets); len(got.Presets) != 2 || !strings.Contains(approvers, "["+me+"]") || strings.Contains(approvers, "mallory") {
		t.Errorf("the imported preset's approvers: %+v, want %s (never mallory)", got.Presets, me)
	}
	for _, a := range got.Audit {
		if a.Kind == "preset_imported" && (a.Actor.ID != me || a.Actor.Name == "mallory") {
			t.Errorf("the import is audited as %+v, want %s", a.Actor, me)
		}
	}
}

func currentUser(t *testing.T) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}
