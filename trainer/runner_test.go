package trainer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
	"tunebot/trainer"
)

// tunebotBin is the real tunebot binary, built once, for the sim-trainer tests.
var tunebotBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "trainer-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tunebotBin = filepath.Join(dir, "tunebot")
	build := exec.Command("go", "build", "-o", tunebotBin, "tunebot/cmd/tunebot")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building tunebot:", err)
		os.Exit(1)
	}
	code := m.Run()
	cluster.Down()
	rayHead.Down()
	os.RemoveAll(dir)
	os.Exit(code)
}

// simTemplates are the default sim templates run with the test's tunebot binary.
func simTemplates(env ...string) trainer.Templates {
	return trainer.Templates{
		Train: trainer.SimTrain, ResumeArgs: trainer.SimResume, Evaluate: trainer.SimEvaluate,
		Tunebot: tunebotBin, Grace: 2 * time.Second, Env: env,
	}
}

func newRunner(t *testing.T, tpl trainer.Templates) *trainer.Runner {
	t.Helper()
	r, err := trainer.New(tpl, &trainer.Lease{}, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func settings() session.Settings {
	s := session.DefaultSettings()
	s.Normalize()
	return s
}

func trainJob(dir string, target int) session.TrainJob {
	return session.TrainJob{
		SessionID: "s1", Trial: session.TrialRef{Number: 3, Rung: 0}, RunDir: dir,
		Config: session.DefaultSpace().Defaults(), Settings: settings(), Iterations: target, Target: target,
		Space: session.DefaultSpace(),
	}
}

func evalJob(dir, ckpt string, seeds ...int) session.EvalJob {
	return session.EvalJob{SessionID: "s1", Trial: session.TrialRef{Number: 3}, RunDir: dir, Checkpoint: ckpt,
		Seeds: seeds, Output: filepath.Join(dir, "evaluation.json"), Settings: settings(), Space: session.DefaultSpace()}
}

func jobError(t *testing.T, err error) *session.JobError {
	t.Helper()
	var je *session.JobError
	if !errors.As(err, &je) {
		t.Fatalf("error %v (%T) is not a *session.JobError", err, err)
	}
	return je
}

// liveMembers lists the live (non-zombie) processes of group pgid, read from /proc.
func liveMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// startTick reads a process's start time in clock ticks after boot (/proc/PID/stat field 22).
func startTick(t *testing.T, pid int) uint64 {
	t.Helper()
	stat := readFile(t, fmt.Sprintf("/proc/%d/stat", pid))
	tick, err := strconv.ParseUint(strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])[19], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return tick
}

func TestNewRefusesBadTemplates(t *testing.T) {
	good := simTemplates()
	tests := []struct {
		name string
		edit func(*trainer.Templates)
		want []string
	}{
		{"empty train", func(t *trainer.Templates) { t.Train = nil }, []string{"train: must not be empty"}},
		{"empty evaluate", func(t *trainer.Templates) { t.Evaluate = []string{} }, []string{"evaluate: must not be empty"}},
		{"unknown placeholders", func(t *trainer.Templates) {
			t.Train = []string{"x", "--a={rundir}/y", "{seeed}"}
		}, []string{`train[1]: unknown placeholder {rundir} in "--a={rundir}/y" (did you mean {run_dir}?)`,
			`train[2]: unknown placeholder {seeed} in "{seeed}" (did you mean {seed}?)`}},
		{"a placeholder far from every name", func(t *trainer.Templates) { t.Evaluate = []string{"x", "{zzzzzz}"} },
			[]string{`evaluate[1]: unknown placeholder {zzzzzz} in "{zzzzzz}"`}},
		{"checkpoint in a fresh train", func(t *trainer.Templates) { t.Train = []string{"x", "{checkpoint}"} },
			[]string{`train[1]: placeholder {checkpoint} in "{checkpoint}" has no value in a train job`}},
		{"eval output in resume args", func(t *trainer.Templates) { t.ResumeArgs = []string{"{eval_output}"} },
			[]string{`resume_args[0]: placeholder {eval_output} in "{eval_output}" has no value in a resume job`}},
		{"iterations in evaluate", func(t *trainer.Templates) { t.Evaluate = []string{"x", "{iterations}"} },
			[]string{`evaluate[1]: placeholder {iterations} in "{iterations}" has no value in an evaluate job`}},
		{"python unset", func(t *trainer.Templates) { t.Train = []string{"{python}", "train.py"} },
			[]string{"python: empty, but a template uses {python}"}},
		{"bad env", func(t *trainer.Templates) { t.Env = []string{"NOEQUALS"} }, []string{`env: "NOEQUALS" is not KEY=VALUE`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl := good
			tt.edit(&tpl)
			_, err := trainer.New(tpl, nil, nil)
			if err == nil {
				t.Fatal("New accepted bad templates")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if _, err := trainer.New(good, nil, nil); err != nil {
		t.Errorf("New refused the sim templates: %v", err)
	}
	// A name far from every placeholder gets no guess.
	far := good
	far.Evaluate = []string{"x", "{zzzzzz}"}
	if _, err := trainer.New(far, nil, nil); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a far name: %v", err)
	}
}

// TestPlaceholdersAndEnv runs a shell that records its argv and environment, then fails.
func TestPlaceholdersAndEnv(t *testing.T) {
	t.Setenv("DEEPSEEK_API_KEY", "sk-secret")
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-secret")
	t.Setenv("SLACK_APP_TOKEN", "xapp-secret")
	t.Setenv("DISCORD_BOT_TOKEN", "discord-secret")
	t.Setenv("NTFY_TOKEN", "ntfy-secret")
	t.Setenv("TUNEBOT_WEBHOOK_URL", "https://hooks.example.org/secret-path")
	t.Setenv("CUDA_VISIBLE_DEVICES", "7")
	t.Setenv("TUNEBOT_TEST_KEEP", "kept")
	record := `printf '%s\n' "$@" > "$0/argv"; env > "$0/env"; echo recorded; exit 4`
	dir := t.TempDir()
	r := newRunner(t, trainer.Templates{
		Python: "/usr/bin/python3", Tunebot: "/opt/tunebot",
		Train: []string{"sh", "-c", record, "{run_dir}", "--run={run_dir}/x", "{gpu_ids}", "{run_name}",
			"it={iterations}/{target_iterations}/{start_iteration}", "{seed}", "{num_envs}", "{task}",
			"{reward_config}", "{python}", "{tunebot}", "{eval_num_envs}:{eval_steps}", `{"json": {"N": 1}}`},
		ResumeArgs: []string{"--resume={checkpoint}"},
		Evaluate:   []string{"sh", "-c", record, "{run_dir}", "{checkpoint}", "{eval_output}", "{eval_seeds}"},
		Env:        []string{"EXTRA=1", "SLACK_SIGNING_SECRET=x", "CUDA_VISIBLE_DEVICES=9"},
	})
	job := trainJob(dir, 900)
	job.Settings.GPUs = []int{2, 5}
	job.Iterations, job.StartIter, job.Checkpoint = 600, 300, "/ckpt/model_300.pt"
	job.Trial = session.TrialRef{Number: 7, Rung: 1}
	_, err := r.Train(context.Background(), job, session.JobHooks{})
	je := jobError(t, err)
	if je.Reason != "exit status 4; train.log ends: recorded" || !strings.Contains(je.LogTail, "recorded") {
		t.Errorf("JobError = %q with tail %q, want exit status 4 and the log's end", je.Reason, je.LogTail)
	}
	argv, _ := os.ReadFile(filepath.Join(dir, "argv"))
	want := []string{"--run=" + dir + "/x", "[2,5]", "auto-tune-t007-r1", "it=600/900/300", "42", "4096",
		"Unitree-Go2-Flat", dir + "/reward_config.json", "/usr/bin/python3", "/opt/tunebot", "256:1000",
		`{"json": {"N": 1}}`, "--resume=/ckpt/model_300.pt"}
	if d := cmp.Diff(want, strings.Split(strings.TrimSuffix(string(argv), "\n"), "\n")); d != "" {
		t.Errorf("train argv (-want +got):\n%s", d)
	}
	env := strings.Split(readFile(t, filepath.Join(dir, "env")), "\n")
	for _, kv := range env {
		for _, secret := range []string{"DEEPSEEK_API_KEY=", "SLACK_", "DISCORD_BOT_TOKEN=", "NTFY_TOKEN=", "TUNEBOT_WEBHOOK_URL="} {
			if strings.HasPrefix(kv, secret) {
				t.Errorf("child saw secret %s", strings.SplitN(kv, "=", 2)[0])
			}
		}
	}
	for _, kv := range []string{"CUDA_VISIBLE_DEVICES=2,5", "PYTHONUNBUFFERED=1", "WANDB_MODE=disabled", "TUNEBOT_TEST_KEEP=kept", "EXTRA=1"} {
		if !slices.Contains(env, kv) {
			t.Errorf("child env lacks %s", kv)
		}
	}
	if slices.Contains(env, "CUDA_VISIBLE_DEVICES=7") || slices.Contains(env, "CUDA_VISIBLE_DEVICES=9") {
		t.Error("child kept another CUDA_VISIBLE_DEVICES")
	}
	var cfg session.RewardConfig
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "reward_config.json"))), &cfg); err != nil || !cfg.Equal(job.Config) {
		t.Errorf("reward_config.json does not hold the job's config (err %v)", err)
	}

	// A fresh run gets no resume args; evaluate gets its own placeholders.
	job.Checkpoint = ""
	r.Train(context.Background(), job, session.JobHooks{})
	if argv := readFile(t, filepath.Join(dir, "argv")); strings.Contains(argv, "--resume") {
		t.Errorf("fresh run got resume args: %q", argv)
	}
	_, err = r.Evaluate(context.Background(), evalJob(dir, "/ckpt/model_900.pt", 0, 1, 2), session.JobHooks{})
	jobError(t, err)
	want = []string{"/ckpt/model_900.pt", dir + "/evaluation.json", "0,1,2"}
	if d := cmp.Diff(want, strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(dir, "argv")), "\n"), "\n")); d != "" {
		t.Errorf("evaluate argv (-want +got):\n%s", d)
	}
	if log := readFile(t, filepath.Join(dir, "evaluate.log")); !strings.Contains(log, "recorded") {
		t.Errorf("evaluate.log lacks the job's output: %q", log)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTimeoutEndsWholeGroup: a job deaf to SIGINT, with children of its own, outlives its
// timeout; it fails with the timeout as reason and nothing of its group survives.
func TestTimeoutEndsWholeGroup(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, trainer.Templates{
		Train:      []string{"sh", "-c", `trap "" INT; sleep 100 & sleep 100 & echo waiting; wait`},
		Evaluate:   []string{"true"},
		JobTimeout: 300 * time.Millisecond, Grace: 200 * time.Millisecond,
	})
	var proc session.Proc
	_, err := r.Train(context.Background(), trainJob(dir, 10), session.JobHooks{Started: func(p session.Proc) { proc = p }})
	je := jobError(t, err)
	if want := "timed out after 300ms; train.log ends: waiting"; je.Reason != want {
		t.Errorf("reason %q, want %q", je.Reason, want)
	}
	if proc.PID == 0 || proc.PGID != proc.PID || proc.StartTick == 0 || proc.Job != "train" || proc.Remote() {
		t.Fatalf("Started hook got %+v", proc)
	}
	if left := liveMembers(t, proc.PGID); len(left) > 0 {
		t.Errorf("processes %v of the job's group survived", left)
	}
}

