package bot_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"tunebot/bot"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"one too long", 11, "one too lo…"},
		{"héllo wörld", 6, "héllo…"}, // runes, not bytes
		{"日本語のテキスト", 4, "日本語…"},
		{"x", 0, ""},
	}
	for _, tc := range tests {
		if got := bot.Truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestDedent(t *testing.T) {
	tests := []struct{ name, s, want string }{
		{"table", "    a  b\n    1  2\n", "a  b\n1  2"},
		{"deeper rows keep their offset", "  head\n    row\n", "head\n  row"},
		{"blank lines do not count", "      a\n\n      b", "a\n\nb"},
		{"nothing to remove", "a\n  b", "a\n  b"},
	}
	for _, tc := range tests {
		if got := bot.Dedent(tc.s); got != tc.want {
			t.Errorf("%s: Dedent(%q) = %q, want %q", tc.name, tc.s, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	var got []time.Duration
	for a := range 9 {
		got = append(got, bot.Backoff(a, time.Minute))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("Backoff up to a minute = %v, want %v seconds", got, want)
		}
	}
	if d := bot.Backoff(1000, 5*time.Minute); d != 5*time.Minute {
		t.Errorf("Backoff after many attempts = %v", d)
	}
}

func TestDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { time.Sleep(bot.DrainTimeout - time.Second); wg.Done() }()
		if !bot.Drain(&wg) {
			t.Error("work that ends within the bound was not drained")
		}
		stuck := make(chan struct{})
		wg.Add(1)
		go func() { <-stuck; wg.Done() }()
		start := time.Now()
		if bot.Drain(&wg) {
			t.Error("stuck work reported as drained")
		}
		if waited := time.Since(start); waited != bot.DrainTimeout {
			t.Errorf("waited %v for stuck work, want %v", waited, bot.DrainTimeout)
		}
		close(stuck)
		wg.Wait()
	})
}

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if !bot.Sleep(context.Background(), time.Hour) {
			t.Error("a full sleep reported as cut short")
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(time.Second); cancel() }()
		start := time.Now()
		if bot.Sleep(ctx, time.Hour) || time.Since(start) != time.Second {
			t.Error("a sleep did not end with its context")
		}
	})
}

func TestDeliverySession(t *testing.T) {
	d := bot.Delivery{Message: bot.Message{Card: bot.Card{Session: "card"}}}
	if d.Session() != "card" {
		t.Errorf("without a thread: %q", d.Session())
	}
	d.Thread = "thread"
	if d.Session() != "thread" {
		t.Errorf("with a thread: %q", d.Session())
	}
}
