package bot

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// What the Slack, Discord and console adapters share: one copy here, so the platforms cannot
// drift apart on how they cut text, lay out tables, reconnect or shut down.

// Truncate caps s at n runes (UTF-8 aware), marking a cut with "…" within the n.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return string([]rune(s)[:n-1]) + "…"
}

// Dedent removes the common leading indentation of s's non-blank lines, the indentation
// RenderText gives a table, so a code block starts at its left edge. A trailing newline is
// dropped.
func Dedent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	pre := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); pre < 0 || n < pre {
			pre = n
		}
	}
	for i, l := range lines {
		if pre > 0 && len(l) >= pre {
			lines[i] = l[pre:]
		}
	}
	return strings.Join(lines, "\n")
}

// DrainTimeout bounds how long an adapter waits at shutdown for answers still in flight.
const DrainTimeout = 15 * time.Second

// Drain waits until inflight is done or DrainTimeout has passed, and reports whether
// everything finished: shutdown waits for answers, but not forever (STYLE.md rule 3).
func Drain(inflight *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { inflight.Wait(); close(done) }()
	t := time.NewTimer(DrainTimeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// Backoff is the wait before reconnect attempt n (0 first) to a platform: one second,
// doubling, capped at max.
func Backoff(attempt int, max time.Duration) time.Duration {
	return min(time.Second<<min(attempt, 30), max)
}

// Sleep waits d, or less when ctx ends first; it reports whether the full wait passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Session is the session a delivery belongs to: its thread, else its card's session.
func (d Delivery) Session() string {
	if d.Thread != "" {
		return d.Thread
	}
	return d.Message.Card.Session
}
