package trainer_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"tunebot/session"
	"tunebot/trainer"
	"tunebot/trainer/sim"
	"tunebot/trainer/slurm"
	"tunebot/trainer/slurm/slurmtest"
)

// cluster is the test binary's real Slurm (slurmtest), taken down by TestMain.
var cluster slurmtest.Cluster

// needSlurm returns a client of the test cluster, or skips saying why there is none.
func needSlurm(t *testing.T) *slurm.Client {
	t.Helper()
	return &slurm.Client{Env: cluster.Env(t)}
}

// slurmRunner is a Runner of the sim templates whose jobs go to the test cluster.
func slurmRunner(t *testing.T, c *slurm.Client, env ...string) *trainer.Runner {
	t.Helper()
	tpl := simTemplates(env...)
	tpl.Slurm = &trainer.Slurm{Client: c, GPUs: 1, TimeLimit: 10 * time.Minute, Poll: 100 * time.Millisecond,
		Extra: []string{"--comment=tunebot-test"}}
	return newRunner(t, tpl)
}

// slurmHooks records what a job reports: the Proc it started, and every state change.
type slurmHooks struct {
	mu      sync.Mutex
	started []session.Proc
	states  []session.Proc
	running chan struct{} // closed at the first RUNNING
}

func newSlurmHooks() *slurmHooks { return &slurmHooks{running: make(chan struct{})} }

func (h *slurmHooks) hooks() session.JobHooks {
	return session.JobHooks{
		Started: func(p session.Proc) { h.mu.Lock(); h.started = append(h.started, p); h.mu.Unlock() },
		Status: func(p session.Proc) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if p.JobState == slurm.Running && !slices.ContainsFunc(h.states, func(q session.Proc) bool { return q.JobState == slurm.Running }) {
				close(h.running)
			}
			h.states = append(h.states, p)
		},
	}
}

func (h *slurmHooks) waitRunning(t *testing.T, errc <-chan error) {
	t.Helper()
	select {
	case <-h.running:
	case err := <-errc:
		t.Fatalf("the job ended before it was seen running: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the Slurm job was never seen running")
	}
}

func (h *slurmHooks) proc(t *testing.T) session.Proc {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.started) != 1 {
		t.Fatalf("Started was called %d times, want once: %+v", len(h.started), h.started)
	}
	return h.started[0]
}

