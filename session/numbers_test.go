package session_test

import (
	"math"
	"strconv"
	"testing"

	"tunebot/session"
)

// A measured number reads with four significant digits and never as a negative zero
// (issue 28, item 11).
func TestMeasuredNumbers(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{-3.065342329708454e-05, "-3.065e-05"},
		{0.24812345, "0.2481"},
		{-0.00001234, "-1.234e-05"}, // a small negative keeps its sign; only zero loses it
		{math.Copysign(0, -1), "0"},
		{123456.7, "123500"},
	} {
		if got := strconv.FormatFloat(session.Measured(tc.v), 'g', -1, 64); got != tc.want {
			t.Errorf("Measured(%v) = %s, want %s", tc.v, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    float64
		want string
	}{{-0.0002, "+0.000"}, {math.Copysign(0, -1), "+0.000"}, {-0.0012, "-0.001"}, {0.2481, "+0.248"}} {
		if got := session.SignedScore(tc.v); got != tc.want {
			t.Errorf("SignedScore(%v) = %s, want %s", tc.v, got, tc.want)
		}
	}
	if got := session.Spread(-0.0001); got != "0.000" {
		t.Errorf("Spread(-0.0001) = %s", got)
	}
}
