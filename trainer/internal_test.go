package trainer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/secret"
	"tunebot/session"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name, stat string
		want       procStat
		bad        bool
	}{
		{name: "plain", stat: "123 (python3) S 1 123 123 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 98765 0 0",
			want: procStat{pid: 123, state: 'S', pgrp: 123, startTick: 98765}},
		{name: "spaces and parens in comm", stat: "9 (a) b (c) R 1 77 77 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0",
			want: procStat{pid: 9, state: 'R', pgrp: 77, startTick: 42}},
		{name: "truncated", stat: "9 (x) S 1 2", bad: true},
		{name: "no comm", stat: "garbage", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat(tt.want.pid, []byte(tt.stat))
			if tt.bad {
				if err == nil {
					t.Errorf("parsed %q as %+v", tt.stat, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("parseStat = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestLogTail(t *testing.T) {
	var long strings.Builder
	for i := range 100 {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	wide := strings.Repeat("x", 300) + "\n"
	tests := []struct {
		name, log string
		first     string // first line of the tail
		last      string
		lines     int
	}{
		{"short", "a\nb\n", "a", "b", 2},
		{"many lines", long.String(), "line 60", "line 99", 40},
		{"many bytes", strings.Repeat(wide, 30), "…" + strings.Repeat("x", 179), strings.Repeat("x", 300), 14},
		{"one long line", strings.Repeat("y", 10000) + "z\n", "…" + strings.Repeat("y", 4091) + "z", "…" + strings.Repeat("y", 4091) + "z", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "train.log")
			os.WriteFile(p, []byte(tt.log), 0o644)
			lines := strings.Split(logTail(p), "\n")
			if len(lines) != tt.lines || lines[0] != tt.first || lines[len(lines)-1] != tt.last {
				t.Errorf("tail has %d lines %.40q (%d bytes) … %.40q; want %d, %.40q (%d bytes) … %.40q", len(lines), lines[0], len(lines[0]), lines[len(lines)-1], tt.lines, tt.first, len(tt.first), tt.last)
			}
			if len(logTail(p)) > tailBytes {
				t.Errorf("tail longer than %d bytes", tailBytes)
			}
		})
	}
}

func TestNewestCheckpointIsNumeric(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"model_999.pt", "model_1000.pt", "model_2.pt", "model_x.pt", "model_5000.pt.tmp", "best_model_9999.pt"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	os.MkdirAll(filepath.Join(dir, EvalEventsDir), 0o755)
	os.WriteFile(filepath.Join(dir, EvalEventsDir, "model_7000.pt"), nil, 0o644)
	p, n, ok := newestCheckpoint(dir)
	if !ok || n != 1000 || filepath.Base(p) != "model_1000.pt" {
		t.Errorf("newestCheckpoint = %s, %d, %v; want model_1000.pt", p, n, ok)
	}
}

func TestFindPolicy(t *testing.T) {
	outside := filepath.Join(t.TempDir(), PolicyFile)
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(t *testing.T, p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(t *testing.T, target, p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		layout func(t *testing.T, dir string)
		want   string // relative to dir, "" for none
	}{
		{"top", func(t *testing.T, d string) { write(t, filepath.Join(d, PolicyFile)) }, PolicyFile},
		{"below", func(t *testing.T, d string) { write(t, filepath.Join(d, "exported", PolicyFile)) }, "exported/" + PolicyFile},
		{"none", func(t *testing.T, d string) {}, ""},
		// A symlinked policy.onnx is not followed, at the top or below: the policy the
		// daemon uploads must be the one the job wrote in its run dir.
		{"symlink at top", func(t *testing.T, d string) { link(t, outside, filepath.Join(d, PolicyFile)) }, ""},
		{"symlink below", func(t *testing.T, d string) { link(t, outside, filepath.Join(d, "exported", PolicyFile)) }, ""},
		{"symlink at top, file below", func(t *testing.T, d string) {
			link(t, outside, filepath.Join(d, PolicyFile))
			write(t, filepath.Join(d, "exported", PolicyFile))
		}, "exported/" + PolicyFile},
		{"symlinked directory", func(t *testing.T, d string) { link(t, filepath.Dir(outside), filepath.Join(d, "exported")) }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.layout(t, dir)
			got, ok := findPolicy(dir)
			want := ""
			if tc.want != "" {
				want = filepath.Join(dir, tc.want)
			}
			if got != want || ok != (want != "") {
				t.Errorf("findPolicy = %q, %v; want %q", got, ok, want)
			}
		})
	}
}

func TestLayout(t *testing.T) {
	var l Layout
	if got := l.RunDir(session.TrialRef{Number: 7, Rung: 2}); got != "trial-007-rung-2" {
		t.Errorf("RunDir = %q", got)
	}
	if l.EvaluationFile(false) != "evaluation.json" || l.EvaluationFile(true) != "evaluation-final.json" {
		t.Errorf("EvaluationFile = %q, %q", l.EvaluationFile(false), l.EvaluationFile(true))
	}
}

// TestJobStartedLineIsRedacted: the line a job's log begins with quotes its command; like
// every log line it goes through the redactor, so a secret in it is masked.
func TestJobStartedLineIsRedacted(t *testing.T) {
	const value = "sk-started-0123456789"
	line := jobStartedLine("train", "started", []string{"python", "train.py", "--key=" + value}, secret.NewRedactor(value))
	if strings.Contains(line, value) || !strings.Contains(line, "--key="+secret.Mask) || !strings.HasPrefix(line, "=== tunebot: train job started ") {
		t.Errorf("job started line %q", line)
	}
}
