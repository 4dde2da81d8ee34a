package trainer_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer"
	"tunebot/trainer/tfevents"
)

// floodFile writes the event file of issue 27's attack: a curve of 1000 steps with a low
// and a high point planted in its middle, then 200,000 tags of one scalar each (26 MB).
func floodFile(t *testing.T, path string) {
	t.Helper()
	w, err := tfevents.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for s := range int64(1000) {
		v := math.Sin(float64(s) / 50)
		switch s {
		case 333:
			v = -7
		case 334:
			v = 7
		}
		if err := w.Scalar("Train/mean_reward", s, v, time.Unix(s, 0)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 200_000 {
		tag := fmt.Sprintf("Episode_Reward/a_rather_long_reward_term_name_as_a_buggy_logger_writes_it_%06d", i)
		if err := w.Scalar(tag, 1000, float64(i), time.Unix(1000, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEventLimits: a train job whose event file holds 200,000 tags is ingested within the
// event limits: the first max_tags tags are kept, a series longer than max_points is
// thinned keeping its first, last, lowest and highest points, a run past max_bytes is not
// read further, the store grows by little, and train.log says which limit cut and by how
// much.
func TestEventLimits(t *testing.T) {
	staged := filepath.Join(t.TempDir(), tfevents.FileName(time.Unix(1, 0), "host", 1, 0))
	floodFile(t, staged)
	st, err := os.Stat(staged)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		limits    trainer.EventLimits
		tags      int      // tags kept
		points    int      // points of Train/mean_reward kept
		log       []string // in train.log
		storeSize int64    // the store's file at most
		unread    int64    // bytes said to be left unread, at least (and at most a record more)
	}{
		{name: "defaults", tags: trainer.DefaultEventLimits.MaxTags, points: 1000,
			log:       []string{"events.max_tags allows (500): at least 10000 further tags dropped (199501 points)"},
			storeSize: 1 << 20},
		{name: "few points", limits: trainer.EventLimits{MaxTags: 10, MaxPoints: 100}, tags: 10, points: 100,
			log: []string{"events.max_tags allows (10): at least 10000 further tags dropped (199991 points)",
				"1 series are longer than events.max_points allows (100): thinned to 100 points (the longest had 1000)"},
			storeSize: 1 << 20},
		{name: "few bytes", limits: trainer.EventLimits{MaxBytes: 1 << 20}, tags: 500, points: 1000,
			log: []string{"events.max_bytes allows (1048576 bytes): "}, unread: st.Size() - 1<<20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(staged, filepath.Join(dir, filepath.Base(staged))); err != nil {
				t.Fatal(err)
			}
			r := newRunner(t, trainer.Templates{
				Train:    []string{"sh", "-c", `touch "$0/model_9.pt" "$0/policy.onnx"`, "{run_dir}"},
				Evaluate: []string{"true"}, Events: tt.limits,
			})
			res, err := r.Train(context.Background(), trainJob(dir, 10), session.JobHooks{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Series) != tt.tags {
				t.Errorf("%d tags kept, want %d", len(res.Series), tt.tags)
			}
			pts := res.Series["Train/mean_reward"]
			if len(pts) != tt.points {
				t.Fatalf("Train/mean_reward kept %d points, want %d", len(pts), tt.points)
			}
			for _, want := range []session.Point{{Step: 0, Value: 0}, {Step: 333, Value: -7}, {Step: 334, Value: 7}, {Step: 999, Value: float64(float32(math.Sin(999.0 / 50)))}} {
				found := false
				for _, p := range pts {
					found = found || p == want
				}
				if !found {
					t.Errorf("point %+v is lost", want)
				}
			}
			log := readFile(t, filepath.Join(dir, trainer.TrainLog))
			for _, want := range tt.log {
				if !strings.Contains(log, want) {
					t.Errorf("train.log lacks %q:\n%s", want, log)
				}
			}
			if tt.unread > 0 {
				m := regexp.MustCompile(`([0-9]+) bytes left unread`).FindStringSubmatch(log)
				if m == nil {
					t.Fatal("train.log does not say how many bytes were left unread")
				}
				if n, _ := strconv.ParseInt(m[1], 10, 64); n < tt.unread || n > tt.unread+200 {
					t.Errorf("%d bytes said unread, want %d (and at most a record more)", n, tt.unread)
				}
			}
			if tt.storeSize == 0 {
				return
			}
			path := filepath.Join(t.TempDir(), "tunebot.db")
			db, err := store.Open(path, store.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.PutSeriesBatch(context.Background(), "s1", session.TrialRef{Number: 3}, res.Series); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() > tt.storeSize {
				t.Errorf("the store grew to %d bytes (%v), want at most %d", fi.Size(), err, tt.storeSize)
			}
		})
	}
}

// TestRefusedTagsKeepTheRest: issue 36's event file, a good curve beside an empty tag and
// tags of 256 KiB, keeps the good curve through the train job and the store; train.log says
// what was refused, quoting each tag by a short prefix only.
func TestRefusedTagsKeepTheRest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := tfevents.Create(filepath.Join(dir, tfevents.FileName(time.Unix(1, 0), "host", 1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	for s := range int64(10) {
		for _, tag := range []string{"Train/mean_reward", "", strings.Repeat("x", 256<<10) + "1", strings.Repeat("x", 256<<10) + "2"} {
			if err := w.Scalar(tag, s, float64(s), time.Unix(s, 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, shellTemplates(`touch "$0/model_9.pt" "$0/policy.onnx"`))
	res, err := r.Train(context.Background(), trainJob(dir, 10), session.JobHooks{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Series) != 1 || len(res.Series["Train/mean_reward"]) != 10 {
		t.Errorf("series %d tags, Train/mean_reward %d points; want that curve whole and nothing else", len(res.Series), len(res.Series["Train/mean_reward"]))
	}
	log := readFile(t, filepath.Join(dir, trainer.TrainLog))
	if !strings.Contains(log, "event files have 3 tags no curve may carry (empty, not UTF-8, or longer than 256 bytes): dropped (30 points), the other tags kept") {
		t.Errorf("train.log does not say what was refused:\n%.2000s", log)
	}
	for _, line := range strings.Split(log, "\n") {
		if len(line) > 1000 {
			t.Errorf("train.log has a line of %d bytes: %.200s…", len(line), line)
		}
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.PutSeriesBatch(context.Background(), "s1", session.TrialRef{Number: 1}, res.Series); err != nil {
		t.Fatal(err)
	}
}
