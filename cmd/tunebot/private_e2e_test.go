package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/dashboard"
)

// runRefused runs tunebot run on cfg and expects it to refuse to start: it must end by
// itself, exit 1 and say why (a daemon that starts is killed and the test fails).
func runRefused(t *testing.T, cfg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tunebotBin, "run", "--config", cfg)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var xe *exec.ExitError
	if ctx.Err() != nil || !errors.As(err, &xe) || xe.ExitCode() != 1 {
		t.Fatalf("tunebot run did not refuse to start (%v):\n%s", err, out.String())
	}
	return out.String()
}

// plantKey writes a dashboard key someone else chose into dir with mode: whoever knows it
// could sign a cookie with every permission.
func plantKey(t *testing.T, dir string, mode os.FileMode) []byte {
	t.Helper()
	key := []byte(strings.Repeat("ab", 32))
	path := filepath.Join(dir, dashboardKeyFile)
	if err := os.WriteFile(path, append(key, '\n'), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return key
}

func dataDirMode(t *testing.T, dir string, mode os.FileMode) string {
	t.Helper()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return data
}

// TestOpenDataDirIsRefused (issue 27 item 5): in a data_dir others may write (the shared
// Slurm set-up's 0777 directory) a planted dashboard.key is never used: the daemon refuses
// to start, saying how to fix it; a key open to others (0644) is refused too, and, as root,
// a data_dir another user owns.
func TestOpenDataDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	data := dataDirMode(t, dir, 0o777)
	plantKey(t, data, 0o600)
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: %q}\n", data, freeAddr(t)))
	out := runRefused(t, cfg)
	if _, stdout, _ := runTunebot(t, "", nil, "doctor", "--config", cfg); !strings.Contains(stdout, "fail  data dir") || !strings.Contains(stdout, "run refuses to start") {
		t.Errorf("doctor on a 0777 data_dir does not fail it:\n%s", stdout)
	}
	for _, want := range []string{"data_dir " + data + " is writable by group or others (mode 0777)", "chmod 700 " + data, "service.shared_data_dir: true"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}

	dir = t.TempDir()
	data = dataDirMode(t, dir, 0o700)
	plantKey(t, data, 0o644)
	cfg = writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: %q}\n", data, freeAddr(t)))
	if out := runRefused(t, cfg); !strings.Contains(out, filepath.Join(data, dashboardKeyFile)+" is open to group or others (mode 0644)") {
		t.Errorf("a 0644 dashboard.key:\n%s", out)
	}

	if os.Geteuid() == 0 {
		dir = t.TempDir()
		data = dataDirMode(t, dir, 0o755)
		if err := os.Chown(data, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cfg = writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: \"off\"}\n", data))
		if out := runRefused(t, cfg); !strings.Contains(out, "belongs to uid 65534, not to the user tunebot runs as (uid 0)") {
			t.Errorf("a data_dir of another user:\n%s", out)
		}
	}
}

