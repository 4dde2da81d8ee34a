// Command eventtags measures the daemon's peak memory under issue 36's event-file attack: a
// trainer that writes, beside its real curves, 400 tags of 256 KiB each (one scalar each,
// about 100 MB) once pushed tunebot from 36 MB to 433 MB. It runs the real binary on two
// sim sessions, one with the sim trainer as it is (the idle figure) and one whose first
// train jobs write that file too, samples tunebot's VmHWM, and reports both against the
// bound of issue 36: at most twice the idle figure plus 64 MB. Nothing is asserted.
//
//	go run ./bench/eventtags -bin bin/tunebot
//
// Run as "eventtags -trainer TUNEBOT sim-train ARGS...", it is that hostile trainer: it
// writes the file into --run-dir (for the first -hostile trials) and then execs the rest.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tunebot/trainer"
	"tunebot/trainer/tfevents"
)

const (
	attackTags     = 400
	attackTagBytes = 256 << 10
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-trainer" {
		os.Exit(hostileTrainer(os.Args[2:]))
	}
	bin := flag.String("bin", "bin/tunebot", "tunebot binary")
	trials := flag.Int("trials", 4, "trial count of each session")
	hostile := flag.Int("hostile", 2, "trials (from trial 0) whose train job writes the attack's event file")
	flag.Parse()
	if err := run(*bin, *trials, *hostile); err != nil {
		fmt.Fprintln(os.Stderr, "bench/eventtags:", err)
		os.Exit(1)
	}
}

func run(bin string, trials, hostile int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bin, err = filepath.Abs(bin)
	if err != nil {
		return err
	}
	idle, _, err := session(bin, trials, nil)
	if err != nil {
		return fmt.Errorf("the plain session: %w", err)
	}
	wrap := []string{self, "-trainer", strconv.Itoa(hostile)}
	attacked, log, err := session(bin, trials, wrap)
	if err != nil {
		return fmt.Errorf("the attacked session: %w", err)
	}
	bound := 2*idle + 64
	fmt.Printf("event-file tags: %d tags of %d KiB (%.0f MB of event file) in the first %d trials' train jobs of a %d-trial sim session\n",
		attackTags, attackTagBytes>>10, float64(attackTags*attackTagBytes)/1e6, hostile, trials)
	fmt.Printf("  peak RSS of tunebot, plain session (idle figure): %6.1f MB\n", idle)
	fmt.Printf("  peak RSS of tunebot, attacked session:            %6.1f MB  (bound 2 × idle + 64 = %.1f MB: %s)\n",
		attacked, bound, map[bool]string{true: "met", false: "NOT met"}[attacked <= bound])
	if i := strings.Index(log, "tags no curve may carry"); i >= 0 {
		line := log[max(0, strings.LastIndexByte(log[:i], '\n')+1):]
		if j := strings.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		fmt.Printf("  train.log says (%d bytes): %q\n", len(line), line) // quoted: the trainer's log, not ours
	}
	return nil
}

// session runs one sim session with tunebot tune, the train template wrapped in wrap (nil:
// the plain sim trainer), and returns tunebot's peak RSS in MB and the baseline's train.log.
func session(bin string, trials int, wrap []string) (float64, string, error) {
	dir, err := os.MkdirTemp("", "tunebot-bench-eventtags")
	if err != nil {
		return 0, "", err
	}
	defer os.RemoveAll(dir)
	train := append(append([]string{}, wrap...), trainer.SimTrain...)
	quoted := make([]string, len(train))
	for i, a := range train {
		quoted[i] = strconv.Quote(a)
	}
	cfg := filepath.Join(dir, "tunebot.yaml")
	body := fmt.Sprintf("data_dir: data\nlog: {level: info, format: json}\nsession:\n  trial_count: %d\n  early_stop_patience: 20\ntrainer:\n  train: [%s]\n",
		trials, strings.Join(quoted, ", "))
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		return 0, "", err
	}
	cmd := exec.Command(bin, "tune", "--config", cfg, "--fallback", "--json")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return 0, "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	peak := 0
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return 0, "", fmt.Errorf("tune: %v\n%s", err, out.String())
			}
			logs, _ := filepath.Glob(filepath.Join(dir, "data", "sessions", "*", "trial-000-rung-0", trainer.TrainLog))
			var log []byte
			if len(logs) > 0 {
				log = readLog(logs[0])
			}
			return float64(peak) / 1024, string(log), nil
		case <-tick.C:
			peak = max(peak, vmHWM(cmd.Process.Pid))
		}
	}
}

// maxLogBytes caps the train.log read: the baseline's log of a sim trial takes a few KiB.
const maxLogBytes = 1 << 20

// readLog is a train.log's text, read as tunebot reads what a trainer wrote (the one
// bounded reader: no links out, a regular file, a cap); nil when it cannot be.
func readLog(path string) []byte {
	f, err := trainer.OpenBounded(filepath.Dir(path), filepath.Base(path), maxLogBytes, "the baseline's train.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/eventtags:", err)
		return nil
	}
	defer f.Close()
	b, err := f.ReadAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/eventtags:", err)
		return nil
	}
	return b
}

// hostileTrainer writes the attack's event file into the run dir of args (for trials below
// the first argument), then execs the rest of args, the real trainer.
func hostileTrainer(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "eventtags -trainer N TUNEBOT sim-train ARGS...")
		return 2
	}
	hostile, _ := strconv.Atoi(args[0])
	args = args[1:]
	runDir := ""
	for i, a := range args {
		if a == "--run-dir" && i+1 < len(args) {
			runDir = args[i+1]
		}
	}
	var n, rung int
	if _, err := fmt.Sscanf(filepath.Base(runDir), "trial-%d-rung-%d", &n, &rung); err == nil && n < hostile && rung == 0 {
		if err := writeAttack(runDir); err != nil {
			fmt.Fprintln(os.Stderr, "eventtags trainer:", err)
			return 1
		}
	}
	err := syscall.Exec(args[0], args, os.Environ())
	fmt.Fprintln(os.Stderr, "eventtags trainer:", err)
	return 1
}

// writeAttack writes attackTags distinct tags of attackTagBytes, one scalar each.
func writeAttack(runDir string) error {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	w, err := tfevents.Create(filepath.Join(runDir, tfevents.FileName(time.Now(), "hostile", os.Getpid(), 0)))
	if err != nil {
		return err
	}
	pad := strings.Repeat("x", attackTagBytes-8)
	for i := range attackTags {
		if err := w.Scalar(fmt.Sprintf("%08d", i)+pad, 0, 1, time.Now()); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

func vmHWM(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.Atoi(f[1])
			return kb
		}
	}
	return 0
}
