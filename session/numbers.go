package session

import (
	"fmt"
	"math"
	"strings"
)

// Measured is a measured number (a score, its spread, a metric) as a person or a script
// reads it: SignificantDigits significant digits, as reward values keep, and never a
// negative zero. NaN and ±Inf are left as they are.
func Measured(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	r := roundSig(v, SignificantDigits)
	if r == 0 {
		return 0 // -0 and a tiny negative print as 0, not -0
	}
	return r
}

// MeasuredMetrics is m with each value Measured (nil stays nil).
func MeasuredMetrics(m Metrics) Metrics {
	if m == nil {
		return nil
	}
	out := make(Metrics, len(m))
	for k, v := range m {
		out[k] = Measured(v)
	}
	return out
}

// SignedScore formats a score with its sign and three decimals (+0.123), as every surface
// shows scores; a value that rounds to zero prints +0.000, never -0.000.
func SignedScore(v float64) string {
	return strings.Replace(fmt.Sprintf("%+.3f", v), "-0.000", "+0.000", 1)
}

// Spread formats a score's spread (a standard deviation) with three decimals.
func Spread(v float64) string {
	return strings.Replace(fmt.Sprintf("%.3f", v), "-0.000", "0.000", 1)
}
