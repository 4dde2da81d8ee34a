package main

import (
	"bytes"
	"errors"
	"log/slog"
	"regexp"
	"testing"

	"tunebot/config"
)

// The terminal of tune, demo and run's console shows a warning or an error in its own
// format between the console's lines, never as raw logfmt (issue 43, item 7.1); the log
// file keeps every line as configured.
func TestTerminalLogLines(t *testing.T) {
	tests := []struct {
		name string
		log  func(l *slog.Logger)
		want string // the terminal line after its time stamp, "" for none
	}{
		{"a trial's warning", func(l *slog.Logger) {
			l.With("session", "0123456789abcdef", "trial", 2).Warn("a clip was refused", "rung", 0, "err", errors.New("not a GIF\nat all"))
		}, "warning: a clip was refused (trial 2 @ rung 0): not a GIF ⏎ at all"},
		{"an error with other keys", func(l *slog.Logger) {
			l.Error("saving series", "free_bytes", 12, "path", "/data")
		}, "error: saving series: free bytes 12; path /data"},
		{"a group", func(l *slog.Logger) { l.WithGroup("slurm").Warn("slow", "job", 7) }, "warning: slow: slurm.job 7"},
		{"a group without a name is inlined", func(l *slog.Logger) { l.Warn("slow", slog.Group("", "job", 7)) }, "warning: slow: job 7"},
		{"info stays in the file", func(l *slog.Logger) { l.Info("job started", "trial", 1) }, ""},
	}
	stamp := regexp.MustCompile(`^\[\d\d:\d\d:\d\d\] `)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var term bytes.Buffer
			logger, closeLog, err := consoleLogger(config.LogConfig{Level: "info", Format: "text"}, t.TempDir(), &term)
			if err != nil {
				t.Fatal(err)
			}
			defer closeLog()
			tt.log(logger)
			got := term.String()
			if tt.want == "" {
				if got != "" {
					t.Errorf("the terminal shows %q, want nothing", got)
				}
				return
			}
			if !stamp.MatchString(got) || stamp.ReplaceAllString(got, "") != tt.want+"\n" {
				t.Errorf("the terminal shows %q, want [hh:mm:ss] %q", got, tt.want)
			}
		})
	}
}