// jobsNamed lists the ids Slurm has for the jobs of one name whose batch script is in dir.
func jobsNamed(t *testing.T, dir, name string) []string {
	t.Helper()
	cmd := exec.Command("squeue", "-t", "all", "-h", "-n", name, "-o", "%i|%o")
	cmd.Env = cluster.Env(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("squeue -n %s: %v", name, err)
	}
	var ids []string
	for _, l := range strings.Fields(string(out)) {
		if id, script, _ := strings.Cut(l, "|"); filepath.Dir(script) == dir {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestSlurmTrainAndEvaluate runs the sim through the real Slurm: the job is submitted with
// its own GPU, reports its state, its log and events land where a local job's do, and a
// finished job can be collected again by attaching to it.
func TestSlurmTrainAndEvaluate(t *testing.T) {
	c := needSlurm(t)
	// A secret in tunebot's environment never reaches the batch script.
	t.Setenv("DEEPSEEK_API_KEY", "sk-never-in-a-script-0123456789")
	r := slurmRunner(t, c, "TUNEBOT_TEST_EXTRA=kept")
	dir := t.TempDir()
	ctx := context.Background()
	h := newSlurmHooks()
	var progress []int
	hooks := h.hooks()
	hooks.Progress = func(it int) { progress = append(progress, it) }
	res, err := r.Train(ctx, trainJob(dir, 20), hooks)
	if err != nil {
		t.Fatalf("train: %v\n%s", err, readFile(t, filepath.Join(dir, trainer.TrainLog)))
	}
	if res.Iteration != 20 || res.Policy != filepath.Join(dir, "policy.onnx") || len(res.Series["Train/mean_reward"]) != 20 {
		t.Errorf("train result: iteration %d, policy %s, %d points", res.Iteration, res.Policy, len(res.Series["Train/mean_reward"]))
	}
	if len(progress) == 0 || progress[len(progress)-1] != 20 {
		t.Errorf("progress %v does not end at 20", progress)
	}
	p := h.proc(t)
	if !p.Remote() || p.Job != "train" || p.PID != 0 || p.Started.IsZero() {
		t.Errorf("started proc %+v: want a Slurm job of a train job", p)
	}
	var states []string
	for _, s := range h.states {
		if s.SlurmJob != p.SlurmJob {
			t.Errorf("status of job %s, want %s", s.SlurmJob, p.SlurmJob)
		}
		if s.JobState == slurm.Running && s.Node == "" {
			t.Errorf("running without a node: %+v", s)
		}
		states = append(states, s.JobState)
	}
	if !slices.Contains(states, slurm.Completed) {
		t.Errorf("states reported %v, want them to reach %s", states, slurm.Completed)
	}
	log := readFile(t, filepath.Join(dir, trainer.TrainLog))
	for _, want := range []string{"submitted to Slurm", "Slurm job " + p.SlurmJob, "ended after"} {
		if !strings.Contains(log, want) {
			t.Errorf("train.log lacks %q:\n%s", want, log)
		}
	}
	name := "tunebot-s1-t003-r0-train"
	script := readFile(t, filepath.Join(dir, name+".sbatch"))
	if strings.Contains(script, "sk-never-in-a-script") {
		t.Error("the batch script holds a secret of tunebot's environment")
	}
	for _, want := range []string{"--gres=gpu:1", "--time=10", "--export=NONE", "--comment=tunebot-test", "TUNEBOT_TEST_EXTRA='kept'", "--output=" + filepath.Join(dir, trainer.TrainLog)} {
		if !strings.Contains(script, want) {
			t.Errorf("batch script lacks %q:\n%s", want, script)
		}
	}
	if ids := jobsNamed(t, dir, name); !slices.Equal(ids, []string{p.SlurmJob}) {
		t.Errorf("Slurm has jobs %v named %s, want only %s", ids, name, p.SlurmJob)
	}

	eh := newSlurmHooks()
	ev, err := r.Evaluate(ctx, evalJob(dir, res.Checkpoint, 0, 1, 2), eh.hooks())
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, readFile(t, filepath.Join(dir, trainer.EvaluateLog)))
	}
	if ev.Iteration != 20 || !slices.Equal(ev.Seeds, []int{0, 1, 2}) {
		t.Errorf("evaluation %+v", ev)
	}
	ep := eh.proc(t)
	if ep.Job != "evaluate" || ep.SlurmJob == p.SlurmJob {
		t.Errorf("evaluate proc %+v", ep)
	}
	// Collecting the finished evaluation again submits nothing and reads the same result.
	job := evalJob(dir, res.Checkpoint, 0, 1, 2)
	job.Attach = &ep
	again := newSlurmHooks()
	ev2, err := r.Evaluate(ctx, job, again.hooks())
	if err != nil {
		t.Fatalf("attaching to the finished evaluation: %v", err)
	}
	if ev2.Iteration != ev.Iteration || ev2.Metrics[session.MetricVelLinear] != ev.Metrics[session.MetricVelLinear] {
		t.Errorf("attached evaluation %+v differs from %+v", ev2, ev)
	}
	if len(again.started) != 0 {
		t.Errorf("attaching started a job: %+v", again.started)
	}
	if ids := jobsNamed(t, dir, "tunebot-s1-t003-r0-evaluation"); len(ids) != 1 {
		t.Errorf("Slurm has evaluation jobs %v, want one", ids)
	}
}

// TestSlurmJobSeesItsGPUs: {gpu_ids} is what Slurm gave the job, and the job's environment
// is the script's (no CUDA_VISIBLE_DEVICES of tunebot's, no secrets).
func TestSlurmJobSeesItsGPUs(t *testing.T) {
	c := needSlurm(t)
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-never-in-a-job-0123456789")
	t.Setenv("CUDA_VISIBLE_DEVICES", "7")
	dir := t.TempDir()
	tpl := trainer.Templates{
		Train: []string{"bash", "-c", `cd "$2" && echo "$1" > gpus && env > env && echo fake > policy.onnx && touch model_0.pt`, "job",
			"{gpu_ids}", "{run_dir}", "{reward_config}", "{iterations}"},
		Evaluate: []string{"true"},
		Slurm:    &trainer.Slurm{Client: c, GPUs: 2, Poll: 100 * time.Millisecond},
	}
	r := newRunner(t, tpl)
	job := trainJob(dir, 1)
	if _, err := r.Train(context.Background(), job, session.JobHooks{}); err != nil {
		t.Fatalf("train: %v\n%s", err, readFile(t, filepath.Join(dir, trainer.TrainLog)))
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(dir, "gpus"))); got != "[0,1]" {
		t.Errorf("{gpu_ids} = %q, want [0,1] (both fake GPUs)", got)
	}
	env := readFile(t, filepath.Join(dir, "env"))
	if strings.Contains(env, "xoxb-never") {
		t.Error("a secret of tunebot's environment reached the job")
	}
	if strings.Contains(env, "CUDA_VISIBLE_DEVICES=7") {
		t.Error("tunebot's CUDA_VISIBLE_DEVICES reached the job; it is Slurm's to set")
	}
	for _, want := range []string{"PYTHONUNBUFFERED=1", "WANDB_MODE=disabled", "SLURM_JOB_ID="} {
		if !strings.Contains(env, want) {
			t.Errorf("the job's environment lacks %s", want)
		}
	}
}

