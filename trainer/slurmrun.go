package trainer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tunebot/secret"
	"tunebot/session"
	"tunebot/trainer/slurm"
)

// Slurm is the Runner's Slurm backend (executor backend slurm, docs/design.md §4): every
// job is one sbatch submission of a batch script generated in its run dir, with the same
// argv templates as a local job. The run dirs must be on a filesystem the compute nodes
// share (the data_dir): the job writes its log, events, checkpoints and exit code there.
type Slurm struct {
	// Client runs the Slurm commands; nil means the ones on PATH, run with tunebot's
	// environment less its secrets.
	Client *slurm.Client

	Partition, Account, QOS string        // "" : the cluster's defaults
	TimeLimit               time.Duration // --time; 0: the partition's default
	CPUs                    int           // --cpus-per-task; 0: Slurm's default
	Mem                     string        // --mem, e.g. "32G"; "": Slurm's default
	GPUs                    int           // --gres=gpu:N for every job; 0: no GPU asked for
	Extra                   []string      // more sbatch options, each one word starting with --

	// Poll is how often squeue is asked about a running job (0 = 5 s).
	Poll time.Duration
}

// DefaultSlurmPoll is how often a Slurm job's state is read when Slurm.Poll is 0.
const DefaultSlurmPoll = 5 * time.Second

// reservedSbatch are the options the Runner sets itself: one in sbatch_args would fight it.
var reservedSbatch = []string{"--job-name", "--output", "--error", "--chdir", "--open-mode",
	"--export", "--wrap", "--parsable", "--ntasks"}

// CheckSbatchArgs names every sbatch argument that is not one word starting with "--", or
// that sets what the Runner sets itself.
func CheckSbatchArgs(args []string) []string {
	var probs []string
	for i, a := range args {
		opt, _, _ := strings.Cut(a, "=")
		switch {
		case !strings.HasPrefix(a, "--") || len(a) < 3:
			probs = append(probs, fmt.Sprintf("sbatch_args[%d]: %q is not an option: want one word like --constraint=a100", i, a))
		case strings.ContainsAny(a, " \t\n\r"):
			probs = append(probs, fmt.Sprintf("sbatch_args[%d]: %q holds whitespace: give each option as its own word, --name=value", i, a))
		case slices.Contains(reservedSbatch, opt):
			probs = append(probs, fmt.Sprintf("sbatch_args[%d]: %s is set by tunebot for every job and cannot be changed", i, opt))
		}
	}
	return probs
}

// check names every problem of the backend's settings.
func (s *Slurm) check() []string {
	var probs []string
	if s.TimeLimit < 0 || s.CPUs < 0 || s.GPUs < 0 || s.Poll < 0 {
		probs = append(probs, "slurm: time_limit, cpus, gpus and poll must not be negative")
	}
	probs = append(probs, CheckSbatchArgs(s.Extra)...)
	_, err := slurm.Script(slurm.Job{Name: "check", Dir: "/", Argv: []string{"true"},
		Partition: s.Partition, Account: s.Account, QOS: s.QOS, Mem: s.Mem})
	if err != nil {
		probs = append(probs, err.Error())
	}
	return probs
}

// slurmClient is the client of the configured Slurm backend. Whichever client it is, a
// job's exit file (which the job wrote) is read through the bounded reader.
func (r *Runner) slurmClient() *slurm.Client {
	c := slurm.Client{Env: secret.Strip(os.Environ())}
	if r.t.Slurm != nil && r.t.Slurm.Client != nil {
		c = *r.t.Slurm.Client
	}
	if c.ReadExit == nil {
		c.ReadExit = readExitFile
	}
	return &c
}

