// Command events benchmarks tunebot's event-file reader (issue 2): it writes a large,
// rsl_rl-like event file with tfevents.Writer, then measures ingest throughput of
// tfevents.ReadAll against reading the same bytes raw, in one run so the ratio holds.
//
//	go run ./bench/events -out bench/out/events -mb 50
//
// It prints a human summary and, last, one JSON line for bench/events/run.sh.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"tunebot/trainer/tfevents"
)

// tags is an rsl_rl/mjlab-like set of scalars logged every iteration.
var tags = []string{
	"Episode_Reward/track_linear_velocity", "Episode_Reward/track_angular_velocity",
	"Episode_Reward/upright", "Episode_Reward/pose", "Episode_Reward/body_ang_vel",
	"Episode_Reward/angular_momentum", "Episode_Reward/dof_pos_limits", "Episode_Reward/action_rate_l2",
	"Episode_Reward/air_time", "Episode_Reward/foot_clearance", "Episode_Reward/foot_swing_height",
	"Episode_Reward/foot_slip", "Episode_Reward/soft_landing", "Episode_Reward/joint_torques_l2",
	"Episode_Termination/time_out", "Episode_Termination/fell_over", "Curriculum/terrain_levels",
	"Metrics/twist/error_vel_xy", "Metrics/twist/error_vel_yaw",
	"Loss/value_function", "Loss/surrogate", "Loss/entropy", "Loss/learning_rate",
	"Policy/mean_noise_std", "Perf/total_fps", "Perf/collection time", "Perf/learning_time",
	"Train/mean_reward", "Train/mean_episode_length",
}

// timeTags are logged with whole wall-clock seconds as the step, as rsl_rl does.
var timeTags = []string{"Train/mean_reward/time", "Train/mean_episode_length/time"}

type result struct {
	File       string  `json:"file"`
	Bytes      int64   `json:"bytes"`
	Tags       int     `json:"tags"`
	Points     int     `json:"points"`
	RawSeconds float64 `json:"raw_seconds"`
	CopySecs   float64 `json:"copy_seconds"`
	GoSeconds  float64 `json:"go_seconds"`
	Ratio      float64 `json:"ratio_to_raw"`
	// FloodSeconds is the read of a 200,000-tag file under the default event limits.
	FloodSeconds float64 `json:"flood_seconds"`
}

func main() { os.Exit(run()) }

