package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// GPUDirEnv names a directory that stands for the machine's GPUs. When it is set, every
// sim job holds the GPUs it was given (CUDA_VISIBLE_DEVICES) as exclusive files there for
// as long as it runs, and fails at once, naming the holder, when another job holds one:
// a real GPU given to two jobs runs out of memory, and this is the sim's version of that.
// Every hold and release is logged to the directory's "log" (one line each, with the
// time in nanoseconds), so tests and benchmarks can see how many jobs ran at once.
const GPUDirEnv = "TUNEBOT_SIM_GPU_DIR"

// HoldGPUs takes the GPUs of visible (a CUDA_VISIBLE_DEVICES value) in dir for job, and
// returns the function that gives them back.
func HoldGPUs(dir, visible, job string) (release func(), err error) {
	var held []string
	release = func() {
		for _, p := range held {
			_ = os.Remove(p)
		}
		if len(held) > 0 {
			logHold(dir, "release", visible, job)
		}
	}
	for _, id := range strings.Split(visible, ",") {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		p := filepath.Join(dir, "gpu-"+id)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, fs.ErrExist) {
			holder, _ := os.ReadFile(p)
			release()
			return nil, fmt.Errorf("GPU %s is already held by %s", id, strings.TrimSpace(string(holder)))
		}
		if err != nil {
			release()
			return nil, fmt.Errorf("holding GPU %s: %w", id, err)
		}
		fmt.Fprintln(f, job)
		f.Close()
		held = append(held, p)
	}
	if len(held) > 0 {
		logHold(dir, "hold", visible, job)
	}
	return release, nil
}

func logHold(dir, what, visible, job string) {
	f, err := os.OpenFile(filepath.Join(dir, "log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%d %s %s %s\n", time.Now().UnixNano(), what, visible, job)
}

// PeakHolders reads a GPU directory's log and returns the most jobs that held GPUs at once.
func PeakHolders(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil {
		return 0, err
	}
	n, peak := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[1] {
		case "hold":
			n++
		case "release":
			n--
		}
		peak = max(peak, n)
	}
	return peak, nil
}
