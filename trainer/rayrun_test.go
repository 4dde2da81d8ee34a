package trainer_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"tunebot/session"
	"tunebot/trainer"
	"tunebot/trainer/ray"
	"tunebot/trainer/ray/raytest"
	"tunebot/trainer/sim"
)

// rayHead is the test binary's real Ray head (raytest), stopped by TestMain.
var rayHead raytest.Head

// rayBackend is a Ray backend of the test head, following jobs every 100 ms and giving up on
// a head that has not answered for 3 s.
func rayBackend(t *testing.T, gpus int) *trainer.Ray {
	t.Helper()
	return &trainer.Ray{Client: rayHead.Client(t), GPUs: gpus, Poll: 100 * time.Millisecond, HeadTimeout: 3 * time.Second}
}

// rayRunner is a Runner of the sim templates whose jobs go to the test head, one GPU each.
func rayRunner(t *testing.T, env ...string) *trainer.Runner {
	t.Helper()
	tpl := simTemplates(env...)
	tpl.Ray = rayBackend(t, 1)
	return newRunner(t, tpl)
}

// raySession is a session id of the test's own: a Ray job's name holds it, and the head
// keeps every job of the binary's run, so two tests of one name would meet there.
func raySession() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func rayTrainJob(dir string, target int) session.TrainJob {
	j := trainJob(dir, target)
	j.SessionID = raySession()
	return j
}

// rayJobName is the Ray job id of job's training.
func rayJobName(job session.TrainJob) string {
	return "tunebot-" + job.SessionID + "-t003-r0-train"
}

// TestRayTrainAndEvaluate runs the sim through the real head: the job is submitted with a GPU
// of its own, reports RUNNING on its node and its end, its output's end lands in train.log
// as a local job's output does, the head's job list shows it with its run dir, and a
// finished evaluation can be collected again by attaching to it without a new job.
func TestRayTrainAndEvaluate(t *testing.T) {
	r := rayRunner(t)
	c := rayHead.Client(t)
	dir := t.TempDir()
	ctx := context.Background()
	h := newSlurmHooks()
	hooks := h.hooks()
	var progress []int
	hooks.Progress = func(it int) { progress = append(progress, it) }
	job := rayTrainJob(dir, 20)
	res, err := r.Train(ctx, job, hooks)
	if err != nil {
		t.Fatalf("train: %v\n%s", err, readFile(t, filepath.Join(dir, trainer.TrainLog)))
	}
	if res.Iteration != 20 || len(res.Series["Train/mean_reward"]) != 20 || len(progress) == 0 || progress[len(progress)-1] != 20 {
		t.Errorf("train result at iteration %d with %d points, progress %v", res.Iteration, len(res.Series["Train/mean_reward"]), progress)
	}
	p := h.proc(t)
	if p.RayJob != rayJobName(job) || p.Job != "train" || !p.Remote() || p.PID != 0 {
		t.Errorf("started proc %+v: want Ray job %s of a train job", p, rayJobName(job))
	}
	var states []string
	for _, s := range h.states {
		if s.JobState == ray.Running && s.Node != "127.0.0.2" {
			t.Errorf("running on %q, want the head's node 127.0.0.2", s.Node)
		}
		states = append(states, s.JobState)
	}
	if !slices.Contains(states, ray.Succeeded) {
		t.Errorf("states reported %v, want them to reach %s", states, ray.Succeeded)
	}
	log := readFile(t, filepath.Join(dir, trainer.TrainLog))
	for _, want := range []string{"submitted to Ray", "=== tunebot: Ray job " + p.RayJob + "\n", "ray job logs " + p.RayJob, "ended after", "SUCCEEDED, exit status 0"} {
		if !strings.Contains(log, want) {
			t.Errorf("train.log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "Running entrypoint for job") {
		t.Errorf("train.log keeps Ray's echo of the command:\n%s", log)
	}
	info, err := c.Job(ctx, p.RayJob)
	if err != nil || info.Metadata["tunebot_run_dir"] != dir || info.Metadata["tunebot_job"] != "train" {
		t.Errorf("the head's record of the job: %+v, %v", info, err)
	}

	eh := newSlurmHooks()
	ejob := evalJob(dir, res.Checkpoint, 0, 1, 2)
	ejob.SessionID = job.SessionID
	ev, err := r.Evaluate(ctx, ejob, eh.hooks())
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, readFile(t, filepath.Join(dir, trainer.EvaluateLog)))
	}
	ep := eh.proc(t)
	if ep.Job != "evaluate" || ep.RayJob != "tunebot-"+job.SessionID+"-t003-r0-evaluation" {
		t.Errorf("evaluate proc %+v", ep)
	}
	ejob.Attach = &ep
	again := newSlurmHooks()
	ev2, err := r.Evaluate(ctx, ejob, again.hooks())
	if err != nil {
		t.Fatalf("attaching to the finished evaluation: %v", err)
	}
	if ev2.Iteration != ev.Iteration || ev2.Metrics[session.MetricVelLinear] != ev.Metrics[session.MetricVelLinear] || len(again.started) != 0 {
		t.Errorf("attached evaluation %+v differs from %+v, or started a job: %+v", ev2, ev, again.started)
	}
}

