package trainer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"tunebot/private"
	"tunebot/secret"
	"tunebot/session"
	"tunebot/trainer/ray"
)

// One loop runs a trainer job on a cluster, whichever engine it is: Slurm (sbatch, squeue,
// scancel) or Ray (the Jobs REST API of its head). It keeps the local path's promises: the
// job's log is train.log/evaluate.log in the run dir, progress is read from the run dir
// while it runs, and the outcome is a failure reason or nothing. What differs between
// engines is only how to talk to them (remoteJob); the next engine is one more client.

// remoteJob is one job on a cluster engine, as the loop drives it.
type remoteJob interface {
	// submit starts the job, first ending any job of its name that no record names (a
	// tunebot killed right after submitting left it), and returns the engine's id of it.
	// An error that is a *session.JobError is the job's as it is; any other is put as
	// "could not submit".
	submit(ctx context.Context, logf io.Writer) (string, error)
	// status asks the engine about the job once.
	status(ctx context.Context, id string) (remoteStatus, error)
	// stop ends the job (scancel, POST stop); one that already ended is no error.
	stop(ctx context.Context, id string) error
	// ended says why a job status reported finished has failed ("" when it succeeded) and
	// how it ended in the engine's words ("COMPLETED, exit status 0"), once what it left had
	// time to show here (Slurm's exit file; Ray's log, which it copies into logf).
	ended(ctx context.Context, id string, st remoteStatus, logf io.Writer) (failed, how string)
	// giveUp decides, when status has failed for failing, whether to stop following the
	// job, returning the error the job ends with; nil tries again at the next poll.
	giveUp(err error, failing time.Duration) error
}

// remoteStatus is one answer of the engine about a job.
type remoteStatus struct {
	State    string // the engine's word: PENDING, RUNNING, COMPLETED, SUCCEEDED, ...
	Reason   string // why a pending job waits, when the engine says
	Node     string // where it runs or ran
	Finished bool   // it will not change any more
}

// The states the loop reads, in both engines' words: a job waiting in the queue, and one the
// engine no longer knows (Slurm's).
const (
	pendingState = "PENDING"
	unknownState = "UNKNOWN"
)

// remote is a cluster engine as the loop drives one job on it.
type remote struct {
	engine  string // "Slurm", "Ray": how the log and the reasons name it
	logKey  string // the key of the job's id in tunebot's log: "slurm_job", "ray_job"
	job     remoteJob
	poll    time.Duration // how often status is asked
	timeout time.Duration // when > 0, tunebot stops the job after running it so long; 0 leaves it to the engine
	// record sets the job's id on its process record (Proc.SlurmJob, Proc.RayJob).
	record func(p *session.Proc, id string)
	// attached is the id of the job s.attach names, "" for a job to submit.
	attached string
}

// submitTimeout bounds one submission; cancelWait bounds the wait for a stopped job to end.
const (
	submitTimeout = 2 * time.Minute
	cancelWait    = 2 * time.Minute
)

// runRemote runs s on a cluster, or awaits the job s.attach names. A context ended with
// cause session.ErrJobCancelled stops the job; any other end leaves it running (tunebot is
// stopping, and the next start re-attaches it) and returns the context's error.
func (r *Runner) runRemote(ctx context.Context, s jobSpec, rm remote) (jobOutcome, error) {
	if err := remoteStartable(ctx, s); err != nil {
		return jobOutcome{}, err
	}
	w := &remoteWatch{r: r, s: s, rm: rm}
	var err error
	if w.logf, err = private.Append(filepath.Join(s.dir, s.log), 0o644); err != nil {
		return jobOutcome{}, fmt.Errorf("opening %s: %w", s.log, err)
	}
	defer w.logf.Close()
	if err := w.submitOrAttach(ctx); err != nil {
		return jobOutcome{}, err
	}
	w.announce()
	st, err := w.follow(ctx)
	if err != nil {
		return jobOutcome{}, err
	}
	return w.ended(ctx, st), nil
}

// remoteStartable refuses a job that cannot start: only a cluster job outlives tunebot, so
// a local process is never re-attached, and a new job is not submitted once its context
// ended (a job being re-attached is awaited whatever the context: leaving it is follow's
// to say).
func remoteStartable(ctx context.Context, s jobSpec) error {
	if s.attach != nil && !s.attach.Remote() {
		return fmt.Errorf("%s job: cannot attach to a local process (pid %d); only a Slurm or Ray job is re-attached", s.kind, s.attach.PID)
	}
	if s.attach == nil {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s job cancelled: %w", s.kind, err)
		}
	}
	return nil
}

