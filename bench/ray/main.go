// Command ray measures the ray executor against a real head (issue 46): the wall time of one
// 12-trial sim session at parallel 4 against parallel 1 on 4 logical GPUs (target ≤ 0.45×, as
// on the local backend), and, at parallel 1, the time between one trainer command's end and
// the next one's start, split into tunebot's part (end → the next job submitted) and Ray's
// (submitted → the command running), against the local backend's; the local backend's own
// parallel 4 against 1 on the same machine says what the ratio is without Ray. Each trainer command
// is wrapped in a script that records when it starts and ends, in nanoseconds; tunebot's
// part comes from its JSON log. Medians, ratios within one run; nothing is asserted.
//
//	RAY_ADDRESS=http://127.0.0.1:8265 RAY_AUTH_TOKEN=... go run ./bench/ray -bin bin/tunebot
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"tunebot/trainer"
	"tunebot/trainer/sim"
)

// wrapper runs a trainer command (after the run dir and the job's kind), appending its start
// and end times to files in the run dir.
const wrapper = `#!/bin/sh
run_dir=$1; kind=$2; shift 2
date +%s.%N >> "$run_dir/$kind.start"
"$@"; rc=$?
date +%s.%N >> "$run_dir/$kind.end"
exit $rc
`

type bench struct {
	bin, address, wrapper string
	delay, poll           time.Duration
}

func main() {
	var b bench
	flag.StringVar(&b.bin, "bin", "bin/tunebot", "tunebot binary")
	flag.StringVar(&b.address, "address", os.Getenv("RAY_ADDRESS"), "the head's job server")
	// 20 ms an iteration makes the rungs' jobs 6, 18 and 40 s long: long enough that Ray's
	// second of its own per job (a job supervisor and a driver started for each) does not
	// stand for the minutes of a real one, short enough to run in about ten minutes.
	flag.DurationVar(&b.delay, "step-delay", 20*time.Millisecond, "sim trainer time per iteration")
	flag.DurationVar(&b.poll, "poll", 250*time.Millisecond, "executor.ray.poll_interval")
	flag.Parse()
	if err := b.run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/ray:", err)
		os.Exit(1)
	}
}

func (b *bench) run() error {
	abs, err := filepath.Abs(b.bin) // each session runs in a directory of its own
	if err != nil {
		return err
	}
	b.bin = abs
	dir, err := os.MkdirTemp("", "tunebot-bench-ray")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b.wrapper = filepath.Join(dir, "wrap.sh")
	if err := os.WriteFile(b.wrapper, []byte(wrapper), 0o755); err != nil {
		return err
	}
	fmt.Printf("ray executor: 12-trial sim sessions (halving 12→4→2, final re-evaluation) through a real head with 4 logical GPUs, %s per iteration, the head asked every %s\n", b.delay, b.poll)
	ray1, err := b.session(dir, "ray", 1)
	if err != nil {
		return err
	}
	ray4, err := b.session(dir, "ray", 4)
	if err != nil {
		return err
	}
	local1, err := b.session(dir, "local", 1)
	if err != nil {
		return err
	}
	local4, err := b.session(dir, "local", 4)
	if err != nil {
		return err
	}
	fmt.Printf("  Ray:   parallel 1 %6.1fs, parallel 4 %6.1fs: %.2f× of parallel 1 (target ≤ 0.45×); at most %d jobs held GPUs at once\n",
		ray1.wall.Seconds(), ray4.wall.Seconds(), ray4.wall.Seconds()/ray1.wall.Seconds(), ray4.peak)
	fmt.Printf("  local: parallel 1 %6.1fs, parallel 4 %6.1fs: %.2f× of parallel 1, the same sessions on this machine's 4 (sim) GPUs\n",
		local1.wall.Seconds(), local4.wall.Seconds(), local4.wall.Seconds()/local1.wall.Seconds())
	fmt.Printf("  between jobs at parallel 1 (%d Ray jobs, %d local), medians:\n", len(ray1.toSubmit)+1, len(local1.toSubmit)+1)
	fmt.Printf("    a command's end → the next job submitted (Ray saying it ended, tunebot's poll and its own work)  Ray %5.0f ms   local %5.1f ms\n", median(ray1.toSubmit), median(local1.toSubmit))
	fmt.Printf("    submitted → its command running (Ray's job supervisor and driver; local: fork and exec)         Ray %5.0f ms   local %5.1f ms\n", median(ray1.toStart), median(local1.toStart))
	fmt.Printf("    end → next start in all                                                                         Ray %5.0f ms   local %5.1f ms  (p90 Ray %.0f ms)\n", median(ray1.gap), median(local1.gap), pct(ray1.gap, 0.9))
	return nil
}

