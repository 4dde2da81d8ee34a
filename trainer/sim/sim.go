package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"tunebot/session"
	"tunebot/trainer/tfevents"
)

// FailEnv names the environment variable that injects faults into the sim trainer, so the
// engine's tests can exercise each failure through a real subprocess. Its value is a comma
// separated list of MODE or MODE@TEXT; with @TEXT the fault applies only when the run dir
// (sim-train) or the checkpoint or output path (sim-eval) contains TEXT, e.g.
// "exit@trial-003-rung-0". Modes:
//
//	sim-train: exit      exit with status 3 halfway through training
//	           nockpt    write no model_<N>.pt
//	           nopolicy  write no policy.onnx
//	           short     stop halfway and exit 0, so the newest checkpoint is short of the target
//	           hang      stop writing after the first iteration and ignore SIGINT (needs SIGKILL)
//	           nan       write NaN training scalars (training still succeeds)
//	sim-eval:  evalexit  exit with status 3 without writing evaluation.json
//	           noeval    exit 0 without writing evaluation.json
//	           badeval   write evaluation.json without mechanical_power
//	           nan       write NaN metrics (not valid JSON)
//	           evalhang  ignore SIGINT and never finish
//	           badclip   write a clip cut off halfway (not a whole GIF)
const FailEnv = "TUNEBOT_SIM_FAIL"

// StepDelayEnv names the environment variable that gives --step-delay its default.
const StepDelayEnv = "TUNEBOT_SIM_STEP_DELAY"

// Faults is a parsed FailEnv value.
type Faults []fault

type fault struct{ mode, match string }

var faultModes = map[string]bool{"exit": true, "nockpt": true, "nopolicy": true, "short": true, "hang": true,
	"nan": true, "evalexit": true, "noeval": true, "badeval": true, "evalhang": true, "badclip": true}

// ParseFaults parses a FailEnv value; an unknown mode is an error naming it.
func ParseFaults(spec string) (Faults, error) {
	var out Faults
	var bad []string
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mode, match, _ := strings.Cut(part, "@")
		if !faultModes[mode] {
			bad = append(bad, mode)
			continue
		}
		out = append(out, fault{mode, match})
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s: unknown fault mode(s) %s", FailEnv, strings.Join(bad, ", "))
	}
	return out, nil
}

// Has reports whether mode applies to a job about path.
func (fs Faults) Has(mode, path string) bool {
	for _, f := range fs {
		if f.mode == mode && strings.Contains(path, f.match) {
			return true
		}
	}
	return false
}

// CheckpointFormat identifies a sim checkpoint.
const CheckpointFormat = "tunebot-sim-checkpoint/1"

// Checkpoint is the content of a sim model_<N>.pt: JSON, not a PyTorch file. It records
// what the response surface needs: the configuration trained under and the iteration.
type Checkpoint struct {
	Format     string               `json:"format"`
	Task       string               `json:"task"`
	Iteration  int                  `json:"iteration"`
	ConfigHash string               `json:"config_hash"`
	Config     session.RewardConfig `json:"reward_config"`
	Quality    float64              `json:"quality"` // latent policy quality, 0–1
	TrainSeed  int64                `json:"train_seed"`
	// SurfaceSeed is the response surface trained on (0, the demo's, is left out).
	SurfaceSeed int64 `json:"surface_seed,omitempty"`
	// SurfaceFamily is the family of SurfaceSeed ("" is the generic family).
	SurfaceFamily Family `json:"surface_family,omitempty"`
	// SpaceKey is the reward space's SpaceKey when it is not the built-in one.
	SpaceKey string `json:"reward_space,omitempty"`
}

// sameSpace refuses a job on another reward space than the checkpoint's.
func (c Checkpoint) sameSpace(path string, surf *Surface) error {
	key := ""
	if surf.sh != nil {
		key = surf.sh.key
	}
	if c.SpaceKey == key {
		return nil
	}
	name := func(k string) string {
		if k == "" {
			return "the built-in reward space"
		}
		return "reward space " + k
	}
	return fmt.Errorf("checkpoint %s was trained on %s, not %s (--reward-space)", filepath.Base(path), name(c.SpaceKey), name(key))
}