// TestCancelEndsChildren: cancelling a job whose shell started children ends all of them
// (a non-interactive shell's background jobs ignore SIGINT, so they need the SIGKILL).
func TestCancelEndsChildren(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, trainer.Templates{
		Train:    []string{"sh", "-c", `sleep 100 & sleep 100 & wait`},
		Evaluate: []string{"true"}, Grace: 300 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan session.Proc, 1)
	go func() {
		p := <-started
		for len(liveMembers(t, p.PGID)) < 3 { // the shell and both sleeps
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		started <- p
	}()
	_, err := r.Train(ctx, trainJob(dir, 10), session.JobHooks{Started: func(p session.Proc) { started <- p }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Train after cancel = %v, want an error wrapping context.Canceled", err)
	}
	p := <-started
	if left := liveMembers(t, p.PGID); len(left) > 0 {
		t.Errorf("processes %v of the cancelled job survived", left)
	}
}

// TestLeftoverDaemonKilled: a job that exits but leaves a child behind does not leave it
// running (it would hold the GPU).
func TestLeftoverDaemonKilled(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, trainer.Templates{Train: []string{"sh", "-c", `sleep 100 & exit 0`}, Evaluate: []string{"true"}})
	var proc session.Proc
	_, err := r.Train(context.Background(), trainJob(dir, 10), session.JobHooks{Started: func(p session.Proc) { proc = p }})
	if je := jobError(t, err); je.Reason != "no model_<N>.pt checkpoint in run dir" {
		t.Errorf("reason %q", je.Reason)
	}
	if left := liveMembers(t, proc.PGID); len(left) > 0 {
		t.Errorf("the job's daemon %v survived", left)
	}
}

// programs writes into a fresh directory what a trainer template may wrongly point at: a
// file that is not executable, a directory, a script whose #! interpreter is missing.
func programs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, f := range map[string]struct {
		body string
		mode os.FileMode
	}{"notexec": {"#!/bin/sh\n", 0o644}, "badshebang": {"#!/nonexistent/python\n", 0o755}} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(f.body), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A trainer that cannot be started fails its trial naming the path it tried and why: a bare
// name not on PATH, a path that does not exist (a relative one against the working
// directory), a directory, a file that is not executable, a script that will not start.
func TestStartFailure(t *testing.T) {
	dir := programs(t)
	for _, tc := range []struct{ argv0, want string }{
		{"/nonexistent/venv/bin/python", `the trainer executable "/nonexistent/venv/bin/python" does not exist`},
		{"python3.11-not-installed", `the trainer executable "python3.11-not-installed" was not found on PATH`},
		{"bin/python", `the trainer executable "` + filepath.Join(dir, "bin/python") + `" does not exist`},
		{"adir", ""}, // a bare name is looked up on PATH, not in the working directory
		{filepath.Join(dir, "adir"), `the trainer executable "` + filepath.Join(dir, "adir") + `" is a directory`},
		{filepath.Join(dir, "notexec"), `the trainer executable "` + filepath.Join(dir, "notexec") + `" is not executable (mode -rw-r--r--)`},
		{filepath.Join(dir, "badshebang"), `the trainer executable "` + filepath.Join(dir, "badshebang") + `" could not be started: no such file or directory (a script whose #! interpreter is missing?)`},
	} {
		t.Run(tc.argv0, func(t *testing.T) {
			if tc.want == "" {
				tc.want = `the trainer executable "` + tc.argv0 + `" was not found on PATH`
			}
			r := newRunner(t, trainer.Templates{Workdir: dir, Train: []string{tc.argv0, "--run-dir", "{run_dir}"}, Evaluate: []string{"true"}})
			run := t.TempDir()
			_, err := r.Train(context.Background(), trainJob(run, 10), session.JobHooks{})
			je := jobError(t, err)
			if je.Error() != "train job failed: "+tc.want {
				t.Errorf("failure %q\nwant      %q", je.Error(), "train job failed: "+tc.want)
			}
			if log := readFile(t, filepath.Join(run, trainer.TrainLog)); !strings.Contains(log, tc.want) {
				t.Errorf("train.log does not say it:\n%s", log)
			}
		})
	}
}

// A working directory that is not there fails every job's start, whatever its program: the
// failure names the directory, not the program (which is there) nor a script's #! line.
func TestStartFailureNoWorkdir(t *testing.T) {
	gone := filepath.Join(t.TempDir(), "gone")
	want := `the working directory "` + gone + `" (trainer.workdir) does not exist`
	for _, argv0 := range []string{"sh", "/bin/sh", "bin/python", "{python}"} {
		t.Run(argv0, func(t *testing.T) {
			tpl := trainer.Templates{Workdir: gone, Python: "sh", Train: []string{argv0, "-c", "true"}, Evaluate: []string{"true"}}
			_, err := newRunner(t, tpl).Train(context.Background(), trainJob(t.TempDir(), 10), session.JobHooks{})
			if je := jobError(t, err); je.Error() != "train job failed: "+want {
				t.Errorf("failure %q\nwant      %q", je.Error(), "train job failed: "+want)
			}
			if got := tpl.ProgramProblems(); !slices.Equal(got, []string{"train: " + want, "evaluate: " + want}) {
				t.Errorf("problems %q", got)
			}
		})
	}
}

// ProgramProblems names each template whose program, {python} and {tunebot} filled in,
// cannot be started, as the job would fail on it; one that holds another placeholder is
// known only when a job starts.
func TestProgramProblems(t *testing.T) {
	dir := programs(t)
	tpl := trainer.Templates{Workdir: dir, Python: "venv/bin/python", Train: []string{"{python}", "-m", "x"},
		ResumeArgs: []string{"--resume", "{checkpoint}"}, Evaluate: []string{filepath.Join(dir, "notexec")}}
	want := []string{
		`train: the trainer executable "` + filepath.Join(dir, "venv/bin/python") + `" ({python}, trainer.python) does not exist`,
		`evaluate: the trainer executable "` + filepath.Join(dir, "notexec") + `" is not executable (mode -rw-r--r--)`,
	}
	if diff := cmp.Diff(want, tpl.ProgramProblems()); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	for _, ok := range []trainer.Templates{
		{Train: []string{"sh", "-c", "true"}, Evaluate: []string{"{tunebot}", "sim-eval"}},
		{Train: []string{"{run_dir}/train.sh"}, Evaluate: []string{"/bin/true"}},
	} {
		if got := ok.ProgramProblems(); len(got) > 0 {
			t.Errorf("%v: %v", ok, got)
		}
	}
}

func TestEndOrphan(t *testing.T) {
	r := newRunner(t, trainer.Templates{Train: []string{"true"}, Evaluate: []string{"true"}, Grace: 200 * time.Millisecond})
	cmd := exec.Command("sh", "-c", `trap "" INT; sleep 100 & sleep 100 & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done })
	pid := cmd.Process.Pid
	for len(liveMembers(t, pid)) < 3 {
		time.Sleep(10 * time.Millisecond)
	}
	tick := startTick(t, pid)
	ctx := context.Background()

	// A reused PID (another start tick) and a PID that is gone are left alone.
	if err := r.EndOrphan(ctx, session.Proc{PID: pid, PGID: pid, StartTick: tick + 1}); err != nil {
		t.Fatalf("EndOrphan of a reused pid: %v", err)
	}
	if err := r.EndOrphan(ctx, session.Proc{PID: 1 << 30, PGID: pid, StartTick: tick}); err != nil {
		t.Fatalf("EndOrphan of a gone pid: %v", err)
	}
	if n := len(liveMembers(t, pid)); n != 3 {
		t.Fatalf("EndOrphan touched a process that was not the recorded one: %d of 3 left", n)
	}

	if err := r.EndOrphan(ctx, session.Proc{PID: pid, PGID: pid, StartTick: tick}); err != nil {
		t.Fatalf("EndOrphan: %v", err)
	}
	if left := liveMembers(t, pid); len(left) > 0 {
		t.Errorf("orphan group members %v survived EndOrphan", left)
	}
}

// A wrapper that died (a shell, uv run) leaves its workers in the group: EndOrphan ends
// them although the recorded leader is gone, and leaves a group from before a reboot alone.
func TestEndOrphanWithDeadLeader(t *testing.T) {
	r := newRunner(t, trainer.Templates{Train: []string{"true"}, Evaluate: []string{"true"}, Grace: 200 * time.Millisecond})
	cmd := exec.Command("sh", "-c", `sleep 100 & sleep 100 & read x`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	for len(liveMembers(t, pid)) < 3 {
		time.Sleep(10 * time.Millisecond)
	}
	tick := startTick(t, pid)
	started := time.Now()
	in.Close() // the leader's read ends, it exits, and its two sleeps stay behind
	cmd.Wait()
	if n := len(liveMembers(t, pid)); n != 2 {
		t.Fatalf("%d members after the leader exited, want its 2 children", n)
	}
	ctx := context.Background()
	if err := r.EndOrphan(ctx, session.Proc{PID: pid, PGID: pid, StartTick: tick, Started: time.Unix(1, 0)}); err != nil {
		t.Fatalf("EndOrphan of a group from before the boot: %v", err)
	}
	if n := len(liveMembers(t, pid)); n != 2 {
		t.Fatalf("EndOrphan ended a group recorded before this boot: %d of 2 left", n)
	}
	if err := r.EndOrphan(ctx, session.Proc{PID: pid, PGID: pid, StartTick: tick, Started: started}); err != nil {
		t.Fatalf("EndOrphan: %v", err)
	}
	if left := liveMembers(t, pid); len(left) > 0 {
		t.Errorf("children %v of a dead leader survived EndOrphan", left)
	}
}

// TestLeaseThroughRunner: jobs on one GPU never overlap; jobs on disjoint GPUs run at the
// same time (each waits for the other to start, so run one after another they would hang).
func TestLeaseThroughRunner(t *testing.T) {
	t.Run("same GPU", func(t *testing.T) {
		shared := t.TempDir()
		r := newRunner(t, trainer.Templates{
			Train: []string{"sh", "-c", `if [ -e "$0/running" ]; then echo overlap >> "$0/overlaps"; fi
touch "$0/running"; sleep 0.1; rm "$0/running"; exit 1`, shared},
			Evaluate: []string{"true"},
		})
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				r.Train(context.Background(), trainJob(filepath.Join(t.TempDir(), strconv.Itoa(i)), 10), session.JobHooks{})
			})
		}
		wg.Wait()
		if _, err := os.Stat(filepath.Join(shared, "overlaps")); err == nil {
			t.Error("two jobs on GPU 0 ran at the same time")
		}
	})
	t.Run("disjoint GPUs", func(t *testing.T) {
		shared := t.TempDir()
		r := newRunner(t, trainer.Templates{
			Train:    []string{"sh", "-c", `touch "$0/{gpu_ids}"; until [ -e "$0/[0]" ] && [ -e "$0/[1]" ]; do sleep 0.01; done; exit 1`, shared},
			Evaluate: []string{"true"},
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() {
				job := trainJob(t.TempDir(), 10)
				job.Settings.GPUs = []int{i}
				_, errs[i] = r.Train(ctx, job, session.JobHooks{})
			})
		}
		wg.Wait()
		for _, err := range errs {
			if je := jobError(t, err); je.Reason != "exit status 1" {
				t.Errorf("job on a disjoint GPU: %v (they did not run concurrently)", err)
			}
		}
	})
}