// result is one session's wall time, the most jobs seen holding GPUs, and per job at
// parallel 1 the gaps: end → next submission, submission → start, end → next start (ms).
type result struct {
	wall                   time.Duration
	peak                   int
	toSubmit, toStart, gap []float64
}

// session runs one 12-trial session on backend at parallel, every command wrapped.
func (b *bench) session(root, backend string, parallel int) (result, error) {
	dir := filepath.Join(root, fmt.Sprintf("%s-%d", backend, parallel))
	gpus := filepath.Join(dir, "gpus")
	if err := os.MkdirAll(gpus, 0o755); err != nil {
		return result{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tunebot.yaml"), []byte(b.config(backend, parallel)), 0o644); err != nil {
		return result{}, err
	}
	cmd := exec.Command(b.bin, "tune", "--config", filepath.Join(dir, "tunebot.yaml"), "--fallback", "--json")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), sim.StepDelayEnv+"="+b.delay.String(), sim.GPUDirEnv+"="+gpus)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%s parallel %d: tune: %v\n%s", backend, parallel, err, errb.String())
	}
	r := result{wall: time.Since(start)}
	var sum struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil || sum.State != "succeeded" {
		return r, fmt.Errorf("%s parallel %d: the session %s (%v)\n%s", backend, parallel, sum.State, err, errb.String())
	}
	var err error
	if r.peak, err = sim.PeakHolders(gpus); err != nil {
		return r, err
	}
	if parallel == 1 {
		err = r.gaps(filepath.Join(dir, "data"), backend)
	}
	return r, err
}

func (b *bench) config(backend string, parallel int) string {
	wrap := func(kind string, argv []string) string {
		q := []string{strconv.Quote(b.wrapper), `"{run_dir}"`, strconv.Quote(kind)}
		for _, a := range argv {
			q = append(q, strconv.Quote(a))
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	cfg := fmt.Sprintf(`data_dir: data
log: {level: info, format: json}
service: {addr: "off"}
trainer:
  train: %s
  evaluate: %s
session:
  trial_count: 12
  early_stop_patience: 12
  gpus: [0, 1, 2, 3]
executor:
  backend: %s
  parallel: %d
  gpus_per_trial: 1
`, wrap("train", trainer.SimTrain), wrap("evaluate", trainer.SimEvaluate), backend, parallel)
	if backend == "ray" {
		cfg += fmt.Sprintf("  ray: {address: %q, poll_interval: %s}\n", b.address, b.poll)
	}
	return cfg
}

// gaps pairs, at parallel 1, each command's end with the next command's submission (from
// tunebot's log) and start (from the wrapper).
func (r *result) gaps(data, backend string) error {
	var starts, ends []float64
	for _, kind := range []string{"start", "end"} {
		files, _ := filepath.Glob(filepath.Join(data, "sessions", "*", "*", "*."+kind))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			for _, l := range strings.Fields(string(b)) {
				v, err := strconv.ParseFloat(l, 64)
				if err != nil {
					return fmt.Errorf("%s: %v", f, err)
				}
				if kind == "start" {
					starts = append(starts, v)
				} else {
					ends = append(ends, v)
				}
			}
		}
	}
	msg := "job started"
	if backend == "ray" {
		msg = "job submitted to Ray"
	}
	subs, err := logTimes(filepath.Join(data, "tunebot.log"), msg)
	if err != nil {
		return err
	}
	sort.Float64s(starts)
	sort.Float64s(ends)
	sort.Float64s(subs)
	if len(starts) != len(ends) || len(subs) != len(starts) || len(starts) < 2 {
		return fmt.Errorf("%s: %d starts, %d ends, %d submissions: the jobs did not run one after another", backend, len(starts), len(ends), len(subs))
	}
	for i := 1; i < len(starts); i++ {
		r.toSubmit = append(r.toSubmit, 1000*(subs[i]-ends[i-1]))
		r.toStart = append(r.toStart, 1000*(starts[i]-subs[i]))
		r.gap = append(r.gap, 1000*(starts[i]-ends[i-1]))
	}
	return nil
}

// logTimes are the times (Unix seconds) of tunebot's JSON log records with message msg.
func logTimes(path, msg string) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []float64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == msg {
			out = append(out, float64(rec.Time.UnixNano())/1e9)
		}
	}
	return out, sc.Err()
}

func median(v []float64) float64 { return pct(v, 0.5) }

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	return s[int(p*float64(len(s)-1))]
}
