package bot_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"tunebot/bot"
	"tunebot/session"
)

// codeBlock is the text of card's code block (a failure card's log), "" without one.
func codeBlock(c bot.Card) string {
	for _, b := range c.Blocks {
		if b.Kind == bot.BlockCode {
			return b.Text
		}
	}
	return ""
}

// TestFailureCardShowsTheLogsEnd: a failure card shows the end of the job's log, where the
// traceback says what went wrong, within the card's 1,200 characters, and never the
// job-started line (it quotes a whole command line) or an earlier job's output before it.
func TestFailureCardShowsTheLogsEnd(t *testing.T) {
	argv := "/srv/venv/bin/python -m tunebot_mjlab train --task Mjlab-Velocity-Flat-Unitree-G1 " + strings.Repeat("--run-dir /srv/tunebot/data/sessions/0123456789abcdef/trial-003-rung-0 ", 20)
	traceback := []string{"Traceback (most recent call last):", `  File "/srv/venv/lib/python3.12/site-packages/mjlab/train.py", line 88, in main`,
		"    env = make_env(cfg)", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}
	long := strings.Repeat("y", 3000) + " RuntimeError: the very end"
	tests := []struct {
		name, tail string
		want       []string // in the block, in this order
		not        []string
	}{
		{"the job-started line fills the budget",
			"earlier job's output\n=== tunebot: train job started 2026-01-02T03:04:05Z: " + argv + "\n" + strings.Join(traceback, "\n") + "\n=== tunebot: train job ended after 2s: exit status 1",
			append(traceback, "=== tunebot: train job ended after 2s: exit status 1"), []string{"job started", "earlier job's output"}},
		{"more lines than fit keep the last ones",
			strings.Repeat(strings.Repeat("z", 150)+"\n", 30) + traceback[3],
			[]string{traceback[3]}, nil},
		{"one line longer than the budget keeps its end",
			long, []string{"…y", "yy RuntimeError: the very end"}, nil},
	}
	s := fixtureSession()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := session.Trial{Number: 3, State: session.TrialFailed, Reason: "train job failed: exit status 1", LogTail: tt.tail}
			got := codeBlock(bot.TrialCard(bot.TrialInput{Session: s, Trial: tr, Space: session.DefaultSpace()}))
			if n := utf8.RuneCountInString(got); n > 1200 || n == 0 {
				t.Errorf("the log block has %d characters, want 1..1200:\n%s", n, got)
			}
			at := 0
			for _, w := range tt.want {
				i := strings.Index(got[at:], w)
				if i < 0 {
					t.Fatalf("the log block lacks %q (in order):\n%s", w, got)
				}
				at += i + len(w)
			}
			if !strings.HasSuffix(got, tt.want[len(tt.want)-1]) {
				t.Errorf("the log block does not end with the log's last line:\n%s", got)
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("the log block shows %q:\n%s", n, got)
				}
			}
		})
	}
}
