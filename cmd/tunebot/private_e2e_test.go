package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runRefused runs tunebot run on cfg and expects it to refuse to start: it must end by
// itself, exit 1 and say why (a daemon that starts is killed and the test fails).
func runRefused(t *testing.T, cfg string) string {
	t.Helper()
	return refused(t, "run", "--config", cfg)
}

// refused runs tunebot with args and expects it to refuse within 20 s: exit 1, saying why.
func refused(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tunebotBin, args...)
	cmd.Env = append(os.Environ(), "DEEPSEEK_API_KEY=")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var xe *exec.ExitError
	if ctx.Err() != nil || !errors.As(err, &xe) || xe.ExitCode() != 1 {
		t.Fatalf("tunebot %s did not refuse within 20 s (%v):\n%s", args[0], err, out.String())
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
	for _, want := range []string{"data_dir " + data + " is writable by group or others (mode 0777", "chmod 700 " + data, "service.shared_data_dir was removed"} {
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
		if out := runRefused(t, cfg); !strings.Contains(out, "belongs to uid 65534") || !strings.Contains(out, "chown root "+data) {
			t.Errorf("a data_dir of another user:\n%s", out)
		}
	}
}

// TestSharedDataDirSettingIsRefused (issue 44 item 1): service.shared_data_dir, which let
// the daemon start in a data_dir others may write, is gone; a config that still sets it is
// refused naming the key, that it was removed and why.
func TestSharedDataDirSettingIsRefused(t *testing.T) {
	dir := t.TempDir()
	data := dataDirMode(t, dir, 0o777)
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: \"off\", shared_data_dir: true}\n", data))
	out := runRefused(t, cfg)
	for _, want := range []string{"service.shared_data_dir was removed", "chmod 700", "preset export"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
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

// TestPlantedLinkInDataDirIsRefused (issue 36 item 2): a link planted for sessions/,
// tunebot.log or tunebot.db (here to a directory and a file of a temp
// dir standing for another user's) makes the daemon refuse to start, naming the link, and
// nothing is written through it.
func TestPlantedLinkInDataDirIsRefused(t *testing.T) {
	for _, tc := range []struct{ name, target, want string }{
		{"sessions", "dir", "sessions (the sessions directory, which holds every run directory) is a symbolic link: tunebot refuses it"},
		{"tunebot.log", "file", "tunebot.log (tunebot's log) is a symbolic link: tunebot refuses it"},
		{"tunebot.db", "file", "tunebot.db (the store) is a symbolic link: tunebot refuses it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, theirs := t.TempDir(), t.TempDir()
			data := dataDirMode(t, dir, 0o700)
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
			cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: \"off\"}\n", data))
			if out := runRefused(t, cfg); !strings.Contains(out, tc.want) {
				t.Errorf("the refusal does not say %q:\n%s", tc.want, out)
			}
			checkUntouched(t, theirs, tc.target == "file")
		})
	}
}

// checkUntouched fails when anything was written in theirs, a directory standing for
// another user's: it holds nothing, or only its file "victim" as planted ("theirs\n").
func checkUntouched(t *testing.T, theirs string, victim bool) {
	t.Helper()
	ents, _ := os.ReadDir(theirs)
	b, _ := os.ReadFile(filepath.Join(theirs, "victim"))
	if victim && (string(b) != "theirs\n" || len(ents) != 1) || !victim && len(ents) != 0 {
		t.Errorf("written through a link: %d entries in the linked directory, victim %q", len(ents), b)
	}
}

// TestPlantedReportsLinkRefused (issue 44 item 3): with data_dir/reports planted as a link
// (to a temp dir standing for another user's), charts went to whatever directory it named.
// run and tune refuse within 20 s and nothing lands there: in the daemon's own data_dir
// naming the link, in one others may write with the chmod that fixes the data_dir.
func TestPlantedReportsLinkRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o700, 0o777} {
		for _, command := range []string{"run", "tune"} {
			t.Run(fmt.Sprintf("%s/%04o", command, mode), func(t *testing.T) {
				dir, theirs := t.TempDir(), t.TempDir()
				data := dataDirMode(t, dir, mode)
				if err := os.Symlink(theirs, filepath.Join(data, "reports")); err != nil {
					t.Fatal(err)
				}
				cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: \"off\"}\n", data))
				args := []string{command, "--config", cfg}
				if command == "tune" {
					args = append(args, "--fallback")
				}
				want := filepath.Join(data, "reports") + " (the reports directory, which holds every session's charts) is a symbolic link: tunebot refuses it"
				if mode == 0o777 {
					want = "chmod 700 " + data
				}
				if out := refused(t, args...); !strings.Contains(out, want) {
					t.Errorf("the refusal does not say %q:\n%s", want, out)
				}
				checkUntouched(t, theirs, false)
			})
		}
	}
}