// TestRayJobSeesItsGPUs: {gpu_ids} is what Ray gave the job, and the job's environment is
// the contract's: no secret of tunebot's, no CUDA_VISIBLE_DEVICES or machine paths of
// tunebot's, the configured extras.
func TestRayJobSeesItsGPUs(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-never-in-a-job-0123456789")
	t.Setenv("CUDA_VISIBLE_DEVICES", "7")
	t.Setenv("HOSTNAME", "tunebots-own-host")
	dir := t.TempDir()
	tpl := trainer.Templates{
		Train: []string{"bash", "-c", `cd "$2" && echo "$1" > gpus && env > env && echo fake > policy.onnx && touch model_0.pt`, "job",
			"{gpu_ids}", "{run_dir}", "{reward_config}", "{iterations}"},
		Evaluate: []string{"true"}, Env: []string{"TUNEBOT_TEST_EXTRA=kept"},
		Ray: rayBackend(t, 2),
	}
	if _, err := newRunner(t, tpl).Train(context.Background(), rayTrainJob(dir, 1), session.JobHooks{}); err != nil {
		t.Fatalf("train: %v\n%s", err, readFile(t, filepath.Join(dir, trainer.TrainLog)))
	}
	var gpus []int
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "gpus"))), &gpus); err != nil || len(gpus) != 2 || gpus[0] == gpus[1] {
		t.Errorf("{gpu_ids} = %q (%v): want two of the head's GPUs", readFile(t, filepath.Join(dir, "gpus")), err)
	}
	env := readFile(t, filepath.Join(dir, "env"))
	for _, bad := range []string{"xoxb-never", "CUDA_VISIBLE_DEVICES=7", "HOSTNAME=tunebots-own-host"} {
		if strings.Contains(env, bad) {
			t.Errorf("the job's environment holds tunebot's %s", bad)
		}
	}
	for _, want := range []string{"PYTHONUNBUFFERED=1", "WANDB_MODE=disabled", "TUNEBOT_TEST_EXTRA=kept", "CUDA_VISIBLE_DEVICES="} {
		if !strings.Contains(env, want) {
			t.Errorf("the job's environment lacks %s", want)
		}
	}
}

// TestRayFailingJob: a trainer that exits 3 fails its trial with the exit status, the Ray
// job and the end of the log Ray kept, as a local job's would.
func TestRayFailingJob(t *testing.T) {
	dir := t.TempDir()
	job := rayTrainJob(dir, 20)
	_, err := rayRunner(t, sim.FailEnv+"=exit").Train(context.Background(), job, session.JobHooks{})
	je := jobError(t, err)
	for _, want := range []string{"exit status 3 (Ray job " + rayJobName(job) + " FAILED on 127.0.0.2)", "train.log ends: ", "injected failure"} {
		if !strings.Contains(je.Reason, want) {
			t.Errorf("reason %q lacks %q", je.Reason, want)
		}
	}
	if !strings.Contains(je.LogTail, "injected failure") {
		t.Errorf("log tail %q lacks the sim's message", je.LogTail)
	}
}

// TestRayKilledJobSaysTheSignal: a trainer killed by SIGKILL on its node says the signal and
// its usual cause.
func TestRayKilledJobSaysTheSignal(t *testing.T) {
	tpl := shellTemplates(`echo "allocating"; kill -KILL $$`)
	tpl.Ray = rayBackend(t, 1)
	_, err := newRunner(t, tpl).Train(context.Background(), rayTrainJob(t.TempDir(), 20), session.JobHooks{})
	je := jobError(t, err)
	for _, want := range []string{"killed by SIGKILL (Ray job ", " FAILED on 127.0.0.2): the kernel's out-of-memory killer is the usual cause; see dmesg", "train.log ends: allocating"} {
		if !strings.Contains(je.Reason, want) {
			t.Errorf("reason %q lacks %q", je.Reason, want)
		}
	}
}

