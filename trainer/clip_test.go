package trainer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"tunebot/session"
	"tunebot/trainer"
	"tunebot/trainer/sim"
)

// simGIF is a real sim clip and its poster frame.
func simGIF(t *testing.T) ([]byte, []byte) {
	t.Helper()
	g, p, err := sim.Clip(session.Metrics{session.MetricVelLinear: 0.2, session.MetricFootSlip: 0.1, session.MetricOrientation: 0.05}, sim.NoLabel)
	if err != nil {
		t.Fatal(err)
	}
	return g, p
}

func TestCheckClip(t *testing.T) {
	gifData, posterData := simGIF(t)
	h264, err := os.ReadFile("testdata/clip-h264.mp4")
	if err != nil {
		t.Fatal(err)
	}
	moovLast, err := os.ReadFile("testdata/clip-h264-moov-last.mp4")
	if err != nil {
		t.Fatal(err)
	}
	mpeg4, err := os.ReadFile("testdata/clip-mpeg4.mp4")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		data   []byte
		format string
		frames int
		w, h   int
		want   string // refusal text, "" for a good clip
	}{
		{"h264 moov first", h264, "mp4", 10, 64, 48, ""},
		{"h264 moov last", moovLast, "mp4", 10, 64, 48, ""},
		{"sim gif", gifData, "gif", sim.ClipFrames, sim.ClipWidth, sim.ClipHeight, ""},
		{"mpeg4 part 2", mpeg4, "", 0, 0, 0, `video is "mp4v", not H.264`},
		{"mp4 cut in half", h264[:len(h264)/2], "", 0, 0, 0, "truncated MP4"},
		{"mp4 with its media cut", moovLast[:len(moovLast)-800], "", 0, 0, 0, "truncated MP4"},
		{"gif cut in half", gifData[:len(gifData)/2], "", 0, 0, 0, "truncated GIF"},
		{"gif with a bad frame", corruptGIF(gifData), "", 0, 0, 0, "does not decode"},
		{"a png", posterData, "", 0, 0, 0, "unknown format: neither an MP4 nor a GIF"},
		{"empty", nil, "", 0, 0, 0, "the file is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// no extension: the container comes from the content
			p := filepath.Join(t.TempDir(), "clip")
			if err := os.WriteFile(p, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := trainer.CheckClip(p)
			if tc.want != "" {
				var ce *trainer.ClipError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("CheckClip = %v, want a refusal with %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("CheckClip: %v", err)
			}
			if c.Format != tc.format || c.Frames != tc.frames || c.Width != tc.w || c.Height != tc.h || c.Size != int64(len(tc.data)) || len(c.SHA256) != 64 || c.Path != p {
				t.Errorf("CheckClip = %+v, want %s with %d frames of %d×%d", c, tc.format, tc.frames, tc.w, tc.h)
			}
			if c.Seconds < 0.9 || c.Seconds > 5.1 {
				t.Errorf("clip of %.2f s, want 1–5 s", c.Seconds)
			}
		})
	}
}

// corruptGIF gives the first frame an impossible LZW code size, keeping the block structure.
func corruptGIF(g []byte) []byte {
	out := append([]byte(nil), g...)
	i := 13
	if out[10]&0x80 != 0 {
		i += 3 << (out[10]&7 + 1)
	}
	for i < len(out) {
		switch out[i] {
		case 0x21:
			i += 2
			for out[i] != 0 {
				i += int(out[i]) + 1
			}
			i++
		case 0x2c:
			at := i + 10
			if out[i+9]&0x80 != 0 {
				at += 3 << (out[i+9]&7 + 1)
			}
			out[at] = 12
			return out
		default:
			return out
		}
	}
	return out
}

