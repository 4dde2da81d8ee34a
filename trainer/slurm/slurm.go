// Package slurm submits, tracks and cancels trainer jobs on a Slurm cluster through its
// command-line tools (sbatch, squeue, sacct, scancel), reading their plain text output: on
// Slurm 22.05 the --json output reports wrong exit codes.
//
// A job is a generated batch script in the job's run directory, so it runs where the run
// directories are shared by both sides (the data_dir, as on any cluster). The trainer's argv
// is written into the script single-quoted, one word at a time, and never passes through a
// shell as a string; the only thing filled in on the node is {gpu_ids}, from what Slurm gave
// the job. The script records the command's exit code in a file beside it, so a finished job
// can be collected even after Slurm has forgotten it.
package slurm

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"tunebot/disk"
)

// GPUIDsMarker stands in an argv word for the GPUs Slurm gives the job; the batch script
// replaces it with their JSON list (`[0,1]`), the {gpu_ids} of the trainer contract.
const GPUIDsMarker = "@@TUNEBOT_GPU_IDS@@"

// Job is what one sbatch submission runs.
type Job struct {
	Name string // the job name Slurm shows; letters, digits, '-', '_', '.'
	Dir  string // where the batch script, its output and the exit-code file go
	// Workdir is the command's working directory (--chdir); "" means Dir.
	Workdir string
	// Output, when set, is the file the job's stdout and stderr are appended to (the
	// trainer's own train.log, so a log tail reads the same file locally and on Slurm);
	// "" means <Name>.out in Dir.
	Output string
	Argv   []string // the command, already expanded; GPUIDsMarker may appear inside words
	Env    []string // KEY=VALUE exported before the command

	Partition, Account, QOS string
	TimeLimit               time.Duration // 0: the partition's default
	CPUs                    int           // --cpus-per-task; 0: Slurm's default
	Mem                     string        // --mem, e.g. "32G"; "": Slurm's default
	GPUs                    int           // --gres=gpu:N; 0: no GPU asked for
	Extra                   []string      // more sbatch options, each one word (e.g. "--constraint=a100")
}

// States of a job as squeue and sacct name them.
const (
	Pending    = "PENDING"
	Running    = "RUNNING"
	Completing = "COMPLETING"
	Completed  = "COMPLETED"
	Failed     = "FAILED"
	Cancelled  = "CANCELLED"
	Timeout    = "TIMEOUT"
	NodeFail   = "NODE_FAIL"
	OutOfMem   = "OUT_OF_MEMORY"
	Unknown    = "UNKNOWN" // neither squeue nor sacct knows the job any more
)

// Status is one job as Slurm reports it.
type Status struct {
	ID       string
	State    string // one of the states above, or another Slurm state name
	Reason   string // why a pending job waits (Resources, Priority, ...); "" when none
	Node     string // where it runs or ran
	ExitCode int    // the command's exit code once finished (from the exit file or sacct); -1 unknown
	// Signal is the signal that killed the batch script, from sacct's exit code (0:9) when
	// no exit file says otherwise; 0 for none or unknown.
	Signal int
}

// unfinished are the job states (squeue's long names) from which a job can still run or
// change; every other state, including ones a later Slurm adds, is an end.
var unfinished = []string{Pending, Running, Completing, "CONFIGURING", "SUSPENDED", "STOPPED",
	"REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT"}

// Finished reports whether the job will not change any more.
func (s Status) Finished() bool {
	return !slices.Contains(unfinished, s.State)
}

