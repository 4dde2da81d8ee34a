package slurm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tunebot/trainer/slurm"
	"tunebot/trainer/slurm/slurmtest"
)

// cluster is the test binary's real Slurm (slurmtest): a one-node Slurm with 2 fake GPUs,
// brought up by the first test that needs it, or the one SLURM_CONF names. Where Slurm is
// not installed (and cannot be: not root), the tests that need it skip and say so.
var cluster slurmtest.Cluster

func TestMain(m *testing.M) {
	code := m.Run()
	cluster.Down()
	os.Exit(code)
}

func needSlurm(t *testing.T) *slurm.Client {
	t.Helper()
	return &slurm.Client{Env: cluster.Env(t)}
}

// argvDump is a command that writes its argv as JSON to the file named by its first word.
var argvDump = []string{"python3", "-c", "import json,sys; json.dump(sys.argv[2:], open(sys.argv[1], 'w'))"}

// hostile words a run name or a config value could carry; none may be interpreted.
var hostile = []string{
	"plain", "two words", `"double"`, "it's", "$(touch pwned)", "`touch pwned`", "$HOME",
	"a;b", "x\ny", "*", "--flag=1", `back\slash`, "{gpu_ids}", "gpus=" + slurm.GPUIDsMarker + "!",
}

func TestScriptKeepsEveryWordAndFillsGPUs(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "argv.json")
	j := slurm.Job{Name: "trial-001-rung-0", Dir: dir, Argv: slices.Concat(argvDump, []string{out}, hostile),
		Env: []string{"PYTHONUNBUFFERED=1", "ODD=it's $HOME"}}
	script, err := slurm.Script(j)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "job.sbatch")
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	// Run it as Slurm would, but with plain bash: the GPUs come from SLURM_JOB_GPUS.
	cmd := exec.Command("bash", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLURM_JOB_GPUS=1,3")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("script: %v\n%s", err, b)
	}
	var got []string
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(hostile)
	want[len(want)-1] = "gpus=[1,3]!"
	if !slices.Equal(got, want) {
		t.Errorf("argv through the script:\n got %q\nwant %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a word of argv was run by the shell")
	}
	code, err := os.ReadFile(slurm.ExitPath(j))
	if err != nil || strings.TrimSpace(string(code)) != "0" {
		t.Errorf("exit file: %q, %v; want 0", code, err)
	}
}