// TestRayJobTimeout: a job past trainer.job_timeout is stopped on the head and fails saying so.
func TestRayJobTimeout(t *testing.T) {
	tpl := trainer.Templates{Train: []string{"bash", "-c", "sleep 600", "job", "{reward_config}", "{iterations}"}, Evaluate: []string{"true"},
		JobTimeout: 2 * time.Second, Ray: rayBackend(t, 1)}
	job := rayTrainJob(t.TempDir(), 1)
	_, err := newRunner(t, tpl).Train(context.Background(), job, session.JobHooks{})
	if je := jobError(t, err); !strings.Contains(je.Reason, "timed out after 2s (Ray job "+rayJobName(job)+" STOPPED)") {
		t.Errorf("reason %q", je.Reason)
	}
	if info, err := rayHead.Client(t).Job(context.Background(), rayJobName(job)); err != nil || info.Status != ray.Stopped {
		t.Errorf("the timed-out job on the head: %+v, %v", info, err)
	}
}

// TestRayJobOutlivesTunebot: a job whose context ends for any reason but a cancelled session
// keeps running on the head; attaching to it awaits and collects it, submitting nothing.
func TestRayJobOutlivesTunebot(t *testing.T) {
	r := rayRunner(t, sim.StepDelayEnv+"=100ms")
	c := rayHead.Client(t)
	dir := t.TempDir()
	job := rayTrainJob(dir, 40)
	h, shutdown := trainUntilRunning(t, r, job)
	if err := shutdown(); !errors.Is(err, context.Canceled) {
		t.Fatalf("train after its context ended: %v, want context.Canceled", err)
	}
	p := h.proc(t)
	if info, err := c.Job(context.Background(), p.RayJob); err != nil || info.Finished() {
		t.Fatalf("the Ray job ended with tunebot: %+v, %v", info, err)
	}
	job.Attach = &p
	again := newSlurmHooks()
	res, err := r.Train(context.Background(), job, again.hooks())
	if err != nil {
		t.Fatalf("attached train: %v\n%s", err, readFile(t, filepath.Join(dir, trainer.TrainLog)))
	}
	if res.Iteration != 40 || len(again.started) != 0 {
		t.Errorf("attached result at iteration %d (want 40); jobs started: %+v", res.Iteration, again.started)
	}
	log := readFile(t, filepath.Join(dir, trainer.TrainLog))
	if !strings.Contains(log, "re-attached") || !strings.Contains(log, "keeps running") || strings.Count(log, "submitted to Ray") != 1 {
		t.Errorf("train.log does not tell one submission, the shutdown and the re-attach:\n%s", log)
	}
}

// TestRayJobOfACancelledSessionNobodyFollowsIsStopped: a job left running when tunebot
// stopped, whose session a person then cancels before any worker follows it again, is
// stopped on the head by EndOrphan; asking again of the ended job is no error, and a runner
// whose backend is no longer ray says where to stop it.
func TestRayJobOfACancelledSessionNobodyFollowsIsStopped(t *testing.T) {
	p := orphanEnded(t, rayRunner(t, sim.StepDelayEnv+"=200ms"), rayTrainJob(t.TempDir(), 100))
	local := newRunner(t, simTemplates())
	if err := local.EndOrphan(context.Background(), p); err == nil || !strings.Contains(err.Error(), "ray job stop "+p.RayJob) {
		t.Errorf("EndOrphan of a Ray job without the ray backend: %v, want it to say how to stop it", err)
	}
	if info, err := rayHead.Client(t).Job(context.Background(), p.RayJob); err != nil || info.Status != ray.Stopped {
		t.Errorf("Ray job %s after EndOrphan: %+v, %v; want %s", p.RayJob, info, err, ray.Stopped)
	}
}