// TestSlurmFailingJob: a job whose command fails is a failed trial with the exit status,
// the Slurm state and the tail of its log, as a local job's would be.
func TestSlurmFailingJob(t *testing.T) {
	c := needSlurm(t)
	dir := t.TempDir()
	_, err := slurmRunner(t, c, sim.FailEnv+"=exit").Train(context.Background(), trainJob(dir, 20), session.JobHooks{})
	je := jobError(t, err)
	if !strings.Contains(je.Reason, "exit status 3") || !strings.Contains(je.Reason, slurm.Failed) {
		t.Errorf("reason %q: want the exit status and %s", je.Reason, slurm.Failed)
	}
	if !strings.Contains(je.LogTail, "injected failure") {
		t.Errorf("log tail %q lacks the sim's message", je.LogTail)
	}
}

// TestSlurmTimeLimit: a job Slurm ends at its time limit fails naming TIMEOUT.
func TestSlurmTimeLimit(t *testing.T) {
	c := needSlurm(t)
	if testing.Short() {
		t.Skip("waits a minute for Slurm's smallest time limit")
	}
	tpl := trainer.Templates{
		Train: []string{"bash", "-c", "sleep 600", "job", "{reward_config}", "{iterations}"}, Evaluate: []string{"true"},
		Slurm: &trainer.Slurm{Client: c, TimeLimit: time.Minute, Poll: 200 * time.Millisecond},
	}
	_, err := newRunner(t, tpl).Train(context.Background(), trainJob(t.TempDir(), 1), session.JobHooks{})
	if je := jobError(t, err); !strings.Contains(je.Reason, slurm.Timeout) {
		t.Errorf("reason %q: want %s", je.Reason, slurm.Timeout)
	}
}

// trainUntilRunning starts job and returns once the cluster (Slurm or Ray) runs it, with
// the job's hooks and shutdown, which ends the job's context as a stopping tunebot does
// (not as a cancelled session) and returns what Train returned.
func trainUntilRunning(t *testing.T, r *trainer.Runner, job session.TrainJob) (*slurmHooks, func() error) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	h := newSlurmHooks()
	errc := make(chan error, 1)
	go func() {
		_, err := r.Train(ctx, job, h.hooks())
		errc <- err
	}()
	h.waitRunning(t, errc)
	return h, func() error {
		stop()
		return <-errc
	}
}

// cancelledWhileRunning runs job until the cluster runs it, then cancels it as a person
// cancelling the session does, and returns its process record once Train returned.
func cancelledWhileRunning(t *testing.T, r *trainer.Runner, job session.TrainJob) session.Proc {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	h := newSlurmHooks()
	errc := make(chan error, 1)
	go func() {
		_, err := r.Train(ctx, job, h.hooks())
		errc <- err
	}()
	h.waitRunning(t, errc)
	cancel(session.ErrJobCancelled)
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("train of a cancelled session: %v, want context.Canceled", err)
	}
	return h.proc(t)
}

