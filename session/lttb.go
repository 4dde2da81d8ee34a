package session

import "math"

// Downsample reduces points to at most n with Largest-Triangle-Three-Buckets, which keeps
// the peaks and troughs a person looks for in a curve. The first and last points are kept,
// and for n ≥ 4 so are the lowest and highest (LTTB alone can pass over an extreme that
// sits next to a larger turn): the page, the store and ingest all thin curves this way.
func Downsample(points []Point, n int) []Point {
	if n <= 0 || len(points) <= n {
		out := make([]Point, len(points))
		copy(out, points)
		return out
	}
	if n < 3 {
		if n == 1 {
			return []Point{points[len(points)-1]}
		}
		return []Point{points[0], points[len(points)-1]}
	}
	every := float64(len(points)-2) / float64(n-2)
	bucket := func(i int) (start, end int) { // bucket i of the n-2 middle ones
		return int(math.Floor(float64(i)*every)) + 1, min(int(math.Floor(float64(i+1)*every))+1, len(points)-1)
	}
	chosen := make([]int, n-2)
	a := 0
	for i := range chosen {
		// the average of the next bucket is the third corner of the triangle
		nextStart := int(math.Floor(float64(i+1)*every)) + 1
		nextEnd := min(int(math.Floor(float64(i+2)*every))+1, len(points))
		var avgX, avgY float64
		for j := nextStart; j < nextEnd; j++ {
			avgX += float64(points[j].Step)
			avgY += points[j].Value
		}
		if cnt := nextEnd - nextStart; cnt > 0 {
			avgX /= float64(cnt)
			avgY /= float64(cnt)
		}
		start, end := bucket(i)
		ax, ay := float64(points[a].Step), points[a].Value
		best, bestArea := start, -1.0
		for j := start; j < end; j++ {
			area := math.Abs((ax-avgX)*(points[j].Value-ay) - (ax-float64(points[j].Step))*(avgY-ay))
			if area > bestArea {
				best, bestArea = j, area
			}
		}
		chosen[i] = best
		a = best
	}
	if len(chosen) >= 2 {
		keepExtremes(points, chosen, bucket)
	}
	out := make([]Point, 0, n)
	out = append(out, points[0])
	for _, j := range chosen {
		out = append(out, points[j])
	}
	return append(out, points[len(points)-1])
}

// keepExtremes puts the lowest and highest point of points in place of what LTTB chose in
// their buckets, so a thinned curve never shows a smaller range than the full one. When both
// fall in one bucket, the neighbouring bucket gives up its point; the order stays by index.
func keepExtremes(points []Point, chosen []int, bucket func(int) (int, int)) {
	lo, hi := -1, -1
	for j, p := range points {
		if math.IsNaN(p.Value) {
			continue
		}
		if lo < 0 || p.Value < points[lo].Value {
			lo = j
		}
		if hi < 0 || p.Value > points[hi].Value {
			hi = j
		}
	}
	last := len(points) - 1
	var inner []int // the extremes that are not already an end point
	for _, j := range []int{min(lo, hi), max(lo, hi)} {
		if j > 0 && j < last && (len(inner) == 0 || inner[0] != j) {
			inner = append(inner, j)
		}
	}
	slot := func(j int) int {
		for i := range chosen {
			if start, end := bucket(i); j >= start && j < end {
				return i
			}
		}
		return -1 // rounding can leave the point before the last out of every bucket
	}
	switch {
	case len(inner) == 1:
		if a := slot(inner[0]); a >= 0 {
			chosen[a] = inner[0]
		}
	case len(inner) == 2:
		a, b := slot(inner[0]), slot(inner[1])
		if a == b && a >= 0 { // one bucket holds both: take a neighbour's place
			if b+1 < len(chosen) {
				b++
			} else {
				a--
			}
		}
		if a >= 0 {
			chosen[a] = inner[0]
		}
		if b >= 0 {
			chosen[b] = inner[1]
		}
	}
}