func TestCheckClipRefusesOversizedAndOddFiles(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("GIF89a")); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(trainer.MaxClipBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := trainer.CheckClip(big); err == nil || !strings.Contains(err.Error(), "big is 16.0 MiB, over the 16.0 MiB it may be") {
		t.Errorf("oversized: %v", err)
	}
	// A link is followed only inside the clip's directory: one out of it is refused.
	sub := filepath.Join(dir, "run")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "gif"), filepath.Join(sub, "clip")); err != nil {
		t.Fatal(err)
	}
	gifData, _ := simGIF(t)
	if err := os.WriteFile(filepath.Join(dir, "gif"), gifData, 0o644); err != nil {
		t.Fatal(err)
	}
	var ce *trainer.ClipError
	if _, err := trainer.CheckClip(filepath.Join(sub, "clip")); !errors.As(err, &ce) || !strings.Contains(err.Error(), "clip leads outside") {
		t.Errorf("symlink out: %v", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(sub, "zero")); err != nil {
		t.Fatal(err)
	}
	if _, err := trainer.CheckClip(filepath.Join(sub, "zero")); !errors.As(err, &ce) || !strings.Contains(err.Error(), "zero leads outside") {
		t.Errorf("symlink to /dev/zero: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := within(5*time.Second, func() error { _, err := trainer.CheckClip(fifo); return err }); !errors.As(err, &ce) ||
		!strings.Contains(err.Error(), "fifo is a named pipe (FIFO), not a regular file") {
		t.Errorf("FIFO: %v", err)
	}
	if _, err := trainer.CheckClip(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// TestEvaluateCollectsTheClip runs the sim's evaluate job through the Runner: the clip it
// writes at {clip_output} is checked, renamed after its container and recorded with its
// poster; a broken one is refused with a line in evaluate.log; a template without
// {clip_output}, or a final re-evaluation, yields none and leaves the rung's clip alone.
func TestEvaluateCollectsTheClip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	res, err := newRunner(t, simTemplates()).Train(ctx, trainJob(dir, 20), session.JobHooks{})
	if err != nil {
		t.Fatal(err)
	}
	job := evalJob(dir, res.Checkpoint, 0, 1)
	job.Clip = true

	ev, err := newRunner(t, simTemplates()).Evaluate(ctx, job, session.JobHooks{})
	if err != nil {
		t.Fatal(err)
	}
	c := ev.Clip
	if c == nil || c.Path != filepath.Join(dir, "clip.gif") || c.Format != "gif" || c.Frames != sim.ClipFrames || c.Poster == nil ||
		c.Poster.Path != filepath.Join(dir, trainer.ClipPosterFile) || ev.ClipNote != "" {
		t.Fatalf("clip %+v, note %q", c, ev.ClipNote)
	}
	if _, err := os.Stat(filepath.Join(dir, trainer.ClipFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the unnamed clip is still there: %v", err)
	}

	// A final re-evaluation asks for no clip: it writes none and keeps the rung's.
	final := evalJob(dir, res.Checkpoint, 3)
	final.Output = filepath.Join(dir, "evaluation-final.json")
	ev, err = newRunner(t, simTemplates()).Evaluate(ctx, final, session.JobHooks{})
	if err != nil || ev.Clip != nil || ev.ClipNote != "" {
		t.Fatalf("final re-evaluation: clip %+v, note %q, err %v", ev.Clip, ev.ClipNote, err)
	}
	if _, err := os.Stat(c.Path); err != nil {
		t.Errorf("the final re-evaluation removed the rung's clip: %v", err)
	}

	// A broken clip: refused, said in the job's log, the evaluation stands.
	ev, err = newRunner(t, simTemplates(sim.FailEnv+"=badclip")).Evaluate(ctx, job, session.JobHooks{})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Clip != nil || !strings.HasPrefix(ev.ClipNote, "clip refused: truncated GIF") || ev.Metrics == nil {
		t.Errorf("broken clip: clip %+v, note %q", ev.Clip, ev.ClipNote)
	}
	logText, _ := os.ReadFile(filepath.Join(dir, trainer.EvaluateLog))
	if !strings.Contains(string(logText), "=== tunebot: clip refused: truncated GIF") {
		t.Errorf("evaluate.log does not say the clip was refused:\n%s", logText)
	}
	if _, err := os.Stat(c.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the earlier clip.gif was not removed before the new evaluation: %v", err)
	}

	// No {clip_output} in the template: no clip, and the note says why.
	tpl := simTemplates()
	tpl.Evaluate = slices.DeleteFunc(slices.Clone(tpl.Evaluate), func(a string) bool { return strings.Contains(a, "clip") })
	ev, err = newRunner(t, tpl).Evaluate(ctx, job, session.JobHooks{})
	if err != nil || ev.Clip != nil || ev.ClipNote != "no clip: the evaluate template does not pass {clip_output}" {
		t.Errorf("no placeholder: clip %+v, note %q, err %v", ev.Clip, ev.ClipNote, err)
	}
}

func TestReadClipChecksWhatWasRecorded(t *testing.T) {
	root, tr, gifData := recordedClip(t)
	run := filepath.Join(root, tr.SessionID, "trial-002-rung-0")
	got, path, err := trainer.ReadClip(root, tr, false)
	if err != nil || len(got) != len(gifData) || path != filepath.Join(run, "clip.gif") {
		t.Fatalf("ReadClip = %d bytes at %s, %v", len(got), path, err)
	}
	if _, _, err := trainer.ReadClip(root, tr, true); err == nil || !strings.Contains(err.Error(), "has no poster frame") {
		t.Errorf("no poster: %v", err)
	}
	// changed since it was checked
	if err := os.WriteFile(filepath.Join(run, "clip.gif"), append(gifData[:len(gifData)-1], 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := trainer.ReadClip(root, tr, false); err == nil || !strings.Contains(err.Error(), "changed on disk since it was checked") {
		t.Errorf("changed clip: %v", err)
	}
	escaping := tr
	ec := *tr.Clip
	ec.Path = "../../clip"
	escaping.Clip = &ec
	if _, _, err := trainer.ReadClip(root, escaping, false); err == nil || !strings.Contains(err.Error(), "not inside the session directory") {
		t.Errorf("escaping path: %v", err)
	}
	if _, _, err := trainer.ReadClip(root, session.Trial{SessionID: tr.SessionID, Number: 4, ClipNote: "no clip: the trainer wrote none"}, false); !errors.Is(err, session.ErrNotFound) ||
		!strings.Contains(err.Error(), "trial 4 @ rung 0 has no clip (no clip: the trainer wrote none)") {
		t.Errorf("no clip: %v", err)
	}
}