// TestRayCancelledSessionStopsTheJob: a session cancelled by a person stops its Ray job.
func TestRayCancelledSessionStopsTheJob(t *testing.T) {
	p := cancelledWhileRunning(t, rayRunner(t, sim.StepDelayEnv+"=200ms"), rayTrainJob(t.TempDir(), 100))
	if info, err := rayHead.Client(t).Job(context.Background(), p.RayJob); err != nil || info.Status != ray.Stopped {
		t.Errorf("the job of a cancelled session: %+v, %v; want %s", info, err, ray.Stopped)
	}
}

// TestRayUnrecordedJobIsReplaced: a tunebot killed between the submission and recording it
// leaves a job no record names. The next start runs the trial afresh under the same name:
// the stale job is stopped and deleted first, so two jobs of one trial never run at once.
func TestRayUnrecordedJobIsReplaced(t *testing.T) {
	r := rayRunner(t, sim.StepDelayEnv+"=100ms")
	dir := t.TempDir()
	job := rayTrainJob(dir, 40)
	_, shutdown := trainUntilRunning(t, r, job)
	_ = shutdown() // tunebot dies; say its record of the job was lost with it
	job.Target, job.Iterations = 20, 20
	res, err := r.Train(context.Background(), job, newSlurmHooks().hooks())
	if err != nil {
		t.Fatalf("train after the lost record: %v\n%s", err, readFile(t, filepath.Join(dir, trainer.TrainLog)))
	}
	if res.Iteration != 20 {
		t.Errorf("result at iteration %d, want 20 (the new job's)", res.Iteration)
	}
	if log := readFile(t, filepath.Join(dir, trainer.TrainLog)); !strings.Contains(log, "no record names it") || !strings.Contains(log, "=== tunebot: Ray job "+rayJobName(job)+"-2\n") {
		t.Errorf("train.log does not say the stale job was replaced by one of the next name:\n%s", log)
	}
	if info, err := rayHead.Client(t).Job(context.Background(), rayJobName(job)); err != nil || info.Status != ray.Stopped {
		t.Errorf("the unrecorded job: %+v, %v; want it stopped", info, err)
	}
	// A job of the name whose run dir is another's is never taken for this one.
	other := job
	other.RunDir = t.TempDir()
	_, err = r.Train(context.Background(), other, session.JobHooks{})
	if je := jobError(t, err); !strings.Contains(je.Reason, "Ray already has a job "+rayJobName(job)+", of run dir") {
		t.Errorf("reason %q", je.Reason)
	}
}

// TestRayRefusals: a job recorded on Ray with no Ray backend configured, and a head that
// refuses tunebot's token, each say so; a token refused pauses the session (it is the
// cluster's), as the settings New refuses are named.
func TestRayRefusals(t *testing.T) {
	job := rayTrainJob(t.TempDir(), 20)
	job.Attach = &session.Proc{RayJob: "tunebot-x-t003-r0-train", Job: "train"}
	_, err := newRunner(t, simTemplates()).Train(context.Background(), job, session.JobHooks{})
	if je := jobError(t, err); !strings.Contains(je.Reason, "Ray job tunebot-x-t003-r0-train was started on a Ray cluster, but executor.backend is not ray now") {
		t.Errorf("reason %q", je.Reason)
	}

	tpl := simTemplates()
	tpl.Ray = rayBackend(t, 1)
	tpl.Ray.Client = &ray.Client{Address: tpl.Ray.Client.Address} // no token
	_, err = newRunner(t, tpl).Train(context.Background(), rayTrainJob(t.TempDir(), 20), session.JobHooks{})
	if je := jobError(t, err); !errors.Is(err, session.ErrClusterUnavailable) || !strings.Contains(je.Reason, "requires a token (401): set RAY_AUTH_TOKEN") {
		t.Errorf("without the token: %v", err)
	}

	tpl.Ray.Client = &ray.Client{Address: "ray://head:10001"}
	tpl.Ray.GPUs, tpl.Slurm = -1, &trainer.Slurm{}
	_, err = trainer.New(tpl, nil, nil)
	for _, want := range []string{`ray: address: "ray://head:10001": want an http:// or https:// URL`, "must not be negative", "set one backend"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New: %v, want it to say %s", err, want)
		}
	}
}