func TestScriptRefusesBadJobs(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		job  slurm.Job
		want string
	}{
		{"name flag", slurm.Job{Name: "-x", Dir: dir, Argv: []string{"true"}}, `job name "-x"`},
		{"relative dir", slurm.Job{Name: "a", Dir: "rel", Argv: []string{"true"}}, `job dir "rel" is not absolute`},
		{"no argv", slurm.Job{Name: "a", Dir: dir}, "empty argv"},
		{"bad env", slurm.Job{Name: "a", Dir: dir, Argv: []string{"true"}, Env: []string{"A B=1"}}, `env "A B=1"`},
		{"extra not an option", slurm.Job{Name: "a", Dir: dir, Argv: []string{"true"}, Extra: []string{"rm -rf"}}, `sbatch argument "rm -rf"`},
		{"partition with newline", slurm.Job{Name: "a", Dir: dir, Argv: []string{"true"}, Partition: "gpu\n#SBATCH --x"}, "partition"},
		{"relative output", slurm.Job{Name: "a", Dir: dir, Argv: []string{"true"}, Output: "train.log"}, `job output "train.log" is not absolute`},
		{"output with a Slurm pattern", slurm.Job{Name: "a", Dir: dir, Argv: []string{"true"}, Output: dir + "/%j.log"}, "no newline or % allowed"},
		{"relative workdir", slurm.Job{Name: "a", Dir: dir, Argv: []string{"true"}, Workdir: "src"}, `job workdir "src" is not absolute`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := slurm.Script(tc.job)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Script: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestScriptOutputAndWorkdir: a job can append to a log of its own choosing and start in
// another directory than its script's.
func TestScriptOutputAndWorkdir(t *testing.T) {
	dir := t.TempDir()
	script, err := slurm.Script(slurm.Job{Name: "a", Dir: dir, Argv: []string{"true"}, Output: "/runs/t1/train.log", Workdir: "/src/trainer"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH --output=/runs/t1/train.log\n", "#SBATCH --open-mode=append\n", "#SBATCH --chdir=/src/trainer\n"} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	if got := slurm.OutputPath(slurm.Job{Name: "a", Dir: dir, Output: "/runs/t1/train.log"}); got != "/runs/t1/train.log" {
		t.Errorf("OutputPath = %s", got)
	}
}

func TestSlurmJobsGetTheirOwnGPUsAndExitCodes(t *testing.T) {
	c := needSlurm(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	// Three one-GPU jobs on two GPUs: one must wait for a GPU, and no GPU is held twice.
	var jobs []slurm.Job
	var ids []string
	for i, code := range []int{0, 3, 0} {
		jd := filepath.Join(dir, fmt.Sprint(i))
		j := slurm.Job{Name: fmt.Sprintf("t%d", i), Dir: jd, GPUs: 1,
			Argv: []string{"bash", "-c", fmt.Sprintf("echo \"$1\" > gpus; sleep 2; exit %d", code), "job", slurm.GPUIDsMarker}}
		id, err := c.Submit(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		jobs, ids = append(jobs, j), append(ids, id)
	}
	exits := map[string]string{}
	for i, id := range ids {
		exits[id] = slurm.ExitPath(jobs[i])
	}
	// The third waits for a GPU, and says why (Resources or Priority).
	var waited slurm.Status
	for waited.Reason == "" {
		all, err := c.Status(ctx, ids[2:], nil)
		if err != nil {
			t.Fatal(err)
		}
		if waited = all[ids[2]]; waited.State != slurm.Pending {
			t.Fatalf("the third job on two GPUs: %+v, want it pending with a reason", waited)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i, id := range ids {
		st, err := c.Wait(ctx, id, exits[id], 200*time.Millisecond, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantState, wantCode := slurm.Completed, 0
		if i == 1 {
			wantState, wantCode = slurm.Failed, 3
		}
		if st.State != wantState || st.ExitCode != wantCode {
			t.Errorf("job %d: %+v, want %s with exit code %d", i, st, wantState, wantCode)
		}
	}
	seen := map[string]bool{}
	for _, j := range jobs[:2] {
		b, err := os.ReadFile(filepath.Join(j.Dir, "gpus"))
		if err != nil {
			t.Fatal(err)
		}
		g := strings.TrimSpace(string(b))
		if g != "[0]" && g != "[1]" {
			t.Errorf("job %s got gpu_ids %q, want [0] or [1]", j.Name, g)
		}
		if seen[g] {
			t.Errorf("two running jobs got the same GPU %s", g)
		}
		seen[g] = true
	}
}

func TestSlurmCancelAndForgottenJobs(t *testing.T) {
	c := needSlurm(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	j := slurm.Job{Name: "long", Dir: dir, Argv: []string{"bash", "-c", "echo $$ > pid; sleep 300"}}
	id, err := c.Submit(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until it runs and its command started.
	for {
		if _, err := os.Stat(filepath.Join(dir, "pid")); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the job never started")
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := c.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	var seen []string
	st, err := c.Wait(ctx, id, slurm.ExitPath(j), 200*time.Millisecond, func(s slurm.Status) { seen = append(seen, s.State) })
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 || seen[len(seen)-1] != slurm.Cancelled {
		t.Errorf("states seen while waiting: %v, want them to end with %s", seen, slurm.Cancelled)
	}
	if st.State != slurm.Cancelled {
		t.Errorf("cancelled job: %+v, want %s", st, slurm.Cancelled)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pid"))
	pid := strings.TrimSpace(string(b))
	for {
		if _, err := os.Stat("/proc/" + pid); err != nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the cancelled job's command (pid %s) still runs", pid)
		case <-time.After(100 * time.Millisecond):
		}
	}
	all, err := c.Status(ctx, []string{"987654321"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := all["987654321"]; st.State != slurm.Unknown || !st.Finished() {
		t.Errorf("a job Slurm never had: %+v, want %s", st, slurm.Unknown)
	}
}

func TestFinishedStates(t *testing.T) {
	for state, want := range map[string]bool{
		slurm.Pending: false, slurm.Running: false, "STOPPED": false, "REQUEUE_HOLD": false, "SUSPENDED": false,
		slurm.Completed: true, slurm.Failed: true, slurm.Cancelled: true, slurm.Timeout: true, slurm.Unknown: true,
		"PREEMPTED": true, "BOOT_FAIL": true,
	} {
		if got := (slurm.Status{State: state}).Finished(); got != want {
			t.Errorf("%s: Finished() = %v, want %v", state, got, want)
		}
	}
}

func TestPartitionsShowGPUs(t *testing.T) {
	c := needSlurm(t)
	ps, err := c.Partitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) == 0 || !ps[0].Up || !slurm.HasGPUs(ps[0].Gres) {
		t.Fatalf("partitions: %+v, want an up partition with GPUs", ps)
	}
}

// TestSubmitFollowsNoLink: a link a trainer planted in the job's directory where the batch
// script goes (or its temporary copy) is replaced, never written through.
func TestSubmitFollowsNoLink(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte("#!/bin/sh\necho 42\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j := slurm.Job{Name: "train", Dir: t.TempDir(), Argv: []string{"true"}}
	for _, p := range []string{slurm.ScriptPath(j), slurm.ScriptPath(j) + ".tmp"} {
		if err := os.Symlink(victim, p); err != nil {
			t.Fatal(err)
		}
	}
	if id, err := (&slurm.Client{}).Submit(context.Background(), j); err != nil || id != "42" {
		t.Fatalf("Submit = %q, %v", id, err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "mine\n" {
		t.Errorf("written through a link: %.40q", b)
	}
	if info, err := os.Lstat(slurm.ScriptPath(j)); err != nil || !info.Mode().IsRegular() {
		t.Errorf("the batch script is not the runner's own file: %v", err)
	}
}
