package session

import "math"

// Downsample reduces points to at most n with Largest-Triangle-Three-Buckets, which keeps
// the peaks and troughs a person looks for in a curve. The first and last points are kept.
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
	out := make([]Point, 0, n)
	out = append(out, points[0])
	every := float64(len(points)-2) / float64(n-2)
	a := 0
	for i := 0; i < n-2; i++ {
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
		start := int(math.Floor(float64(i)*every)) + 1
		end := int(math.Floor(float64(i+1)*every)) + 1
		ax, ay := float64(points[a].Step), points[a].Value
		best, bestArea := start, -1.0
		for j := start; j < end; j++ {
			area := math.Abs((ax-avgX)*(points[j].Value-ay) - (ax-float64(points[j].Step))*(avgY-ay))
			if area > bestArea {
				best, bestArea = j, area
			}
		}
		out = append(out, points[best])
		a = best
	}
	return append(out, points[len(points)-1])
}
