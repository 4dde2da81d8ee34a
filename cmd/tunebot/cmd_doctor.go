package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"tunebot/config"
	"tunebot/private"
	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer"
	"tunebot/trainer/slurm"
)

func init() {
	register("doctor", "doctor --config FILE: check that python, the trainer, the task, GPUs (or Slurm, or the Ray head) and the data dir are ready", runDoctor)
}

// doctorTimeout bounds each Python probe: importing mjlab and torch the first time on a
// cold disk takes tens of seconds, a hung import must not hang the doctor.
const doctorTimeout = 5 * time.Minute

// adapterModule is the Python module of the mjlab adapter (trainer/mjlab).
const adapterModule = "tunebot_mjlab"

// doctorReport collects one line per check: ok, warn (works, but look) or fail (what to do).
type doctorReport struct {
	w      io.Writer
	failed bool
}

func (r *doctorReport) line(status, name, msg string) {
	if status == "fail" {
		r.failed = true
	}
	fmt.Fprintf(r.w, "%-4s  %-10s %s\n", status, name, msg)
}

// adapterCheck is what `python -m tunebot_mjlab check` prints.
type adapterCheck struct {
	Packages   map[string]string `json:"packages"`
	Missing    []string          `json:"missing"`
	Task       string            `json:"task"`
	Registered bool              `json:"registered"`
	Error      string            `json:"error"`
	GPUs       []string          `json:"gpus"`
}

// runDoctor checks what a real session needs before it starts one, so a missing package or
// an unregistered task shows up here and not as trial 0's failure an hour later.
func runDoctor(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "doctor", `usage: tunebot doctor --config FILE

Checks line by line that this machine is ready for real training: python, the trainer and its
task, the GPUs (or Slurm, or the Ray head), the data dir and the data file.`)
	path := fs.String("config", "", "config file (YAML); the embedded defaults when empty")
	cfg, code, ok := parseConfigFlags(e, fs, args, path)
	if !ok {
		return code
	}
	r := &doctorReport{w: e.stdout}
	r.line("ok", "config", "valid ("+tasksText(cfg)+")")
	for _, w := range cfg.Warnings { // as config check says them
		r.line("warn", "config", w)
	}
	// What tune and run check before they start, so doctor never passes what they refuse.
	doctorAdvisor(r, cfg, e.getenv)
	doctorChat(r, cfg, e)
	if cfg.Trainer.IsSim() {
		r.line("ok", "trainer", "built-in sim trainer: nothing to check")
	} else {
		doctorPrograms(r, cfg)
		doctorTrainer(ctx, r, cfg)
	}
	switch cfg.Executor.Backend {
	case config.BackendSlurm:
		doctorSlurm(ctx, r, cfg, e.getenv)
	case config.BackendRay:
		doctorRay(ctx, r, cfg, e.getenv)
	}
	doctorDataDir(r, cfg.DataDir)
	doctorDisk(r, cfg)
	doctorStore(r, dataFile(cfg))
	if r.failed {
		fmt.Fprintln(e.stdout, "\nsome checks failed: fix the lines marked fail, then run tunebot doctor again")
		return 1
	}
	return 0
}

// doctorAdvisor checks that sessions have a proposer: the DeepSeek advisor, or the numeric
// sampler as the fallback (tune refuses a session with neither).
func doctorAdvisor(r *doctorReport, cfg config.Config, getenv func(string) string) {
	switch {
	case noProposer(getenv, cfg.Session.Fallback, doctorFallbackFix) != "":
		r.line("fail", "advisor", noProposer(getenv, cfg.Session.Fallback, doctorFallbackFix))
	case getenv("DEEPSEEK_API_KEY") != "":
		r.line("ok", "advisor", fmt.Sprintf("DeepSeek %s at %s (DEEPSEEK_API_KEY is set; `tunebot agent test` makes a call)", cfg.Advisor.Model, cfg.Advisor.BaseURL))
	default:
		r.line("ok", "advisor", "none (DEEPSEEK_API_KEY is not set): the numeric sampler proposes, as session.fallback is true")
	}
}

