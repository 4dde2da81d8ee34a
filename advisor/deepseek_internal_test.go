package advisor

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	d := &DeepSeek{cfg: DeepSeekConfig{RetryBase: 100 * time.Millisecond}}
	tests := []struct {
		attempt    int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{1, 0, 50 * time.Millisecond, 100 * time.Millisecond},
		{3, 0, 200 * time.Millisecond, 400 * time.Millisecond},
		{20, 0, dsRetryCap / 2, dsRetryCap},                    // capped, never overflowing
		{1, 7 * time.Second, 7 * time.Second, 7 * time.Second}, // the server's Retry-After wins
		{1, time.Hour, dsRetryAfterCap, dsRetryAfterCap},       // but is capped
	}
	for _, tc := range tests {
		for range 50 {
			if got := d.backoff(tc.attempt, tc.retryAfter); got < tc.lo || got > tc.hi {
				t.Errorf("backoff(%d, %v) = %v, want within [%v, %v]", tc.attempt, tc.retryAfter, got, tc.lo, tc.hi)
			}
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{"0", 0},
		{"-4", 0},
		{"soon", 0},
		{"Fri, 01 May 2026 12:00:30 GMT", 30 * time.Second},
		{"Fri, 01 May 2026 11:00:00 GMT", 0},
	}
	for _, tc := range tests {
		if got := dsParseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("dsParseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