// sameSurface refuses a job on another surface than the checkpoint's.
func (c Checkpoint) sameSurface(path string, family Family, seed int64) error {
	fam := func(f Family, seed int64) string {
		if seed == 0 || f == "" || f == FamilyGeneric {
			return ""
		}
		return " (" + string(f) + " family)"
	}
	if c.SurfaceSeed != seed || fam(c.SurfaceFamily, c.SurfaceSeed) != fam(family, seed) {
		return fmt.Errorf("checkpoint %s was trained on surface seed %d%s, not %d%s", filepath.Base(path), c.SurfaceSeed, fam(c.SurfaceFamily, c.SurfaceSeed), seed, fam(family, seed))
	}
	return nil
}

// ReadCheckpoint reads and checks a sim checkpoint of the built-in reward space.
func ReadCheckpoint(path string) (Checkpoint, error) { return readCheckpoint(path, shipped) }

// readCheckpoint reads a sim checkpoint and checks that it was trained on surf's reward
// space and that its configuration fits it.
func readCheckpoint(path string, surf *Surface) (Checkpoint, error) {
	var c Checkpoint
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("reading checkpoint: %w", err)
	}
	if err := json.Unmarshal(data, &c); err != nil || c.Format != CheckpointFormat {
		return c, fmt.Errorf("checkpoint %s is not a sim checkpoint (%s)", filepath.Base(path), CheckpointFormat)
	}
	if err := c.sameSpace(path, surf); err != nil {
		return c, err
	}
	if err := surf.Space().CheckConfig(c.Config); err != nil {
		return c, fmt.Errorf("checkpoint %s: %w", filepath.Base(path), err)
	}
	return c, nil
}

// TrainOptions are sim-train's flags.
type TrainOptions struct {
	Task         string
	RunDir       string
	RewardConfig string // path of reward_config.json
	Iterations   int    // iterations this job adds
	Target       int    // total iterations to reach
	Start        int    // iterations already done (the resumed checkpoint's)
	Seed         int64
	NumEnvs      int
	Resume       string         // checkpoint to resume, "" for a fresh run
	SurfaceSeed  int64          // the response surface (0: the demo's; see Surface)
	Family       Family         // the family of SurfaceSeed ("": generic)
	Space        *session.Space // the reward space (nil: the built-in one; see NewSpaceSurface)
	StepDelay    time.Duration  // sleep per iteration, so tests can watch progress
	Faults       Faults
	Log          io.Writer // progress lines, like a trainer's stdout
}

// ExitError is a sim failure with the exit status the subcommand should return.
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string { return e.Msg }

// Train simulates a training run under the contract of docs/design.md §4: event files with
// RSL-RL/mjlab-like tags at steps Start..Target-1, model_<N>.pt every quarter of the run
// and at Target, and policy.onnx. It stops early, keeping what it wrote, when ctx ends.
func Train(ctx context.Context, o TrainOptions) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	surf, err := o.check()
	if err != nil {
		return err
	}
	cfg, err := readConfig(o.RewardConfig, surf.Space())
	if err != nil {
		return err
	}
	if err := o.checkResume(surf); err != nil {
		return err
	}
	if err := os.MkdirAll(o.RunDir, 0o755); err != nil {
		return fmt.Errorf("creating run dir: %w", err)
	}
	w, err := createEvents(o.RunDir)
	if err != nil {
		return err
	}
	defer w.Close()

	fail := func(mode string) bool { return o.Faults.Has(mode, o.RunDir) }
	end := o.Target
	if fail("short") || fail("exit") {
		end = o.Start + max(1, o.Iterations/2)
	}
	every := max(1, o.Target/4)
	fmt.Fprintf(o.Log, "sim-train: %s, iterations %d → %d, %d envs, seed %d, config %s\n", o.Task, o.Start, o.Target, o.NumEnvs, o.Seed, ConfigHash(cfg))
	for i := o.Start; i < end; i++ {
		if err := ctx.Err(); err != nil {
			fmt.Fprintf(o.Log, "sim-train: interrupted at iteration %d\n", i)
			return &ExitError{Code: 130, Msg: "interrupted"}
		}
		if err := writeIteration(w, surf, cfg, o, i, fail("nan")); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		done := i + 1
		if (done%every == 0 || done == o.Target) && !fail("nockpt") {
			if err := writeCheckpoint(o, surf, cfg, done); err != nil {
				return err
			}
		}
		if done%max(1, (o.Target-o.Start)/10) == 0 {
			fmt.Fprintf(o.Log, "iteration %d/%d\n", done, o.Target)
		}
		if fail("hang") {
			fmt.Fprintln(o.Log, "sim-train: hanging (fault injection), ignoring SIGINT")
			hang()
		}
		if o.StepDelay > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(o.StepDelay):
			}
		}
	}
	if fail("exit") {
		fmt.Fprintln(o.Log, "Traceback (most recent call last):\nRuntimeError: sim-train: injected failure (exit)")
		return &ExitError{Code: 3, Msg: "injected failure"}
	}
	if end < o.Target {
		fmt.Fprintf(o.Log, "sim-train: stopped early at iteration %d (fault injection)\n", end)
		return nil
	}
	if !fail("nopolicy") {
		policy := fmt.Sprintf("tunebot sim placeholder policy: not an ONNX graph (config %s, iteration %d)\n", ConfigHash(cfg), o.Target)
		if err := os.WriteFile(filepath.Join(o.RunDir, "policy.onnx"), []byte(policy), 0o644); err != nil {
			return fmt.Errorf("writing policy: %w", err)
		}
	}
	fmt.Fprintf(o.Log, "sim-train: done, model_%d.pt\n", o.Target)
	return nil
}

