package charts

import (
	"testing"

	"tunebot/session"
)

func TestFallPercent(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0%"}, {0.00759, "0.76%"}, {0.0154, "1.5%"}, {0.0354, "3.5%"}, {0.099, "9.9%"},
		{0.1234, "12%"}, {1, "100%"}, {0.0000123, "0.0012%"},
	} {
		if got := fallPercent(tc.v); got != tc.want {
			t.Errorf("fallPercent(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// The progress chart plans one more box at a rung when the baseline is carried along
// besides the promoted trials, none when it is promoted as one of them.
func TestBaselineAmongTop(t *testing.T) {
	tr := func(num int, score float64, eligible bool) session.Trial {
		return session.Trial{Number: num, State: session.TrialCompleted, Score: &session.Score{Total: score, Eligible: eligible}}
	}
	rung := []session.Trial{tr(0, 0, true), tr(1, 0.2, true), tr(2, 0.1, true), tr(3, 0.5, false)}
	for k, want := range map[int]bool{1: false, 2: false, 3: true} {
		if got := baselineAmongTop(rung, k); got != want {
			t.Errorf("top %d: %v, want %v", k, got, want)
		}
	}
}
