package trainer

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tunebot/trainer/tfevents"
)

// TestKeepCheckedRefusesASwappedClip: the clip recorded at collection is the file whose
// bytes were checked through the open descriptor; one swapped between the check and the
// rename is not kept under the checked clip's hash (issue 27, item 2).
func TestKeepCheckedRefusesASwappedClip(t *testing.T) {
	for _, swapped := range []bool{false, true} {
		run := t.TempDir()
		if err := os.WriteFile(filepath.Join(run, ClipFile), []byte("checked"), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := OpenBounded(run, ClipFile, MaxClipBytes, "the clip")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if swapped {
			if err := os.WriteFile(filepath.Join(run, "other"), []byte("swapped"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(run, "other"), filepath.Join(run, ClipFile)); err != nil {
				t.Fatal(err)
			}
		}
		err = keepChecked(run, ClipFile, ClipFile+".gif", f)
		_, statErr := os.Lstat(filepath.Join(run, ClipFile+".gif"))
		switch {
		case !swapped && (err != nil || statErr != nil):
			t.Errorf("the checked clip was not kept: %v, %v", err, statErr)
		case swapped && (err == nil || !strings.Contains(err.Error(), "replaced while it was checked") || statErr == nil):
			t.Errorf("a swapped clip: %v; renamed file left: %v", err, statErr == nil)
		}
	}
}

// TestEventFilesAreOpenedBounded: the training curves read only event files inside the
// run dir: one linked from outside it is refused (and said in the log), a FIFO never
// blocks the read, and a file inside is read as before.
func TestEventFilesAreOpenedBounded(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "events.out.tfevents.1.host.1.0")
	run := t.TempDir()
	for path, tag := range map[string]string{outside: "Outside/secret", filepath.Join(run, "events.out.tfevents.2.host.1.0"): "Train/mean_reward"} {
		w, err := tfevents.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Scalar(tag, 1, 0.5, time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(run, "events.out.tfevents.3.host.1.0")); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	s := newSeriesReader(run, EventLimits{}, slog.New(slog.NewTextHandler(&logged, nil)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.read()
		// A FIFO swapped in for a file the listing found is refused, not waited on.
		if err := syscall.Mkfifo(filepath.Join(run, "events.fifo"), 0o644); err != nil {
			t.Error(err)
		}
		if _, err := s.r.ReadFile(filepath.Join(run, "events.fifo")); err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("a FIFO: %v", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading the event files blocked")
	}
	if _, ok := s.series["Outside/secret"]; ok || len(s.series["Train/mean_reward"]) != 1 {
		t.Errorf("series %v: want the run dir's alone", s.series)
	}
	if !strings.Contains(logged.String(), "leads outside") {
		t.Errorf("the refused link is not in the log:\n%s", logged.String())
	}
}