// check names every flag that is missing or out of range at once, and builds the surface
// the options train on.
func (o TrainOptions) check() (*Surface, error) {
	var probs []string
	if o.Task == "" {
		probs = append(probs, "--task is required")
	}
	if o.RunDir == "" {
		probs = append(probs, "--run-dir is required")
	}
	if o.Iterations < 1 {
		probs = append(probs, fmt.Sprintf("--iterations %d must be at least 1", o.Iterations))
	}
	if o.Start < 0 {
		probs = append(probs, fmt.Sprintf("--start-iteration %d must not be negative", o.Start))
	}
	if o.Start+o.Iterations != o.Target {
		probs = append(probs, fmt.Sprintf("--start-iteration %d + --iterations %d is not --target-iterations %d", o.Start, o.Iterations, o.Target))
	}
	if o.NumEnvs < 1 {
		probs = append(probs, fmt.Sprintf("--num-envs %d must be at least 1", o.NumEnvs))
	}
	surf, err := NewSpaceSurface(o.Space, o.Family, o.SurfaceSeed)
	if err != nil {
		probs = append(probs, "--surface-seed: "+err.Error())
	}
	if len(probs) > 0 {
		return nil, errors.New(strings.Join(probs, "; "))
	}
	return surf, nil
}

// readConfig reads the reward configuration a trial trains with and checks it against
// the reward space sp.
func readConfig(path string, sp *session.Space) (session.RewardConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return session.RewardConfig{}, fmt.Errorf("reading reward config: %w", err)
	}
	cfg, err := session.DecodeConfig(data)
	if err == nil && sp == space {
		err = foreignNames(cfg)
	}
	if err == nil {
		err = sp.CheckConfig(cfg)
	}
	if err != nil {
		return session.RewardConfig{}, fmt.Errorf("reward config %s: %w", filepath.Base(path), err)
	}
	return cfg, nil
}

// foreignNames refuses, with the way out, a configuration of another space than the
// built-in one when no --reward-space was given.
func foreignNames(cfg session.RewardConfig) error {
	var odd []string
	for _, part := range []map[string]float64{cfg.Weights, cfg.Params} {
		for name := range part {
			if _, isTerm := space.Term(name); !isTerm {
				if _, isParam := space.Param(name); !isParam {
					odd = append(odd, name)
				}
			}
		}
	}
	if len(odd) == 0 {
		return nil
	}
	sort.Strings(odd)
	return fmt.Errorf("it names %s, which the built-in Go2 reward space lacks: pass the space it belongs to with --reward-space FILE (a reward_space block as `tunebot space` prints it)", strings.Join(odd, ", "))
}

