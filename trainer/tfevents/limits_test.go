package tfevents_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"tunebot/session"
	"tunebot/trainer/tfevents"
)

// writeTags writes one event file with steps × tags scalars, each step logging every tag.
func writeTags(t *testing.T, path string, tags, steps int) {
	t.Helper()
	w, err := tfevents.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for s := range steps {
		for i := range tags {
			if err := w.Scalar(fmt.Sprintf("Flood/tag_%06d", i), int64(s), float64(i), time.Unix(int64(s), 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMaxTags: past Limits.MaxTags, the scalars of further tags are dropped, over every
// file the Reader reads and every later read, and Cut says how many tags and scalars.
func TestMaxTags(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "events.out.tfevents.1.a"), filepath.Join(dir, "events.out.tfevents.2.b")
	writeTags(t, a, 3000, 2)
	writeTags(t, b, 10, 1) // tags already kept: still kept

	for _, scan := range []bool{false, true} {
		r := tfevents.Reader{Limits: tfevents.Limits{MaxTags: 100}}
		kept := map[string]int{}
		for _, f := range []string{a, b} {
			if scan {
				if err := r.ScanFile(f, func(s tfevents.Scalar) { kept[s.Tag]++ }); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := r.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for tag, pts := range got {
				kept[tag] += len(pts)
			}
		}
		if len(kept) != 100 || kept["Flood/tag_000000"] != 3 || kept["Flood/tag_000099"] != 2 {
			t.Errorf("scan %v: kept %d tags (tag 0: %d points, tag 99: %d), want the first 100", scan, len(kept), kept["Flood/tag_000000"], kept["Flood/tag_000099"])
		}
		if c := r.Cut(); c.Tags != 2900 || c.Scalars != 5800 || c.Bytes != 0 || c.TagsAbove {
			t.Errorf("scan %v: cut %+v, want 2900 tags and 5800 scalars", scan, c)
		}
	}
}

// TestMaxBytes: no file is read past Limits.MaxBytes over all files; the record across the
// bound is left whole, later reads (and later files) take nothing more, and Cut counts the
// bytes left unread.
func TestMaxBytes(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "events.out.tfevents.1.a"), filepath.Join(dir, "events.out.tfevents.2.b")
	writeTags(t, a, 10, 100)
	writeTags(t, b, 10, 100)
	sa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := os.Stat(b)
	limit := sa.Size() / 2
	r := tfevents.Reader{Limits: tfevents.Limits{MaxBytes: limit}}
	for range 2 { // a second read finds no more room
		for _, f := range []string{a, b} {
			if _, err := r.ReadFile(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	off := r.Offset(a)
	if off > limit || off < limit-200 || r.Offset(b) != 0 {
		t.Errorf("read %d bytes of a and %d of b under a bound of %d", off, r.Offset(b), limit)
	}
	if c := r.Cut(); c.Bytes != sa.Size()-off+sb.Size() || c.Tags != 0 {
		t.Errorf("cut %+v, want %d bytes unread", c, sa.Size()-off+sb.Size())
	}
	// Unbounded, the same files are read whole.
	var all tfevents.Reader
	for _, f := range []string{a, b} {
		if _, err := all.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	if all.Offset(a) != sa.Size() || !cmp.Equal(all.Cut(), tfevents.Cut{}, cmpopts.EquateEmpty()) {
		t.Errorf("without limits: offset %d of %d, cut %+v", all.Offset(a), sa.Size(), all.Cut())
	}
}

// TestMaxTagsKeepsTheEstimate: the scalars of dropped tags count as read when a kept series
// estimates its final size from the share of the file read so far; else a curve logged
// among a flood of dropped tags would reserve room for the whole file's scalars.
func TestMaxTagsKeepsTheEstimate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.out.tfevents.1.a")
	w, err := tfevents.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for s := range int64(100) {
		if err := w.Scalar("Train/mean_reward", s, 1, time.Unix(s, 0)); err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			if err := w.Scalar(fmt.Sprintf("Flood/tag_%06d", i), s, 1, time.Unix(s, 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(filepath.Dir(path), "events.out.tfevents.2.b")
	if err := os.WriteFile(again, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The first read sizes the Reader's buffers; the second, of the same content, allocates
	// only what it keeps: 100 points, not room for the 100,100 scalars of the file.
	r := tfevents.Reader{Limits: tfevents.Limits{MaxTags: 1}}
	if _, err := r.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	got, err := r.ReadFile(again)
	runtime.ReadMemStats(&ms1)
	if err != nil || len(got["Train/mean_reward"]) != 100 {
		t.Fatalf("%d points, %v", len(got["Train/mean_reward"]), err)
	}
	if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > 256<<10 {
		t.Errorf("reading 100 points among 100,000 dropped scalars allocated %d bytes", alloc)
	}
}

// TestRefusedTags: a tag no curve may carry (empty, not UTF-8, longer than
// session.MaxTagBytes) is dropped on its own, whatever the limits, and the other tags of the
// file are kept; Cut counts the refused ones and quotes them by a short prefix (issue 36:
// one empty or 256 KiB tag dropped every curve of the trial and was logged whole).
func TestRefusedTags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.out.tfevents.1.a")
	w, err := tfevents.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	atLimit := strings.Repeat("a", session.MaxTagBytes)
	bad := []string{"", "bad\xff\xfe", strings.Repeat("b", session.MaxTagBytes+1), strings.Repeat("c", 256<<10)}
	for step := range 3 {
		for _, tag := range append([]string{"Loss/value", atLimit}, bad...) {
			if err := w.Scalar(tag, int64(step), 1, time.Unix(int64(step), 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, scan := range []bool{false, true} {
		r := tfevents.Reader{Limits: tfevents.Limits{MaxTags: 2}}
		kept := map[string]int{}
		if scan {
			err = r.ScanFile(path, func(s tfevents.Scalar) { kept[s.Tag]++ })
		} else {
			var got map[string][]session.Point
			got, err = r.ReadFile(path)
			for tag, pts := range got {
				kept[tag] = len(pts)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]int{"Loss/value": 3, atLimit: 3}, kept); diff != "" {
			t.Errorf("scan %v: kept (-want +got):\n%s", scan, diff)
		}
		c := r.Cut()
		if c.Tags != 0 || c.Refused.Tags != 4 || c.Refused.Scalars != 12 || len(c.Refused.Examples) != 3 {
			t.Errorf("scan %v: cut %+v, want 4 refused tags of 12 scalars, 3 quoted, none dropped by max_tags", scan, c)
		}
		want := []string{`"": empty`, `"bad\xff\xfe": not UTF-8`, `"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"… (257 bytes): 257 bytes, more than 256`}
		if diff := cmp.Diff(want, c.Refused.Examples); diff != "" {
			t.Errorf("scan %v: examples (-want +got):\n%s", scan, diff)
		}
	}
}
