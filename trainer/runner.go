// Package trainer runs the trainer's training and evaluation jobs as subprocesses under the
// contract of docs/design.md §4: argv templates with placeholders, one process group per job,
// timeouts, cancel that ends the whole group, a GPU lease, and the run-dir checks; or as
// jobs on a cluster, Slurm's or Ray's, through one remote-job loop (remote.go). Its
// sub-packages read TensorBoard event files (tfevents), provide the built-in sim trainer
// (sim) and talk to the clusters (slurm, ray).
package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tunebot/disk"
	"tunebot/private"
	"tunebot/secret"
	"tunebot/session"
	"tunebot/trainer/ray"
	"tunebot/trainer/slurm"
)

var _ session.Trainer = (*Runner)(nil)

// Runner runs trainer jobs from its templates. It is safe for concurrent use; jobs that
// want the same GPU wait for each other through the shared Lease.
type Runner struct {
	Layout
	t      Templates
	lease  *Lease
	logger *slog.Logger
	// pollEvery is how often a running training job's event files are read for progress.
	pollEvery time.Duration
}

// Check names every problem of the argv templates, each starting with the template's key
// (train, resume_args, evaluate, python): an empty template, an unknown {placeholder} with
// its argument and the known name it is closest to, a placeholder that has no value in
// that kind of job, and {python} with no python set. The config check and New share it.
func (t Templates) Check() []string {
	var probs []string
	probs = append(probs, checkTemplate("train", t.Train, trainNames, true)...)
	probs = append(probs, checkTemplate("resume_args", t.ResumeArgs, resumeNames, false)...)
	probs = append(probs, checkTemplate("evaluate", t.Evaluate, evalNames, true)...)
	if Uses(slices.Concat(t.Train, t.ResumeArgs, t.Evaluate), "python") && strings.TrimSpace(t.Python) == "" {
		probs = append(probs, "python: empty, but a template uses {python}")
	}
	return probs
}