// doctorChat builds the chat adapters and pushes run would start, as run builds them
// (building connects nowhere), so a token missing from the environment shows here.
func doctorChat(r *doctorReport, cfg config.Config, e *env) {
	// Building needs no store: the adapters use it only once they run.
	adapters, err := newAdapters(chatDeps{cfg: cfg, env: e, log: slog.New(slog.DiscardHandler)})
	if err != nil {
		r.line("fail", "chat", err.Error()+": run would not start")
		return
	}
	push, _, err := newPushes(cfg, e.getenv)
	if err != nil {
		r.line("fail", "chat", err.Error()+": run would not start")
		return
	}
	var names []string
	for _, ad := range adapters {
		names = append(names, ad.Platform())
	}
	names = append(names, push...)
	if len(names) == 0 {
		r.line("ok", "chat", "no chat platform enabled: run takes commands on the console")
		return
	}
	r.line("ok", "chat", strings.Join(names, ", ")+": configured, tokens set")
}

// trainerKind is the kind of trainer t runs, recorded on the presets it makes.
func trainerKind(t config.TrainerConfig) string {
	switch {
	case t.IsSim():
		return session.TrainerSim
	case usesAdapter(t):
		return session.TrainerMjlab
	}
	return session.TrainerCommand
}

func usesAdapter(t config.TrainerConfig) bool {
	return slices.Contains(t.Train, adapterModule) || slices.Contains(t.Evaluate, adapterModule)
}

func doctorTrainer(ctx context.Context, r *doctorReport, cfg config.Config) {
	py, err := resolvePython(cfg.Trainer.Python, cfg.Trainer.Workdir)
	if err != nil {
		r.line("fail", "python", err.Error())
		return
	}
	out, err := probe(ctx, cfg.Trainer.Workdir, py, "--version")
	if err != nil {
		r.line("fail", "python", fmt.Sprintf("%s does not run: %v", py, err))
		return
	}
	r.line("ok", "python", fmt.Sprintf("%s (%s)", py, strings.TrimSpace(out)))
	if !usesAdapter(cfg.Trainer) {
		r.line("warn", "trainer", "the templates do not run "+adapterModule+": packages, task and defaults are not checked")
		doctorLocalGPUs(ctx, r, cfg, nil)
		return
	}

	tasks := doctorTasks(cfg)
	task := tasks[0]
	out, err = probe(ctx, cfg.Trainer.Workdir, py, "-m", adapterModule, "check", "--task", task)
	var ck adapterCheck
	if err == nil {
		err = json.Unmarshal([]byte(out), &ck)
	}
	if err != nil {
		r.line("fail", "packages", fmt.Sprintf("%s is not importable with %s: %v; run scripts/mjlab-venv.sh and point trainer.python at its bin/python", adapterModule, py, err))
		return
	}
	if len(ck.Missing) > 0 {
		r.line("fail", "packages", fmt.Sprintf("missing %s: pip install -r trainer/mjlab/requirements.txt into %s's venv (scripts/mjlab-venv.sh does it)", strings.Join(ck.Missing, ", "), py))
	} else {
		r.line("ok", "packages", versions(ck.Packages))
	}
	doctorLocalGPUs(ctx, r, cfg, ck.GPUs)
	doctorTask(ctx, r, cfg, py, task, ck)
	for _, task := range tasks[1:] {
		doctorTask(ctx, r, cfg, py, task, adapterCheck{})
	}
}

// doctorPrograms checks that the program of each template (train, evaluate; {python}
// filled in) is an executable file, naming the template and the path when it is not: every
// trial would fail on it at once. On a cluster the nodes start it, so this machine's view
// is a warning.
func doctorPrograms(r *doctorReport, cfg config.Config) {
	t := cfg.Trainer
	probs := trainer.Templates{Python: t.Python, Workdir: t.Workdir, Train: t.Train, Evaluate: t.Evaluate}.ProgramProblems()
	status, then := "fail", ": every trial would fail at once"
	if nodes := clusterNodes(cfg); nodes != "" {
		status, then = "warn", " on this machine: the "+nodes+" start it, so check it is there on them"
	}
	for _, p := range probs {
		r.line(status, "program", "trainer."+p+then)
	}
	if len(probs) == 0 {
		r.line("ok", "program", "trainer.train and trainer.evaluate start executable files")
	}
}

// resolvePython finds the interpreter the templates will run: a bare name on PATH, a
// relative path against the trainer's working directory.
func resolvePython(py, workdir string) (string, error) {
	if py == "" {
		return "", errors.New("trainer.python is empty: set it to the adapter venv's bin/python")
	}
	if !strings.ContainsRune(py, filepath.Separator) {
		p, err := exec.LookPath(py)
		if err != nil {
			return "", fmt.Errorf("%s is not on PATH: set trainer.python to the adapter venv's bin/python", py)
		}
		return p, nil
	}
	if !filepath.IsAbs(py) && workdir != "" {
		py = filepath.Join(workdir, py)
	}
	st, err := os.Stat(py)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file: create the venv with scripts/mjlab-venv.sh or fix trainer.python", py)
	}
	return py, nil
}

