// Command parallel times one 12-trial sim session with the local executor at parallel 1,
// 2 and 4 on four (sim) GPUs and prints each wall time as a ratio to parallel 1 (target at
// 4: ≤ 0.45×), with the most jobs seen holding GPUs at once. Ratios within one run, as the
// machines are shared. The sim trainer takes real time per iteration (--step-delay) and
// holds its GPUs exclusively (TUNEBOT_SIM_GPU_DIR), so a GPU given to two jobs fails the run.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"tunebot/trainer/sim"
)

func main() {
	bin := flag.String("bin", "bin/tunebot", "tunebot binary")
	delay := flag.Duration("step-delay", 2*time.Millisecond, "sim trainer time per iteration")
	flag.Parse()
	abs, err := filepath.Abs(*bin) // each session runs in a directory of its own
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/parallel:", err)
		os.Exit(1)
	}
	*bin = abs
	var base time.Duration
	fmt.Printf("parallel trials: 12-trial sim session (halving 12→4→2 with the baseline carried, final re-evaluation), 4 GPUs, %s per iteration\n", *delay)
	for _, p := range []int{1, 2, 4} {
		wall, peak, err := session(*bin, p, *delay)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/parallel:", err)
			os.Exit(1)
		}
		if p == 1 {
			base = wall
		}
		target := ""
		if p == 4 {
			target = "  (target ≤ 0.45×)"
		}
		fmt.Printf("  parallel %d: wall %6.1fs  %.2f× of parallel 1%s; at most %d jobs held GPUs at once\n", p, wall.Seconds(), wall.Seconds()/base.Seconds(), target, peak)
	}
}

func session(bin string, parallel int, delay time.Duration) (time.Duration, int, error) {
	dir, err := os.MkdirTemp("", "tunebot-bench-parallel")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	gpus := filepath.Join(dir, "gpus")
	if err := os.Mkdir(gpus, 0o755); err != nil {
		return 0, 0, err
	}
	cfg := filepath.Join(dir, "tunebot.yaml")
	body := fmt.Sprintf(`data_dir: data
session:
  trial_count: 12
  early_stop_patience: 12
  gpus: [0, 1, 2, 3]
executor:
  backend: local
  parallel: %d
  gpus_per_trial: 1
`, parallel)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(bin, "tune", "--config", cfg, "--fallback", "--json")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), sim.StepDelayEnv+"="+delay.String(), sim.GPUDirEnv+"="+gpus)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("parallel %d: tune: %v\n%s", parallel, err, errb.String())
	}
	wall := time.Since(start)
	var sum struct {
		State  string `json:"state"`
		Trials []struct {
			Number, Rung int
			State        string `json:"state"`
			Reason       string `json:"reason"`
		} `json:"trials"`
	}
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		return 0, 0, fmt.Errorf("parallel %d: reading the summary: %v", parallel, err)
	}
	if sum.State != "succeeded" {
		return 0, 0, fmt.Errorf("parallel %d: the session %s", parallel, sum.State)
	}
	for _, t := range sum.Trials {
		if t.State != "completed" {
			return 0, 0, fmt.Errorf("parallel %d: trial %d @ rung %d %s: %s", parallel, t.Number, t.Rung, t.State, t.Reason)
		}
	}
	peak, err := sim.PeakHolders(gpus)
	return wall, peak, err
}