// remoteWatch is one cluster job being followed by runRemote: its id once submitted, the
// process record the hooks see, and the last answer the engine gave about it.
type remoteWatch struct {
	r    *Runner
	s    jobSpec
	rm   remote
	logf *os.File

	id       string
	started  time.Time
	proc     session.Proc
	last     remoteStatus
	failing  string    // the last error of status, said once
	since    time.Time // when status began failing; zero while it answers
	lastErr  error
	ranSince time.Time // when the job was first seen out of the queue, for its timeout
	timedOut bool      // tunebot stopped the job at its timeout
}

// submitOrAttach submits the job, or takes the id of the job s.attach names.
func (w *remoteWatch) submitOrAttach(ctx context.Context) error {
	s, rm := w.s, w.rm
	if s.attach != nil {
		w.id, w.started = rm.attached, s.attach.Started
		fmt.Fprintf(w.logf, "=== tunebot: %s job re-attached %s to %s job %s\n", s.kind, time.Now().Format(time.RFC3339), rm.engine, w.id)
		s.logger.Info("re-attached to "+rm.engine+" job", rm.logKey, w.id)
		return nil
	}
	fmt.Fprint(w.logf, jobStartedLine(s.kind, "submitted to "+rm.engine, s.argv, secret.Process()))
	// A submission is not cut short by the job's context: killed mid-way, it might leave a
	// job the engine accepted that no record names. A cancel that came meanwhile is seen
	// in follow.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), submitTimeout)
	id, err := rm.job.submit(sctx, w.logf)
	cancel()
	if err != nil {
		fmt.Fprintf(w.logf, "=== tunebot: could not submit: %v\n", err)
		var je *session.JobError
		if errors.As(err, &je) {
			return err
		}
		return &session.JobError{Job: s.kind, Err: err, Reason: "could not submit to " + rm.engine + ": " + err.Error()}
	}
	w.id, w.started = id, time.Now()
	fmt.Fprintf(w.logf, "=== tunebot: %s job %s\n", rm.engine, id)
	s.logger.Info("job submitted to "+rm.engine, rm.logKey, id)
	return nil
}

// announce sets up the job's process record; a new job is told to the Started hook, a
// re-attached one keeps the record it had.
func (w *remoteWatch) announce() {
	w.proc = session.Proc{Job: w.s.kind, Started: w.started}
	w.rm.record(&w.proc, w.id)
	if w.s.attach != nil {
		w.proc = *w.s.attach
		if w.proc.Job == "" {
			w.proc.Job = w.s.kind
		}
	} else if w.s.hooks.Started != nil {
		w.s.hooks.Started(w.proc)
	}
}