// probe runs python with args and returns its stdout; on failure the error carries the
// last line of stderr, which is where Python says what went wrong.
func probe(ctx context.Context, dir, py string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, args...)
	if dir != "" {
		cmd.Dir = dir
	}
	cmd.Env = append(os.Environ(), "WANDB_MODE=disabled", "PYTHONUNBUFFERED=1")
	if os.Getenv("MUJOCO_GL") == "" {
		cmd.Env = append(cmd.Env, "MUJOCO_GL=disable")
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
			return "", fmt.Errorf("%w: %s", err, last)
		}
		return "", err
	}
	return stdout.String(), nil
}

func versions(pkgs map[string]string) string {
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " " + pkgs[n]
	}
	return strings.Join(parts, ", ")
}

// doctorLocalGPUs checks this machine's GPUs when the jobs run here; on a cluster the
// nodes' GPUs are what matters, and doctorSlurm and doctorRay check the cluster offers them.
func doctorLocalGPUs(ctx context.Context, r *doctorReport, cfg config.Config, torchGPUs []string) {
	if cfg.Executor.Backend != config.BackendLocal {
		r.line("ok", "gpus", "jobs run on "+clusterName(cfg)+", which assigns the GPUs: this machine's are not used")
		return
	}
	doctorGPUs(ctx, r, torchGPUs, cfg.Session.GPUs)
}

// clusterName names the cluster the jobs run on: "Slurm", "Ray"; "cluster" for the local
// backend (whose sessions may still hold jobs a cluster backend started).
func clusterName(cfg config.Config) string {
	switch cfg.Executor.Backend {
	case config.BackendSlurm:
		return "Slurm"
	case config.BackendRay:
		return "Ray"
	}
	return "cluster"
}

// clusterNodes names the machines that start the jobs when they are not this one: "Slurm
// nodes", "Ray nodes"; "" for the local backend.
func clusterNodes(cfg config.Config) string {
	if cfg.Executor.Backend == config.BackendLocal {
		return ""
	}
	return clusterName(cfg) + " nodes"
}

// slurmCommands are the Slurm client commands the slurm backend and doctor run.
var slurmCommands = []string{"sbatch", "squeue", "sacct", "scancel", "sinfo"}

