package trainer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"tunebot/secret"
	"tunebot/session"
	"tunebot/trainer/ray"
)

// Ray is the Runner's Ray backend (executor backend ray, docs/design.md §4): every job is one
// Ray job submitted to the job server of the cluster's head, with the same argv templates as
// a local job; Ray's scheduler places it on a node with the GPUs it asked for. As on Slurm,
// the run dirs must be on storage the nodes share (the data_dir): the job writes its events,
// checkpoints and evaluation there, and tunebot reads them.
type Ray struct {
	// Client is the head's job server, with the token when the head requires one.
	Client *ray.Client
	GPUs   int     // entrypoint_num_gpus of every job; 0 asks for none
	CPUs   float64 // entrypoint_num_cpus; 0 reserves none
	Memory int64   // entrypoint_memory in bytes; 0 reserves none
	// Poll is how often the head is asked about a running job (0 = 5 s).
	Poll time.Duration
	// HeadTimeout is how long the head may not answer about a job before tunebot gives up
	// following it and the session pauses (0 = 2 min): a head that went away takes its
	// jobs with it, and one that comes back knows none of them.
	HeadTimeout time.Duration
}

// Defaults of the Ray backend.
const (
	DefaultRayPoll        = 5 * time.Second
	DefaultRayHeadTimeout = 2 * time.Minute
)

// rayLogEnd is how much of the end of a Ray job's log is copied into its train.log or
// evaluate.log: a log's tail (logTail) reads far less, a person reading the file a little
// more; the whole log stays with Ray (`ray job logs ID`).
const rayLogEnd = 64 << 10

// check names every problem of the backend's settings.
func (b *Ray) check() []string {
	var probs []string
	if b.Client == nil {
		probs = append(probs, "ray: no address of the head")
	} else if _, err := ray.ParseAddress(b.Client.Address); err != nil {
		probs = append(probs, "ray: address: "+err.Error())
	}
	if b.GPUs < 0 || b.CPUs < 0 || b.Memory < 0 || b.Poll < 0 || b.HeadTimeout < 0 {
		probs = append(probs, "ray: gpus, cpus, memory, poll and head timeout must not be negative")
	}
	return probs
}

