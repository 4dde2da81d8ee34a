// Command engine measures what tunebot itself adds to a session (issue 3): the gap between
// the end of one trainer process and the start of the next, and tunebot's peak RSS over a
// 20-trial sim session. It runs the real binary; the numbers come from tunebot's own JSON
// log and from /proc/PID/status (VmHWM), so nothing is asserted, only reported.
//
//	go run ./bench/engine -bin bin/tunebot
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
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	bin := flag.String("bin", "bin/tunebot", "tunebot binary")
	trials := flag.Int("trials", 20, "trial count of the session")
	flag.Parse()
	if err := run(*bin, *trials); err != nil {
		fmt.Fprintln(os.Stderr, "bench/engine:", err)
		os.Exit(1)
	}
}

func run(bin string, trials int) error {
	dir, err := os.MkdirTemp("", "tunebot-bench-engine")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "tunebot.yaml")
	body := fmt.Sprintf("data_dir: data\nlog: {level: info, format: json}\nsession:\n  trial_count: %d\n  early_stop_patience: 20\n", trials)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(bin, "tune", "--config", cfg, "--fallback", "--json")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	peak := 0
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("tune: %v\n%s", err, out.String())
			}
			break wait
		case <-tick.C:
			if kb := vmHWM(cmd.Process.Pid); kb > peak {
				peak = kb
			}
		}
	}
	wall := time.Since(start)
	gaps, jobs, err := gapsFromLog(filepath.Join(dir, "data", "tunebot.log"))
	if err != nil {
		return err
	}
	sort.Float64s(gaps)
	med := gaps[len(gaps)/2]
	p90 := gaps[len(gaps)*9/10]
	fmt.Printf("engine: %d-trial sim session, %d trainer jobs, wall %.1fs\n", trials, jobs, wall.Seconds())
	fmt.Printf("  gap between trainer processes (tunebot's own time): median %.1f ms, p90 %.1f ms, max %.1f ms  (target median ≤ 50, max ≤ 250)\n", med, p90, gaps[len(gaps)-1])
	fmt.Printf("  peak RSS of tunebot: %.1f MB (VmHWM, sampled every 20 ms; target ≤ 64 MB)\n", float64(peak)/1024)
	return nil
}

func vmHWM(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.Atoi(f[1])
				return kb
			}
		}
	}
	return 0
}

// gapsFromLog pairs each "job ended" with the next "job started" in tunebot's JSON log.
func gapsFromLog(path string) ([]float64, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	var gaps []float64
	var lastEnd time.Time
	jobs := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		switch rec.Msg {
		case "job started":
			jobs++
			if !lastEnd.IsZero() {
				gaps = append(gaps, float64(rec.Time.Sub(lastEnd).Microseconds())/1000)
			}
		case "job ended":
			lastEnd = rec.Time
		}
	}
	if len(gaps) == 0 {
		return nil, 0, fmt.Errorf("no job gaps found in %s", path)
	}
	return gaps, jobs, sc.Err()
}