// doctorSlurm checks what the slurm backend needs: the client commands on PATH, a
// reachable controller, the partition up, its GPU gres when jobs ask for GPUs, and a
// data_dir the nodes can plausibly see.
func doctorSlurm(ctx context.Context, r *doctorReport, cfg config.Config, getenv func(string) string) {
	var missing []string
	for _, c := range slurmCommands {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		r.line("fail", "slurm", fmt.Sprintf("%s not on PATH: install Slurm's client commands where tunebot runs (Debian: apt install slurm-client; on a cluster, run tunebot on a login node), or add their directory to PATH", strings.Join(missing, ", ")))
		return
	}
	r.line("ok", "slurm", strings.Join(slurmCommands, ", ")+" are on PATH")
	client := &slurm.Client{}
	if conf := getenv("SLURM_CONF"); conf != "" {
		client.Env = append(os.Environ(), "SLURM_CONF="+conf)
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	parts, err := client.Partitions(pctx)
	if err != nil {
		r.line("fail", "partition", fmt.Sprintf("cannot list the partitions: %v; check that slurmctld is reachable from here (SLURM_CONF, munge running, `sinfo` works)", err))
		return
	}
	want := cfg.Executor.Slurm.Partition
	var names []string
	var p *slurm.Partition
	for i := range parts {
		names = append(names, parts[i].Name)
		if parts[i].Name == want || want == "" && parts[i].Default {
			p = &parts[i]
		}
	}
	switch {
	case p == nil && want == "":
		r.line("fail", "partition", fmt.Sprintf("executor.slurm.partition is empty and the cluster has no default partition: set it to one of %s", strings.Join(names, ", ")))
		return
	case p == nil:
		r.line("fail", "partition", fmt.Sprintf("executor.slurm.partition %q does not exist; sinfo lists: %s", want, strings.Join(names, ", ")))
		return
	case !p.Up:
		r.line("fail", "partition", fmt.Sprintf("partition %s is not up: jobs would wait in the queue until an administrator brings it up (scontrol update partition=%s state=up), or pick another: %s", p.Name, p.Name, strings.Join(names, ", ")))
	default:
		which := p.Name
		if want == "" {
			which += " (the cluster's default)"
		}
		r.line("ok", "partition", which+" is up")
	}
	gpus := cfg.Executor.GPUsPerTrial
	switch {
	case gpus > 0 && !slurm.HasGPUs(p.Gres):
		r.line("fail", "gres", fmt.Sprintf("partition %s offers no GPU gres (sinfo %%G: %s), but every job asks --gres=gpu:%d and would never start: pick a GPU partition, or set executor.gpus_per_trial: 0 for CPU jobs", p.Name, p.Gres, gpus))
	case gpus > 0:
		r.line("ok", "gres", fmt.Sprintf("partition %s offers %s; each job asks --gres=gpu:%d", p.Name, p.Gres, gpus))
	default:
		r.line("ok", "gres", "executor.gpus_per_trial is 0: jobs ask for no GPU")
	}
	if abs, err := filepath.Abs(cfg.DataDir); err == nil && (abs == "/tmp" || strings.HasPrefix(abs, "/tmp/")) {
		r.line("warn", "data dir", abs+" is under /tmp, which compute nodes seldom share: jobs write their run dirs there, so data_dir must be on a filesystem the nodes mount at the same path")
	}
}

// doctorGPUs reports the GPUs torch sees (or nvidia-smi, when the adapter was not asked).
// No GPU is a warning: the trainer runs on CPU, which is what the tests do.
func doctorGPUs(ctx context.Context, r *doctorReport, torchGPUs []string, want []int) {
	gpus := torchGPUs
	if gpus == nil {
		if smi, err := exec.LookPath("nvidia-smi"); err == nil {
			if out, err := probe(ctx, "", smi, "-L"); err == nil {
				for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
					if l != "" {
						gpus = append(gpus, l)
					}
				}
			}
		}
	}
	if len(gpus) == 0 {
		r.line("warn", "gpus", "none visible: training runs on CPU (fine for a test, far too slow for a real session); install the NVIDIA driver or check CUDA_VISIBLE_DEVICES")
		return
	}
	var bad []string
	for _, g := range want {
		if g >= len(gpus) {
			bad = append(bad, fmt.Sprint(g))
		}
	}
	if len(bad) > 0 {
		r.line("fail", "gpus", fmt.Sprintf("session.gpus names %s but only %d GPU(s) are visible: %s", strings.Join(bad, ", "), len(gpus), strings.Join(gpus, "; ")))
		return
	}
	r.line("ok", "gpus", fmt.Sprintf("%d visible: %s", len(gpus), strings.Join(gpus, "; ")))
}

// doctorDefaults compares the configured space with the installed task. A space in the
// names of the adapter's table for the task (docs/design.md §2) is compared with the task's
// defaults in those names; any other space is read in the task's own names, as the adapter
// reads it. A default that differs is a warning, one per scalar: the space's defaults are
// what the baseline trains with, so the baseline is not the task's stock configuration. A
// name the task lacks in its own names fails: every train job would refuse it.
func doctorDefaults(ctx context.Context, r *doctorReport, cfg config.Config, py, task string) {
	label := taskLabel(cfg, "defaults", task)
	tr, err := taskRewards(ctx, cfg.Trainer.Workdir, py, task)
	if err != nil {
		r.line("warn", label, fmt.Sprintf("could not read the task's defaults: %v", err))
		return
	}
	space := cfg.SpaceOf(task)
	if tr.UsesTable(space.Names()) && tr.TableDefaults != nil {
		diffs := diffDefaults("term", space.Defaults().Weights, tr.TableDefaults.Weights)
		diffs = append(diffs, diffDefaults("param", space.Defaults().Params, tr.TableDefaults.Params)...)
		if len(diffs) == 0 {
			r.line("ok", label, fmt.Sprintf("the reward space's defaults match task %s (%d weights, %d params)", task, len(tr.TableDefaults.Weights), len(tr.TableDefaults.Params)))
			return
		}
		for _, d := range diffs {
			r.line("warn", label, d)
		}
		return
	}
	own := tr.OwnDefaults()
	inSpace := func(term string) bool { _, ok := space.Term(term); return ok }
	fails, warns := diffOwn("term", space.Defaults().Weights, own.Weights, task, inSpace)
	f, w := diffOwn("param", space.Defaults().Params, own.Params, task, inSpace)
	fails, warns = append(fails, f...), append(warns, w...)
	for _, d := range fails {
		r.line("fail", label, d)
	}
	for _, d := range warns {
		r.line("warn", label, d)
	}
	if len(fails)+len(warns) == 0 {
		r.line("ok", label, fmt.Sprintf("the reward space matches task %s in its own names (%d weights, %d params)", task, len(own.Weights), len(own.Params)))
	}
}