func run() int {
	out := flag.String("out", "bench/out/events", "directory for the generated event file")
	mb := flag.Int("mb", 50, "size of the generated event file in MB")
	runs := flag.Int("runs", 15, "timed runs of each reader; the fastest counts")
	strict := flag.Bool("strict", false, "exit 1 when the reader is slower than 0.5x raw")
	keep := flag.Bool("keep", false, "reuse an event file generated before, for repeated timing")
	flag.Parse()

	path, err := generate(*out, int64(*mb)<<20, *keep)
	if err != nil {
		fmt.Fprintln(os.Stderr, "events bench:", err)
		return 1
	}
	st, err := os.Stat(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "events bench:", err)
		return 1
	}
	size := st.Size()

	// Warm the page cache so both sides read from memory, then interleave the runs so
	// drift on a shared machine hits both alike.
	if _, err := os.ReadFile(path); err != nil {
		fmt.Fprintln(os.Stderr, "events bench:", err)
		return 1
	}
	var raw, cp, rd []time.Duration
	res := result{File: path, Bytes: size}
	for range *runs {
		t0 := time.Now()
		b, err := os.ReadFile(path)
		raw = append(raw, time.Since(t0))
		if err != nil || int64(len(b)) != size {
			fmt.Fprintln(os.Stderr, "events bench: raw read:", err)
			return 1
		}
		b = nil

		t0 = time.Now()
		if err := copyToDiscard(path); err != nil {
			fmt.Fprintln(os.Stderr, "events bench: raw copy:", err)
			return 1
		}
		cp = append(cp, time.Since(t0))

		t0 = time.Now()
		pts, err := tfevents.ReadAll(path)
		rd = append(rd, time.Since(t0))
		if err != nil {
			fmt.Fprintln(os.Stderr, "events bench:", err)
			return 1
		}
		res.Tags, res.Points = len(pts), 0
		for _, p := range pts {
			res.Points += len(p)
		}
	}
	// The fastest run is the one least disturbed by whatever else shares the machine.
	res.RawSeconds, res.GoSeconds = slices.Min(raw).Seconds(), slices.Min(rd).Seconds()
	res.CopySecs = slices.Min(cp).Seconds()
	res.Ratio = res.RawSeconds / res.GoSeconds

	mbs := func(s float64) float64 { return float64(size) / 1e6 / s }
	fmt.Printf("event file   %s: %.1f MB, %d tags, %d points\n", path, float64(size)/1e6, res.Tags, res.Points)
	fmt.Printf("raw read     %8.1f ms  %7.0f MB/s  (os.ReadFile, best of %d; median %.1f ms)\n", res.RawSeconds*1e3, mbs(res.RawSeconds), *runs, ms(median(raw)))
	fmt.Printf("raw copy     %8.1f ms  %7.0f MB/s  (io.Copy to io.Discard, best of %d; median %.1f ms)\n", res.CopySecs*1e3, mbs(res.CopySecs), *runs, ms(median(cp)))
	fmt.Printf("tfevents     %8.1f ms  %7.0f MB/s  (tfevents.ReadAll, best of %d; median %.1f ms)\n", res.GoSeconds*1e3, mbs(res.GoSeconds), *runs, ms(median(rd)))
	verdict := "met"
	if res.Ratio < 0.5 {
		verdict = "NOT met"
	}
	fmt.Printf("ratio        %.2fx os.ReadFile's speed (target >= 0.5x: %s); %.2fx io.Copy's\n", res.Ratio, verdict, res.CopySecs/res.GoSeconds)
	fpath, fsize, kept, cut, fbest, err := flood(*out, 3)
	if err != nil {
		fmt.Fprintln(os.Stderr, "events bench: flood:", err)
		return 1
	}
	res.FloodSeconds = fbest.Seconds()
	fmt.Printf("flood        %8.1f ms  %s: %.1f MB of %d tags, %d kept, %d dropped under the default event limits (best of 3)\n",
		ms(fbest), filepath.Base(fpath), float64(fsize)/1e6, floodTags, kept, cut.Scalars)
	j, _ := json.Marshal(res)
	fmt.Println(string(j))
	if *strict && res.Ratio < 0.5 {
		return 1
	}
	return 0
}

func copyToDiscard(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}

func ms(d time.Duration) float64 { return d.Seconds() * 1e3 }

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// generate writes an event file of about size bytes, one event per scalar as PyTorch's
// SummaryWriter does, with slowly drifting values and repeated steps on the time tags.
func generate(dir string, size int64, keep bool) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	start := time.Unix(1745910742, 0)
	path := filepath.Join(dir, tfevents.FileName(start, "bench.host.lan", 4264, 0))
	if st, err := os.Stat(path); keep && err == nil && st.Size() >= size {
		return path, nil
	}
	w, err := tfevents.Create(path)
	if err != nil {
		return "", err
	}
	defer w.Close()
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for it := int64(0); ; it++ {
		wall := start.Add(time.Duration(it) * 650 * time.Millisecond)
		for i, tag := range tags {
			v := math.Sin(float64(it)/500+float64(i)) * (1 + float64(it)/1000)
			if err := w.Scalar(tag, it, v, wall); err != nil {
				return "", err
			}
		}
		secs := int64(wall.Sub(start).Seconds())
		for _, tag := range timeTags {
			if err := w.Scalar(tag, secs, float64(it)/100, wall); err != nil {
				return "", err
			}
		}
		if it%256 == 0 {
			if err := w.Flush(); err != nil {
				return "", err
			}
			n, err := f.Seek(0, io.SeekEnd)
			if err != nil {
				return "", err
			}
			if n >= size {
				break
			}
		}
	}
	return path, w.Close()
}
