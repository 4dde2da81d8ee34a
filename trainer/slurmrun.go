package trainer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// submitTimeout bounds one sbatch; cancelWait bounds the wait for a cancelled job to end.
const (
	submitTimeout = 2 * time.Minute
	cancelWait    = 2 * time.Minute
)

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

func (r *Runner) slurmClient() *slurm.Client {
	if r.t.Slurm != nil && r.t.Slurm.Client != nil {
		return r.t.Slurm.Client
	}
	return &slurm.Client{Env: secret.Strip(os.Environ()), ReadExit: readExitFile}
}

// jobNameRE is what may stay in a Slurm job name; anything else becomes '-'.
var jobNameRE = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// slurmJobName names a job by what it is, the same on every start of tunebot, so a job
// re-attached after a restart finds its batch script and exit file: tunebot-<session>-
// t<NNN>-r<R>-<train|evaluation|evaluation-final>.
func slurmJobName(sessionID string, ref session.TrialRef, what string) string {
	sid := sessionID
	if len(sid) > 8 {
		sid = sid[:8]
	}
	name := fmt.Sprintf("tunebot-%s-t%03d-r%d-%s", sid, ref.Number, ref.Rung, what)
	return jobNameRE.ReplaceAllString(name, "-")
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

// runSlurm runs one job on Slurm, or awaits the one s.attach names. It keeps the local
// path's promises: the job's output goes to the same log, progress is read from the run
// dir while it runs, and the outcome is a failure reason or nothing. A context ended with
// cause session.ErrJobCancelled scancels the job; any other end leaves it running (tunebot
// is stopping, and the next start re-attaches it) and returns the context's error.
func (r *Runner) runSlurm(ctx context.Context, s jobSpec) (jobOutcome, error) {
	if s.attach != nil && !s.attach.Remote() {
		return jobOutcome{}, fmt.Errorf("%s job: cannot attach to a local process (pid %d); only a Slurm job is re-attached", s.kind, s.attach.PID)
	}
	if s.attach == nil {
		if err := ctx.Err(); err != nil {
			return jobOutcome{}, fmt.Errorf("%s job cancelled: %w", s.kind, err)
		}
	}
	cfg := Slurm{}
	if r.t.Slurm != nil {
		cfg = *r.t.Slurm
	}
	client := r.slurmClient()
	poll := cmp.Or(cfg.Poll, DefaultSlurmPoll)
	logPath := filepath.Join(s.dir, s.log)
	j, err := r.slurmJob(s, cfg, logPath)
	if err != nil {
		return jobOutcome{}, err
	}
	logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return jobOutcome{}, fmt.Errorf("opening %s: %w", s.log, err)
	}
	defer logf.Close()

	var id string
	var started time.Time
	if s.attach != nil {
		id, started = s.attach.SlurmJob, s.attach.Started
		fmt.Fprintf(logf, "=== tunebot: %s job re-attached %s to Slurm job %s\n", s.kind, time.Now().Format(time.RFC3339), id)
		s.logger.Info("re-attached to Slurm job", "slurm_job", id)
	} else {
		fmt.Fprint(logf, jobStartedLine(s.kind, "submitted to Slurm", s.argv, secret.Process()))
		// sbatch is not cut short by the job's context: killed mid-way, it might leave a job
		// Slurm accepted that no record names. A cancel that came meanwhile is seen below.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), submitTimeout)
		r.endStale(sctx, s, client, j, poll, logf)
		id, err = client.Submit(sctx, j)
		cancel()
		if err != nil {
			fmt.Fprintf(logf, "=== tunebot: could not submit: %v\n", err)
			return jobOutcome{}, &session.JobError{Job: s.kind, Err: err, Reason: "could not submit to Slurm: " + err.Error()}
		}
		started = time.Now()
		fmt.Fprintf(logf, "=== tunebot: Slurm job %s\n", id)
		s.logger.Info("job submitted to Slurm", "slurm_job", id, "script", slurm.ScriptPath(j))
	}
	proc := session.Proc{SlurmJob: id, Job: s.kind, Started: started}
	if s.attach != nil {
		proc = *s.attach
		proc.Job = cmp.Or(proc.Job, s.kind)
	} else if s.hooks.Started != nil {
		s.hooks.Started(proc)
	}

	exitFile := slurm.ExitPath(j)
	var last slurm.Status
	failing := "" // the last error of squeue/sacct, said once
	var lastErr error
	status := func(c context.Context) (slurm.Status, bool) {
		all, err := client.Status(c, []string{id}, map[string]string{id: exitFile})
		lastErr = err
		if err != nil {
			if msg := err.Error(); msg != failing && c.Err() == nil {
				failing = msg
				s.logger.Warn("asking Slurm about the job; trying again", "slurm_job", id, "err", err)
			}
			return last, false
		}
		failing = ""
		st := all[id]
		if st.State != last.State || st.Reason != last.Reason || st.Node != last.Node {
			proc.SlurmState, proc.SlurmReason, proc.Node = st.State, st.Reason, st.Node
			s.logger.Info("Slurm job state", "slurm_job", id, "state", st.State, "reason", st.Reason, "node", st.Node)
			if s.hooks.Status != nil && st.State != slurm.Unknown {
				s.hooks.Status(proc)
			}
		}
		last = st
		return st, true
	}

	statusTick := time.NewTicker(poll)
	defer statusTick.Stop()
	progressTick := time.NewTicker(r.pollEvery)
	defer progressTick.Stop()
	st, ok := status(ctx)
	for !ok || !st.Finished() {
		if ctx.Err() != nil {
			return r.leaveSlurm(ctx, s, client, id, exitFile, poll, logf)
		}
		if errors.Is(lastErr, slurm.ErrNotInstalled) {
			return jobOutcome{}, &session.JobError{Job: s.kind, Err: lastErr, Reason: "cannot follow Slurm job " + id + ": " + lastErr.Error()}
		}
		select {
		case <-ctx.Done():
			return r.leaveSlurm(ctx, s, client, id, exitFile, poll, logf)
		case <-progressTick.C:
			if s.poll != nil {
				s.poll()
			}
		case <-statusTick.C:
			st, ok = status(ctx)
		}
	}

	st = r.awaitExitFile(ctx, st, exitFile, s.logger)
	elapsed := time.Since(started).Round(time.Millisecond)
	failed := slurmFailure(id, st)
	fmt.Fprintf(logf, "=== tunebot: %s job ended after %s: Slurm job %s %s%s\n", s.kind, elapsed, id, st.State, exitNote(st.ExitCode))
	s.logger.Info("Slurm job ended", "slurm_job", id, "state", st.State, "exit", st.ExitCode, "elapsed", elapsed)
	return jobOutcome{failed: failed}, nil
}