// checkResume refuses a checkpoint that does not continue this run: another iteration,
// task or surface; and a start past 0 without one.
func (o TrainOptions) checkResume(surf *Surface) error {
	if o.Resume == "" {
		if o.Start != 0 {
			return fmt.Errorf("--start-iteration %d without --resume-checkpoint", o.Start)
		}
		return nil
	}
	ck, err := readCheckpoint(o.Resume, surf)
	if err != nil {
		return err
	}
	if ck.Iteration != o.Start {
		return fmt.Errorf("checkpoint %s is at iteration %d, but --start-iteration is %d", filepath.Base(o.Resume), ck.Iteration, o.Start)
	}
	if ck.Task != o.Task {
		return fmt.Errorf("checkpoint %s was trained on %s, not %s", filepath.Base(o.Resume), ck.Task, o.Task)
	}
	if err := ck.sameSurface(o.Resume, o.Family, o.SurfaceSeed); err != nil {
		return err
	}
	return nil
}

// hang blocks forever, deaf to SIGINT: the process leaves only by SIGKILL.
func hang() {
	signal.Ignore(os.Interrupt)
	for {
		time.Sleep(time.Hour)
	}
}

func createEvents(dir string) (*tfevents.Writer, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	now := time.Now()
	for n := 0; ; n++ {
		p := filepath.Join(dir, tfevents.FileName(now, host, os.Getpid(), n))
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return tfevents.Create(p)
		}
	}
}

// termMagnitude is a term's per-episode magnitude (before its weight) given the expected
// metrics at this point of training: what the term measures, in plausible units.
func termMagnitude(term string, m session.Metrics, v cfgValues, q float64) float64 {
	vl, va := m[session.MetricVelLinear], m[session.MetricVelAngular]
	switch term {
	case "track_linear_velocity":
		return math.Exp(-sq(vl / v.p("track_linear_velocity.std")))
	case "track_angular_velocity":
		return math.Exp(-sq(va / v.p("track_angular_velocity.std")))
	case "body_orientation_l2":
		return 40 * sq(m[session.MetricOrientation])
	case "pose":
		return 0.5 + 0.4*q
	case "body_ang_vel":
		return 2 * m[session.MetricOrientation] / 0.05
	case "angular_momentum":
		return 1.5 * m[session.MetricOrientation] / 0.05
	case "is_terminated":
		return m[session.MetricFallRate] / 50
	case "joint_acc_l2":
		return 2e5 * sq(m[session.MetricActionAcc]/12)
	case "joint_pos_limits":
		return 0.001 + 0.01*(1-q)
	case "action_rate_l2":
		return 1.5 * sq(m[session.MetricActionAcc]/12)
	case "foot_gait":
		return 0.5 + 0.4*q
	case "foot_clearance":
		return 0.05 * (1 - 0.7*q)
	case "foot_slip":
		return 2 * m[session.MetricFootSlip]
	case "soft_landing":
		return 20 * (1 - 0.5*q)
	case "stand_still":
		return 0.05 * (1 - 0.7*q)
	case "electrical_power":
		return m[session.MetricPower]
	}
	return 0.1
}

func writeIteration(w *tfevents.Writer, surf *Surface, cfg session.RewardConfig, o TrainOptions, i int, nan bool) error {
	done := i + 1
	m := surf.Expected(cfg, done)
	v := valuesIn(surf.Space(), cfg)
	q := surf.quality(cfg, done)
	t := surf.tau(cfg)
	wall := time.Now()
	noise := func(tag string, sd float64) float64 {
		return 1 + sd*gauss(ConfigHash(cfg), uint64(o.Seed), uint64(i), tag)
	}
	step := int64(i)
	put := func(tag string, x float64) error {
		if nan && tag == "Train/mean_reward" {
			x = math.NaN()
		}
		return w.Scalar(tag, step, x, wall)
	}
	total := 0.0
	for _, term := range surf.Space().Terms {
		mag := termMagnitude(term.Name, m, v, q)
		if surf.sh != nil {
			mag = spaceMagnitude(term, surf.sh.role(term.Name), m)
		}
		r := v.w[term.Name] * mag * noise("Episode_Reward/"+term.Name, 0.03)
		total += r
		if err := put("Episode_Reward/"+term.Name, r); err != nil {
			return err
		}
	}
	fall := m[session.MetricFallRate]
	length := 1000 * (1 - 0.9*math.Exp(-float64(done)/(0.5*t))) * (1 - fall)
	scalars := []struct {
		tag string
		x   float64
	}{
		{"Train/mean_reward", 50 * total * noise("Train/mean_reward", 0.02)},
		{"Train/mean_episode_length", length},
		{"Loss/value_function", (0.05 + 5*math.Exp(-float64(done)/(0.3*t))) * noise("Loss/value_function", 0.1)},
		{"Loss/surrogate", -0.01*(1-q) + 0.002*(noise("Loss/surrogate", 1)-1)},
		{"Policy/mean_noise_std", 0.35 + 0.65*math.Exp(-float64(done)/t)},
		{"Episode_Termination/time_out", 1 - fall},
		{"Episode_Termination/fell_over", fall},
		{"Perf/total_fps", float64(o.NumEnvs) * 24 / 1.9 * noise("Perf/total_fps", 0.02)},
	}
	for _, s := range scalars {
		if err := put(s.tag, s.x); err != nil {
			return err
		}
	}
	return nil
}