// TestSharedDataDirKeepsKeysPrivate (issue 27 item 5): with service.shared_data_dir the
// daemon starts in a 0777 data_dir and keeps its key, token and socket in data_dir/private
// (0700): a key planted in data_dir itself is never read, and the commands still reach the
// daemon.
func TestSharedDataDirKeepsKeysPrivate(t *testing.T) {
	dir := t.TempDir()
	data := dataDirMode(t, dir, 0o777)
	planted := plantKey(t, data, 0o600)
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: %q, shared_data_dir: true}\n", data, freeAddr(t)))
	cmd, _, out := startDaemon(t, cfg)
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()

	priv := filepath.Join(data, "private")
	if info, err := os.Lstat(priv); err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Fatalf("data_dir/private: %v %v", info, err)
	}
	for name, mode := range map[string]os.FileMode{dashboardKeyFile: 0o600, backupTokenFile: 0o600, "tunebot.sock": os.ModeSocket | 0o600} {
		if info, err := os.Lstat(filepath.Join(priv, name)); err != nil || info.Mode() != mode {
			t.Errorf("private/%s: %v %v, want mode %v", name, info, err, mode)
		}
	}
	key, err := dashboard.ReadKey(filepath.Join(priv, dashboardKeyFile))
	if err != nil || fmt.Sprintf("%x", key) == string(planted) {
		t.Errorf("the daemon's key is the planted one (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(data, backupTokenFile)); !os.IsNotExist(err) {
		t.Errorf("a token in the shared data_dir itself: %v", err)
	}
	if code, stdout, stderr := runBinEnv(t, nil, "dashboard", "link", "--config", cfg); code != 0 || !strings.Contains(stdout, "/signin?token=") {
		t.Errorf("dashboard link: exit %d %s%s\n%s", code, stdout, stderr, out.String())
	}
	if code, stdout, stderr := runBinEnv(t, nil, "backup", "--config", cfg, filepath.Join(dir, "copy.db")); code != 0 {
		t.Errorf("backup: exit %d %s%s", code, stdout, stderr)
	}
}

// TestTokenIsWrittenThroughNoLink (issue 27 item 5): a backup.token.tmp planted as a link
// to another file is not followed when the daemon writes its token: the other file stays
// as it was, and the token is a regular 0600 file.
func TestTokenIsWrittenThroughNoLink(t *testing.T) {
	dir := t.TempDir()
	data := dataDirMode(t, dir, 0o700)
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{backupTokenFile + ".tmp", backupTokenFile} {
		if err := os.Symlink(victim, filepath.Join(data, name)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: \"off\"}\n", data))
	cmd, _, out := startDaemon(t, cfg)
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	if b, _ := os.ReadFile(victim); string(b) != "mine\n" {
		t.Errorf("the daemon wrote its token through a planted link: %q\n%s", b, out.String())
	}
	if info, err := os.Lstat(filepath.Join(data, backupTokenFile)); err != nil || !info.Mode().IsRegular() || info.Mode().Perm() != 0o600 {
		t.Errorf("backup.token: %v %v", info, err)
	}
}

// TestSharedDataDirFollowsNoPlantedLink (issue 36 item 2): with service.shared_data_dir,
// a link another user planted for sessions/, tunebot.log or tunebot.db (here to a directory
// and a file of a temp dir standing for theirs) makes the daemon refuse to start, naming
// the link, and nothing is written through it.
func TestSharedDataDirFollowsNoPlantedLink(t *testing.T) {
	for _, tc := range []struct{ name, target, want string }{
		{"sessions", "dir", "sessions (the sessions directory, which holds every run directory) is a symbolic link: in a shared data_dir tunebot refuses it"},
		{"tunebot.log", "file", "tunebot.log (tunebot's log) is a symbolic link: in a shared data_dir tunebot refuses it"},
		{"tunebot.db", "file", "tunebot.db (the store) is a symbolic link: in a shared data_dir tunebot refuses it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, theirs := t.TempDir(), t.TempDir()
			data := dataDirMode(t, dir, 0o777)
			target := theirs
			if tc.target == "file" {
				target = filepath.Join(theirs, "victim")
				if err := os.WriteFile(target, []byte("theirs\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(target, filepath.Join(data, tc.name)); err != nil {
				t.Fatal(err)
			}
			cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: \"off\", shared_data_dir: true}\n", data))
			if out := runRefused(t, cfg); !strings.Contains(out, tc.want) {
				t.Errorf("the refusal does not say %q:\n%s", tc.want, out)
			}
			ents, _ := os.ReadDir(theirs)
			if b, _ := os.ReadFile(filepath.Join(theirs, "victim")); (tc.target == "file" && (string(b) != "theirs\n" || len(ents) != 1)) || (tc.target == "dir" && len(ents) != 0) {
				t.Errorf("written through the link: %d entries, victim %q", len(ents), b)
			}
		})
	}
}
