package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"tunebot/trainer/sim"
)

func init() {
	register("sim-train", "built-in sim trainer: train (used by the demo and tests)", runSimTrain)
	register("sim-eval", "built-in sim trainer: evaluate a checkpoint", runSimEval)
}

// spaceHelp is sim-train's --reward-space flag.
const spaceHelp = "reward space file (a reward_space block as `tunebot space` prints it): the surface is built from its terms' acts; default: the built-in Go2 space"

func runSimTrain(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "sim-train", "usage: tunebot sim-train --run-dir DIR --reward-config FILE --iterations N [flags]\n\nThe built-in sim trainer's train job (the demo's and the tests' trainer).")
	var o sim.TrainOptions
	fs.StringVar(&o.Task, "task", "", "task id")
	fs.StringVar(&o.RunDir, "run-dir", "", "run directory to write events, checkpoints and policy.onnx into")
	fs.StringVar(&o.RewardConfig, "reward-config", "", "reward_config.json to train with")
	fs.IntVar(&o.Iterations, "iterations", 0, "iterations this job adds")
	fs.IntVar(&o.Target, "target-iterations", 0, "total iterations to reach")
	fs.IntVar(&o.Start, "start-iteration", 0, "iterations already in the resumed checkpoint")
	fs.Int64Var(&o.Seed, "seed", 42, "training seed")
	fs.IntVar(&o.NumEnvs, "num-envs", 4096, "number of simulated environments")
	fs.StringVar(&o.Resume, "resume-checkpoint", "", "checkpoint to resume from")
	fs.Int64Var(&o.SurfaceSeed, "surface-seed", 0, "response surface: 0 is the demo's, others draw one of a family (bench/sampler)")
	fs.Func("surface-family", "the family --surface-seed draws from: generic (default), domain, coupled or separable", familyFlag(&o.Family))
	fs.Func("reward-space", spaceHelp, spaceFlag(&o.Space))
	delay, ok := stepDelay(e)
	if !ok {
		fmt.Fprintf(e.stderr, "tunebot sim-train: %s=%q is not a duration\n", sim.StepDelayEnv, e.getenv(sim.StepDelayEnv))
		return 2
	}
	fs.DurationVar(&o.StepDelay, "step-delay", delay, "sleep per iteration (default from "+sim.StepDelayEnv+")")
	if code, ok := parseFlags(e, fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "tunebot sim-train: unexpected arguments %q\n", fs.Args())
		return 2
	}
	faults, err := sim.ParseFaults(e.getenv(sim.FailEnv))
	if err != nil {
		fmt.Fprintf(e.stderr, "tunebot sim-train: %v\n", err)
		return 2
	}
	o.Faults, o.Log = faults, e.stdout
	release, err := holdGPUs(e, "sim-train "+o.RunDir)
	if err != nil {
		fmt.Fprintf(e.stderr, "tunebot sim-train: %v\n", err)
		return 4
	}
	defer release()
	return simExit(e, "sim-train", sim.Train(ctx, o))
}

func runSimEval(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "sim-eval", "usage: tunebot sim-eval --checkpoint FILE --output FILE [flags]\n\nThe built-in sim trainer's evaluate job.")
	var o sim.EvalOptions
	var seeds string
	fs.StringVar(&o.Task, "task", "", "task id")
	fs.StringVar(&o.Checkpoint, "checkpoint", "", "model_<N>.pt to evaluate")
	fs.StringVar(&o.Output, "output", "", "evaluation.json to write")
	fs.StringVar(&seeds, "seeds", "0", "comma separated evaluation seeds")
	fs.IntVar(&o.NumEnvs, "num-envs", 256, "number of evaluation environments")
	fs.IntVar(&o.Steps, "steps", 1000, "evaluation steps")
	fs.StringVar(&o.RunDir, "run-dir", "", "run directory (evaluation events go to its evaluation-events/)")
	fs.Int64Var(&o.SurfaceSeed, "surface-seed", 0, "response surface the checkpoint was trained on (see sim-train)")
	fs.StringVar(&o.ClipOutput, "clip-output", "", "write the clip (a GIF) here; empty: none")
	fs.StringVar(&o.ClipPoster, "clip-poster", "", "write the clip's poster frame (a PNG) here; empty: none")
	fs.IntVar(&o.Label.Trial, "trial", -1, "the trial's number, drawn on the clip; -1: none")
	fs.IntVar(&o.Label.Rung, "rung", -1, "the trial's rung, drawn on the clip with --trial")
	fs.Func("surface-family", "the family of --surface-seed (see sim-train)", familyFlag(&o.Family))
	fs.Func("reward-space", "the reward space the checkpoint was trained on (see sim-train)", spaceFlag(&o.Space))
	if code, ok := parseFlags(e, fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "tunebot sim-eval: unexpected arguments %q\n", fs.Args())
		return 2
	}
	for _, s := range strings.Split(seeds, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 {
			fmt.Fprintf(e.stderr, "tunebot sim-eval: --seeds %q: %q is not a non-negative integer\n", seeds, s)
			return 2
		}
		o.Seeds = append(o.Seeds, n)
	}
	faults, err := sim.ParseFaults(e.getenv(sim.FailEnv))
	if err != nil {
		fmt.Fprintf(e.stderr, "tunebot sim-eval: %v\n", err)
		return 2
	}
	o.Faults, o.Log = faults, e.stdout
	release, err := holdGPUs(e, "sim-eval "+o.Output)
	if err != nil {
		fmt.Fprintf(e.stderr, "tunebot sim-eval: %v\n", err)
		return 4
	}
	defer release()
	return simExit(e, "sim-eval", sim.Eval(ctx, o))
}

// holdGPUs holds the job's GPUs in the sim's GPU directory when one is set (sim.GPUDirEnv).
func holdGPUs(e *env, job string) (func(), error) {
	dir := e.getenv(sim.GPUDirEnv)
	if dir == "" {
		return func() {}, nil
	}
	return sim.HoldGPUs(dir, e.getenv("CUDA_VISIBLE_DEVICES"), job)
}

func stepDelay(e *env) (time.Duration, bool) {
	v := e.getenv(sim.StepDelayEnv)
	if v == "" {
		return 0, true
	}
	d, err := time.ParseDuration(v)
	return d, err == nil && d >= 0
}

func simExit(e *env, name string, err error) int {
	if err == nil {
		return 0
	}
	fmt.Fprintf(e.stderr, "tunebot %s: %v\n", name, err)
	var xe *sim.ExitError
	if errors.As(err, &xe) {
		return xe.Code
	}
	return 1
}

// familyFlag parses --surface-family into f.
func familyFlag(f *sim.Family) func(string) error {
	return func(v string) error {
		fam, err := sim.ParseFamily(v)
		*f = fam
		return err
	}
}