// TestRayHeadGoesAway: a head that stops answering while its job runs ends the job with the
// cluster unavailable (the session pauses, it does not fail the trial); a head that comes
// back without the job says it lost it, the same way.
func TestRayHeadGoesAway(t *testing.T) {
	r := rayRunner(t, sim.StepDelayEnv+"=100ms")
	dir := t.TempDir()
	job := rayTrainJob(dir, 100)
	ctx := context.Background()
	h := newSlurmHooks()
	errc := make(chan error, 1)
	go func() {
		_, err := r.Train(ctx, job, h.hooks())
		errc <- err
	}()
	h.waitRunning(t, errc)
	rayHead.Stop(t)
	var err error
	select {
	case err = <-errc:
	case <-time.After(time.Minute):
		t.Fatal("the job was still followed a minute after its head went away")
	}
	rayHead.Start(t)
	if je := jobError(t, err); !errors.Is(err, session.ErrClusterUnavailable) || !strings.Contains(je.Reason, "has not answered about job "+rayJobName(job)+" for ") {
		t.Fatalf("with the head gone: %v", err)
	}
	p := h.proc(t)
	job.Attach = &p
	_, err = r.Train(ctx, job, session.JobHooks{})
	if je := jobError(t, err); !errors.Is(err, session.ErrClusterUnavailable) || !strings.Contains(je.Reason, "does not know job "+rayJobName(job)+": it was restarted since") {
		t.Fatalf("the head back without the job: %v", err)
	}
	// A new job runs on the head that came back.
	if _, err := r.Train(ctx, rayTrainJob(t.TempDir(), 5), session.JobHooks{}); err != nil {
		t.Fatalf("a job on the head that came back: %v", err)
	}
}

// TestRayLogIsMasked: a trainer that prints a secret of tunebot's it found on its node (here a
// file) leaves it in Ray's log, which is Ray's; what tunebot copies into train.log and says
// in the failure is masked.
func TestRayLogIsMasked(t *testing.T) {
	const key = "sk-found-on-the-node-0123456789abcdef"
	t.Setenv("DEEPSEEK_API_KEY", key)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "found"), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tpl := shellTemplates(`echo "the key is $(cat "$0/found")"; exit 1`)
	tpl.Ray = rayBackend(t, 0)
	_, err := newRunner(t, tpl).Train(context.Background(), rayTrainJob(dir, 1), session.JobHooks{})
	je := jobError(t, err)
	log := readFile(t, filepath.Join(dir, trainer.TrainLog))
	if strings.Contains(log, key) || strings.Contains(je.Reason, key) || strings.Contains(je.LogTail, key) {
		t.Fatalf("the secret reached train.log or the failure:\n%s\n%s", log, je.Reason)
	}
	if !strings.Contains(log, "the key is ") || !strings.Contains(je.Reason, "exit status 1") {
		t.Errorf("train.log %q, reason %q: want the job's line, masked, and its exit", log, je.Reason)
	}
}

// TestRayLogPlantedByAnotherUser: a link or a FIFO planted, by another user, where the job's
// train.log goes is refused at once, naming it; the link's target is untouched, the FIFO
// never blocks, and nothing is submitted to the head.
func TestRayLogPlantedByAnotherUser(t *testing.T) {
	r := rayRunner(t)
	for _, plant := range []string{"link", "fifo"} {
		t.Run(plant, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(t.TempDir(), "daemon-file")
			if err := os.WriteFile(target, []byte("keep\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, trainer.TrainLog)
			var err error
			if plant == "link" {
				err = os.Symlink(target, path)
			} else {
				err = syscall.Mkfifo(path, 0o666)
			}
			if err != nil {
				t.Fatal(err)
			}
			_ = os.Lchown(path, 65534, 65534) // nobody's, where this test may chown
			job := rayTrainJob(dir, 20)
			done := make(chan error, 1)
			go func() {
				_, err := r.Train(context.Background(), job, session.JobHooks{})
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatal("train blocked on a planted " + plant)
			}
			want := map[string]string{"link": "symbolic link", "fifo": "not a regular file"}[plant]
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), trainer.TrainLog) {
				t.Errorf("train with a %s planted at train.log: %v, want it refused naming it (%s)", plant, err, want)
			}
			if b, _ := os.ReadFile(target); string(b) != "keep\n" {
				t.Errorf("the link's target was written: %q", b)
			}
			if _, err := rayHead.Client(t).Job(context.Background(), rayJobName(job)); !errors.Is(err, ray.ErrNotFound) {
				t.Errorf("a job was submitted for a run dir whose log was refused: %v", err)
			}
		})
	}
}