// Client runs the Slurm commands. Env, when set, is the environment of those commands (for
// SLURM_CONF and the like); nil means this process's environment.
type Client struct {
	Env []string
	// ReadExit reads a job's exit file, which the job wrote (nil: os.ReadFile); tunebot
	// passes trainer's bounded reader, so a FIFO or a link there is refused, never read.
	ReadExit func(path string) ([]byte, error)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// ScriptPath, OutputPath and ExitPath are where a job's files live in its directory.
func ScriptPath(j Job) string { return filepath.Join(j.Dir, j.Name+".sbatch") }

// OutputPath is the job's stdout and stderr.
func OutputPath(j Job) string {
	if j.Output != "" {
		return j.Output
	}
	return filepath.Join(j.Dir, j.Name+".out")
}

// ExitPath holds the command's exit code once it ended.
func ExitPath(j Job) string { return filepath.Join(j.Dir, j.Name+".exit") }

// Script renders the batch script of j.
func Script(j Job) (string, error) {
	if probs := jobProblems(j); len(probs) > 0 {
		return "", fmt.Errorf("slurm job: %s", strings.Join(probs, "; "))
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	b.WriteString("# Written by tunebot: one trainer job. The argv below is quoted word by word.\n")
	for _, opt := range directives(j) {
		fmt.Fprintf(&b, "#SBATCH %s\n", opt)
	}
	writeCommand(&b, j)
	return b.String(), nil
}

// jobProblems names everything in j a batch script cannot carry safely: a name outside
// nameRE, a relative dir, workdir or output, a newline or '%' in a path (an sbatch
// directive ends at the line and %-patterns are Slurm's own), an empty argv, an
// environment entry that is not KEY=VALUE, an extra option that is not one --option, and
// a partition, account, QOS or memory outside optRE.
func jobProblems(j Job) []string {
	var probs []string
	if !nameRE.MatchString(j.Name) {
		probs = append(probs, fmt.Sprintf("job name %q: want letters, digits, '_', '.', '-', starting with a letter or digit", j.Name))
	}
	if !filepath.IsAbs(j.Dir) {
		probs = append(probs, fmt.Sprintf("job dir %q is not absolute", j.Dir))
	}
	for _, p := range []struct{ name, v string }{{"workdir", j.Workdir}, {"output", j.Output}} {
		if p.v != "" && !filepath.IsAbs(p.v) {
			probs = append(probs, fmt.Sprintf("job %s %q is not absolute", p.name, p.v))
		}
		if strings.ContainsAny(p.v, "\n\r%") {
			probs = append(probs, fmt.Sprintf("job %s %q: no newline or %% allowed", p.name, p.v))
		}
	}
	if len(j.Argv) == 0 {
		probs = append(probs, "empty argv")
	}
	for _, kv := range j.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || !envKeyRE.MatchString(k) {
			probs = append(probs, fmt.Sprintf("env %q is not KEY=VALUE", kv))
		}
	}
	for _, x := range j.Extra {
		if !strings.HasPrefix(x, "--") || strings.ContainsAny(x, "\n\r") {
			probs = append(probs, fmt.Sprintf("sbatch argument %q: want one --option[=value]", x))
		}
	}
	for _, f := range []struct{ name, v string }{{"partition", j.Partition}, {"account", j.Account}, {"qos", j.QOS}, {"mem", j.Mem}} {
		if f.v != "" && !optRE.MatchString(f.v) {
			probs = append(probs, fmt.Sprintf("%s %q: letters, digits and '_.-,:' only", f.name, f.v))
		}
	}
	return probs
}

// directives are the script's #SBATCH options in order: name, output (appended to when
// the job shares a log), working directory and one task always; each resource only when
// set (the time limit rounded up to whole minutes); the extra options last.
func directives(j Job) []string {
	opts := []string{"--job-name=" + j.Name, "--output=" + OutputPath(j)}
	if j.Output != "" {
		opts = append(opts, "--open-mode=append")
	}
	opts = append(opts, "--chdir="+cmp.Or(j.Workdir, j.Dir), "--ntasks=1")
	if j.Partition != "" {
		opts = append(opts, "--partition="+j.Partition)
	}
	if j.Account != "" {
		opts = append(opts, "--account="+j.Account)
	}
	if j.QOS != "" {
		opts = append(opts, "--qos="+j.QOS)
	}
	if j.TimeLimit > 0 {
		opts = append(opts, "--time="+strconv.Itoa(int((j.TimeLimit+time.Minute-1)/time.Minute)))
	}
	if j.CPUs > 0 {
		opts = append(opts, "--cpus-per-task="+strconv.Itoa(j.CPUs))
	}
	if j.Mem != "" {
		opts = append(opts, "--mem="+j.Mem)
	}
	if j.GPUs > 0 {
		opts = append(opts, "--gres=gpu:"+strconv.Itoa(j.GPUs))
	}
	return append(opts, j.Extra...)
}

// writeCommand writes the script's body: the exported environment, the argv quoted word by
// word with the GPUs Slurm gave in place of GPUIDsMarker, and the wait that passes
// SIGTERM on and leaves the exit code in ExitPath(j).
func writeCommand(b *strings.Builder, j Job) {
	b.WriteString("set -u\n")
	for _, kv := range j.Env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(b, "export %s=%s\n", k, quote(v))
	}
	// The GPUs Slurm gave: SLURM_JOB_GPUS (gres) or CUDA_VISIBLE_DEVICES, as a JSON list.
	b.WriteString("gpus=${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}\n")
	b.WriteString("gpu_ids=\"[${gpus}]\"\n")
	b.WriteString("args=(")
	for i, a := range j.Argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quote(a))
	}
	b.WriteString(")\n")
	fmt.Fprintf(b, "args=(\"${args[@]//%s/$gpu_ids}\")\n", GPUIDsMarker)
	b.WriteString("\"${args[@]}\" &\nchild=$!\n")
	// scancel and a time limit send SIGTERM to the batch shell: pass it on and wait.
	b.WriteString("trap 'kill -TERM \"$child\" 2>/dev/null' TERM INT\n")
	b.WriteString("wait \"$child\"; rc=$?\n")
	b.WriteString("while kill -0 \"$child\" 2>/dev/null; do wait \"$child\"; rc=$?; done\n")
	fmt.Fprintf(b, "printf '%%s\\n' \"$rc\" > %s.tmp && mv -f %s.tmp %s\n", quote(ExitPath(j)), quote(ExitPath(j)), quote(ExitPath(j)))
	b.WriteString("exit \"$rc\"\n")
}

