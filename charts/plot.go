package charts

import (
	"image"
	"math"

	"github.com/wcharczuk/go-chart/v2/drawing"

	"tunebot/session"
)

// MaxPoints is how many points a curve keeps after down-sampling: more than a phone screen
// has pixels across a plot, and few enough that a report renders in milliseconds.
const MaxPoints = 400

// series is one curve in a plot.
type series struct {
	pts   []session.Point
	col   drawing.Color
	width float64
	dash  []float64
	// smooth draws the curve as a centred moving average over a faint copy of the raw
	// points: RL curves are noisy and the trend is what a person compares.
	smooth bool
	raw    []session.Point // pts before down-sampling, set by plot
}

// plotOpts are the axis names and reference lines of a plot.
type plotOpts struct {
	xName, yName string
	tickSize     float64
	yTicks       int
}

// plot draws axes, grid and curves inside box (tick labels and axis names included). A plot
// with no points says so instead of drawing empty axes.
func (c *canvas) plot(box image.Rectangle, o plotOpts, ss []series) {
	if o.tickSize == 0 {
		o.tickSize = sizeTick
	}
	if o.yTicks == 0 {
		o.yTicks = 5
	}
	downsampleSeries(ss)
	xs, ys, ok := dataScales(ss, o.yTicks)
	if !ok {
		c.message(box.Min.X, box.Min.Y, box.Max.X, box.Max.Y, "no data yet", "this trial has no points for this chart")
		return
	}
	xs.lo, xs.hi, ys.lo, ys.hi = c.plotArea(box, o, xs, ys)
	c.grid(box, o, xs, ys)
	c.curves(ss, xs, ys)
}

// downsampleSeries keeps each series' points as raw and cuts what is drawn to MaxPoints.
func downsampleSeries(ss []series) {
	for i := range ss {
		ss[i].raw = ss[i].pts
		if len(ss[i].pts) > MaxPoints {
			ss[i].pts = session.Downsample(ss[i].pts, MaxPoints)
		}
	}
}

// dataScales are the axes' ticks over every point drawn (values clamped); false when there
// is none. Steps are iterations, so the x ticks are whole numbers: a range too short for a
// step of at least 1 is widened by one on each side.
func dataScales(ss []series, yTicks int) (xs, ys scale, ok bool) {
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	n := 0
	for _, s := range ss {
		for _, p := range s.pts {
			v := clampValue(p.Value)
			xmin, xmax = math.Min(xmin, float64(p.Step)), math.Max(xmax, float64(p.Step))
			ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
			n++
		}
	}
	if n == 0 {
		return scale{}, scale{}, false
	}
	ys = niceScale(ymin, ymax, yTicks)
	xs = niceScale(xmin, xmax, 4)
	if xs.step < 1 {
		xs = niceScale(math.Floor(xmin)-1, math.Ceil(xmax)+1, 2)
	}
	return xs, ys, true
}

// plotArea is where the curves go inside box: left of it the y tick labels, below it the
// x tick labels, and room for the axis names that are set.
func (c *canvas) plotArea(box image.Rectangle, o plotOpts, xs, ys scale) (left, right, bottom, top int) {
	labelW := 0
	for _, t := range ys.ticks {
		w, _ := c.measure(formatValue(t, ys.step), o.tickSize)
		labelW = max(labelW, w)
	}
	lastX, _ := c.measure(formatValue(xs.ticks[len(xs.ticks)-1], xs.step), o.tickSize)
	left = box.Min.X + labelW + 14
	right = box.Max.X - max(lastX/2, 8)
	top = box.Min.Y + 8
	if o.yName != "" {
		top += sizeAxisName + 12
	}
	bottom = box.Max.Y - int(o.tickSize) - 14
	if o.xName != "" {
		bottom -= sizeAxisName + 12
	}
	return left, right, bottom, top
}