// follow asks the engine about the job every poll, and reads progress every pollEvery,
// until it has finished. It returns an error when the context ended (leave), or when the
// client gives up on an engine that does not answer; a job past its timeout is stopped.
func (w *remoteWatch) follow(ctx context.Context) (remoteStatus, error) {
	statusTick := time.NewTicker(w.rm.poll)
	defer statusTick.Stop()
	progressTick := time.NewTicker(w.r.pollEvery)
	defer progressTick.Stop()
	st, ok := w.status(ctx)
	for !ok || !st.Finished {
		if ctx.Err() != nil {
			return remoteStatus{}, w.leave(ctx)
		}
		if !ok {
			if err := w.rm.job.giveUp(w.lastErr, time.Since(w.since)); err != nil {
				return st, w.cannotFollow(err)
			}
		}
		if w.pastTimeout(st) {
			return w.stopAtTimeout(ctx), nil
		}
		select {
		case <-ctx.Done():
			return remoteStatus{}, w.leave(ctx)
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

// pastTimeout reports whether the job has run longer than the timeout tunebot enforces:
// counted from when the engine was first seen running it, as time waiting in the queue is
// not the job's; a re-attached job counts from its submission, the start known of it.
func (w *remoteWatch) pastTimeout(st remoteStatus) bool {
	if w.rm.timeout <= 0 {
		return false
	}
	if w.ranSince.IsZero() {
		switch {
		case w.s.attach != nil:
			w.ranSince = w.started
		case st.State != "" && st.State != pendingState:
			w.ranSince = time.Now()
		default:
			return false
		}
	}
	return time.Since(w.ranSince) > w.rm.timeout
}

// cannotFollow is the error of a job the client gave up following for err: err itself when
// it is the job's (*session.JobError), else one that says so.
func (w *remoteWatch) cannotFollow(err error) error {
	var je *session.JobError
	if errors.As(err, &je) {
		return err
	}
	return &session.JobError{Job: w.s.kind, Err: err, Reason: fmt.Sprintf("cannot follow %s job %s: %v", w.rm.engine, w.id, err)}
}

// status asks the engine about the job once; false when it could not say (the error is
// warned about once until an answer comes). A change of state, reason or node is logged
// and told to the Status hook, unless the engine does not know the job.
func (w *remoteWatch) status(c context.Context) (remoteStatus, bool) {
	s, id := w.s, w.id
	st, err := w.rm.job.status(c, id)
	w.lastErr = err
	if err != nil {
		if w.since.IsZero() {
			w.since = time.Now()
		}
		if msg := err.Error(); msg != w.failing && c.Err() == nil {
			w.failing = msg
			s.logger.Warn("asking "+w.rm.engine+" about the job; trying again", w.rm.logKey, id, "err", err)
		}
		return w.last, false
	}
	w.failing, w.since = "", time.Time{}
	if st.State != w.last.State || st.Reason != w.last.Reason || st.Node != w.last.Node {
		w.proc.JobState, w.proc.JobReason, w.proc.Node = st.State, st.Reason, st.Node
		s.logger.Info(w.rm.engine+" job state", w.rm.logKey, id, "state", st.State, "reason", st.Reason, "node", st.Node)
		if s.hooks.Status != nil && st.State != unknownState {
			s.hooks.Status(w.proc)
		}
	}
	w.last = st
	return st, true
}

// ended is the outcome of a job the engine says has finished: the client's reason, or the
// timeout when tunebot stopped the job for it.
func (w *remoteWatch) ended(ctx context.Context, st remoteStatus) jobOutcome {
	s := w.s
	failed, how := w.rm.job.ended(ctx, w.id, st, w.logf)
	elapsed := time.Since(w.started).Round(time.Millisecond)
	if w.timedOut {
		failed = fmt.Sprintf("timed out after %s (%s job %s %s)", w.rm.timeout, w.rm.engine, w.id, how)
	}
	fmt.Fprintf(w.logf, "=== tunebot: %s job ended after %s: %s job %s %s\n", s.kind, elapsed, w.rm.engine, w.id, how)
	s.logger.Info(w.rm.engine+" job ended", w.rm.logKey, w.id, "state", st.State, "how", how, "elapsed", elapsed)
	return jobOutcome{failed: failed}
}

// stopAtTimeout stops a job past its timeout and waits, bounded, for the engine to say it
// ended; its outcome then says the timeout (ended).
func (w *remoteWatch) stopAtTimeout(ctx context.Context) remoteStatus {
	w.timedOut = true
	fmt.Fprintf(w.logf, "=== tunebot: %s job timed out after %s: stopping %s job %s\n", w.s.kind, w.rm.timeout, w.rm.engine, w.id)
	w.s.logger.Warn("job timed out; stopping it", w.rm.logKey, w.id, "timeout", w.rm.timeout)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	defer cancel()
	return w.stopAndWait(cctx)
}

// stopAndWait stops the job and polls (at most every second) until the engine says it
// ended or ctx ends; it returns the last answer.
func (w *remoteWatch) stopAndWait(ctx context.Context) remoteStatus {
	if err := w.rm.job.stop(ctx, w.id); err != nil {
		w.s.logger.Error("stopping the "+w.rm.engine+" job", w.rm.logKey, w.id, "err", err)
	}
	st, err := awaitRemote(ctx, w.rm.job, w.id, min(w.rm.poll, time.Second))
	if err != nil {
		w.s.logger.Error("waiting for the stopped "+w.rm.engine+" job to end", w.rm.logKey, w.id, "err", err)
	}
	return st
}

// awaitRemote polls job's status every poll until it finished (or ctx ends, or the engine
// cannot say), and returns its last status.
func awaitRemote(ctx context.Context, job remoteJob, id string, poll time.Duration) (remoteStatus, error) {
	for {
		st, err := job.status(ctx, id)
		if err != nil || st.Finished {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// leave handles the end of the job's context: stop the job when a person cancelled the
// session (and wait, bounded, until the engine says it ended), else leave it running.
func (w *remoteWatch) leave(ctx context.Context) error {
	s, rm, id := w.s, w.rm, w.id
	if !errors.Is(context.Cause(ctx), session.ErrJobCancelled) {
		fmt.Fprintf(w.logf, "=== tunebot: stopped following %s job %s (tunebot is stopping); it keeps running and is re-attached on the next start\n", rm.engine, id)
		s.logger.Info("leaving "+rm.engine+" job running", rm.logKey, id)
		return fmt.Errorf("%s job: stopped following %s job %s, which keeps running: %w", s.kind, rm.engine, id, ctx.Err())
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	defer cancel()
	st := w.stopAndWait(cctx)
	fmt.Fprintf(w.logf, "=== tunebot: %s job cancelled: %s job %s %s\n", s.kind, rm.engine, id, st.State)
	s.logger.Info(rm.engine+" job cancelled", rm.logKey, id, "state", st.State)
	return fmt.Errorf("%s job cancelled: %w", s.kind, ctx.Err())
}

// orphanStopWait bounds how long a cancel waits for a cluster job nobody followed to end
// after it was told to stop: a person waits for the answer, and the engine stops it anyway.
const orphanStopWait = 30 * time.Second

// endCluster stops the cluster job p records, which no worker follows, and waits (at most
// orphanStopWait) for its engine to say it ended. A job that had ended already, or that the
// engine no longer knows, is left as it is.
func (r *Runner) endCluster(ctx context.Context, p session.Proc) error {
	engine, id := p.Cluster()
	var job remoteJob
	switch {
	case p.RayJob != "" && r.t.Ray == nil:
		return fmt.Errorf("Ray job %s: executor.backend is not ray now, so its head is not known: stop it there (ray job stop %s)", id, id)
	case p.RayJob != "":
		job = &rayRemoteJob{client: r.t.Ray.Client, job: ray.Job{ID: id}, kind: p.Job, logger: r.logger}
	default:
		job = &slurmRemoteJob{client: r.slurmClient(), logger: r.logger}
	}
	ctx, cancel := context.WithTimeout(ctx, orphanStopWait)
	defer cancel()
	st, err := job.status(ctx, id)
	switch {
	case errors.Is(err, ray.ErrNotFound), err == nil && (st.Finished || st.State == unknownState):
		return nil
	case err != nil:
		return fmt.Errorf("asking %s about job %s: %w", engine, id, err)
	}
	if err := job.stop(ctx, id); err != nil {
		return fmt.Errorf("stopping %s job %s: %w", engine, id, err)
	}
	st, err = awaitRemote(ctx, job, id, time.Second)
	if err != nil && !errors.Is(err, ray.ErrNotFound) {
		r.logger.Warn("a stopped cluster job has not said it ended", "cluster", engine, "cluster_job", id, "state", st.State, "err", err)
		return nil
	}
	r.logger.Info("stopped the cluster job of a cancelled session", "cluster", engine, "cluster_job", id, "state", st.State)
	return nil
}

// jobNameRE is what may stay in a cluster job's name; anything else becomes '-'.
var jobNameRE = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// clusterJobName names a cluster job by what it is, the same on every start of tunebot:
// tunebot-<session>-t<NNN>-r<R>-<train|evaluation|evaluation-final>. It is the name of a
// Slurm job (whose batch script and exit file a re-attached job finds by it) and the
// submission id of a Ray job (which a submission after a restart finds by it).
func clusterJobName(sessionID string, ref session.TrialRef, what string) string {
	sid := sessionID
	if len(sid) > 8 {
		sid = sid[:8]
	}
	name := fmt.Sprintf("tunebot-%s-t%03d-r%d-%s", sid, ref.Number, ref.Rung, what)
	return jobNameRE.ReplaceAllString(name, "-")
}

func exitNote(code int) string {
	if code < 0 {
		return ""
	}
	return ", exit status " + fmt.Sprint(code)
}