// slurmEnv is the batch script's environment: what a local job gets (the parent's without
// secrets, plus the configured extras, plus the contract's fixed variables), less what
// belongs to the node: CUDA_VISIBLE_DEVICES is Slurm's to set, and SLURM_* of a tunebot
// that itself runs inside an allocation would confuse the job's own.
func slurmEnv(parent, extra []string) []string {
	var out []string
	for _, kv := range childEnv(parent, extra, nil) {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CUDA_VISIBLE_DEVICES" || strings.HasPrefix(k, "SLURM_") || !envKeyRE.MatchString(k) ||
			k == "PWD" || k == "OLDPWD" || k == "SHLVL" || k == "_" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// slurmJob is the Slurm job that runs s with cfg, its output going to logPath. A job to
// submit (not one being re-attached) that would carry one of tunebot's secrets, in its
// command line, environment, batch script or sbatch options, is refused (secretInJob).
func (r *Runner) slurmJob(s jobSpec, cfg Slurm, logPath string) (slurm.Job, error) {
	j := slurm.Job{
		Name: s.name, Dir: s.dir, Workdir: r.t.Workdir, Output: logPath, Env: slurmEnv(os.Environ(), r.t.Env),
		Argv: s.argv, Partition: cfg.Partition, Account: cfg.Account, QOS: cfg.QOS, TimeLimit: cfg.TimeLimit,
		CPUs: cfg.CPUs, Mem: cfg.Mem, GPUs: cfg.GPUs,
		// The job's environment is the script's exports alone, never sbatch's own (which
		// holds tunebot's secrets).
		Extra: slices.Concat([]string{"--export=NONE"}, cfg.Extra),
	}
	// The job starts where a local one would: the trainer's workdir, else tunebot's own.
	if abs, err := filepath.Abs(cmp.Or(j.Workdir, ".")); err == nil {
		j.Workdir = abs
	}
	if s.attach == nil {
		if err := refuseSecret(s.kind, secretInJob(j.Argv, j.Env, slurmScriptText(j), j.Extra, secret.ProcessKnown())); err != nil {
			return j, err
		}
	}
	return j, nil
}

// slurmRemote is the remote loop's engine for s on Slurm: s's batch script with the
// backend's settings, its output appended to s's log, and the job s.attach names when it
// is re-attached.
func (r *Runner) slurmRemote(s jobSpec) (remote, error) {
	cfg := Slurm{}
	if r.t.Slurm != nil {
		cfg = *r.t.Slurm
	}
	poll := cmp.Or(cfg.Poll, DefaultSlurmPoll)
	j, err := r.slurmJob(s, cfg, filepath.Join(s.dir, s.log))
	if err != nil {
		return remote{}, err
	}
	rm := remote{engine: "Slurm", logKey: "slurm_job", poll: poll,
		job:    &slurmRemoteJob{client: r.slurmClient(), job: j, exitFile: slurm.ExitPath(j), poll: poll, logger: s.logger},
		record: func(p *session.Proc, id string) { p.SlurmJob = id }}
	if s.attach != nil {
		rm.attached = s.attach.SlurmJob
	}
	return rm, nil
}

// slurmRemoteJob is one Slurm job as the remote loop drives it: sbatch of its batch
// script, squeue and sacct, scancel, and its exit file.
type slurmRemoteJob struct {
	client   *slurm.Client
	job      slurm.Job
	exitFile string
	poll     time.Duration
	logger   *slog.Logger
	last     slurm.Status // the last answer, for ended
}

func (c *slurmRemoteJob) submit(ctx context.Context, logf io.Writer) (string, error) {
	c.endStale(ctx, logf)
	id, err := c.client.Submit(ctx, c.job)
	if err == nil {
		c.logger.Info("batch script", "script", slurm.ScriptPath(c.job))
	}
	return id, err
}

func (c *slurmRemoteJob) status(ctx context.Context, id string) (remoteStatus, error) {
	all, err := c.client.Status(ctx, []string{id}, map[string]string{id: c.exitFile})
	if err != nil {
		return remoteStatus{}, err
	}
	st := all[id]
	c.last = st
	return remoteStatus{State: st.State, Reason: st.Reason, Node: st.Node, Finished: st.Finished()}, nil
}

func (c *slurmRemoteJob) stop(ctx context.Context, id string) error {
	return c.client.Cancel(ctx, id)
}

// ended is how a job Slurm says has finished ended, once its exit file had time to show
// here (slurmFailure says what counts as failed).
func (c *slurmRemoteJob) ended(ctx context.Context, id string, _ remoteStatus, _ io.Writer) (string, string) {
	st := awaitExitFile(ctx, c.last, c.exitFile, c.logger)
	return slurmFailure(id, st), st.State + exitNote(st.ExitCode)
}

// giveUp stops following only when Slurm's commands are not installed; any other failure
// of squeue or sacct (a controller restarting) is tried again, however long it lasts.
func (c *slurmRemoteJob) giveUp(err error, _ time.Duration) error {
	if errors.Is(err, slurm.ErrNotInstalled) {
		return err
	}
	return nil
}

// endStale ends jobs of the job's very batch script that are still queued or running
// although no record names them: a tunebot killed between sbatch and recording the id left
// them. The engine has discarded their run directory, so their results cannot be trusted,
// and two jobs of one trial must never run at once; the new job replaces them.
func (c *slurmRemoteJob) endStale(ctx context.Context, logf io.Writer) {
	j := c.job
	stale, err := c.client.Active(ctx, j)
	if err != nil {
		c.logger.Warn("looking for an unrecorded Slurm job of this name", "name", j.Name, "err", err)
		return
	}
	for _, id := range stale {
		fmt.Fprintf(logf, "=== tunebot: Slurm job %s runs this job's script but no record names it (an earlier tunebot stopped right after submitting it): cancelled, a new job replaces it\n", id)
		c.logger.Warn("cancelling an unrecorded Slurm job of this trial", "slurm_job", id, "name", j.Name)
		if err := c.client.Cancel(ctx, id); err != nil {
			c.logger.Error("scancel", "slurm_job", id, "err", err)
			continue
		}
		if _, err := c.client.Wait(ctx, id, "", min(c.poll, time.Second), nil); err != nil {
			c.logger.Error("waiting for the unrecorded Slurm job to end", "slurm_job", id, "err", err)
		}
	}
}

// exitFileWait bounds the wait for the exit file of a job Slurm says ran to its end: on a
// shared filesystem (NFS) a file the node wrote can take a while to show on this machine,
// and with it the job's checkpoints.
const exitFileWait = 30 * time.Second

// awaitExitFile gives a finished job's exit file, and so its run dir, time to appear here
// when Slurm says the command ran to its end (COMPLETED or FAILED) but the file is not
// seen yet; the status is returned with the file's exit code when it came.
func awaitExitFile(ctx context.Context, st slurm.Status, exitFile string, logger *slog.Logger) slurm.Status {
	if st.State != slurm.Completed && st.State != slurm.Failed {
		return st
	}
	if _, err := os.Stat(exitFile); err == nil {
		return st
	}
	logger.Info("waiting for the job's exit file to show on this machine", "file", exitFile, "limit", exitFileWait)
	deadline := time.Now().Add(exitFileWait)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return st
		case <-time.After(time.Second):
		}
		if b, err := readExitFile(exitFile); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				st.ExitCode = n
			}
			return st
		}
	}
	logger.Warn("no exit file from the job; judging it by Slurm's state alone", "file", exitFile, "state", st.State)
	return st
}