// orphanEnded runs job until the cluster runs it, leaves it running as a stopping tunebot
// does, then ends it as the engine ends the job of a cancelled session no worker follows
// (EndOrphan), twice: the second time, of a job that ended, is no error either.
func orphanEnded(t *testing.T, r *trainer.Runner, job session.TrainJob) session.Proc {
	t.Helper()
	h, shutdown := trainUntilRunning(t, r, job)
	if err := shutdown(); !errors.Is(err, context.Canceled) {
		t.Fatalf("train after its context ended: %v, want context.Canceled", err)
	}
	p := h.proc(t)
	for range 2 {
		if err := r.EndOrphan(context.Background(), p); err != nil {
			t.Fatalf("EndOrphan of %+v: %v", p, err)
		}
	}
	return p
}

// TestSlurmJobOfACancelledSessionNobodyFollowsIsStopped: a job left running when tunebot
// stopped, whose session a person then cancels before any worker follows it again (it was
// paused or awaiting a decision at the restart), is scancelled by EndOrphan; asking again of
// the ended job is no error.
func TestSlurmJobOfACancelledSessionNobodyFollowsIsStopped(t *testing.T) {
	c := needSlurm(t)
	p := orphanEnded(t, slurmRunner(t, c, sim.StepDelayEnv+"=200ms"), trainJob(t.TempDir(), 100))
	all, err := c.Status(context.Background(), []string{p.SlurmJob}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := all[p.SlurmJob]; st.State != slurm.Cancelled {
		t.Errorf("Slurm job %s is %s after EndOrphan, want %s", p.SlurmJob, st.State, slurm.Cancelled)
	}
}

// TestSlurmJobOutlivesTunebot: a job whose context ends for any reason but a cancelled
// session keeps running; attaching to it awaits and collects it, and nothing is submitted
// twice.
func TestSlurmJobOutlivesTunebot(t *testing.T) {
	c := needSlurm(t)
	r := slurmRunner(t, c, sim.StepDelayEnv+"=100ms")
	dir := t.TempDir()
	h, shutdown := trainUntilRunning(t, r, trainJob(dir, 40))
	err := shutdown()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("train after its context ended: %v, want context.Canceled", err)
	}
	var je *session.JobError
	if errors.As(err, &je) {
		t.Fatalf("a shutdown failed the job: %v", err)
	}
	p := h.proc(t)
	all, err := c.Status(context.Background(), []string{p.SlurmJob}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := all[p.SlurmJob]; st.Finished() {
		t.Fatalf("the Slurm job ended with tunebot: %+v", st)
	}

	job := trainJob(dir, 40)
	job.Attach = &p
	again := newSlurmHooks()
	res, err := r.Train(context.Background(), job, again.hooks())
	if err != nil {
		t.Fatalf("attached train: %v\n%s", err, readFile(t, filepath.Join(dir, trainer.TrainLog)))
	}
	if res.Iteration != 40 {
		t.Errorf("attached result at iteration %d, want 40", res.Iteration)
	}
	if len(again.started) != 0 {
		t.Errorf("attaching submitted a job: %+v", again.started)
	}
	if ids := jobsNamed(t, dir, "tunebot-s1-t003-r0-train"); !slices.Contains(ids, p.SlurmJob) || len(ids) != 1 {
		t.Errorf("Slurm has jobs %v for this train job, want only %s", ids, p.SlurmJob)
	}
	if log := readFile(t, filepath.Join(dir, trainer.TrainLog)); !strings.Contains(log, "re-attached") || !strings.Contains(log, "keeps running") {
		t.Errorf("train.log does not tell the shutdown and the re-attach:\n%s", log)
	}
}

// TestSlurmCancelledSessionScancels: a session cancelled by a person ends its Slurm job.
func TestSlurmCancelledSessionScancels(t *testing.T) {
	c := needSlurm(t)
	p := cancelledWhileRunning(t, slurmRunner(t, c, sim.StepDelayEnv+"=200ms"), trainJob(t.TempDir(), 100))
	all, err := c.Status(context.Background(), []string{p.SlurmJob}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := all[p.SlurmJob]; st.State != slurm.Cancelled {
		t.Errorf("the job of a cancelled session: %+v, want %s", st, slurm.Cancelled)
	}
}

// TestSlurmAttachToUnknownJob: a job Slurm does not know and that left no exit code fails
// with that reason.
func TestSlurmAttachToUnknownJob(t *testing.T) {
	c := needSlurm(t)
	r := slurmRunner(t, c)
	job := trainJob(t.TempDir(), 20)
	job.Attach = &session.Proc{SlurmJob: "987654321", Job: "train", Started: time.Now()}
	_, err := r.Train(context.Background(), job, session.JobHooks{})
	if je := jobError(t, err); !strings.Contains(je.Reason, "Slurm no longer knows job 987654321") {
		t.Errorf("reason %q", je.Reason)
	}
}

// TestSlurmSettingsAreChecked: bad sbatch arguments and fields are refused by New.
func TestSlurmSettingsAreChecked(t *testing.T) {
	tpl := simTemplates()
	tpl.Slurm = &trainer.Slurm{Partition: "gpu x", Extra: []string{"-p", "--output=/tmp/x", "--a b"}, CPUs: -1}
	_, err := trainer.New(tpl, nil, nil)
	for _, want := range []string{`"-p" is not an option`, "--output is set by tunebot", "holds whitespace", `partition "gpu x"`, "must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New: %v, want it to say %s", err, want)
		}
	}
}

