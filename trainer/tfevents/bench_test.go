package tfevents_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tunebot/trainer/tfevents"
)

// benchFile writes an rsl_rl-like event file of about 8 MB: 30 scalar tags per iteration.
func benchFile(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "events.out.tfevents.1.bench.host.1.0")
	w, err := tfevents.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	tags := make([]string, 30)
	for i := range tags {
		tags[i] = fmt.Sprintf("Episode_Reward/term_number_%d", i)
	}
	for it := int64(0); it < 4000; it++ {
		for i, tag := range tags {
			if err := w.Scalar(tag, it, float64(i)+float64(it)/7, time.Unix(it, 0)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

func BenchmarkReadAll(b *testing.B) {
	path := benchFile(b)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tfevents.ReadAll(path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawRead is the baseline for BenchmarkReadAll: the same bytes, not decoded.
func BenchmarkRawRead(b *testing.B) {
	path := benchFile(b)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := os.ReadFile(path); err != nil {
			b.Fatal(err)
		}
	}
}
