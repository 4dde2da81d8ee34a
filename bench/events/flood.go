package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"tunebot/trainer"
	"tunebot/trainer/tfevents"
)

// floodTags is the tag count of issue 27's event file: one buggy train step logged 200,000
// tags (26 MB), which once held the daemon at full CPU for 90 s.
const floodTags = 200_000

// flood writes that file into dir (once; kept for later runs) and times reading it under
// the trainer's default event limits, best of runs.
func flood(dir string, runs int) (path string, size int64, kept int, cut tfevents.Cut, best time.Duration, err error) {
	path = filepath.Join(dir, tfevents.FileName(time.Unix(1745910742, 0), "flood.host.lan", 4264, 0))
	if _, serr := os.Stat(path); serr != nil {
		w, err := tfevents.Create(path)
		if err != nil {
			return "", 0, 0, cut, 0, err
		}
		for i := range floodTags {
			tag := fmt.Sprintf("Episode_Reward/a_rather_long_reward_term_name_as_a_buggy_logger_writes_it_%06d", i)
			if err := w.Scalar(tag, 1, float64(i), time.Unix(1745910742, 0)); err != nil {
				w.Close()
				return "", 0, 0, cut, 0, err
			}
		}
		if err := w.Close(); err != nil {
			return "", 0, 0, cut, 0, err
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", 0, 0, cut, 0, err
	}
	lim := trainer.DefaultEventLimits
	var times []time.Duration
	for range max(runs, 1) {
		r := tfevents.Reader{Limits: tfevents.Limits{MaxTags: lim.MaxTags, MaxBytes: lim.MaxBytes}}
		t0 := time.Now()
		pts, err := r.ReadFile(path)
		times = append(times, time.Since(t0))
		if err != nil {
			return "", 0, 0, cut, 0, err
		}
		kept, cut = len(pts), r.Cut()
	}
	return path, st.Size(), kept, cut, slices.Min(times), nil
}