// readExitFile reads a job's exit file through OpenBounded: an exit code takes a few bytes.
func readExitFile(path string) ([]byte, error) {
	f, err := OpenBounded(filepath.Dir(path), filepath.Base(path), 64, "the job's exit file")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadAll()
}

// slurmFailure says why a finished job failed, "" when it succeeded: when Slurm did not end
// it, the signal that killed its batch script (sacct's 0:9) or its command's exit code,
// else the state Slurm ended it in (TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, CANCELLED by someone
// else, ...).
func slurmFailure(id string, st slurm.Status) string {
	switch st.State {
	case slurm.Completed, slurm.Failed, slurm.Unknown:
		switch {
		case st.Signal > 0:
			return killedBy(syscall.Signal(st.Signal), slurmWhere(id, st))
		case st.ExitCode == 0, st.ExitCode < 0 && st.State == slurm.Completed:
			return ""
		case st.ExitCode > 0:
			return exitCodeReason(st.ExitCode, slurmWhere(id, st))
		case st.State == slurm.Unknown:
			return "Slurm no longer knows job " + id + " (and it left no exit code in the run dir)"
		}
		return fmt.Sprintf("Slurm job %s %s without an exit code", id, st.State)
	case slurm.OutOfMem:
		return fmt.Sprintf("Slurm job %s ended %s%s: it used more memory than it asked for (executor.slurm.mem, sbatch --mem)", id, st.State, exitNote(st.ExitCode))
	}
	return fmt.Sprintf("Slurm job %s ended %s%s", id, st.State, exitNote(st.ExitCode))
}

// slurmWhere names a finished job for its exit status: "Slurm job 12 FAILED on node1"
// (the node is where dmesg tells of an out-of-memory kill).
func slurmWhere(id string, st slurm.Status) string {
	if st.Node == "" {
		return "Slurm job " + id + " " + st.State
	}
	return "Slurm job " + id + " " + st.State + " on " + st.Node
}