func writeCheckpoint(o TrainOptions, surf *Surface, cfg session.RewardConfig, it int) error {
	ck := Checkpoint{Format: CheckpointFormat, Task: o.Task, Iteration: it, ConfigHash: ConfigHash(cfg),
		Config: cfg, Quality: surf.quality(cfg, it), TrainSeed: o.Seed, SurfaceSeed: o.SurfaceSeed}
	if surf.sh != nil {
		ck.SpaceKey = surf.sh.key
	}
	if o.SurfaceSeed != 0 && o.Family != FamilyGeneric {
		ck.SurfaceFamily = o.Family
	}
	data, err := json.MarshalIndent(ck, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding checkpoint: %w", err)
	}
	return writeAtomic(filepath.Join(o.RunDir, fmt.Sprintf("model_%d.pt", it)), append(data, '\n'))
}

// writeAtomic writes via a temporary file and a rename, so a reader never sees half a file.
func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	return nil
}

// EvalOptions are sim-eval's flags.
type EvalOptions struct {
	Task       string
	Checkpoint string
	Output     string
	Seeds      []int
	NumEnvs    int
	Steps      int
	RunDir     string // if set, evaluation scalars go to <RunDir>/evaluation-events/
	// SurfaceSeed is the response surface to evaluate on; it must be the checkpoint's.
	SurfaceSeed int64
	// ClipOutput, when set, is where the clip goes (a GIF, see Clip), and ClipPoster its
	// poster frame (a PNG, see PosterFrame); "" writes none.
	ClipOutput string
	ClipPoster string
	Family     Family         // the family of SurfaceSeed ("": generic)
	Space      *session.Space // the reward space (nil: the built-in one), the checkpoint's
	Faults     Faults
	Log        io.Writer
	// Label names the trial and rung evaluated, drawn on the clip (NoLabel: none).
	Label ClipLabel
}

