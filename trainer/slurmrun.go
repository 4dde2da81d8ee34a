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
	"syscall"
	"time"

	"tunebot/private"
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
	if err := slurmStartable(ctx, s); err != nil {
		return jobOutcome{}, err
	}
	cfg := Slurm{}
	if r.t.Slurm != nil {
		cfg = *r.t.Slurm
	}
	w := &slurmWatch{r: r, s: s, client: r.slurmClient(), poll: cmp.Or(cfg.Poll, DefaultSlurmPoll)}
	logPath := filepath.Join(s.dir, s.log)
	j, err := r.slurmJob(s, cfg, logPath)
	if err != nil {
		return jobOutcome{}, err
	}
	w.exitFile = slurm.ExitPath(j)
	if w.logf, err = private.Append(logPath, 0o644); err != nil {
		return jobOutcome{}, fmt.Errorf("opening %s: %w", s.log, err)
	}
	defer w.logf.Close()
	if err := w.submitOrAttach(ctx, j); err != nil {
		return jobOutcome{}, err
	}
	w.announce()
	st, err := w.follow(ctx)
	if err != nil {
		return jobOutcome{}, err
	}
	return w.ended(ctx, st), nil
}

// slurmStartable refuses a job that cannot start: only a Slurm job outlives tunebot, so a
// local process is never re-attached, and a new job is not submitted once its context ended
// (a job being re-attached is awaited whatever the context: leaving it is follow's to say).
func slurmStartable(ctx context.Context, s jobSpec) error {
	if s.attach != nil && !s.attach.Remote() {
		return fmt.Errorf("%s job: cannot attach to a local process (pid %d); only a Slurm job is re-attached", s.kind, s.attach.PID)
	}
	if s.attach == nil {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s job cancelled: %w", s.kind, err)
		}
	}
	return nil
}

// slurmWatch is one Slurm job being followed by runSlurm: its id once submitted, the
// process record the hooks see, and the last answer Slurm gave about it.
type slurmWatch struct {
	r        *Runner
	s        jobSpec
	client   *slurm.Client
	poll     time.Duration
	logf     *os.File
	exitFile string

	id      string
	started time.Time
	proc    session.Proc
	last    slurm.Status
	failing string // the last error of squeue/sacct, said once
	lastErr error
}

// submitOrAttach submits j, first ending any unrecorded job of its script, or takes the
// id of the job s.attach names.
func (w *slurmWatch) submitOrAttach(ctx context.Context, j slurm.Job) error {
	s := w.s
	if s.attach != nil {
		w.id, w.started = s.attach.SlurmJob, s.attach.Started
		fmt.Fprintf(w.logf, "=== tunebot: %s job re-attached %s to Slurm job %s\n", s.kind, time.Now().Format(time.RFC3339), w.id)
		s.logger.Info("re-attached to Slurm job", "slurm_job", w.id)
		return nil
	}
	fmt.Fprint(w.logf, jobStartedLine(s.kind, "submitted to Slurm", s.argv, secret.Process()))
	// sbatch is not cut short by the job's context: killed mid-way, it might leave a job
	// Slurm accepted that no record names. A cancel that came meanwhile is seen in follow.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), submitTimeout)
	w.r.endStale(sctx, s, w.client, j, w.poll, w.logf)
	id, err := w.client.Submit(sctx, j)
	cancel()
	if err != nil {
		fmt.Fprintf(w.logf, "=== tunebot: could not submit: %v\n", err)
		return &session.JobError{Job: s.kind, Err: err, Reason: "could not submit to Slurm: " + err.Error()}
	}
	w.id, w.started = id, time.Now()
	fmt.Fprintf(w.logf, "=== tunebot: Slurm job %s\n", id)
	s.logger.Info("job submitted to Slurm", "slurm_job", id, "script", slurm.ScriptPath(j))
	return nil
}