// TestPlantedWriteProbeLinkIsNotTruncated (issue 44 item 1): a link planted at
// data_dir/.write-test, to a file of the daemon's user or to a missing path, is never
// written through: in the daemon's own data_dir the probe takes a fresh name and the daemon
// starts; in one others may write, the daemon refuses with the chmod that fixes it. The
// file keeps its bytes and no file appears at the missing path.
func TestPlantedWriteProbeLinkIsNotTruncated(t *testing.T) {
	for _, mode := range []os.FileMode{0o700, 0o777} {
		t.Run(fmt.Sprintf("%04o", mode), func(t *testing.T) {
			dir, theirs := t.TempDir(), t.TempDir()
			data := dataDirMode(t, dir, mode)
			victim := filepath.Join(theirs, "victim")
			if err := os.WriteFile(victim, []byte("theirs\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(data, ".write-test")); err != nil {
				t.Fatal(err)
			}
			missing := filepath.Join(dir, "created-through-a-link")
			if err := os.Symlink(missing, filepath.Join(data, ".write-test-missing")); err != nil {
				t.Fatal(err)
			}
			cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: \"off\"}\n", data))
			if mode == 0o700 {
				cmd, _, out := startDaemon(t, cfg)
				cmd.Process.Signal(syscall.SIGTERM)
				cmd.Wait()
				if left, _ := filepath.Glob(filepath.Join(data, ".write-test-*")); len(left) != 1 {
					t.Errorf("probe files left in data_dir: %v\n%s", left, out.String())
				}
			} else if out := runRefused(t, cfg); !strings.Contains(out, "chmod 700 "+data) {
				t.Errorf("the refusal does not say chmod 700 %s:\n%s", data, out)
			}
			checkUntouched(t, theirs, true)
			if _, err := os.Lstat(missing); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a file was created through a link to a missing path: %v", err)
			}
		})
	}
}

// TestPlantedWriteProbeFIFODoesNotHang (issue 44 item 8): with a FIFO at
// data_dir/.write-test, run and tune blocked in open for ever, deaf to SIGTERM. The probe
// takes a fresh name: run starts and ends on SIGTERM, the FIFO still a FIFO.
func TestPlantedWriteProbeFIFODoesNotHang(t *testing.T) {
	dir := t.TempDir()
	data := dataDirMode(t, dir, 0o700)
	fifo := filepath.Join(data, ".write-test")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: \"off\"}\n", data))
	cmd, _, out := startDaemon(t, cfg)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !exitsWithin(cmd, 20*time.Second) {
		t.Fatalf("run did not end on SIGTERM:\n%s", out.String())
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("the planted FIFO: %v %v", info, err)
	}
}

// exitsWithin waits up to d for cmd, started, to exit.
func exitsWithin(cmd *exec.Cmd, d time.Duration) bool {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// TestSIGTERMDuringStartup (issue 44 items 2 and 8): SIGTERM ends run and tune promptly at
// every stage of start-up, with a FIFO planted at each name tunebot opens there (a FIFO's
// open waits for a writer or reader for ever): each ends within 20 s of the signal,
// having refused the FIFO or stopped.
func TestSIGTERMDuringStartup(t *testing.T) {
	for _, command := range []string{"run", "tune"} {
		for _, plant := range []string{"", ".write-test", "tunebot.log", "tunebot.db", dashboardKeyFile, backupTokenFile} {
			for _, after := range []time.Duration{0, 300 * time.Millisecond} {
				t.Run(fmt.Sprintf("%s/%s/%v", command, plant, after), func(t *testing.T) {
					dir := t.TempDir()
					data := dataDirMode(t, dir, 0o700)
					if plant != "" {
						if err := syscall.Mkfifo(filepath.Join(data, plant), 0o600); err != nil {
							t.Fatal(err)
						}
					}
					cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: %q}\n", data, freeAddr(t)))
					args := []string{command, "--config", cfg}
					if command == "tune" {
						args = append(args, "--fallback")
					}
					out := &syncBuffer{}
					cmd, _ := startPiped(t, args, []string{"DEEPSEEK_API_KEY="}, out, out)
					time.Sleep(after)
					cmd.Process.Signal(syscall.SIGTERM)
					if !exitsWithin(cmd, 20*time.Second) {
						t.Fatalf("tunebot %s did not end within 20 s of SIGTERM:\n%s", command, out.String())
					}
				})
			}
		}
	}
}
