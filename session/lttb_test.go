package session_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
)

func series(values ...float64) []session.Point {
	out := make([]session.Point, len(values))
	for i, v := range values {
		out[i] = session.Point{Step: int64(i), Value: v}
	}
	return out
}

func steps(ps []session.Point) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = p.Step
	}
	return out
}

func TestDownsampleHandComputed(t *testing.T) {
	tests := []struct {
		name string
		in   []session.Point
		n    int
		want []int64 // steps kept
	}{
		// every = (6-2)/(4-2) = 2. Bucket [1,2] against the next bucket's mean (3.5, 2.5):
		// areas 1 and 5, so step 2. Bucket [3,4] from (2,0) against (5,0): areas 15 and 0, so step 3.
		{"six points to four", series(0, 1, 0, 5, 0, 0), 4, []int64{0, 2, 3, 5}},
		{"n = 1 keeps the last", series(1, 2, 3, 4), 1, []int64{3}},
		{"n = 2 keeps the ends", series(1, 9, 3, 4), 2, []int64{0, 3}},
		{"n = 3 keeps the extreme middle point", series(0, 1, 2, 10, 2, 1, 0), 3, []int64{0, 3, 6}},
		{"n = len is a copy", series(1, 2, 3), 3, []int64{0, 1, 2}},
		{"n > len is a copy", series(1, 2, 3), 10, []int64{0, 1, 2}},
		{"n = 0 is a copy", series(1, 2, 3), 0, []int64{0, 1, 2}},
		{"empty", nil, 5, []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := session.Downsample(tt.in, tt.n)
			if diff := cmp.Diff(tt.want, steps(got)); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDownsampleReturnsACopy(t *testing.T) {
	in := series(1, 2, 3)
	out := session.Downsample(in, 5)
	out[0].Value = 99
	if in[0].Value != 1 {
		t.Error("Downsample with n ≥ len returned the caller's slice")
	}
}

// The point of LTTB: a single spike or dip in a flat curve survives any reduction to 3+ points.
func TestDownsampleKeepsTheSpike(t *testing.T) {
	for _, n := range []int{3, 4, 7, 10, 50, 99} {
		for _, at := range []int{1, 2, 37, 63, 98} {
			for _, v := range []float64{10, -10} {
				vals := make([]float64, 100)
				vals[at] = v
				got := session.Downsample(series(vals...), n)
				found := false
				for _, p := range got {
					if p.Step == int64(at) && p.Value == v {
						found = true
					}
				}
				if !found {
					t.Errorf("n=%d: the %g spike at %d is lost: %v", n, v, at, steps(got))
				}
			}
		}
	}
}

// For every small length and target, the result has exactly n points, starts and ends with
// the input's ends, and is a strictly increasing subsequence of the input.
func TestDownsampleShape(t *testing.T) {
	for size := 0; size <= 70; size++ {
		in := make([]session.Point, size)
		for i := range in {
			// irregular steps and a wobbly value, as a real curve has
			in[i] = session.Point{Step: int64(3*i + i%3), Value: math.Sin(float64(i)) * float64(i%7)}
		}
		for n := 1; n <= size+2; n++ {
			got := session.Downsample(in, n)
			if want := min(n, size); len(got) != want {
				t.Fatalf("len %d, n %d: %d points, want %d", size, n, len(got), want)
			}
			if size == 0 {
				continue
			}
			if got[len(got)-1] != in[size-1] {
				t.Errorf("len %d, n %d: last point %v, want %v", size, n, got[len(got)-1], in[size-1])
			}
			if n >= 2 && got[0] != in[0] {
				t.Errorf("len %d, n %d: first point %v, want %v", size, n, got[0], in[0])
			}
			j := 0
			for i, p := range got {
				if i > 0 && p.Step <= got[i-1].Step {
					t.Fatalf("len %d, n %d: steps not increasing: %v", size, n, steps(got))
				}
				for j < size && in[j] != p {
					j++
				}
				if j == size {
					t.Fatalf("len %d, n %d: %v is not an input point in order", size, n, p)
				}
			}
		}
	}
}

// A monotone curve stays monotone and keeps its range.
func TestDownsampleMonotone(t *testing.T) {
	vals := make([]float64, 1000)
	for i := range vals {
		vals[i] = math.Floor(float64(i) / 100) // a staircase of ten steps
	}
	got := session.Downsample(series(vals...), 64)
	for i := 1; i < len(got); i++ {
		if got[i].Value < got[i-1].Value {
			t.Fatalf("not monotone at %d: %v then %v", i, got[i-1], got[i])
		}
	}
	if got[0].Value != 0 || got[len(got)-1].Value != 9 {
		t.Errorf("range %g–%g, want 0–9", got[0].Value, got[len(got)-1].Value)
	}
	// every stair level is represented
	levels := map[float64]bool{}
	for _, p := range got {
		levels[p.Value] = true
	}
	if len(levels) != 10 {
		t.Errorf("%d of 10 stair levels kept", len(levels))
	}
}

// TestDownsampleKeepsTheExtremes: thinned to any n ≥ 4, a curve keeps its first, last,
// lowest and highest points, wherever they sit, even two in one bucket, where LTTB alone
// keeps one point per bucket. (Ingest thins event-file series this way, issue 27.)
func TestDownsampleKeepsTheExtremes(t *testing.T) {
	for _, n := range []int{4, 5, 9, 64} {
		for _, lo := range []int{1, 2, 40, 41, 98} {
			for _, hi := range []int{1, 3, 42, 97, 98} {
				if lo == hi {
					continue
				}
				// A saw-tooth of large turns that LTTB prefers over a modest extreme.
				vals := make([]float64, 100)
				for i := range vals {
					vals[i] = float64(i%2) * 9
				}
				vals[lo], vals[hi] = -0.5, 9.5
				got := session.Downsample(series(vals...), n)
				if len(got) > n {
					t.Fatalf("n=%d: %d points", n, len(got))
				}
				has := func(step int64) bool {
					for _, p := range got {
						if p.Step == step {
							return true
						}
					}
					return false
				}
				for _, want := range []int64{0, 99, int64(lo), int64(hi)} {
					if !has(want) {
						t.Errorf("n=%d, low at %d, high at %d: step %d is lost: %v", n, lo, hi, want, steps(got))
					}
				}
				for i := 1; i < len(got); i++ {
					if got[i].Step <= got[i-1].Step {
						t.Fatalf("n=%d: out of order: %v", n, steps(got))
					}
				}
			}
		}
	}
}