// Eval evaluates a sim checkpoint on each seed with the response surface and writes
// evaluation.json in the shape of docs/design.md §3.
func Eval(ctx context.Context, o EvalOptions) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	var probs []string
	if o.Task == "" {
		probs = append(probs, "--task is required")
	}
	if o.Output == "" {
		probs = append(probs, "--output is required")
	}
	if len(o.Seeds) == 0 {
		probs = append(probs, "--seeds must list at least one seed")
	}
	if o.NumEnvs < 1 || o.Steps < 1 {
		probs = append(probs, "--num-envs and --steps must be at least 1")
	}
	surf, err := NewSpaceSurface(o.Space, o.Family, o.SurfaceSeed)
	if err != nil {
		probs = append(probs, "--surface-seed: "+err.Error())
	}
	if len(probs) > 0 {
		return errors.New(strings.Join(probs, "; "))
	}
	ck, err := readCheckpoint(o.Checkpoint, surf)
	if err != nil {
		return err
	}
	if ck.Task != o.Task {
		return fmt.Errorf("checkpoint %s was trained on %s, not %s", filepath.Base(o.Checkpoint), ck.Task, o.Task)
	}
	if err := ck.sameSurface(o.Checkpoint, o.Family, o.SurfaceSeed); err != nil {
		return err
	}
	fail := func(mode string) bool { return o.Faults.Has(mode, o.Checkpoint) || o.Faults.Has(mode, o.Output) }
	if fail("evalhang") {
		fmt.Fprintln(o.Log, "sim-eval: hanging (fault injection), ignoring SIGINT")
		hang()
	}
	if fail("evalexit") {
		fmt.Fprintln(o.Log, "Traceback (most recent call last):\nRuntimeError: sim-eval: injected failure (evalexit)")
		return &ExitError{Code: 3, Msg: "injected failure"}
	}
	if fail("noeval") {
		fmt.Fprintln(o.Log, "sim-eval: writing nothing (fault injection)")
		return nil
	}
	if err := ctx.Err(); err != nil {
		return &ExitError{Code: 130, Msg: "interrupted"}
	}
	ev := surf.Evaluation(ck.Config, ck.Iteration, o.Seeds)
	ev.Task, ev.Checkpoint = o.Task, filepath.Base(o.Checkpoint)
	for _, s := range ev.PerSeed {
		fmt.Fprintf(o.Log, "seed %d: %s\n", s.Seed, formatMetrics(s.Metrics))
	}
	if fail("badeval") {
		delete(ev.Metrics, session.MetricPower)
	}
	data, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding evaluation: %w", err)
	}
	if fail("nan") {
		// JSON has no NaN: write what a careless Python json.dump would.
		data = []byte(strings.Replace(string(data), fmt.Sprintf(`"%s": `, session.MetricFallRate), fmt.Sprintf(`"%s": NaN, "_": `, session.MetricFallRate), 1))
	}
	if o.RunDir != "" {
		if err := writeEvalEvents(o.RunDir, ev); err != nil {
			return err
		}
	}
	if err := writeAtomic(o.Output, append(data, '\n')); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "sim-eval: %s at iteration %d on seeds %v: %s\n", ev.Checkpoint, ev.Iteration, ev.Seeds, formatMetrics(ev.Metrics))
	if o.ClipOutput != "" {
		return writeClip(o, ev.Metrics, fail("badclip"))
	}
	return nil
}

// writeClip draws the evaluation's clip (and its poster frame) after evaluation.json.
func writeClip(o EvalOptions, m session.Metrics, broken bool) error {
	start := time.Now()
	clip, poster, err := Clip(m, o.Label)
	if err != nil {
		return err
	}
	if broken {
		clip = clip[:len(clip)/2]
	}
	if err := writeAtomic(o.ClipOutput, clip); err != nil {
		return err
	}
	if o.ClipPoster != "" {
		if err := writeAtomic(o.ClipPoster, poster); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Log, "sim-eval: clip: %d frames (%.1f s) %d×%d GIF, %d bytes, drawn in %s\n",
		ClipFrames, clipSeconds, ClipWidth, ClipHeight, len(clip), time.Since(start).Round(time.Millisecond))
	return nil
}

// Evaluation is what sim-eval reports for a policy trained iteration iterations under cfg:
// the metrics on each seed and their means. Task and Checkpoint are left to the caller.
func (s *Surface) Evaluation(cfg session.RewardConfig, iteration int, seeds []int) session.Evaluation {
	ev := session.Evaluation{Iteration: iteration, Seeds: append([]int(nil), seeds...), Metrics: session.Metrics{}}
	for _, seed := range seeds {
		ev.PerSeed = append(ev.PerSeed, session.SeedMetrics{Seed: seed, Metrics: s.Evaluate(cfg, iteration, seed)})
	}
	for _, name := range session.MetricNames {
		xs := make([]float64, len(ev.PerSeed))
		for i, ps := range ev.PerSeed {
			xs[i] = ps.Metrics[name]
		}
		ev.Metrics[name], _ = session.MeanStd(xs)
	}
	return ev
}

func writeEvalEvents(runDir string, ev session.Evaluation) error {
	dir := filepath.Join(runDir, "evaluation-events")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating evaluation-events: %w", err)
	}
	w, err := createEvents(dir)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, name := range session.MetricNames {
		if x, ok := ev.Metrics[name]; ok {
			if err := w.Scalar("Eval/"+name, int64(ev.Iteration), x, now); err != nil {
				w.Close()
				return err
			}
		}
	}
	return w.Close()
}

func formatMetrics(m session.Metrics) string {
	parts := make([]string, 0, len(m))
	for _, name := range session.MetricNames {
		if x, ok := m[name]; ok {
			parts = append(parts, fmt.Sprintf("%s=%.4g", name, x))
		}
	}
	return strings.Join(parts, " ")
}
