// Command clips measures what a trial's clip costs (issue 21): the sim's clip drawn and
// encoded in process (time, size), the share of a rung-0 sim trial's wall time it takes
// (sim-train and sim-eval run as tunebot runs them, with and without --clip-output), and,
// when the mjlab venv is there, the same for mjlab's Go1 on CPU with OSMesa: render and
// encode time, size, and its share of a rung-0 trial of `make test`'s session.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer/sim"
)

func main() {
	bin := flag.String("bin", "bin/tunebot", "the tunebot binary (its sim-train and sim-eval)")
	venv := flag.String("venv", ".venv/mjlab", "the mjlab venv; without it the mjlab figures are skipped")
	runs := flag.Int("runs", 5, "repetitions of each sim measurement (the median is reported)")
	flag.Parse()
	if err := simFigures(*bin, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "clips bench:", err)
		os.Exit(1)
	}
	if err := mjlabFigures(*venv); err != nil {
		fmt.Fprintln(os.Stderr, "clips bench:", err)
		os.Exit(1)
	}
}

// demoMetrics are evaluations like the demo's: a baseline, a better and a worse trial.
var demoMetrics = []session.Metrics{
	{session.MetricVelLinear: 0.21, session.MetricVelAngular: 0.30, session.MetricActionAcc: 12, session.MetricOrientation: 0.05, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08, session.MetricPower: 150},
	{session.MetricVelLinear: 0.15, session.MetricVelAngular: 0.25, session.MetricActionAcc: 9, session.MetricOrientation: 0.03, session.MetricFallRate: 0.0, session.MetricFootSlip: 0.05, session.MetricPower: 140},
	{session.MetricVelLinear: 0.35, session.MetricVelAngular: 0.45, session.MetricActionAcc: 20, session.MetricOrientation: 0.09, session.MetricFallRate: 0.12, session.MetricFootSlip: 0.15, session.MetricPower: 190},
}

func median(xs []time.Duration) time.Duration {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func simFigures(bin string, runs int) error {
	var draw, encode []time.Duration
	size := 0
	for i := 0; i < runs; i++ {
		for _, m := range demoMetrics {
			t0 := time.Now()
			frames := sim.DrawClip(m, sim.ClipLabel{Trial: 3, Rung: 1})
			t1 := time.Now()
			g, _, err := sim.EncodeClip(frames)
			if err != nil {
				return err
			}
			draw, encode = append(draw, t1.Sub(t0)), append(encode, time.Since(t1))
			size = max(size, len(g))
		}
	}
	fmt.Printf("sim clip (%d frames %d×%d GIF, in process, median of %d): draw %s, encode %s, largest %.1f KiB\n",
		sim.ClipFrames, sim.ClipWidth, sim.ClipHeight, len(draw), ms(median(draw)), ms(median(encode)), float64(size)/1024)

	// A rung-0 trial as the demo runs it: sim-train to 300 iterations, then sim-eval on 3
	// seeds, each a subprocess; the evaluation once with the clip, once without.
	dir, err := os.MkdirTemp("", "clips-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "reward_config.json")
	defaults, err := json.Marshal(session.DefaultSpace().Defaults())
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfg, defaults, 0o644); err != nil {
		return err
	}
	run := func(args ...string) (time.Duration, error) {
		t0 := time.Now()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("%s %v: %v\n%s", bin, args[0], err, out)
		}
		return time.Since(t0), nil
	}
	var train, evalPlain, evalClip []time.Duration
	for i := 0; i < runs; i++ {
		rd := filepath.Join(dir, fmt.Sprintf("trial-%03d-rung-0", i))
		d, err := run("sim-train", "--task", "Unitree-Go2-Flat", "--run-dir", rd, "--reward-config", cfg, "--iterations", "300",
			"--target-iterations", "300", "--start-iteration", "0", "--seed", strconv.Itoa(i), "--num-envs", "4096")
		if err != nil {
			return err
		}
		train = append(train, d)
		eval := []string{"sim-eval", "--task", "Unitree-Go2-Flat", "--checkpoint", filepath.Join(rd, "model_300.pt"),
			"--output", filepath.Join(rd, "evaluation.json"), "--seeds", "0,1,2", "--run-dir", rd}
		if d, err = run(eval...); err != nil {
			return err
		}
		evalPlain = append(evalPlain, d)
		if d, err = run(append(eval, "--clip-output", filepath.Join(rd, "clip"), "--clip-poster", filepath.Join(rd, "clip-poster.png"))...); err != nil {
			return err
		}
		evalClip = append(evalClip, d)
	}
	tr, ep, ec := median(train), median(evalPlain), median(evalClip)
	clip := median(draw) + median(encode)
	fmt.Printf("sim jobs of a rung-0 trial (subprocesses, median of %d): train %s, evaluate %s, evaluate with the clip %s (difference %s)\n",
		runs, ms(tr), ms(ep), ms(ec), ms(ec-ep))
	// The trial as the engine sees it in a demo session: started to ended, both jobs and
	// what tunebot does around them.
	trial, err := demoTrial(bin, dir)
	if err != nil {
		return err
	}
	fmt.Printf("sim clip's share of a rung-0 trial's wall time (a demo session's median trial, %s): %s drawn and encoded = %.1f %% (target ≤ 5 %%); of the two jobs alone (%s): %.1f %%\n",
		ms(trial), ms(clip), 100*float64(clip)/float64(trial), ms(tr+ec), 100*float64(clip)/float64(tr+ec))
	return nil
}