// rayEnv is a Ray job's environment: what a local job gets (the parent's without secrets,
// the configured extras, the contract's fixed variables), less what belongs to the machine
// tunebot runs on rather than to the node the job runs on (a path list, a home, a user,
// this machine's temporary directory and working directory) and less what Ray sets itself
// (CUDA_VISIBLE_DEVICES for the GPUs it gave, RAY_* for the job's own driver).
func rayEnv(parent, extra []string) []string {
	var out []string
	for _, kv := range childEnv(parent, extra, nil) {
		k, _, _ := strings.Cut(kv, "=")
		if machineBound[k] || strings.HasPrefix(k, "RAY_") || strings.HasPrefix(k, "SLURM_") || !envKeyRE.MatchString(k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

var machineBound = map[string]bool{"CUDA_VISIBLE_DEVICES": true, "PATH": true, "HOME": true, "USER": true,
	"LOGNAME": true, "SHELL": true, "HOSTNAME": true, "TMPDIR": true, "PWD": true, "OLDPWD": true, "SHLVL": true,
	"_": true, "TERM": true, "DISPLAY": true, "SSH_AUTH_SOCK": true, "SSH_CONNECTION": true, "SSH_CLIENT": true,
	"SSH_TTY": true, "XDG_RUNTIME_DIR": true, "XDG_SESSION_ID": true, "MAIL": true}

// rayRemote is the remote loop's engine for s on Ray: its submission with the backend's
// resources, and the job s.attach names when it is re-attached. A job to submit that would
// carry one of tunebot's secrets, in its command line or environment, is refused.
func (r *Runner) rayRemote(s jobSpec) (remote, error) {
	b := r.t.Ray
	if b == nil {
		engine, id := s.attach.Cluster()
		return remote{}, &session.JobError{Job: s.kind, Reason: fmt.Sprintf("the trial's %s job %s was started on a Ray cluster, but executor.backend is not ray now: set it back (with executor.ray.address) to collect it", engine, id),
			Err: errors.New("no Ray backend")}
	}
	j := ray.Job{ID: s.name, Argv: s.argv, Workdir: r.t.Workdir, Env: rayEnv(os.Environ(), r.t.Env),
		GPUs: b.GPUs, CPUs: b.CPUs, Memory: b.Memory,
		Metadata: map[string]string{"tunebot_run_dir": s.dir, "tunebot_job": s.kind}}
	if s.attach == nil {
		entry, err := ray.Entrypoint(j)
		if err != nil {
			return remote{}, &session.JobError{Job: s.kind, Reason: err.Error(), Err: err}
		}
		meta := slices.Collect(maps.Values(j.Metadata))
		if err := refuseSecret(s.kind, secretInJob(j.Argv, j.Env, entry, meta, secret.ProcessKnown())); err != nil {
			return remote{}, err
		}
	}
	poll := cmp.Or(b.Poll, DefaultRayPoll)
	rj := &rayRemoteJob{client: b.Client, job: j, poll: poll, headTimeout: cmp.Or(b.HeadTimeout, DefaultRayHeadTimeout), kind: s.kind, logger: s.logger}
	rm := remote{engine: "Ray", logKey: "ray_job", poll: poll, timeout: s.timeout, job: rj,
		record: func(p *session.Proc, id string) { p.RayJob = id }}
	if s.attach != nil {
		rm.attached, rj.job.ID = s.attach.RayJob, s.attach.RayJob
	}
	return rm, nil
}

// rayRemoteJob is one Ray job as the remote loop drives it, through the head's REST API.
type rayRemoteJob struct {
	client      *ray.Client
	job         ray.Job
	poll        time.Duration
	headTimeout time.Duration
	kind        string
	logger      *slog.Logger
	last        ray.Info // the last answer, for ended
}

// maxRayAttempts bounds the names a trial's job tries: its own and then -2, -3, ...
const maxRayAttempts = 100

// submit submits the job under the first free name of its own (clusterJobName, then with
// -2, -3, ...: the head keeps every job it ran, and a name is free only once its job is
// forgotten). A job of one of those names that still runs although no record names it is
// stopped first (an earlier tunebot stopped right after submitting it, and the session has
// discarded its run dir): two jobs of one trial never run at once. A head that does not
// answer, or refuses the token, makes the session pause rather than fail the trial.
func (c *rayRemoteJob) submit(ctx context.Context, logf io.Writer) (string, error) {
	base := c.job.ID
	for n := 1; n <= maxRayAttempts; n++ {
		id := base
		if n > 1 {
			id = fmt.Sprintf("%s-%d", base, n)
		}
		old, err := c.client.Job(ctx, id)
		switch {
		case errors.Is(err, ray.ErrNotFound):
			j := c.job
			j.ID = id
			if err := c.client.Submit(ctx, j); err != nil {
				return "", c.unavailable(err)
			}
			c.job.ID = id
			return id, nil
		case err != nil:
			return "", c.unavailable(err)
		}
		if err := c.endStale(ctx, old, logf); err != nil {
			return "", c.unavailable(err)
		}
	}
	return "", fmt.Errorf("Ray keeps %d jobs named %s and %s-2 to -%d already: delete the old ones (ray job delete ID) to run this trial again", maxRayAttempts, base, base, maxRayAttempts)
}

// endStale stops old, a job of this trial's name, when it still runs. A job of the name
// whose run dir is not this one's is refused: the name is not tunebot's to take.
func (c *rayRemoteJob) endStale(ctx context.Context, old ray.Info, logf io.Writer) error {
	id := old.SubmissionID
	if dir := old.Metadata["tunebot_run_dir"]; dir != c.job.Metadata["tunebot_run_dir"] {
		return fmt.Errorf("Ray already has a job %s, of run dir %q and not this one's: tunebot does not take it over; remove it (ray job delete %s) or start another session", id, ray.Foreign(dir), id)
	}
	if old.Finished() {
		return nil
	}
	fmt.Fprintf(logf, "=== tunebot: Ray job %s runs this job but no record names it (an earlier tunebot stopped right after submitting it): stopped, a new job replaces it\n", id)
	c.logger.Warn("stopping an unrecorded Ray job of this trial", "ray_job", id)
	if err := c.client.Stop(ctx, id); err != nil && !errors.Is(err, ray.ErrNotFound) {
		return err
	}
	_, err := awaitRemote(ctx, c, id, min(c.poll, time.Second))
	return err
}

// unavailable is err as the job's error: the cluster unavailable (the session pauses) when
// the head does not answer or refuses the token, err itself otherwise.
func (c *rayRemoteJob) unavailable(err error) error {
	if errors.Is(err, ray.ErrUnreachable) || ray.Unauthorized(err) {
		return &session.JobError{Job: c.kind, Reason: err.Error(), Err: fmt.Errorf("%w: %w", session.ErrClusterUnavailable, err)}
	}
	return err
}

func (c *rayRemoteJob) status(ctx context.Context, id string) (remoteStatus, error) {
	i, err := c.client.Job(ctx, id)
	if err != nil {
		return remoteStatus{}, err
	}
	c.last = i
	return remoteStatus{State: i.Status, Node: i.Node(), Finished: i.Finished()}, nil
}

func (c *rayRemoteJob) stop(ctx context.Context, id string) error {
	if err := c.client.Stop(ctx, id); err != nil && !errors.Is(err, ray.ErrNotFound) {
		return err
	}
	return nil
}

// giveUp stops following a job the head does not know (it was restarted and lost its jobs)
// at once, and one whose head has not answered for headTimeout, or refuses the token: each
// pauses the session, as a job that is no fault of the trial's.
func (c *rayRemoteJob) giveUp(err error, failing time.Duration) error {
	switch {
	case errors.Is(err, ray.ErrNotFound):
		err = fmt.Errorf("the Ray head at %s does not know job %s: it was restarted since and lost its jobs, or the job was deleted: %w", c.client.Address, c.job.ID, ray.ErrNotFound)
	case ray.Unauthorized(err):
	case failing >= c.headTimeout:
		err = fmt.Errorf("the Ray head at %s has not answered about job %s for %s: %w", c.client.Address, c.job.ID, failing.Round(time.Second), err)
	default:
		return nil
	}
	return &session.JobError{Job: c.kind, Reason: err.Error(), Err: fmt.Errorf("%w: %w", session.ErrClusterUnavailable, err)}
}

// ended copies the end of the job's log into logf, as a local job's output is in its log,
// and says how it ended (rayFailure).
func (c *rayRemoteJob) ended(ctx context.Context, id string, _ remoteStatus, logf io.Writer) (string, string) {
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	end, cut, err := c.client.LogEnd(lctx, id, rayLogEnd)
	if err != nil {
		c.logger.Warn("reading the end of the Ray job's log", "ray_job", id, "err", err)
		fmt.Fprintf(logf, "=== tunebot: the Ray job's log could not be read (%v); ray job logs %s shows it\n", err, id)
	} else {
		copyRayLog(logf, id, end, cut)
	}
	i := c.last
	how := i.Status
	if i.DriverExitCode != nil {
		how += exitNote(*i.DriverExitCode)
	}
	return rayFailure(id, i), how
}

// rayOwnLine are the lines Ray writes into a job's log itself: its command line (which
// quotes the whole argv, as the job's started line does) and its runtime environment's
// set-up notes; the job's own output is what the log's end is for.
var rayOwnLine = regexp.MustCompile(`^(Running entrypoint for job \S+: |\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\tINFO job_manager\.py:\d+ -- )`)

// copyRayLog writes the end of a Ray job's log into logf, without Ray's own lines, masked
// as every log line read back is. A window that begins inside a secret keeps that secret's
// end, which no mask matches: after masking, as much as the longest secret and the rest of
// the cut first line are dropped.
func copyRayLog(logf io.Writer, id, end string, cut bool) {
	redact := secret.Process()
	end = redact.String(end)
	if cut {
		end = end[min(redact.Longest(), len(end)):]
		if i := strings.IndexByte(end, '\n'); i >= 0 {
			end = end[i+1:] // the first line is cut: it starts somewhere in the middle
		}
	}
	var b strings.Builder
	for line := range strings.Lines(end) {
		if !rayOwnLine.MatchString(line) {
			b.WriteString(line)
		}
	}
	what := "its log"
	if cut {
		what = "the end of its log"
	}
	fmt.Fprintf(logf, "=== tunebot: Ray job %s ended; %s (ray job logs %s has all of it):\n", id, what, id)
	io.WriteString(logf, b.String())
	if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
		io.WriteString(logf, "\n")
	}
}

// rayFailure says why a finished Ray job failed, "" when it succeeded: the signal that killed
// its command (a negative driver exit code, or 128+N from a wrapper) or its exit code; a
// job that never ran its command failed to start, with Ray's words; one stopped by someone
// else than tunebot says so.
func rayFailure(id string, i ray.Info) string {
	where := "Ray job " + id + " " + i.Status
	if n := i.Node(); n != "" {
		where += " on " + n
	}
	code := i.DriverExitCode
	switch {
	case i.Status == ray.Succeeded:
		return ""
	case i.Status == ray.Stopped:
		return "Ray job " + id + " was stopped, not by tunebot (ray job stop, the dashboard, or the head shutting down)"
	case code != nil && *code < 0:
		return killedBy(syscall.Signal(-*code), where)
	case code != nil && *code > 0:
		return exitCodeReason(*code, where)
	case code != nil:
		return fmt.Sprintf("%s with exit status 0", where)
	}
	msg := cmp.Or(ray.LastLine(i.Message), "Ray gave no reason")
	if i.ErrorType != "" {
		msg = i.ErrorType + ": " + msg
	}
	return fmt.Sprintf("Ray job %s failed to start (%s): its command never ran", id, msg)
}