// grid draws the tick lines and labels, the axes and their names; the zero line is drawn
// as an axis when values change sign.
func (c *canvas) grid(box image.Rectangle, o plotOpts, xs, ys scale) {
	left, right, bottom, top := xs.lo, xs.hi, ys.lo, ys.hi
	if o.yName != "" {
		c.text(c.fit(o.yName, sizeAxisName, box.Dx()), box.Min.X, box.Min.Y+sizeAxisName, sizeAxisName, colMuted, alignLeft)
	}
	for _, t := range ys.ticks {
		y := ys.px(t)
		col, w := colGrid, 1.5
		if t == 0 && ys.min < 0 {
			col, w = colAxis, 2.5 // zero matters when values change sign
		}
		c.line(left, y, right, y, col, w, nil)
		c.text(formatValue(t, ys.step), left-10, y+int(o.tickSize)/3, o.tickSize, colText, alignRight)
	}
	for _, t := range xs.ticks {
		x := xs.px(t)
		c.line(x, top, x, bottom, colGrid, 1.5, nil)
		c.text(formatValue(t, xs.step), x, bottom+int(o.tickSize)+8, o.tickSize, colText, alignCentre)
	}
	c.line(left, bottom, right, bottom, colAxis, 2.5, nil)
	c.line(left, top, left, bottom, colAxis, 2.5, nil)
	if o.xName != "" {
		c.text(o.xName, (left+right)/2, box.Max.Y-6, sizeAxisName, colMuted, alignCentre)
	}
}

// curves draws the series, in reverse so the first (this trial) ends up on top: a dot for
// a single point, else a line of about one point per two pixels (a smoothed series over
// a faint copy of its raw points) ending in a dot.
func (c *canvas) curves(ss []series, xs, ys scale) {
	width := xs.hi - xs.lo
	for i := len(ss) - 1; i >= 0; i-- {
		s := ss[i]
		if len(s.pts) == 0 {
			continue
		}
		if len(s.pts) == 1 {
			c.dot(xs.px(float64(s.pts[0].Step)), ys.px(clampValue(s.pts[0].Value)), s.width+5, s.col, false)
			continue
		}
		pts := session.Downsample(s.raw, min(MaxPoints, max(width, 100)/2))
		if s.smooth && len(s.raw) >= 30 {
			faint := s.col
			faint.A = 70
			c.polyline(xs, ys, pts, faint, 2, nil)
			pts = session.Downsample(movingAverage(s.raw, max(3, len(s.raw)/40)), min(MaxPoints, max(width, 100)/3))
		}
		c.polyline(xs, ys, pts, s.col, s.width, s.dash)
		last := pts[len(pts)-1]
		c.dot(xs.px(float64(last.Step)), ys.px(clampValue(last.Value)), s.width+2, s.col, false)
	}
}

// polyline strokes pts in short runs: freetype's rasterizer looks cells up by a linear scan
// per row, so one long noisy path costs quadratic time; round caps hide the seams.
func (c *canvas) polyline(xs, ys scale, pts []session.Point, col drawing.Color, width float64, dash []float64) {
	const run = 24
	c.r.SetStrokeColor(col)
	c.r.SetStrokeWidth(width)
	c.r.SetStrokeDashArray(dash)
	for start := 0; start < len(pts)-1; start += run {
		end := min(start+run+1, len(pts))
		for j, p := range pts[start:end] {
			x, y := xs.px(float64(p.Step)), ys.px(clampValue(p.Value))
			if j == 0 {
				c.r.MoveTo(x, y)
			} else {
				c.r.LineTo(x, y)
			}
		}
		c.r.Stroke()
	}
	c.r.SetStrokeDashArray(nil)
}

// movingAverage is the centred mean over window points (shrinking at the ends), so the
// smoothed curve neither lags nor loses its first and last steps.
func movingAverage(pts []session.Point, window int) []session.Point {
	prefix := make([]float64, len(pts)+1) // clamped values keep the sums finite
	for i, p := range pts {
		prefix[i+1] = prefix[i] + clampValue(p.Value)
	}
	half := window / 2
	out := make([]session.Point, len(pts))
	for i, p := range pts {
		lo, hi := max(0, i-half), min(len(pts), i+half+1)
		out[i] = session.Point{Step: p.Step, Value: (prefix[hi] - prefix[lo]) / float64(hi-lo)}
	}
	return out
}
