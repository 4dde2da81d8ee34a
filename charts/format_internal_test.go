package charts

import "testing"

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
