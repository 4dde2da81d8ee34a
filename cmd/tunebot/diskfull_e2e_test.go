package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer"
)

// smallDisk mounts a tmpfs of size at a fresh directory and returns it; it skips the test,
// saying why, when this process may not mount (it must run as root: .ci/run does).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (.ci/run runs the tests as root)")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mounting a %s tmpfs is not permitted here: %v: %s", size, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file in dir until the filesystem has no room left.
func fillDisk(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{1 << 20, 4 << 10, 512} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling %s: %v", dir, err)
				}
				break
			}
		}
	}
}

// ballastTrainer is a trainer script that writes an 8 MiB file into the run directory, as a
// real trainer writes checkpoints, and then trains with the built-in sim: on a small disk
// its own write is what fails, with dd's "No space left on device". The disk (26 MiB, 4 of
// them tunebot's reserve) holds two ballasts and their trials' charts with about 3 MiB to
// spare and not a third ballast, so trial 2's own write fails whatever a chart weighs.
const ballastTrainer = `#!/bin/sh
run_dir=$1; shift
dd if=/dev/zero of="$run_dir/ballast" bs=1M count=8 || exit 1
exec "$@"
`

// TestFullDiskPausesAndResumeFinishes (issue 39): data_dir on a small tmpfs that fills
// mid-session, in two ways: the test fills it while trial 2 runs (the check before the next
// job finds it below the floor), or the trainer's own writes fill it (its job fails). Either
// way the session pauses (it does not fail) with the disk's numbers, tune says so and exits
// 3 with its resume line, the store is intact and readable (doctor, preset list) while the
// disk is full, no chart is left half-written; once the filesystem grows, --resume finishes
// the session with no failed trial.
func TestFullDiskPausesAndResumeFinishes(t *testing.T) {
	script := filepath.Join(t.TempDir(), "train.sh")
	if err := os.WriteFile(script, []byte(ballastTrainer), 0o755); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{script, "{run_dir}"}, trainer.SimTrain...)
	for _, c := range []struct {
		name, size, trainer string
		minFree, floor      string // service.min_free, and as doctor says it
		fill                bool
	}{
		{"filled by another", "48m", "", "1MiB", "1.0 MiB", true},
		// a floor of one byte: the trainer's job starts, and it is its write that fails
		{"filled by the trainer", "26m", "trainer:\n  train: " + yamlList(argv) + "\n", "1B", "1 bytes", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mnt := smallDisk(t, c.size)
			data := filepath.Join(mnt, "data")
			cfg := writeConfig(t, t.TempDir(), "data_dir: "+data+"\n"+c.trainer+`
service:
  addr: `+freeAddr(t)+`
  min_free: `+c.minFree+`
session:
  trial_count: 4
  rungs: [50, 100, 150]
  early_stop_patience: 4
`)
			out := tuneUntilFull(t, mnt, data, cfg, c.fill)
			reason := regexp.MustCompile(`paused: the data disk is full \(\d+(\.\d)? (bytes|KiB|MiB) free of \d+\.\d MiB on ` + regexp.QuoteMeta(data) + `\); free space, then resume`)
			if !reason.MatchString(out) || !strings.Contains(out, "tunebot tune --resume --config") {
				t.Fatalf("tune does not say the disk is full, or how to resume:\n%s", out)
			}
			id := checkFullDiskStore(t, data, cfg, c.floor, !c.fill)
			if c.fill {
				checkPageOnFullDisk(t, data, cfg, id)
			}
			if out, err := exec.Command("mount", "-o", "remount,size=160m", mnt).CombinedOutput(); err != nil {
				t.Fatalf("growing the tmpfs: %v: %s", err, out)
			}
			checkResumeFinishes(t, mnt, cfg)
		})
	}
}

// tuneUntilFull runs a tune session on data, filling the disk mounted at mnt while trial 2
// runs when fill is set, and returns what tune said; it must exit 3 (paused).
func tuneUntilFull(t *testing.T, mnt, data, cfg string, fill bool) string {
	t.Helper()
	cmd := exec.Command(tunebotBin, "tune", "--config", cfg, "--fallback")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if fill {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		waitForPath(ctx, t, filepath.Join(data, "sessions", "*", "trial-002-rung-0"))
		fillDisk(t, mnt)
	}
	err := cmd.Wait()
	out := stdout.String() + stderr.String()
	var xe *exec.ExitError
	if !errors.As(err, &xe) || xe.ExitCode() != 3 {
		t.Fatalf("tune on a full disk: %v, want exit 3\n%s", err, out)
	}
	return out
}

// checkResumeFinishes runs tune --resume and checks the session succeeds with every trial
// completed, each of the four rung-0 trials once.
func checkResumeFinishes(t *testing.T, dir, cfg string) {
	t.Helper()
	code, res, errOut := runBin(t, dir, "tune", "--resume", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("--resume after the disk grew: exit %d\n%s%s", code, res, errOut)
	}
	var sum summaryJSON
	lastJSON(t, res, &sum)
	if sum.State != session.StateSucceeded {
		t.Fatalf("after --resume: %s %q", sum.State, sum.Reason)
	}
	numbers := map[int]bool{}
	for _, tr := range sum.Trials {
		if tr.State != session.TrialCompleted {
			t.Errorf("trial %d @ rung %d is %s: %s", tr.Number, tr.Rung, tr.State, tr.Reason)
		}
		numbers[tr.Number] = true
	}
	if len(numbers) != 4 {
		t.Errorf("trials %v, want 4 (the one the full disk stopped ran again, once)", numbers)
	}
}