// TestSlurmUnrecordedJobIsReplaced: a tunebot killed between sbatch and recording the job
// id leaves a job no record names. The next start runs the trial afresh: the stale job of
// the same script is cancelled first, so two jobs of one trial never run at once.
func TestSlurmUnrecordedJobIsReplaced(t *testing.T) {
	c := needSlurm(t)
	// 300 ms a step: the stale job (40 steps) must not finish before the next start cancels
	// it, which a loaded machine took more than the 4 s of 100 ms steps to do (.ci/run)
	r := slurmRunner(t, c, sim.StepDelayEnv+"=300ms")
	dir := t.TempDir()
	h, shutdown := trainUntilRunning(t, r, trainJob(dir, 40))
	_ = shutdown() // tunebot dies; say its record of the job was lost with it
	stale := h.proc(t).SlurmJob

	res, err := r.Train(context.Background(), trainJob(dir, 20), newSlurmHooks().hooks())
	if err != nil {
		t.Fatalf("train after the lost record: %v\n%s", err, readFile(t, filepath.Join(dir, trainer.TrainLog)))
	}
	if res.Iteration != 20 {
		t.Errorf("result at iteration %d, want 20 (the new job's)", res.Iteration)
	}
	all, err := c.Status(context.Background(), []string{stale}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := all[stale]; st.State != slurm.Cancelled {
		t.Errorf("the unrecorded job %s is %s, want CANCELLED", stale, st.State)
	}
	if log := readFile(t, filepath.Join(dir, trainer.TrainLog)); !strings.Contains(log, "no record names it") {
		t.Errorf("train.log does not say the stale job was replaced:\n%s", log)
	}
}

// TestSlurmKilledJobSaysTheSignal: a Slurm job whose trainer is killed by SIGKILL (the
// batch script reports it as exit status 137) says the signal and its usual cause.
func TestSlurmKilledJobSaysTheSignal(t *testing.T) {
	c := needSlurm(t)
	tpl := shellTemplates(`echo "allocating"; kill -KILL $$`)
	tpl.Slurm = &trainer.Slurm{Client: c, TimeLimit: 10 * time.Minute, Poll: 100 * time.Millisecond, Extra: []string{"--comment=tunebot-test"}}
	_, err := newRunner(t, tpl).Train(context.Background(), trainJob(t.TempDir(), 20), session.JobHooks{})
	je := jobError(t, err)
	for _, want := range []string{"killed by SIGKILL (exit status 137", "Slurm job ", slurm.Failed,
		"): the kernel's out-of-memory killer is the usual cause; see dmesg", "train.log ends: allocating"} {
		if !strings.Contains(je.Reason, want) {
			t.Errorf("reason %q lacks %q", je.Reason, want)
		}
	}
}