// New validates the templates and returns a Runner. Every problem is named: an empty
// template, an unknown {placeholder}, or one that has no value in that kind of job. A nil
// lease gives the Runner a lease of its own (fine when it is the only Runner).
func New(t Templates, lease *Lease, logger *slog.Logger) (*Runner, error) {
	probs := t.Check()
	all := slices.Concat(t.Train, t.ResumeArgs, t.Evaluate)
	if t.JobTimeout < 0 || t.EvalTimeout < 0 || t.Grace < 0 {
		probs = append(probs, "job_timeout, eval_timeout and grace must not be negative")
	}
	for _, kv := range t.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			probs = append(probs, fmt.Sprintf("env: %q is not KEY=VALUE", kv))
		}
	}
	if t.Slurm != nil {
		probs = append(probs, t.Slurm.check()...)
	}
	if t.Ray != nil {
		probs = append(probs, t.Ray.check()...)
	}
	if t.Slurm != nil && t.Ray != nil {
		probs = append(probs, "slurm and ray: jobs run on one cluster; set one backend")
	}
	probs = append(probs, t.Events.Check()...)
	if len(probs) > 0 {
		return nil, &session.InvalidError{What: "trainer templates", Problems: probs}
	}
	if Uses(all, "tunebot") && t.Tunebot == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding the tunebot executable for {tunebot}: %w", err)
		}
		t.Tunebot = exe
	}
	if t.Grace == 0 {
		t.Grace = DefaultGrace
	}
	t.Events = t.Events.withDefaults()
	t.Train, t.ResumeArgs, t.Evaluate = slices.Clone(t.Train), slices.Clone(t.ResumeArgs), slices.Clone(t.Evaluate)
	t.Env = slices.Clone(t.Env)
	if t.Slurm != nil {
		sl := *t.Slurm
		sl.Extra = slices.Clone(sl.Extra)
		t.Slurm = &sl
	}
	if t.Ray != nil {
		b := *t.Ray
		t.Ray = &b
	}
	if lease == nil {
		lease = &Lease{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{t: t, lease: lease, logger: logger, pollEvery: time.Second}, nil
}

// Run-dir file names of the contract.
const (
	RewardConfigFile    = "reward_config.json"
	RewardSpaceFile     = "reward_space.json"
	PolicyFile          = "policy.onnx"
	EvaluationFile      = "evaluation.json"
	FinalEvaluationFile = "evaluation-final.json"
	TrainLog            = "train.log"
	EvaluateLog         = "evaluate.log"
	EvalEventsDir       = "evaluation-events"
)

// RunName is the {run_name} of a trial: <run_name>-t<NNN>-r<R>.
func RunName(base string, ref session.TrialRef) string {
	return fmt.Sprintf("%s-t%03d-r%d", base, ref.Number, ref.Rung)
}

func (r *Runner) values(s session.Settings, runDir string, ref session.TrialRef) map[string]string {
	gpus, _ := json.Marshal(s.GPUs) // []int always marshals
	if s.GPUs == nil {
		gpus = []byte("[]")
	}
	switch {
	case r.t.Slurm != nil:
		// The GPUs Slurm gives the job, filled in by its batch script on the node.
		gpus = []byte(slurm.GPUIDsMarker)
	case r.t.Ray != nil:
		// The GPUs Ray gives the job, filled in by its entrypoint on the node.
		gpus = []byte(ray.GPUIDsMarker)
	}
	return map[string]string{
		"python":        r.t.Python,
		"tunebot":       r.t.Tunebot,
		"task":          s.Task,
		"run_dir":       runDir,
		"reward_config": filepath.Join(runDir, RewardConfigFile),
		"reward_space":  filepath.Join(runDir, RewardSpaceFile),
		"seed":          strconv.FormatInt(s.Seed, 10),
		"num_envs":      strconv.Itoa(s.NumEnvs),
		"gpu_ids":       string(gpus),
		"run_name":      RunName(s.RunName, ref),
		"eval_num_envs": strconv.Itoa(s.EvalNumEnvs),
		"eval_steps":    strconv.Itoa(s.EvalSteps),
		"trial":         strconv.Itoa(ref.Number),
		"rung":          strconv.Itoa(ref.Rung),
	}
}

// Train runs one training job (fresh, or resuming job.Checkpoint) and checks what it left
// in the run dir.
//
// Progress: RSL-RL logs iteration i (0-based) at step i, so while training, progress is
// the newest step seen + 1, capped at job.Target. For the same reason RSL-RL's final
// checkpoint of a run to T iterations is model_<T-1>.pt, so a newest checkpoint of T-1 or
// more counts as complete; anything below that fails the job.
func (r *Runner) Train(ctx context.Context, job session.TrainJob, hooks session.JobHooks) (session.TrainResult, error) {
	var res session.TrainResult
	if !filepath.IsAbs(job.RunDir) {
		return res, fmt.Errorf("starting train job: run dir %q is not absolute", job.RunDir)
	}
	if job.Target < 1 || job.Iterations < 1 {
		return res, fmt.Errorf("starting train job: %d iterations to a target of %d", job.Iterations, job.Target)
	}
	if err := r.trainInputs(job); err != nil {
		return res, err
	}

	vals := r.values(job.Settings, job.RunDir, job.Trial)
	vals["iterations"] = strconv.Itoa(job.Iterations)
	vals["target_iterations"] = strconv.Itoa(job.Target)
	vals["start_iteration"] = strconv.Itoa(job.StartIter)
	vals["checkpoint"] = job.Checkpoint
	argv := expand(r.t.Train, vals)
	if job.Checkpoint != "" {
		argv = append(argv, expand(r.t.ResumeArgs, vals)...)
	}

	logger := r.logger.With("session", job.SessionID, "trial", job.Trial.Number, "rung", job.Trial.Rung, "job", "train")
	ev := newSeriesReader(job.RunDir, r.t.Events, logger)
	progress := 0
	poll := func() {
		ev.read()
		if p := min(ev.maxStep+1, int64(job.Target)); p > int64(progress) {
			progress = int(p)
			if hooks.Progress != nil {
				hooks.Progress(progress)
			}
		}
	}
	out, err := r.run(ctx, jobSpec{
		kind: "train", argv: argv, dir: job.RunDir, log: TrainLog, gpus: job.Settings.GPUs,
		timeout: r.t.JobTimeout, hooks: hooks, poll: poll, logger: logger,
		name: clusterJobName(job.SessionID, job.Trial, "train"), attach: job.Attach,
	})
	if err != nil {
		return res, err
	}
	poll()
	logPath := filepath.Join(job.RunDir, TrainLog)
	ev.reportCuts(logPath)
	if out.failed != "" {
		return res, jobFailed("train", out.failed, logPath, nil)
	}
	return trainResult(job, logPath, ev)
}

// trainResult is what a train job that exited well left in its run dir: its newest
// checkpoint, which must reach the target, its policy and the curves ev read; a job that
// left either short fails, with the end of its log at logPath.
func trainResult(job session.TrainJob, logPath string, ev *seriesReader) (session.TrainResult, error) {
	ckpt, n, found := newestCheckpoint(job.RunDir)
	switch {
	case !found:
		return session.TrainResult{}, jobFailed("train", "no model_<N>.pt checkpoint in run dir", logPath, nil)
	case n < job.Target-1:
		return session.TrainResult{}, jobFailed("train", fmt.Sprintf("newest checkpoint model_%d.pt is short of the target of %d iterations", n, job.Target), logPath, nil)
	}
	policy, ok := findPolicy(job.RunDir)
	if !ok {
		return session.TrainResult{}, jobFailed("train", "no "+PolicyFile+" in run dir", logPath, nil)
	}
	return session.TrainResult{Checkpoint: ckpt, Iteration: n, Policy: policy, Series: ev.sorted()}, nil
}

// trainInputs creates job's run dir and writes what the job reads there: its reward config
// and the reward space (writeSpace). A job being re-attached already reads its reward
// config: it is left as it is.
func (r *Runner) trainInputs(job session.TrainJob) error {
	if err := os.MkdirAll(job.RunDir, 0o755); err != nil {
		return fmt.Errorf("creating run dir: %w", err)
	}
	if job.Attach == nil {
		cfg, err := json.MarshalIndent(job.Config, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding reward config: %w", err)
		}
		if err := disk.WriteFile(filepath.Join(job.RunDir, RewardConfigFile), append(cfg, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing reward config: %w", err)
		}
	}
	return r.writeSpace(job.Space, job.Settings.Task, job.RunDir, job.Attach)
}

// evalInputs creates job's run dir, removes what an earlier evaluation left there and writes
// the reward space (writeSpace).
func (r *Runner) evalInputs(job session.EvalJob) error {
	if err := os.MkdirAll(job.RunDir, 0o755); err != nil {
		return fmt.Errorf("creating run dir: %w", err)
	}
	// A file left by an earlier evaluation would hide a job that wrote nothing. (A job
	// being re-attached may have written its own already.)
	if job.Attach == nil {
		if err := os.Remove(job.Output); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing old evaluation output: %w", err)
		}
		if job.Clip {
			if err := removeClip(job.RunDir); err != nil {
				return err
			}
		}
	}
	return r.writeSpace(job.Space, job.Settings.Task, job.RunDir, job.Attach)
}

// writeSpace writes sp, the reward space of the session's task, as the run dir's
// reward_space.json when a template passes {reward_space}: the sim trainer reads a task's
// space from it, so a space `tunebot space` printed runs with no template edit. A job being
// re-attached reads the file it had.
func (r *Runner) writeSpace(sp *session.Space, task, runDir string, attach *session.Proc) error {
	if attach != nil || !Uses(slices.Concat(r.t.Train, r.t.ResumeArgs, r.t.Evaluate), "reward_space") {
		return nil
	}
	if sp == nil {
		return fmt.Errorf("starting job: the trainer templates pass {reward_space}, but task %s has no reward space", task)
	}
	data, err := json.MarshalIndent(sp, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding reward space: %w", err)
	}
	if err := disk.WriteFile(filepath.Join(runDir, RewardSpaceFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing reward space: %w", err)
	}
	return nil
}

// Evaluate runs one evaluation job and parses the evaluation.json it wrote, strictly.
func (r *Runner) Evaluate(ctx context.Context, job session.EvalJob, hooks session.JobHooks) (session.Evaluation, error) {
	var ev session.Evaluation
	if !filepath.IsAbs(job.RunDir) || !filepath.IsAbs(job.Output) {
		return ev, fmt.Errorf("starting evaluate job: run dir %q and output %q must be absolute", job.RunDir, job.Output)
	}
	if len(job.Seeds) == 0 {
		return ev, fmt.Errorf("starting evaluate job: no evaluation seeds")
	}
	if err := r.evalInputs(job); err != nil {
		return ev, err
	}
	vals := r.values(job.Settings, job.RunDir, job.Trial)
	vals["checkpoint"] = job.Checkpoint
	vals["eval_output"] = job.Output
	seeds := make([]string, len(job.Seeds))
	for i, s := range job.Seeds {
		seeds[i] = strconv.Itoa(s)
	}
	vals["eval_seeds"] = strings.Join(seeds, ",")
	// A final re-evaluation asks for no clip: its placeholders are empty, which a trainer
	// reads as "write none" (the trial keeps its rung's clip).
	vals["clip_output"], vals["clip_poster"] = "", ""
	if job.Clip {
		vals["clip_output"], vals["clip_poster"] = filepath.Join(job.RunDir, ClipFile), filepath.Join(job.RunDir, ClipPosterFile)
	}

	logger := r.logger.With("session", job.SessionID, "trial", job.Trial.Number, "rung", job.Trial.Rung, "job", "evaluate")
	out, err := r.run(ctx, jobSpec{
		kind: "evaluate", argv: expand(r.t.Evaluate, vals), dir: job.RunDir, log: EvaluateLog,
		gpus: job.Settings.GPUs, timeout: r.t.EvalTimeout, hooks: hooks, logger: logger,
		name:   clusterJobName(job.SessionID, job.Trial, strings.TrimSuffix(filepath.Base(job.Output), ".json")),
		attach: job.Attach,
	})
	if err != nil {
		return ev, err
	}
	logPath := filepath.Join(job.RunDir, EvaluateLog)
	if out.failed != "" {
		return ev, jobFailed("evaluate", out.failed, logPath, nil)
	}
	if ev, err = evaluationOf(job, logPath, logger); err != nil {
		return ev, err
	}
	if job.Clip {
		ev.Clip, ev.ClipNote = collectClip(job.RunDir, Uses(r.t.Evaluate, "clip_output"), logPath, logger)
	}
	return ev, nil
}

// evaluationOf reads the evaluation an evaluate job wrote at job.Output (readEvaluation),
// decodes it strictly and checks it holds the seeds asked for; each failure is the job's,
// with the tail of its log at logPath.
func evaluationOf(job session.EvalJob, logPath string, logger *slog.Logger) (session.Evaluation, error) {
	var ev session.Evaluation
	data, err := readEvaluation(job)
	if err != nil {
		reason := filepath.Base(job.Output) + " was not written"
		if msg, ok := session.UserMessage(err); ok {
			reason = msg
		}
		return ev, jobFailed("evaluate", reason, logPath, err)
	}
	ev, err = session.DecodeEvaluation(data)
	if err != nil {
		return ev, jobFailed("evaluate", "invalid "+err.Error(), logPath, err)
	}
	if !sameSeeds(ev.Seeds, job.Seeds) {
		return ev, jobFailed("evaluate", seedsReason(filepath.Base(job.Output), ev.Seeds, job.Seeds), logPath, nil)
	}
	appendNotes(logPath, ev.Notes, logger)
	return ev, nil
}

// readEvaluation reads the evaluation JSON an evaluate job wrote at job.Output through
// OpenBounded, with the run dir as the root and MaxEvaluationBytes as the cap: a link out
// of the run dir, a FIFO or a device, or a huge file is refused, never read or waited on.
func readEvaluation(job session.EvalJob) ([]byte, error) {
	name, err := filepath.Rel(job.RunDir, job.Output)
	if err != nil {
		return nil, fmt.Errorf("evaluation output %s: %w", job.Output, err)
	}
	f, err := OpenBounded(job.RunDir, name, MaxEvaluationBytes, "the evaluation")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadAll()
}

// seedsReason says that the evaluation file name holds other seeds than asked for: by
// value when it holds as many as asked (at most 16), by count when not, so a file of a
// million seeds is not quoted into the trial's reason.
func seedsReason(name string, got, asked []int) string {
	if len(got) != len(asked) {
		return fmt.Sprintf("%s has %d seeds, asked for %d: %v", name, len(got), len(asked), asked)
	}
	return fmt.Sprintf("%s has seeds %v, asked for %v", name, got, asked)
}

func sameSeeds(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// EndOrphan ends process group p.PGID if p.PID is still the process recorded (same start
// tick), and waits until the group has no live member. A PID that is gone, or that now
// belongs to another process, is left alone: tunebot never signals what it did not start.
//
// A cluster job (p.Remote: Slurm's or Ray's) outlives tunebot by design and is
// re-attached on a restart, so the engine asks this of one only when its session was
// cancelled while no worker followed it (a session paused or awaiting a decision when
// tunebot restarted): it is stopped on its cluster (endCluster).
func (r *Runner) EndOrphan(ctx context.Context, p session.Proc) error {
	if p.Remote() {
		return r.endCluster(ctx, p)
	}
	if p.PID <= 1 || p.PGID <= 1 {
		return nil
	}
	st, err := readStat(p.PID)
	if err != nil {
		if !isNotExist(err) {
			return fmt.Errorf("checking orphan trainer process %d: %w", p.PID, err)
		}
		// The leader is gone, but a wrapper (a shell, uv run, torchrun) may have died and
		// left its workers on the GPU. A PID is never reused while a group of that ID
		// exists, so members started since the leader are its own. (The runner makes
		// each job the leader of its own group, so a record where they differ is not ours.)
		if p.PGID != p.PID {
			return nil
		}
		left := orphanMembers(p)
		if len(left) == 0 {
			return nil
		}
		r.logger.Warn("ending trainer processes whose group leader is gone", "pgid", p.PGID, "processes", len(left), "gpus", p.GPUs)
		return endGroup(ctx, p.PGID, r.t.Grace)
	}
	if st.startTick != p.StartTick {
		r.logger.Info("orphan trainer pid was reused by another process; leaving it alone", "pid", p.PID)
		return nil
	}
	r.logger.Warn("ending trainer process group left by an earlier tunebot", "pid", p.PID, "pgid", p.PGID, "gpus", p.GPUs)
	return endGroup(ctx, p.PGID, r.t.Grace)
}

// jobSpec is one subprocess to run.
type jobSpec struct {
	kind    string // "train" or "evaluate"
	argv    []string
	dir     string // the run dir, where the log goes
	log     string
	gpus    []int
	timeout time.Duration
	hooks   session.JobHooks
	poll    func() // called every pollEvery while the job runs; may be nil
	logger  *slog.Logger
	name    string        // the cluster job's name (clusterJobName), the same on every start
	attach  *session.Proc // a remote job to await instead of starting one
}

// jobOutcome says how a job that started ended; failed is "" when it exited 0.
type jobOutcome struct {
	failed string
}

// run runs one job in its own process group, holding its GPUs. It returns an error
// wrapping ctx.Err() when ctx ended first, a *session.JobError when the job could not
// start, and otherwise the outcome (a failure reason for a non-zero exit or a timeout).
// When it returns, no process of the job's group is left alive.
func (r *Runner) run(ctx context.Context, s jobSpec) (jobOutcome, error) {
	if rm, ok, err := r.remoteFor(s); ok {
		if err != nil {
			return jobOutcome{}, err
		}
		return r.runRemote(ctx, s, rm)
	}
	if err := ctx.Err(); err != nil {
		return jobOutcome{}, fmt.Errorf("%s job cancelled: %w", s.kind, err)
	}
	release, err := r.lease.Acquire(ctx, s.gpus)
	if err != nil {
		return jobOutcome{}, fmt.Errorf("%s job: %w", s.kind, err)
	}
	defer release()
	cmd, logf, err := r.startLocal(s)
	if err != nil {
		return jobOutcome{}, err
	}
	defer logf.Close()
	pid, started := cmd.Process.Pid, time.Now()
	r.announceLocal(s, pid, started)
	stopped, waitErr := r.awaitLocal(ctx, s, cmd)
	r.reapGroup(pid, s.logger)
	elapsed := time.Since(started).Round(time.Millisecond)
	state := exitState(cmd.ProcessState, waitErr)
	fmt.Fprintf(logf, "=== tunebot: %s job ended after %s: %s\n", s.kind, elapsed, firstNonEmpty(stopped, state))
	s.logger.Info("job ended", "pid", pid, "elapsed", elapsed, "state", state, "stopped", stopped)
	return localOutcome(ctx, s.kind, stopped, cmd.ProcessState.Success(), state)
}

// remoteFor is the cluster engine that runs s (ok): the one its re-attached job runs on,
// else the configured backend's; ok false runs s here.
func (r *Runner) remoteFor(s jobSpec) (rm remote, ok bool, err error) {
	switch {
	case s.attach != nil && s.attach.RayJob != "", s.attach == nil && r.t.Ray != nil:
		rm, err = r.rayRemote(s)
	case s.attach != nil, r.t.Slurm != nil:
		rm, err = r.slurmRemote(s)
	default:
		return remote{}, false, nil
	}
	return rm, true, err
}

// startLocal starts s's argv in its own process group, writing into its log, with the
// child's environment; a job whose command line or environment would carry one of
// tunebot's secrets is refused before anything starts.
func (r *Runner) startLocal(s jobSpec) (*exec.Cmd, *os.File, error) {
	env := childEnv(os.Environ(), r.t.Env, s.gpus)
	if err := refuseSecret(s.kind, secretInJob(s.argv, env, "", nil, secret.ProcessKnown())); err != nil {
		return nil, nil, err
	}
	logPath := filepath.Join(s.dir, s.log)
	logf, err := private.Append(logPath, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", s.log, err)
	}
	fmt.Fprint(logf, jobStartedLine(s.kind, "started", s.argv, secret.Process()))

	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Dir = r.t.Workdir
	cmd.Env = env
	// The child writes straight into the log file: no pipe to drain, and a grandchild that
	// keeps the descriptor open cannot hold up Wait.
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		why := startFailure(s.argv[0], r.t.Workdir, err)
		fmt.Fprintf(logf, "=== tunebot: could not start: %s\n", why)
		logf.Close()
		return nil, nil, &session.JobError{Job: s.kind, Err: err, Reason: why}
	}
	return cmd, logf, nil
}

// announceLocal logs the started job and tells the Started hook its process record.
func (r *Runner) announceLocal(s jobSpec, pid int, started time.Time) {
	st, err := readStat(pid) // the child is not reaped before Wait, so its stat is there
	if err != nil {
		s.logger.Warn("reading the job's start time", "pid", pid, "err", err)
	}
	s.logger.Info("job started", "pid", pid, "gpus", s.gpus)
	if s.hooks.Started != nil {
		s.hooks.Started(session.Proc{PID: pid, PGID: pid, StartTick: st.startTick, GPUs: slices.Clone(s.gpus), Started: started, Job: s.kind})
	}
}

// awaitLocal waits for the job to end, reading progress every pollEvery, and stops it when
// the context ends or its timeout passes. stopped says why tunebot stopped it, "" if it
// ended by itself.
func (r *Runner) awaitLocal(ctx context.Context, s jobSpec, cmd *exec.Cmd) (stopped string, waitErr error) {
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var timeout <-chan time.Time
	if s.timeout > 0 {
		t := time.NewTimer(s.timeout)
		defer t.Stop()
		timeout = t.C
	}
	tick := time.NewTicker(r.pollEvery)
	defer tick.Stop()
	for {
		select {
		case waitErr = <-done:
			return "", waitErr
		case <-ctx.Done():
			return "cancelled", r.stop(pid, done, s.logger)
		case <-timeout:
			return "timed out after " + s.timeout.String(), r.stop(pid, done, s.logger)
		case <-tick.C:
			if s.poll != nil {
				s.poll()
			}
		}
	}
}

// localOutcome is how a local job ended: a cancelled job is an error wrapping the context's,
// a job tunebot stopped otherwise (a timeout) failed for that reason, a non-zero exit failed
// with its state, and a clean exit succeeded.
func localOutcome(ctx context.Context, kind, stopped string, success bool, state string) (jobOutcome, error) {
	switch {
	case stopped == "cancelled":
		return jobOutcome{}, fmt.Errorf("%s job cancelled: %w", kind, ctx.Err())
	case stopped != "":
		return jobOutcome{failed: stopped}, nil
	case !success:
		return jobOutcome{failed: state}, nil
	}
	return jobOutcome{}, nil
}

// stop asks the job's group to stop (SIGINT), kills it (SIGKILL) after the grace period,
// and returns the leader's Wait result.
func (r *Runner) stop(pgid int, done <-chan error, logger *slog.Logger) error {
	if err := signalGroup(pgid, syscall.SIGINT); err != nil {
		logger.Warn("interrupting job", "err", err)
	}
	g := time.NewTimer(r.t.Grace)
	defer g.Stop()
	select {
	case err := <-done:
		return err
	case <-g.C:
	}
	logger.Warn("job ignored SIGINT for the grace period; killing its process group", "pgid", pgid, "grace", r.t.Grace)
	if err := signalGroup(pgid, syscall.SIGKILL); err != nil {
		logger.Warn("killing job", "err", err)
	}
	return <-done
}

// reapLimit bounds the wait for leftover group members after SIGKILL (a process stuck in
// the kernel, e.g. in a GPU driver call, cannot die until it returns).
const reapLimit = 30 * time.Second

// reapGroup kills whatever is left of the job's group after its leader exited: a trainer
// that forked a daemon (a data loader, a logger) must not leave it holding the GPU.
func (r *Runner) reapGroup(pgid int, logger *slog.Logger) {
	left := groupMembers(pgid)
	if len(left) == 0 {
		return
	}
	logger.Warn("killing processes the job left behind", "pgid", pgid, "count", len(left))
	if err := signalGroup(pgid, syscall.SIGKILL); err != nil {
		logger.Warn("killing leftovers", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), reapLimit)
	defer cancel()
	if !waitGroupGone(ctx, pgid) {
		logger.Error("processes of the job's group are still alive after SIGKILL", "pgid", pgid, "waited", reapLimit)
	}
}

// childEnv is the parent's environment without secrets, plus the configured extras, plus
// what the contract sets for every job.
func childEnv(parent, extra []string, gpus []int) []string {
	fixed := map[string]string{"CUDA_VISIBLE_DEVICES": gpuList(gpus), "PYTHONUNBUFFERED": "1", "WANDB_MODE": "disabled"}
	out := make([]string, 0, len(parent)+len(extra)+len(fixed))
	for _, kv := range secret.Strip(slices.Concat(parent, extra)) {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := fixed[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	for _, k := range []string{"CUDA_VISIBLE_DEVICES", "PYTHONUNBUFFERED", "WANDB_MODE"} {
		out = append(out, k+"="+fixed[k])
	}
	return out
}

func gpuList(gpus []int) string {
	s := make([]string, len(gpus))
	for i, g := range gpus {
		s[i] = strconv.Itoa(g)
	}
	return strings.Join(s, ",")
}

// exitState describes how a process ended: "exit status N", or the signal that killed it
// with its usual cause (killedBy, exitCodeReason).
func exitState(ps *os.ProcessState, waitErr error) string {
	if ps == nil {
		if waitErr != nil {
			return "wait failed: " + waitErr.Error()
		}
		return "unknown exit"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return killedBy(ws.Signal(), "")
	}
	return exitCodeReason(ps.ExitCode(), "")
}

func startReason(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err.Error()
	}
	return err.Error()
}

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`") {
			q[i] = strconv.Quote(a)
		} else {
			q[i] = a
		}
	}
	return strings.Join(q, " ")
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
