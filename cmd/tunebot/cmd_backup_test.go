package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tunebot/config"
	"tunebot/session"
	"tunebot/store"
)

// storeWithSessions writes a data file under dataDir holding n finished sessions and
// returns their ids.
func storeWithSessions(t *testing.T, dataDir string, n int) []string {
	t.Helper()
	db, err := store.Open(filepath.Join(dataDir, "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []string
	for i := range n {
		s := session.Session{ID: fmt.Sprintf("done%02d", i), State: session.StateSucceeded, Settings: session.DefaultSettings(),
			BestTrial: -1, CreatedAt: time.Date(2026, 1, 1, i, 0, 0, 0, time.UTC)}
		if err := db.CreateSession(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	return ids
}

// sessionIDs opens a backup as every command would (so it passes the consistency check)
// and lists its sessions.
func sessionIDs(t *testing.T, path string) []string {
	t.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the backup does not open: %v", err)
	}
	defer db.Close()
	all, err := db.Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code = dispatch(context.Background(), e, args)
	return code, out.String(), errb.String()
}

// A backup taken while the daemon holds the data file and trains comes from the daemon's
// socket: a complete, checked copy with every session, the running one included.
func TestBackupWhileTheDaemonRuns(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ids := storeWithSessions(t, data, 3)
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: %q}\n", data, freeAddr(t)))
	cmd, stdinW, out := startDaemon(t, cfg, "TUNEBOT_SIM_STEP_DELAY=20ms")
	stdinW.WriteString("/tune start trials=4 rungs=200,400,600 fallback=true\n")
	waitFor(t, "training to start", 20*time.Second, func() bool { return strings.Contains(out.String(), "trial 0 @ rung 0 [") })
	if _, err := store.Open(filepath.Join(data, "tunebot.db"), store.Options{ReadOnly: true, Timeout: 100 * time.Millisecond}); !errors.Is(err, session.ErrLocked) {
		t.Fatalf("the daemon does not hold the data file: %v", err)
	}
	dst := filepath.Join(dir, "backups", "tunebot.db")
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd("backup", "--config", cfg, dst)
	if code != 0 || !strings.Contains(stdout, "passed its consistency check") {
		t.Fatalf("backup: exit %d\nstdout: %s\nstderr: %s\ndaemon:\n%s", code, stdout, stderr, out.String())
	}
	got := sessionIDs(t, dst)
	if len(got) != 4 || !slices.Contains(got, ids[0]) || !slices.Contains(got, ids[2]) {
		t.Fatalf("sessions in the backup: %v, want %v and the running one", got, ids)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".*tmp*")); len(left) > 0 {
		t.Errorf("temporary files left beside the backup: %v", left)
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(data, backupTokenFile)); !os.IsNotExist(err) {
		t.Errorf("the backup token outlived the daemon: %v", err)
	}
}

func TestBackupWithoutDaemon(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ids := storeWithSessions(t, data, 2)
	cfg := writeConfig(t, dir, "data_dir: "+data+"\n")
	dst := filepath.Join(dir, "copy.db")
	if code, _, stderr := runCmd("backup", dst, "--config", cfg); code != 0 {
		t.Fatalf("backup: exit %d: %s", code, stderr)
	}
	if got := sessionIDs(t, dst); !slices.Equal(got, ids) {
		t.Fatalf("sessions in the backup %v, want %v", got, ids)
	}
	// Issue 35 item 9: backup and prune take --data-dir, as tune and preset do, no config needed.
	viaFlag := filepath.Join(dir, "copy2.db")
	if code, _, stderr := runCmd("backup", viaFlag, "--data-dir", data); code != 0 || !slices.Equal(sessionIDs(t, viaFlag), ids) {
		t.Fatalf("backup --data-dir: exit %d: %s", code, stderr)
	}
	if code, out, stderr := runCmd("prune", "--data-dir", data, "--dry-run", "--keep-last", "0", "--older-than", "1h"); code != 0 || !strings.Contains(out, "Nothing was changed (--dry-run)") {
		t.Fatalf("prune --data-dir: exit %d: %s%s", code, out, stderr)
	}
	// A data file held by another process (a daemon) without a way to ask it for the copy.
	held, err := openStore(config.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		// The socket serves the backup whatever service.addr says.
		{[]string{"backup", "--config", writeConfig(t, t.TempDir(), "data_dir: "+data+"\nservice: {addr: \"off\"}\n"), dst}, 1,
			"a running tunebot holds " + filepath.Join(data, "tunebot.db") + " but has left no token in " + data},
		{[]string{"backup", "--config", cfg, dst}, 1, "has left no token"},
		{[]string{"backup", "--config", cfg}, 2, "usage: tunebot backup PATH"},
		{[]string{"backup", "--config", cfg, filepath.Join(data, "tunebot.db")}, 1, "is the data file itself"},
		{[]string{"backup", "--config", writeConfig(t, t.TempDir(), "data_dir: "+filepath.Join(dir, "none")+"\n"), dst}, 1, "no data file at"},
	} {
		code, _, stderr := runCmd(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
