package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tunebot/session"
	"tunebot/trainer/ray"
	"tunebot/trainer/sim"
)

// rayConfig is a config whose jobs go to the test head, parallel at once, the head asked
// every 200 ms and given 5 s to answer before the session pauses.
func rayConfig(t *testing.T, dir string, trials, parallel int) string {
	t.Helper()
	addr, _ := rayHead.Need(t)
	return writeConfig(t, dir, fmt.Sprintf(`
data_dir: data
service: {addr: "off"}
session:
  trial_count: %d
  rungs: [30, 60, 90]
  early_stop_patience: %d
executor:
  backend: ray
  parallel: %d
  gpus_per_trial: 1
  ray:
    address: %q
    poll_interval: 200ms
    head_timeout: 5s
`, trials, trials, parallel, addr))
}

// rayEnv is tunebot's environment for the test head: its token and the sim's step delay.
func rayEnv(t *testing.T, stepDelay string) []string {
	t.Helper()
	_, token := rayHead.Need(t)
	return []string{"RAY_AUTH_TOKEN=" + token, sim.StepDelayEnv + "=" + stepDelay}
}

// rayJobsOf is the head's jobs whose run dir is under dir, by submission id.
func rayJobsOf(t *testing.T, dir string) map[string]ray.Info {
	t.Helper()
	out := map[string]ray.Info{}
	for _, j := range rayHead.Jobs(t) {
		if strings.HasPrefix(j.Metadata["tunebot_run_dir"], dir+string(filepath.Separator)) {
			out[j.SubmissionID] = j
		}
	}
	return out
}