// demoTrial runs `tunebot demo` and returns the median wall time of its rung-0 trials,
// from start to end as the store recorded them.
func demoTrial(bin, dir string) (time.Duration, error) {
	data := filepath.Join(dir, "demo")
	if out, err := exec.Command(bin, "demo", "--data-dir", data, "--json").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("demo: %v\n%s", err, tail(out))
	}
	db, err := store.Open(filepath.Join(data, "tunebot.db"), store.Options{Timeout: 5 * time.Second})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	ctx := context.Background()
	all, _, err := db.RecentSessions(ctx, "", 2)
	if err != nil || len(all) != 1 {
		return 0, fmt.Errorf("demo sessions: %d, %v", len(all), err)
	}
	trials, err := db.Trials(ctx, all[0].ID)
	if err != nil {
		return 0, err
	}
	var walls []time.Duration
	for _, t := range trials {
		if t.Rung == 0 && !t.StartedAt.IsZero() && !t.EndedAt.IsZero() {
			walls = append(walls, t.EndedAt.Sub(t.StartedAt))
		}
	}
	if len(walls) == 0 {
		return 0, fmt.Errorf("the demo recorded no rung-0 trial times")
	}
	return median(walls), nil
}

var clipLine = regexp.MustCompile(`\[tunebot\] clip: (\d+) frames .* with MUJOCO_GL=(\w+) in ([0-9.]+) s, encoded in ([0-9.]+) s, (\d+) KiB`)

// mjlabFigures runs a rung-0 trial of trainer/mjlab/e2e_test.go's session (Go1 flat, 2
// iterations of 4 envs on CPU; evaluation on 5 envs for 20 steps) with the clip, and says
// what the clip took of it.
func mjlabFigures(venv string) error {
	py := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(py); err != nil {
		fmt.Printf("mjlab Go1 clip on CPU: skipped, no venv at %s (bash scripts/mjlab-venv.sh builds it)\n", venv)
		return nil
	}
	dir, err := os.MkdirTemp("", "clips-bench-mjlab")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "reward_config.json")
	if err := os.WriteFile(cfg, []byte(`{"weights":{},"params":{}}`), 0o644); err != nil {
		return err
	}
	env := append(os.Environ(), "CUDA_VISIBLE_DEVICES=", "WANDB_MODE=disabled")
	env = slices.DeleteFunc(env, func(kv string) bool { return len(kv) > 10 && kv[:10] == "MUJOCO_GL=" })
	run := func(args ...string) (time.Duration, string, error) {
		cmd := exec.Command(py, append([]string{"-m", "tunebot_mjlab"}, args...)...)
		cmd.Env = env
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			return 0, "", fmt.Errorf("tunebot_mjlab %s: %v\n%s", args[0], err, tail(out))
		}
		return time.Since(t0), string(out), nil
	}
	rd := filepath.Join(dir, "trial-000-rung-0")
	const task = "Mjlab-Velocity-Flat-Unitree-Go1"
	train, _, err := run("train", "--task", task, "--run-dir", rd, "--reward-config", cfg, "--iterations", "2",
		"--target-iterations", "2", "--start-iteration", "0", "--seed", "42", "--num-envs", "4")
	if err != nil {
		return err
	}
	eval, out, err := run("evaluate", "--task", task, "--checkpoint", filepath.Join(rd, "model_1.pt"), "--output", filepath.Join(rd, "evaluation.json"),
		"--seeds", "0", "--num-envs", "5", "--steps", "20", "--run-dir", rd, "--clip-output", filepath.Join(rd, "clip"), "--clip-poster", filepath.Join(rd, "clip-poster.png"))
	if err != nil {
		return err
	}
	m := clipLine.FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("the evaluation rendered no clip:\n%s", tail([]byte(out)))
	}
	render, _ := strconv.ParseFloat(m[3], 64)
	encode, _ := strconv.ParseFloat(m[4], 64)
	cost := time.Duration((render + encode) * float64(time.Second))
	fmt.Printf("mjlab Go1 clip on CPU (%s frames 480×360 H.264, MUJOCO_GL=%s): render %.1f s (the rollout's own env, stepping and drawing), encode %.2f s, %s KiB\n",
		m[1], m[2], render, encode, m[5])
	fmt.Printf("mjlab rung-0 trial of make test's session (2 iterations × 4 envs, evaluation 5 envs × 20 steps): train %.1f s, evaluate %.1f s with the clip: the clip is %.0f %% of the trial's %.1f s\n",
		train.Seconds(), eval.Seconds(), 100*float64(cost)/float64(train+eval), (train + eval).Seconds())
	return nil
}

func tail(b []byte) string {
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}