var (
	envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	optRE    = regexp.MustCompile(`^[A-Za-z0-9_.,:-]+$`)
)

// quote single-quotes s for bash: the one form in which nothing inside is interpreted.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Submit writes j's batch script into j.Dir and submits it, returning Slurm's job id.
func (c *Client) Submit(ctx context.Context, j Job) (string, error) {
	script, err := Script(j)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(j.Dir, 0o755); err != nil {
		return "", fmt.Errorf("slurm job dir: %w", err)
	}
	_ = os.Remove(ExitPath(j))
	path := ScriptPath(j)
	// j.Dir is a run dir a trainer writes in: no link planted there is written through.
	if err := disk.WriteFile(path, []byte(script), 0o700); err != nil {
		return "", fmt.Errorf("writing batch script: %w", err)
	}
	out, err := c.run(ctx, "sbatch", "--parsable", path)
	if err != nil {
		return "", err
	}
	// --parsable prints "id" or "id;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", fmt.Errorf("sbatch answered %q, not a job id", strings.TrimSpace(out))
	}
	return id, nil
}

// Status reports each of ids: squeue while Slurm keeps the job (pending, running, or finished
// within MinJobAge), sacct's completion records after, Unknown when neither has it. exitFiles,
// when given, maps an id to its job's exit-code file, the first source of a finished job's code.
func (c *Client) Status(ctx context.Context, ids []string, exitFiles map[string]string) (map[string]Status, error) {
	out := make(map[string]Status, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	list := strings.Join(ids, ",")
	q, err := c.run(ctx, "squeue", "-t", "all", "-h", "-j", list, "-o", "%i|%T|%r|%N")
	if err != nil && !strings.Contains(err.Error(), "Invalid job id") {
		return nil, err
	}
	// squeue refuses a list in which it knows no job at all; sacct is asked below.
	for _, f := range fields(q, 4) {
		st := Status{ID: f[0], State: f[1], Reason: f[2], Node: f[3], ExitCode: -1}
		if st.Reason == "None" {
			st.Reason = ""
		}
		out[st.ID] = st
	}
	var missing []string
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		// sacct -c reads the job completion log; without one configured it says so on stderr.
		a, err := c.run(ctx, "sacct", "-c", "-n", "-P", "-j", strings.Join(missing, ","), "-o", "jobid,state,exitcode,nodelist")
		if err == nil {
			for _, f := range fields(a, 4) {
				if _, seen := out[f[0]]; seen || !slices.Contains(missing, f[0]) {
					continue
				}
				st := Status{ID: f[0], State: strings.Fields(f[1] + " ")[0], Node: f[3]}
				st.ExitCode, st.Signal = ExitField(f[2])
				out[st.ID] = st
			}
		}
	}
	for _, id := range ids {
		st, ok := out[id]
		if !ok {
			st = Status{ID: id, State: Unknown, ExitCode: -1}
		}
		if st.Finished() {
			if n, ok := c.readExit(exitFiles[id]); ok {
				st.ExitCode, st.Signal = n, 0 // the script ran to its end: its rc says it all
			}
		}
		out[id] = st
	}
	return out, nil
}

