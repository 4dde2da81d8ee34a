package trainer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tunebot/session"
	"tunebot/trainer"
)

// within runs fn and returns its error, or an error saying it was still running after d
// (a read that blocks on a FIFO).
func within(d time.Duration, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("still blocked after %s", d)
	}
}

// TestOpenBounded: a file a trainer wrote is opened once inside its root, following a link
// only while it stays inside; anything but a regular file within the cap is refused with
// its name and why, at once (a FIFO never blocks).
func TestOpenBounded(t *testing.T) {
	outside := t.TempDir()
	huge := filepath.Join(outside, "huge")
	if f, err := os.Create(huge); err != nil {
		t.Fatal(err)
	} else {
		f.Truncate(256 << 20) // sparse
		f.Close()
	}
	tests := []struct {
		name   string
		layout func(t *testing.T, root string)
		want   string // refusal text, "" for a file read
	}{
		{"regular", write("f", "hello"), ""},
		{"link inside the root", func(t *testing.T, root string) {
			write("real", "hello")(t, root)
			link("real", "f")(t, root)
		}, ""},
		{"link to a huge file outside", link(huge, "f"), "f leads outside"},
		{"link to /dev/zero", link("/dev/zero", "f"), "f leads outside"},
		{"relative link out", link("../../etc/passwd", "f"), "f leads outside"},
		{"FIFO", func(t *testing.T, root string) {
			if err := syscall.Mkfifo(filepath.Join(root, "f"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "f is a named pipe (FIFO), not a regular file"},
		{"directory", func(t *testing.T, root string) {
			if err := os.Mkdir(filepath.Join(root, "f"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "f is a directory, not a regular file"},
		{"over the cap", write("f", strings.Repeat("x", 1025)), "f is 1.0 KiB, over the 1.0 KiB it may be"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tc.layout(t, root)
			var got []byte
			err := within(5*time.Second, func() error {
				f, err := trainer.OpenBounded(root, "f", 1024, "the test file")
				if err != nil {
					return err
				}
				defer f.Close()
				got, err = f.ReadAll()
				return err
			})
			if tc.want == "" {
				if err != nil || string(got) != "hello" {
					t.Fatalf("OpenBounded read %q, %v", got, err)
				}
				return
			}
			var re *trainer.RefusedError
			msg, user := session.UserMessage(err)
			if !errors.As(err, &re) || !user || !strings.HasPrefix(msg, "the test file refused: ") || !strings.Contains(msg, tc.want) {
				t.Fatalf("OpenBounded = %v, want a refusal with %q", err, tc.want)
			}
		})
	}
	if _, err := trainer.OpenBounded(t.TempDir(), "none", 1024, "the test file"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if _, err := trainer.OpenBounded(t.TempDir(), "../f", 1024, "the test file"); err == nil || !strings.Contains(err.Error(), "is not inside") {
		t.Errorf("a name out of the root: %v", err)
	}
}

func write(name, data string) func(t *testing.T, root string) {
	return func(t *testing.T, root string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func link(target, name string) func(t *testing.T, root string) {
	return func(t *testing.T, root string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEvaluateRefusesOddEvaluationFiles: an evaluate job that leaves a link to a huge file,
// a link to /dev/zero, a FIFO or an oversized file at {eval_output} fails with a reason
// naming the file and why, at once, without reading it (issue 27, item 1).
func TestEvaluateRefusesOddEvaluationFiles(t *testing.T) {
	outside := t.TempDir()
	huge := filepath.Join(outside, "huge.json")
	if f, err := os.Create(huge); err != nil {
		t.Fatal(err)
	} else {
		f.Truncate(256 << 20) // sparse: costs no disk, would cost 256 MB read whole
		f.Close()
	}
	tests := []struct {
		name, script, want string
	}{
		{"link to a huge file", `ln -s "` + huge + `" "$0"`, "the evaluation refused: evaluation.json leads outside"},
		{"link to /dev/zero", `ln -s /dev/zero "$0"`, "the evaluation refused: evaluation.json leads outside"},
		{"FIFO", `mkfifo "$0"`, "the evaluation refused: evaluation.json is a named pipe (FIFO), not a regular file"},
		{"oversized", `truncate -s 2M "$0"`, "the evaluation refused: evaluation.json is 2.0 MiB, over the 1.0 MiB it may be"},
		{"huge link inside the run dir", `truncate -s 300M "$0.big" && ln -s evaluation.json.big "$0"`,
			"the evaluation refused: evaluation.json is 300.0 MiB, over the 1.0 MiB it may be"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := newRunner(t, trainer.Templates{Train: []string{"true"}, Evaluate: []string{"sh", "-c", tc.script, "{eval_output}"}})
			var ev session.Evaluation
			err := within(10*time.Second, func() error {
				var err error
				ev, err = r.Evaluate(context.Background(), evalJob(dir, "/ckpt/model_1.pt", 0), session.JobHooks{})
				return err
			})
			je := jobError(t, err)
			if je.Reason != tc.want && !strings.HasPrefix(je.Reason, tc.want) {
				t.Errorf("reason %q, want %q", je.Reason, tc.want)
			}
			if ev.Metrics != nil {
				t.Errorf("metrics %v from a refused file", ev.Metrics)
			}
		})
	}
}

// TestOpenClipReadsTheCheckedDescriptor: the clip the page and chat show is read from the
// descriptor that was checked against the record; swapping the file on disk afterwards
// for a FIFO or a link to something else changes nothing that is read, and never blocks
// (issue 27, item 2).
func TestOpenClipReadsTheCheckedDescriptor(t *testing.T) {
	for _, swap := range []struct {
		name string
		do   func(t *testing.T, path string)
	}{
		{"FIFO", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path+".new", 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"link to /dev/zero", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path+".new"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(swap.name, func(t *testing.T) {
			root, tr, gifData := recordedClip(t)
			path := filepath.Join(root, tr.SessionID, tr.Clip.Path)
			f, err := trainer.OpenClip(root, tr, false)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			swap.do(t, path)
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
			var got []byte
			if err := within(5*time.Second, func() error {
				var err error
				got, err = io.ReadAll(f.Section())
				return err
			}); err != nil || !bytes.Equal(got, gifData) {
				t.Errorf("read after the swap: %d bytes, %v; want the %d checked", len(got), err, len(gifData))
			}
			// A later open meets the swapped file and refuses it at once.
			err = within(5*time.Second, func() error { _, err := trainer.OpenClip(root, tr, false); return err })
			if msg, ok := session.UserMessage(err); !ok || !strings.Contains(msg, "the clip of trial 2 @ rung 0 refused") {
				t.Errorf("open after the swap: %v", err)
			}
		})
	}
}

// recordedClip writes a sim clip into a session's run dir under a fresh sessions root and
// returns the root, the trial that records it and its bytes.
func recordedClip(t *testing.T) (string, session.Trial, []byte) {
	t.Helper()
	root := t.TempDir()
	const sid = "0123456789abcdef"
	run := filepath.Join(root, sid, "trial-002-rung-0")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	gifData, _ := simGIF(t)
	if err := os.WriteFile(filepath.Join(run, "clip.gif"), gifData, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := trainer.CheckClip(filepath.Join(run, "clip.gif"))
	if err != nil {
		t.Fatal(err)
	}
	c.Path = "trial-002-rung-0/clip.gif"
	return root, session.Trial{SessionID: sid, Number: 2, Clip: &c}, gifData
}

// TestClipNoteQuotesNoContent: a refused clip's note says why in words of its own and
// quotes none of the file's bytes, even when the file is a key (issue 27, item 8).
func TestClipNoteQuotesNoContent(t *testing.T) {
	const key = "K3yS3cr3tW1thN0Sp4ce5AndMoreBytesThanEight"
	mp4Head := func(boxType string) string { // an ftyp box, then a box cut off
		return "\x00\x00\x00\x10ftypisom\x00\x00\x02\x00" + "\x00\x00\x10\x00" + boxType + "rest"
	}
	tests := []struct{ name, data, leak, want string }{
		{"a key", key, key, "unknown format"},
		{"a key with a GIF's header", "GIF89a\x10\x00\x10\x00\x00\x00\x00" + key, key, "GIF is corrupt"},
		{"an MP4 with an odd box", mp4Head("K3yS"), "K3yS", "truncated MP4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "clip")
			if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := trainer.CheckClip(path)
			var ce *trainer.ClipError
			if !errors.As(err, &ce) || !strings.Contains(ce.Error(), tc.want) {
				t.Fatalf("CheckClip = %v, want a refusal with %q", err, tc.want)
			}
			for i := 0; i+4 <= len(tc.leak); i++ {
				if strings.Contains(ce.Error(), tc.leak[i:i+4]) {
					t.Fatalf("the note %q quotes the file's bytes %q", ce.Error(), tc.leak[i:i+4])
				}
			}
		})
	}
}

// TestLogTailNeverBlocks: a job that leaves a FIFO where its log was fails with its
// reason at once; the log's tail is read through the bounded reader, which refuses it.
func TestLogTailNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, trainer.Templates{Train: []string{"true"},
		Evaluate: []string{"sh", "-c", `rm "$0/evaluate.log" && mkfifo "$0/evaluate.log" && exit 3`, "{run_dir}"}})
	err := within(10*time.Second, func() error {
		_, err := r.Evaluate(context.Background(), evalJob(dir, "/ckpt/model_1.pt", 0), session.JobHooks{})
		return err
	})
	if je := jobError(t, err); je.Reason != "exit status 3" || je.LogTail != "" {
		t.Errorf("JobError %q with tail %q", je.Reason, je.LogTail)
	}
}