// diffOwn compares a space in the task's own names with the task: a name the task lacks
// fails (training refuses it), a task scalar the space lacks or a default that differs is a
// warning.
func diffOwn(kind string, space, task map[string]float64, taskName string, termInSpace func(string) bool) (fails, warns []string) {
	for _, n := range slices.Sorted(maps.Keys(space)) {
		b, ok := task[n]
		switch {
		case !ok && kind == "term":
			fails = append(fails, fmt.Sprintf("term %s: task %s has no reward term of that name, so every train job refuses it; `tunebot space --task %s` prints the task's own terms", n, taskName, taskName))
		case !ok:
			fails = append(fails, fmt.Sprintf("param %s: task %s has no scalar param of that name (term.param, a plain number), so every train job refuses it; `tunebot space --task %s` prints the task's own params", n, taskName, taskName))
		case !closeEnough(space[n], b):
			warns = append(warns, fmt.Sprintf("%s %s: reward space default %g, task default %g; the baseline differs from the task's stock configuration", kind, n, space[n], b))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(task)) {
		// A param of a term the space leaves out is said by that term's line.
		if term, _, isParam := strings.Cut(n, "."); kind == "param" && isParam && !termInSpace(term) {
			continue
		}
		if _, ok := space[n]; !ok {
			warns = append(warns, fmt.Sprintf("%s %s: the task has it (%g) but the reward space does not, so it is never tuned", kind, n, task[n]))
		}
	}
	return fails, warns
}

func diffDefaults(kind string, table, task map[string]float64) []string {
	var out []string
	names := make([]string, 0, len(table)+len(task))
	for n := range table {
		names = append(names, n)
	}
	for n := range task {
		if _, ok := table[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		a, inTable := table[n]
		b, inTask := task[n]
		switch {
		case !inTask:
			out = append(out, fmt.Sprintf("%s %s: the task has no such %s (reward space default %g); a non-zero value will be refused", kind, n, kind, a))
		case !inTable:
			out = append(out, fmt.Sprintf("%s %s: the task has it (%g) but the reward space does not, so it is never tuned", kind, n, b))
		case !closeEnough(a, b):
			out = append(out, fmt.Sprintf("%s %s: reward space default %g, task default %g; set reward_space to the task's values or accept that the baseline differs from the task", kind, n, a, b))
		}
	}
	return out
}

// closeEnough treats 0.7071 and sqrt(0.5) as equal: the table is written by hand.
func closeEnough(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	m := max(abs(a), abs(b))
	return d <= 1e-4*m || d <= 1e-12
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func doctorDataDir(r *doctorReport, dir string) {
	if err := private.CheckWay(dir); err != nil {
		r.line("fail", "data dir", err.Error()+" (tunebot run refuses to start)")
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		r.line("fail", "data dir", fmt.Sprintf("%s cannot be created: %v; set data_dir to a writable directory", dir, err))
		return
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		r.line("fail", "data dir", fmt.Sprintf("%s is not writable: %v; set data_dir to a writable directory", dir, err))
		return
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	if err := private.CheckDataDir(dir); err != nil {
		r.line("fail", "data dir", err.Error()+" (tunebot run refuses to start)")
		return
	}
	if w := dataDirAccess(dir); w != "" {
		r.line("warn", "data dir", w)
		return
	}
	r.line("ok", "data dir", dir+" is writable")
}

// doctorStore runs the consistency check every command's open runs, and says what it found
// even when the file is fine or held by the daemon.
func doctorStore(r *doctorReport, path string) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		r.line("ok", "data file", path+" does not exist yet: the first command that needs it creates it")
		return
	}
	err := store.Check(path, store.Options{Timeout: 200 * time.Millisecond})
	var damaged *store.DamagedError
	switch {
	case err == nil:
		r.line("ok", "data file", path+" passed its consistency check")
	case errors.As(err, &damaged):
		r.line("fail", "data file", damaged.Error()+" (found: "+damaged.Detail+")")
	case errors.Is(err, session.ErrLocked):
		r.line("warn", "data file", path+" is in use by a running tunebot, which checked it when it started; `tunebot backup FILE` copies and checks it now")
	default:
		r.line("fail", "data file", err.Error())
	}
}