// endStale ends jobs of j's very batch script that are still queued or running although no
// record names them: a tunebot killed between sbatch and recording the id left them. The
// engine has discarded their run directory, so their results cannot be trusted, and two
// jobs of one trial must never run at once; the new job replaces them.
func (r *Runner) endStale(ctx context.Context, s jobSpec, client *slurm.Client, j slurm.Job, poll time.Duration, logf *os.File) {
	stale, err := client.Active(ctx, j)
	if err != nil {
		s.logger.Warn("looking for an unrecorded Slurm job of this name", "name", j.Name, "err", err)
		return
	}
	for _, id := range stale {
		fmt.Fprintf(logf, "=== tunebot: Slurm job %s runs this job's script but no record names it (an earlier tunebot stopped right after submitting it): cancelled, a new job replaces it\n", id)
		s.logger.Warn("cancelling an unrecorded Slurm job of this trial", "slurm_job", id, "name", j.Name)
		if err := client.Cancel(ctx, id); err != nil {
			s.logger.Error("scancel", "slurm_job", id, "err", err)
			continue
		}
		if _, err := client.Wait(ctx, id, "", min(poll, time.Second), nil); err != nil {
			s.logger.Error("waiting for the unrecorded Slurm job to end", "slurm_job", id, "err", err)
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
func (r *Runner) awaitExitFile(ctx context.Context, st slurm.Status, exitFile string, logger *slog.Logger) slurm.Status {
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

// leaveSlurm handles the end of the job's context: scancel when a person cancelled the
// session (and wait, bounded, until Slurm says the job ended), else leave the job running.
func (r *Runner) leaveSlurm(ctx context.Context, s jobSpec, client *slurm.Client, id, exitFile string, poll time.Duration, logf *os.File) (jobOutcome, error) {
	if !errors.Is(context.Cause(ctx), session.ErrJobCancelled) {
		fmt.Fprintf(logf, "=== tunebot: stopped following Slurm job %s (tunebot is stopping); it keeps running and is re-attached on the next start\n", id)
		s.logger.Info("leaving Slurm job running", "slurm_job", id)
		return jobOutcome{}, fmt.Errorf("%s job: stopped following Slurm job %s, which keeps running: %w", s.kind, id, ctx.Err())
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	defer cancel()
	if err := client.Cancel(cctx, id); err != nil {
		s.logger.Error("scancel", "slurm_job", id, "err", err)
	}
	st, err := client.Wait(cctx, id, exitFile, min(poll, time.Second), nil)
	if err != nil {
		s.logger.Error("waiting for the cancelled Slurm job to end", "slurm_job", id, "err", err)
	}
	fmt.Fprintf(logf, "=== tunebot: %s job cancelled: Slurm job %s %s\n", s.kind, id, st.State)
	s.logger.Info("Slurm job cancelled", "slurm_job", id, "state", st.State)
	return jobOutcome{}, fmt.Errorf("%s job cancelled: %w", s.kind, ctx.Err())
}

// slurmFailure says why a finished job failed, "" when it succeeded: its command's exit
// code when Slurm ran it to its end, else the state Slurm ended it in (TIMEOUT, NODE_FAIL,
// OUT_OF_MEMORY, CANCELLED by someone else, ...).
func slurmFailure(id string, st slurm.Status) string {
	switch st.State {
	case slurm.Completed, slurm.Failed, slurm.Unknown:
		switch {
		case st.ExitCode == 0, st.ExitCode < 0 && st.State == slurm.Completed:
			return ""
		case st.ExitCode > 0:
			return fmt.Sprintf("exit status %d (Slurm job %s %s)", st.ExitCode, id, st.State)
		case st.State == slurm.Unknown:
			return "Slurm no longer knows job " + id + " (and it left no exit code in the run dir)"
		}
		return fmt.Sprintf("Slurm job %s %s without an exit code", id, st.State)
	}
	return fmt.Sprintf("Slurm job %s ended %s%s", id, st.State, exitNote(st.ExitCode))
}

func exitNote(code int) string {
	if code < 0 {
		return ""
	}
	return ", exit status " + strconv.Itoa(code)
}
