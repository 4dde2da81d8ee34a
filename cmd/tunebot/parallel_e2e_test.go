package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tunebot/trainer/sim"
)

// TestParallelLocalSessionOnFourSimGPUs runs a 12-trial session with the local executor
// on four GPUs, the sim trainer taking real time per iteration and holding its GPU
// exclusively (a GPU given to two jobs fails the job, naming the holder): every trial
// completes, four jobs ran at once, and the session is what a serial one is in kind.
func TestParallelLocalSessionOnFourSimGPUs(t *testing.T) {
	dir := t.TempDir()
	gpus := filepath.Join(dir, "gpus")
	if err := os.Mkdir(gpus, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, `
data_dir: data
session:
  trial_count: 12
  rungs: [30, 60, 90]
  early_stop_patience: 12
  gpus: [0, 1, 2, 3]
executor:
  backend: local
  parallel: 4
  gpus_per_trial: 1
`)
	sum, stderr := tuneJSON(t, cfg, sim.StepDelayEnv+"=5ms", sim.GPUDirEnv+"="+gpus)
	if sum.State != "succeeded" {
		t.Fatalf("session %s\n%s", sum.State, stderr)
	}
	perRung := map[int]int{}
	for _, tr := range sum.Trials {
		perRung[tr.Rung]++
		if tr.State != "completed" {
			t.Errorf("trial %d @ rung %d %s: %s", tr.Number, tr.Rung, tr.State, tr.Reason)
		}
	}
	if perRung[0] != 12 || perRung[1] == 0 || perRung[2] == 0 {
		t.Errorf("trials per rung %v: want 12 at rung 0 and a halving ladder above", perRung)
	}
	peak, err := sim.PeakHolders(gpus)
	if err != nil {
		t.Fatal(err)
	}
	if peak != 4 {
		t.Errorf("at most %d jobs held GPUs at once, want 4", peak)
	}
	if left, _ := filepath.Glob(filepath.Join(gpus, "gpu-*")); len(left) > 0 {
		t.Errorf("GPUs still held after the session: %v", left)
	}
}

// slurmEnv is the environment that points the Slurm commands at the test cluster.
func slurmEnv(t *testing.T) []string {
	t.Helper()
	return []string{"SLURM_CONF=" + cluster.Need(t)}
}

// squeueJobs lists the cluster's jobs as id → state (squeue -t all keeps finished ones
// for MinJobAge).
func squeueJobs(t *testing.T, env []string) map[string]string {
	t.Helper()
	cmd := exec.Command("squeue", "-h", "-t", "all", "-o", "%i %T")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("squeue: %v", err)
	}
	jobs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			jobs[f[0]] = f[1]
		}
	}
	return jobs
}

func runningOf(jobs map[string]string, except map[string]bool) []string {
	var out []string
	for id, st := range jobs {
		if st == "RUNNING" && !except[id] {
			out = append(out, id)
		}
	}
	return out
}

// slurmRun is a daemon running a session whose jobs go to the test cluster.
type slurmRun struct {
	dir, cfg string
	env      []string // the cluster's SLURM_CONF and the sim's step delay
	cmd      *exec.Cmd
	stdin    *os.File
	out      *syncBuffer
	before   map[string]bool // the cluster's jobs before the session
	two      []string        // two of the session's jobs, seen running at once
}

// startSlurmSession starts the daemon with the Slurm executor and a 4-trial session in it,
// the sim taking stepDelay per iteration, and returns once two of its jobs run at once.
func startSlurmSession(t *testing.T, stepDelay string) *slurmRun {
	t.Helper()
	r := &slurmRun{dir: t.TempDir(), env: slurmEnv(t), before: map[string]bool{}}
	r.cfg = writeConfig(t, r.dir, slurmConfig)
	r.env = append(r.env, sim.StepDelayEnv+"="+stepDelay)
	for id := range squeueJobs(t, r.env) {
		r.before[id] = true
	}
	r.cmd, r.stdin, r.out = startDaemon(t, r.cfg, r.env...)
	r.stdin.WriteString("/tune start trials=4 rungs=40,80,120 fallback=true\n")
	waitFor(t, "two Slurm jobs running at once", 90*time.Second, func() bool {
		r.two = runningOf(squeueJobs(t, r.env), r.before)
		return len(r.two) == 2
	})
	return r
}

const slurmConfig = `
data_dir: data
service: {addr: "off"}
executor:
  backend: slurm
  parallel: 2
  gpus_per_trial: 1
  slurm:
    time_limit: 10m
    poll_interval: 300ms
`

// TestSlurmSessionSurvivesKillNine runs a session through the real Slurm with 2 GPUs,
// kills tunebot with SIGKILL while two jobs run, and starts it again: both jobs are still
// there (never cancelled), are re-attached and finish, nothing is submitted twice, and
// the session succeeds with every trial completed once.
func TestSlurmSessionSurvivesKillNine(t *testing.T) {
	r := startSlurmSession(t, "40ms")
	dir, env, two := r.dir, r.env, r.two
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = r.cmd.Wait()
	jobs := squeueJobs(t, env)
	for _, id := range two {
		if st := jobs[id]; st != "RUNNING" && st != "COMPLETING" && st != "COMPLETED" {
			t.Fatalf("Slurm job %s is %s after tunebot was killed: it must keep running\n%s", id, st, r.out.String())
		}
	}
	// Started again without --resume: a session with Slurm jobs recorded is re-attached.
	cmd2, stdinW2, out2 := startDaemon(t, r.cfg, env...)
	waitFor(t, "the session to succeed after the restart", 120*time.Second, func() bool { return strings.Contains(out2.String(), "succeeded") })
	stdinW2.Close()
	_ = cmd2.Process.Signal(syscall.SIGTERM)
	_ = cmd2.Wait()

	completedOnce(t, dir, out2.String())
	// Every job of the session is one batch script; none was submitted twice: each
	// script's job ran once, and the two jobs running at the kill finished COMPLETED.
	jobs = squeueJobs(t, env)
	for _, id := range two {
		if jobs[id] != "COMPLETED" {
			t.Errorf("Slurm job %s that ran through the kill ended %s", id, jobs[id])
		}
	}
	submitted := 0
	for id := range jobs {
		if !r.before[id] {
			submitted++
		}
	}
	scripts, _ := filepath.Glob(filepath.Join(dir, "data", "sessions", "*", "*", "*.sbatch"))
	if submitted != len(scripts) {
		t.Errorf("%d Slurm jobs submitted for %d batch scripts: a job was submitted twice", submitted, len(scripts))
	}
	if len(scripts) == 0 {
		t.Errorf("no batch script found under %s", filepath.Join(dir, "data", "sessions"))
	}
}

// TestSlurmCancelEndsEveryJob cancels a session while two of its Slurm jobs run: both are
// cancelled in Slurm (scancel), and the session is cancelled.
func TestSlurmCancelEndsEveryJob(t *testing.T) {
	r := startSlurmSession(t, "200ms")
	env, out, two := r.env, r.out, r.two
	r.stdin.WriteString("/tune cancel\n")
	waitFor(t, "both jobs to be cancelled in Slurm", 30*time.Second, func() bool {
		jobs := squeueJobs(t, env)
		for _, id := range two {
			if jobs[id] != "CANCELLED" {
				return false
			}
		}
		return true
	})
	waitFor(t, "the session to say it was cancelled", 10*time.Second, func() bool { return strings.Contains(out.String(), "cancelled") })
}