// ExitField reads sacct's exitcode field, "code:signal" ("0:9" for a script SIGKILL
// ended): the code (-1 when unreadable) and the signal (0 for none).
func ExitField(f string) (code, signal int) {
	c, sig, ok := strings.Cut(f, ":")
	code = -1
	if n, err := strconv.Atoi(c); ok && err == nil {
		code = n
	}
	if n, err := strconv.Atoi(sig); ok && err == nil && n > 0 {
		signal = n
	}
	return code, signal
}

func (c *Client) readExit(path string) (int, bool) {
	if path == "" {
		return 0, false
	}
	read := c.ReadExit
	if read == nil {
		read = os.ReadFile
	}
	b, err := read(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return n, err == nil
}

// Active lists the ids of this user's jobs that have not ended and run j's batch script
// (same name, same script path): what a tunebot killed between sbatch and recording the
// job id leaves behind.
func (c *Client) Active(ctx context.Context, j Job) ([]string, error) {
	out, err := c.run(ctx, "squeue", "-h", "--me", "-n", j.Name, "-o", "%i|%T|%o")
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, f := range fields(out, 3) {
		st := Status{State: f[1]}
		if f[2] == ScriptPath(j) && !st.Finished() {
			ids = append(ids, f[0])
		}
	}
	return ids, nil
}

// Cancel ends the jobs (pending or running). Jobs that already ended are not an error.
func (c *Client) Cancel(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := c.run(ctx, "scancel", ids...)
	return err
}

// Wait polls the job every poll until it finished (or ctx ends), calling seen on each change
// of state or reason, and returns its last status.
func (c *Client) Wait(ctx context.Context, id, exitFile string, poll time.Duration, seen func(Status)) (Status, error) {
	var last Status
	for {
		all, err := c.Status(ctx, []string{id}, map[string]string{id: exitFile})
		if err != nil {
			return last, err
		}
		st := all[id]
		if seen != nil && (st.State != last.State || st.Reason != last.Reason) {
			seen(st)
		}
		last = st
		if st.Finished() {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// Partition is one line of sinfo: a partition, whether it is up, and its generic resources.
type Partition struct {
	Name    string
	Default bool
	Up      bool
	Gres    string // e.g. "gpu:2" or "gpu:a100:8(S:0-1)"; "(null)" when none
}

// Partitions lists the cluster's partitions (sinfo), for doctor's checks.
func (c *Client) Partitions(ctx context.Context) ([]Partition, error) {
	out, err := c.run(ctx, "sinfo", "-h", "-o", "%P|%a|%G")
	if err != nil {
		return nil, err
	}
	var ps []Partition
	for _, f := range fields(out, 3) {
		p := Partition{Name: strings.TrimSuffix(f[0], "*"), Default: strings.HasSuffix(f[0], "*"), Up: f[1] == "up", Gres: f[2]}
		ps = append(ps, p)
	}
	return ps, nil
}

// HasGPUs reports whether a gres string offers GPUs.
func HasGPUs(gres string) bool {
	for _, g := range strings.Split(gres, ",") {
		if strings.HasPrefix(strings.TrimSpace(g), "gpu") {
			return true
		}
	}
	return false
}

// ErrNotInstalled is returned when a Slurm command is not on PATH.
var ErrNotInstalled = errors.New("slurm command not found")

func (c *Client) run(ctx context.Context, name string, args ...string) (string, error) {
	if _, err := exec.LookPath(name); err != nil {
		return "", fmt.Errorf("%s: %w", name, ErrNotInstalled)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	if c.Env != nil {
		cmd.Env = c.Env
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("%s: %s", name, msg)
	}
	return stdout.String(), nil
}

// fields splits '|'-separated lines into at least n fields each, skipping blank lines.
func fields(out string, n int) [][]string {
	var rows [][]string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.SplitN(line, "|", n)
		for len(f) < n {
			f = append(f, "")
		}
		rows = append(rows, f)
	}
	return rows
}