// announce sets up the job's process record; a new job is told to the Started hook, a
// re-attached one keeps the record it had.
func (w *slurmWatch) announce() {
	w.proc = session.Proc{SlurmJob: w.id, Job: w.s.kind, Started: w.started}
	if w.s.attach != nil {
		w.proc = *w.s.attach
		w.proc.Job = cmp.Or(w.proc.Job, w.s.kind)
	} else if w.s.hooks.Started != nil {
		w.s.hooks.Started(w.proc)
	}
}

// follow asks Slurm about the job every poll, and reads progress every pollEvery, until it
// has finished. It returns an error when the context ended (leaveSlurm) or when Slurm's
// commands are not installed.
func (w *slurmWatch) follow(ctx context.Context) (slurm.Status, error) {
	statusTick := time.NewTicker(w.poll)
	defer statusTick.Stop()
	progressTick := time.NewTicker(w.r.pollEvery)
	defer progressTick.Stop()
	leave := func() (slurm.Status, error) {
		_, err := w.r.leaveSlurm(ctx, w.s, w.client, w.id, w.exitFile, w.poll, w.logf)
		return slurm.Status{}, err
	}
	st, ok := w.status(ctx)
	for !ok || !st.Finished() {
		if ctx.Err() != nil {
			return leave()
		}
		if errors.Is(w.lastErr, slurm.ErrNotInstalled) {
			return st, &session.JobError{Job: w.s.kind, Err: w.lastErr, Reason: "cannot follow Slurm job " + w.id + ": " + w.lastErr.Error()}
		}
		select {
		case <-ctx.Done():
			return leave()
		case <-progressTick.C:
			if w.s.poll != nil {
				w.s.poll()
			}
		case <-statusTick.C:
			st, ok = w.status(ctx)
		}
	}
	return st, nil
}

// status asks Slurm about the job once; false when it could not say (the error is warned
// about once until an answer comes). A change of state, reason or node is logged and told
// to the Status hook, unless Slurm does not know the job.
func (w *slurmWatch) status(c context.Context) (slurm.Status, bool) {
	s, id := w.s, w.id
	all, err := w.client.Status(c, []string{id}, map[string]string{id: w.exitFile})
	w.lastErr = err
	if err != nil {
		if msg := err.Error(); msg != w.failing && c.Err() == nil {
			w.failing = msg
			s.logger.Warn("asking Slurm about the job; trying again", "slurm_job", id, "err", err)
		}
		return w.last, false
	}
	w.failing = ""
	st := all[id]
	if st.State != w.last.State || st.Reason != w.last.Reason || st.Node != w.last.Node {
		w.proc.JobState, w.proc.JobReason, w.proc.Node = st.State, st.Reason, st.Node
		s.logger.Info("Slurm job state", "slurm_job", id, "state", st.State, "reason", st.Reason, "node", st.Node)
		if s.hooks.Status != nil && st.State != slurm.Unknown {
			s.hooks.Status(w.proc)
		}
	}
	w.last = st
	return st, true
}

// ended is the outcome of a job Slurm says has finished, once its exit file had time to
// show here (slurmFailure says what counts as failed).
func (w *slurmWatch) ended(ctx context.Context, st slurm.Status) jobOutcome {
	s := w.s
	st = w.r.awaitExitFile(ctx, st, w.exitFile, s.logger)
	elapsed := time.Since(w.started).Round(time.Millisecond)
	failed := slurmFailure(w.id, st)
	fmt.Fprintf(w.logf, "=== tunebot: %s job ended after %s: Slurm job %s %s%s\n", s.kind, elapsed, w.id, st.State, exitNote(st.ExitCode))
	s.logger.Info("Slurm job ended", "slurm_job", w.id, "state", st.State, "exit", st.ExitCode, "elapsed", elapsed)
	return jobOutcome{failed: failed}
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

func exitNote(code int) string {
	if code < 0 {
		return ""
	}
	return ", exit status " + strconv.Itoa(code)
}