// yamlList is argv as a YAML flow list.
func yamlList(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// checkFullDiskStore checks a session paused by a full disk: stored paused with the reason,
// the data file passes its check and holds the trials finished before, and the commands
// that read it work while the disk is still full.
func checkFullDiskStore(t *testing.T, data, cfg, floor string, jobFailed bool) string {
	t.Helper()
	if err := store.Check(filepath.Join(data, "tunebot.db"), store.Options{}); err != nil {
		t.Fatalf("the data file after the disk filled: %v", err)
	}
	db, err := store.Open(filepath.Join(data, "tunebot.db"), store.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ss, err := db.Sessions(ctx)
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions %v %v", ss, err)
	}
	s := ss[0]
	trials, err := db.Trials(ctx, s.ID)
	audit, _ := db.Audit(ctx, s.ID)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if s.State != session.StatePaused || !session.IsDiskFullReason(s.Reason) {
		t.Fatalf("stored session: %s %q", s.State, s.Reason)
	}
	done := 0
	for _, tr := range trials {
		switch tr.State {
		case session.TrialFailed, session.TrialTraining, session.TrialEvaluating:
			t.Errorf("trial %d @ rung %d is %s on a paused session: %s", tr.Number, tr.Rung, tr.State, tr.Reason)
		case session.TrialCompleted:
			done++
		}
	}
	kinds := map[string]int{}
	for _, a := range audit {
		kinds[a.Kind]++
	}
	if jobFailed && kinds["trial_out_of_space"] != 1 {
		t.Errorf("no trial's job ran out of space: the audit has %v", kinds)
	}
	if done < 2 {
		t.Errorf("%d trials completed before the disk filled, want trials 0 and 1", done)
	}
	if code, out, errOut := runBin(t, data, "preset", "list", "--config", cfg); code != 0 {
		t.Errorf("preset list on a full disk: exit %d\n%s%s", code, out, errOut)
	}
	// doctor fails on other lines here (no advisor, no fallback in the config): its store
	// and free-space lines are the ones that matter.
	_, out, errOut := runBin(t, data, "doctor", "--config", cfg)
	if !strings.Contains(out, "passed its consistency check") || !regexp.MustCompile(`(ok|warn) +free space +\d.* free of .* on `+regexp.QuoteMeta(data)+`; the floor is `+regexp.QuoteMeta(floor)+` \(service.min_free\)`).MatchString(out) {
		t.Errorf("doctor on a full disk:\n%s%s", out, errOut)
	}
	// Charts the full disk stopped are not there at all, never half-written.
	leftovers, _ := filepath.Glob(filepath.Join(data, "reports", "*", ".*.tmp-*"))
	if len(leftovers) > 0 {
		t.Errorf("partial copies left: %v", leftovers)
	}
	charts, _ := filepath.Glob(filepath.Join(data, "reports", "*", "*.png"))
	for _, c := range charts {
		f, err := os.Open(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("chart %s is not whole: %v", c, err)
		}
		f.Close()
	}
	return s.ID
}

// checkPageOnFullDisk starts the daemon on the full disk (it releases the reserve to do
// so): the monitoring page shows the paused session with its reason, and /metrics the free
// bytes. The daemon is stopped again before the test goes on.
func checkPageOnFullDisk(t *testing.T, data, cfg, id string) {
	t.Helper()
	cmd, _, out := startDaemon(t, cfg)
	addr := regexp.MustCompile(`(?m)^  addr: (\S+)$`).FindStringSubmatch(readFile(t, cfg))[1]
	resp := postSignIn(t, dashboardLink(t, cfg))
	if len(resp.Cookies()) != 1 {
		t.Fatalf("sign-in on a full disk: %d\n%s", resp.StatusCode, out.String())
	}
	get := func(path string) string {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		req.AddCookie(resp.Cookies()[0])
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("GET %s on a full disk: %d %s", path, r.StatusCode, b)
		}
		return string(b)
	}
	var page struct {
		Session struct {
			State, Reason, Message string
		}
	}
	if err := json.Unmarshal([]byte(get("/api/sessions/"+id)), &page); err != nil {
		t.Fatal(err)
	}
	view := page.Session
	if view.State != string(session.StatePaused) || !session.IsDiskFullReason(view.Reason) || view.Message != "paused: "+view.Reason {
		t.Errorf("the page shows %+v", view)
	}
	if m := get("/metrics"); !strings.Contains(m, `tunebot_disk_free_bytes{path="`+data+`"}`) {
		t.Errorf("/metrics has no free bytes of %s:\n%s", data, m)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// waitForPath waits until a file matching pattern exists.
func waitForPath(ctx context.Context, t *testing.T, pattern string) {
	t.Helper()
	for {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("nothing matched %s", pattern)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