func rayRunning(jobs map[string]ray.Info) []string {
	var ids []string
	for id, j := range jobs {
		if j.Status == ray.Running {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestRaySessionRunsOnTheHead runs a 6-trial session with parallel 2 through the real head,
// the sim holding the GPUs Ray gives it exclusively (a GPU given to two jobs fails the job,
// naming the holder): every trial completes, two jobs held GPUs at once and never more,
// and the head's job list shows every train and evaluation job, each submitted once.
func TestRaySessionRunsOnTheHead(t *testing.T) {
	dir := t.TempDir()
	gpus := filepath.Join(dir, "gpus")
	if err := os.Mkdir(gpus, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := rayConfig(t, dir, 6, 2)
	sum, stderr := tuneJSON(t, cfg, append(rayEnv(t, "20ms"), sim.GPUDirEnv+"="+gpus)...)
	if sum.State != "succeeded" {
		t.Fatalf("session %s\n%s", sum.State, stderr)
	}
	for _, tr := range sum.Trials {
		if tr.State != "completed" {
			t.Errorf("trial %d @ rung %d %s: %s", tr.Number, tr.Rung, tr.State, tr.Reason)
		}
	}
	if peak, err := sim.PeakHolders(gpus); err != nil || peak != 2 {
		t.Errorf("at most %d jobs held GPUs at once (%v), want 2", peak, err)
	}
	jobs := rayJobsOf(t, filepath.Join(dir, "data"))
	kinds := map[string]int{}
	for id, j := range jobs {
		if j.Status != ray.Succeeded || strings.HasSuffix(id, "-2") {
			t.Errorf("Ray job %s: %s (%s)", id, j.Status, j.Message)
		}
		kinds[j.Metadata["tunebot_job"]]++
	}
	if kinds["train"] < len(sum.Trials) || kinds["evaluate"] < len(sum.Trials) {
		t.Errorf("the head ran %v jobs for %d trials, want a train and an evaluation job of each", kinds, len(sum.Trials))
	}
}

// rayRun is a daemon running a 4-trial session whose jobs go to the test head.
type rayRun struct {
	dir, cfg, data string
	env            []string
	cmd            *exec.Cmd
	stdin          *os.File
	out            *syncBuffer
	two            []string // two of the session's jobs, seen running at once
}

// startRaySession starts the daemon with the Ray executor and a 4-trial session in it, the
// sim taking stepDelay per iteration, and returns once two of its jobs run at once.
func startRaySession(t *testing.T, stepDelay string) *rayRun {
	t.Helper()
	r := &rayRun{dir: t.TempDir(), env: rayEnv(t, stepDelay)}
	r.cfg, r.data = rayConfig(t, r.dir, 4, 2), filepath.Join(r.dir, "data")
	r.cmd, r.stdin, r.out = startDaemon(t, r.cfg, r.env...)
	r.stdin.WriteString("/tune start trials=4 rungs=40,80,120 fallback=true\n")
	waitFor(t, "two Ray jobs running at once", 90*time.Second, func() bool {
		r.two = rayRunning(rayJobsOf(t, r.data))
		return len(r.two) == 2
	})
	return r
}

// TestRaySessionSurvivesKillNine kills tunebot with SIGKILL while two of its Ray jobs run and
// starts it again: both jobs ran on (never stopped), are re-attached and finish, nothing is
// submitted twice, and the session succeeds with every trial completed once.
func TestRaySessionSurvivesKillNine(t *testing.T) {
	r := startRaySession(t, "40ms")
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = r.cmd.Wait()
	jobs := rayJobsOf(t, r.data)
	for _, id := range r.two {
		if st := jobs[id].Status; st != ray.Running && st != ray.Succeeded {
			t.Fatalf("Ray job %s is %s after tunebot was killed: it must keep running\n%s", id, st, r.out.String())
		}
	}
	// Started again without --resume: a session with Ray jobs recorded is re-attached.
	cmd2, stdin2, out2 := startDaemon(t, r.cfg, r.env...)
	waitFor(t, "the session to succeed after the restart", 3*time.Minute, func() bool { return strings.Contains(out2.String(), "succeeded") })
	stdin2.Close()
	_ = cmd2.Process.Signal(syscall.SIGTERM)
	_ = cmd2.Wait()

	completedOnce(t, r.dir, out2.String())
	jobs = rayJobsOf(t, r.data)
	for _, id := range r.two {
		if jobs[id].Status != ray.Succeeded {
			t.Errorf("Ray job %s that ran through the kill ended %s", id, jobs[id].Status)
		}
	}
	for id := range jobs {
		if strings.HasSuffix(id, "-2") {
			t.Errorf("Ray job %s: a job of this trial was submitted twice", id)
		}
	}
	if !strings.Contains(out2.String(), "re-attached") && !strings.Contains(readRunLogs(t, r.data), "re-attached") {
		t.Errorf("nothing says the jobs were re-attached:\n%s", out2.String())
	}
}

// readRunLogs is every train.log and evaluate.log of the session's run dirs, joined.
func readRunLogs(t *testing.T, data string) string {
	t.Helper()
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(data, "sessions", "*", "*", "*.log"))
	for _, l := range logs {
		b.WriteString(readFile(t, l))
	}
	return b.String()
}

// TestRayCancelStopsEveryJob cancels a session while two of its Ray jobs run: both are
// stopped on the head, and the session is cancelled.
func TestRayCancelStopsEveryJob(t *testing.T) {
	r := startRaySession(t, "200ms")
	r.stdin.WriteString("/tune cancel\n")
	waitFor(t, "both jobs to be stopped on the head", 30*time.Second, func() bool {
		jobs := rayJobsOf(t, r.data)
		for _, id := range r.two {
			if jobs[id].Status != ray.Stopped {
				return false
			}
		}
		return true
	})
	waitFor(t, "the session to say it was cancelled", 10*time.Second, func() bool { return strings.Contains(r.out.String(), "cancelled") })
}

// TestRayHeadGoingAwayPausesTheSession (as a full disk does): the head stops while a job of
// the session runs; the session pauses with the reason, tune says so and exits 3 with its
// resume line, no trial fails; once the head is back, --resume finishes the session with
// every trial completed once.
func TestRayHeadGoingAwayPausesTheSession(t *testing.T) {
	dir := t.TempDir()
	cfg := rayConfig(t, dir, 4, 2)
	data := filepath.Join(dir, "data")
	cmd := exec.Command(tunebotBin, "tune", "--config", cfg, "--fallback")
	cmd.Env = append(os.Environ(), rayEnv(t, "100ms")...)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	waitFor(t, "a Ray job of trial 1 or later running", 2*time.Minute, func() bool {
		for _, id := range rayRunning(rayJobsOf(t, data)) {
			if !strings.Contains(id, "-t000-") {
				return true
			}
		}
		return false
	})
	rayHead.Stop(t)
	err := cmd.Wait()
	rayHead.Start(t)
	if xe, ok := err.(*exec.ExitError); !ok || xe.ExitCode() != 3 {
		t.Fatalf("tune with its head gone: %v, want exit 3 (paused)\n%s", err, out.String())
	}
	for _, want := range []string{"paused: the cluster is unavailable: the Ray head at ", " has not answered about job ", "resume once it is back", "tunebot tune --resume --config"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tune does not say %q:\n%s", want, out.String())
		}
	}
	code, res, errOut := runBinEnv(t, rayEnv(t, "10ms"), "tune", "--resume", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("--resume with the head back: exit %d\n%s%s", code, res, errOut)
	}
	var sum summaryJSON
	lastJSON(t, res, &sum)
	if sum.State != session.StateSucceeded {
		t.Fatalf("after --resume: %s %q", sum.State, sum.Reason)
	}
	completedOnce(t, dir, errOut)
}
