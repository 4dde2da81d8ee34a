// Command slurm measures what running a trainer job through Slurm adds (issue 14): the time
// from sbatch to the job's command running, and from sbatch to tunebot seeing it finished,
// for a one-GPU job whose command is `true`, against the same command started locally. It
// uses trainer/slurm, the client the Slurm executor uses, and reports medians; nothing is
// asserted.
//
//	SLURM_CONF=... go run ./bench/slurm
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"tunebot/trainer/slurm"
)

func main() {
	jobs := flag.Int("jobs", 10, "jobs to time, one after another")
	poll := flag.Duration("poll", 50*time.Millisecond, "how often squeue is asked")
	flag.Parse()
	if err := run(*jobs, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "bench/slurm:", err)
		os.Exit(1)
	}
}

func run(n int, poll time.Duration) error {
	dir, err := os.MkdirTemp("", "tunebot-bench-slurm-jobs")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	c := &slurm.Client{}
	var toRun, toDone, local []time.Duration
	for i := range n {
		jd := filepath.Join(dir, fmt.Sprint(i))
		started := filepath.Join(jd, "started")
		j := slurm.Job{Name: fmt.Sprintf("bench-%d", i), Dir: jd, GPUs: 1,
			Argv: []string{"touch", started}}
		t0 := time.Now()
		id, err := c.Submit(ctx, j)
		if err != nil {
			return err
		}
		var ran time.Duration
		for ran == 0 {
			if _, err := os.Stat(started); err == nil {
				ran = time.Since(t0)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		st, err := c.Wait(ctx, id, slurm.ExitPath(j), poll, nil)
		if err != nil {
			return err
		}
		if st.State != slurm.Completed || st.ExitCode != 0 {
			return fmt.Errorf("job %s: %+v", id, st)
		}
		toRun, toDone = append(toRun, ran), append(toDone, time.Since(t0))

		t1 := time.Now()
		if err := exec.Command("touch", filepath.Join(jd, "local")).Run(); err != nil {
			return err
		}
		local = append(local, time.Since(t1))
	}
	med := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	fmt.Printf("%d one-GPU jobs, one after another (squeue polled every %s):\n", n, poll)
	fmt.Printf("  sbatch → command running     median %8s  (min %s, max %s)\n", med(toRun).Round(time.Millisecond), slices.Min(toRun).Round(time.Millisecond), slices.Max(toRun).Round(time.Millisecond))
	fmt.Printf("  sbatch → seen finished       median %8s\n", med(toDone).Round(time.Millisecond))
	fmt.Printf("  the same command run locally median %8s\n", med(local).Round(time.Microsecond))
	fmt.Printf("  Slurm's overhead per job: %.0f× a local start; against a 300-iteration trial of minutes, %.2f %% of 5 min\n",
		float64(med(toDone))/float64(med(local)), 100*med(toDone).Seconds()/300)
	return nil
}
