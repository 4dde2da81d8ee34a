package charts

import (
	"fmt"
	"image"
	"image/draw"
	"math"
	"strings"
	"sync"

	"github.com/golang/freetype/truetype"
	chart "github.com/wcharczuk/go-chart/v2"
	"github.com/wcharczuk/go-chart/v2/drawing"
)

// Sizes in pixels. The renderer runs at 72 DPI so a font size is its pixel height; the sizes
// are large because a 1200-pixel image is shown about 1080 device pixels wide on a phone.
const (
	Width  = 1200
	Height = 800

	sizeTitle    = 40
	sizeSubtitle = 25
	sizeLegend   = 27
	sizeTick     = 24
	sizeAxisName = 24
	sizeLabel    = 27
	sizePanel    = 27
	margin       = 28
)

// The palette is Okabe–Ito, distinguishable with the common colour-vision deficiencies.
var (
	colBackground = drawing.Color{R: 255, G: 255, B: 255, A: 255}
	colText       = drawing.Color{R: 20, G: 20, B: 20, A: 255}
	colMuted      = drawing.Color{R: 90, G: 90, B: 90, A: 255}
	colGrid       = drawing.Color{R: 222, G: 222, B: 222, A: 255}
	colAxis       = drawing.Color{R: 60, G: 60, B: 60, A: 255}
	colTrial      = drawing.Color{R: 0, G: 114, B: 178, A: 255}   // blue: this trial
	colBest       = drawing.Color{R: 230, G: 159, B: 0, A: 255}   // orange: the current best
	colBaseline   = drawing.Color{R: 70, G: 70, B: 70, A: 255}    // dark grey: the baseline
	colGood       = drawing.Color{R: 0, G: 150, B: 100, A: 255}   // green: better than baseline
	colBad        = drawing.Color{R: 213, G: 70, B: 0, A: 255}    // vermilion: worse than baseline
	colFailed     = drawing.Color{R: 160, G: 160, B: 160, A: 255} // grey: failed or not eligible
	colPanel      = drawing.Color{R: 246, G: 246, B: 246, A: 255}
	colTodo       = drawing.Color{R: 228, G: 228, B: 228, A: 255}
	colRung       = []drawing.Color{colTrial, colBest, {R: 123, G: 50, B: 148, A: 255}, {R: 86, G: 180, B: 233, A: 255}}
)

func rungColour(rung int) drawing.Color {
	if rung < 0 {
		rung = 0
	}
	return colRung[rung%len(colRung)]
}

// canvas is one image drawn with go-chart's raster renderer; the plot layer on top of it is
// ours because go-chart's automatic layout puts small text and the y axis on the right.
type canvas struct {
	r    chart.Renderer
	img  *image.RGBA // the renderer's own image, for fills that need no anti-aliasing
	font *truetype.Font
	w, h int
}

func newCanvas(w, h int) (*canvas, error) {
	r, err := chart.PNG(w, h)
	if err != nil {
		return nil, fmt.Errorf("creating the renderer: %w", err)
	}
	font, err := defaultFont()
	if err != nil {
		return nil, fmt.Errorf("loading the default font: %w", err)
	}
	r.SetDPI(72)
	// Save hands an RGBACollector the image the renderer draws into; holding it lets
	// rectangles be filled directly instead of through the path rasterizer (a third of the
	// render time when the background went that way).
	var col rgbaCollector
	if err := r.Save(&col); err != nil {
		return nil, fmt.Errorf("reaching the renderer's image: %w", err)
	}
	if col.img == nil {
		return nil, fmt.Errorf("reaching the renderer's image: the renderer kept it")
	}
	c := &canvas{r: r, img: col.img, font: font, w: w, h: h}
	c.rect(0, 0, w, h, colBackground)
	return c, nil
}

// defaultFont parses go-chart's embedded Roboto once. go-chart's own lazy load reads its
// cache outside the lock, which races when reports render on several goroutines.
var defaultFont = sync.OnceValues(chart.GetDefaultFont)

// rgbaCollector receives the renderer's image instead of a PNG so we can encode it ourselves
// at the fastest compression level (a report renders several images).
type rgbaCollector struct{ img *image.RGBA }

func (c *rgbaCollector) SetRGBA(i *image.RGBA)       { c.img = i }
func (c *rgbaCollector) Write(p []byte) (int, error) { return len(p), nil }

func (c *canvas) png() ([]byte, error) {
	return encodePNG(c.img)
}

func (c *canvas) setText(size float64, col drawing.Color) {
	c.r.SetFont(c.font)
	c.r.SetFontSize(size)
	c.r.SetFontColor(col)
}

// measure returns the width and the cap height of s.
func (c *canvas) measure(s string, size float64) (int, int) {
	c.setText(size, colText)
	b := c.r.MeasureText(s)
	return b.Width(), b.Height()
}

type align int

const (
	alignLeft align = iota
	alignCentre
	alignRight
)

// text draws s with its baseline at y and returns its width.
func (c *canvas) text(s string, x, y int, size float64, col drawing.Color, a align) int {
	if s == "" {
		return 0
	}
	w, _ := c.measure(s, size)
	switch a {
	case alignCentre:
		x -= w / 2
	case alignRight:
		x -= w
	}
	c.setText(size, col)
	c.r.Text(s, x, y)
	return w
}

// fit shortens s with an ellipsis until it is at most maxW pixels wide.
func (c *canvas) fit(s string, size float64, maxW int) string {
	if w, _ := c.measure(s, size); w <= maxW {
		return s
	}
	runes := []rune(s)
	lo, hi := 0, len(runes)
	for lo < hi { // the longest prefix that fits
		mid := (lo + hi + 1) / 2
		if w, _ := c.measure(string(runes[:mid])+"…", size); w <= maxW {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return strings.TrimRight(string(runes[:lo]), " ") + "…"
}

// rect fills the axis-aligned rectangle between the two corners.
func (c *canvas) rect(x0, y0, x1, y1 int, fill drawing.Color) {
	op := draw.Over
	if fill.A == 255 {
		op = draw.Src
	}
	draw.Draw(c.img, image.Rect(x0, y0, x1, y1), image.NewUniform(fill), image.Point{}, op)
}

// frame outlines a rectangle.
func (c *canvas) frame(x0, y0, x1, y1 int, col drawing.Color, width int) {
	c.rect(x0, y0, x1, y0+width, col)
	c.rect(x0, y1-width, x1, y1, col)
	c.rect(x0, y0, x0+width, y1, col)
	c.rect(x1-width, y0, x1, y1, col)
}

func (c *canvas) line(x0, y0, x1, y1 int, col drawing.Color, width float64, dash []float64) {
	c.r.SetStrokeColor(col)
	c.r.SetStrokeWidth(width)
	c.r.SetStrokeDashArray(dash)
	c.r.MoveTo(x0, y0)
	c.r.LineTo(x1, y1)
	c.r.Stroke()
	c.r.SetStrokeDashArray(nil)
}

// dot draws a filled circle, or a ring when hollow.
func (c *canvas) dot(x, y int, radius float64, col drawing.Color, hollow bool) {
	c.r.Circle(radius, x, y)
	if hollow {
		c.r.SetStrokeColor(col)
		c.r.SetStrokeWidth(4)
		c.r.SetStrokeDashArray(nil)
		c.r.Stroke()
		return
	}
	c.r.SetFillColor(col)
	c.r.Fill()
}

// cross draws an ×, the mark of a failed trial.
func (c *canvas) cross(x, y, size int, col drawing.Color) {
	c.line(x-size, y-size, x+size, y+size, col, 5, nil)
	c.line(x-size, y+size, x+size, y-size, col, 5, nil)
}

// header draws the title and subtitle and returns the y below them.
func (c *canvas) header(title, subtitle string) int {
	y := margin + sizeTitle
	c.text(c.fit(title, sizeTitle, c.w-2*margin), margin, y, sizeTitle, colText, alignLeft)
	y += sizeSubtitle + 14
	c.text(c.fit(subtitle, sizeSubtitle, c.w-2*margin), margin, y, sizeSubtitle, colMuted, alignLeft)
	return y + 16
}

// legendItem is one entry of a legend: a line swatch (dashed or not), a dot or a ring.
type legendItem struct {
	label  string
	col    drawing.Color
	width  float64
	dash   []float64
	marker string // "", "dot", "ring", "cross", "box"
}

// legend draws items in rows from (x, top) within maxW and returns the y below it.
func (c *canvas) legend(items []legendItem, x, top, maxW int) int {
	if len(items) == 0 {
		return top
	}
	const swatch, gap, rowH = 56, 34, sizeLegend + 14
	cx, y := x, top+sizeLegend
	for _, it := range items {
		label := c.fit(it.label, sizeLegend, maxW-swatch-12)
		w, _ := c.measure(label, sizeLegend)
		if cx > x && cx+swatch+12+w > x+maxW {
			cx, y = x, y+rowH
		}
		my := y - sizeLegend/3
		switch it.marker {
		case "dot":
			c.dot(cx+swatch/2, my, 11, it.col, false)
		case "ring":
			c.dot(cx+swatch/2, my, 11, it.col, true)
		case "cross":
			c.cross(cx+swatch/2, my, 9, it.col)
		case "box":
			c.rect(cx+8, my-12, cx+swatch-8, my+12, it.col)
		default:
			c.line(cx, my, cx+swatch, my, it.col, max(it.width, 3), it.dash)
		}
		c.text(label, cx+swatch+12, y, sizeLegend, colText, alignLeft)
		cx += swatch + 12 + w + gap
	}
	return y + 14
}

// message draws a centred note in a grey box: how an empty chart says why it is empty.
func (c *canvas) message(x0, y0, x1, y1 int, lines ...string) {
	c.rect(x0, y0, x1, y1, colPanel)
	y := (y0+y1)/2 - (len(lines)-1)*(sizeLabel+12)/2 + sizeLabel/3
	for i, l := range lines {
		size := float64(sizeLabel)
		col := colMuted
		if i == 0 {
			size, col = sizeLabel+6, colText
		}
		c.text(c.fit(l, size, x1-x0-40), (x0+x1)/2, y, size, col, alignCentre)
		y += sizeLabel + 12
	}
}

// scale maps data values to pixels along one axis.
type scale struct {
	min, max float64 // data range shown
	lo, hi   int     // pixel positions of min and max
	ticks    []float64
	step     float64
}

func (s scale) px(v float64) int {
	if s.max == s.min {
		return (s.lo + s.hi) / 2
	}
	return s.lo + int(math.Round((v-s.min)/(s.max-s.min)*float64(s.hi-s.lo)))
}

// niceScale spans [lo, hi] with at most n+1 round ticks; an empty or one-value range is widened
// so the chart still has an axis.
func niceScale(lo, hi float64, n int) scale {
	lo, hi = clampValue(lo), clampValue(hi)
	if lo > hi {
		lo, hi = hi, lo
	}
	if hi == lo {
		d := math.Abs(lo) * 0.1
		if d == 0 {
			d = 1
		}
		lo, hi = lo-d, hi+d
	}
	step, smin, smax := tightStep(lo, hi, n)
	s := scale{min: smin, max: smax, step: step}
	for i := 0; i <= 64; i++ {
		v := smin + float64(i)*step
		if v > smax+step/2 {
			break
		}
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		s.ticks = append(s.ticks, v)
	}
	return s
}

// tightStep picks the smallest round step (1, 2, 2.5 or 5 times a power of ten) whose
// ticks cover [lo, hi] in at most n intervals, so the data fills the plot.
func tightStep(lo, hi float64, n int) (step, smin, smax float64) {
	n = max(n, 1)
	exp := math.Pow(10, math.Floor(math.Log10((hi-lo)/float64(n)))-1)
	if exp == 0 || math.IsInf(exp, 0) || math.IsNaN(exp) {
		exp = 1
	}
	for range 8 {
		for _, f := range []float64{1, 2, 2.5, 5} {
			step = f * exp
			smin, smax = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
			if (smax-smin)/step <= float64(n)+1e-9 {
				return step, smin, smax
			}
		}
		exp *= 10
	}
	return step, smin, smax
}

// clampValue keeps values where differences stay finite.
func clampValue(v float64) float64 {
	const lim = 1e300
	switch {
	case math.IsNaN(v):
		return 0
	case v > lim:
		return lim
	case v < -lim:
		return -lim
	}
	return v
}

// formatValue prints v with as many digits as the tick step needs, and SI suffixes for big
// numbers so labels stay short.
func formatValue(v, step float64) string {
	if v == 0 {
		return "0"
	}
	av, as := math.Abs(v), math.Abs(step)
	if as == 0 {
		as = av
	}
	sign := ""
	if v < 0 {
		sign = "−"
	}
	if av >= 1e15 || as >= 1e15 {
		return sign + strings.Replace(fmt.Sprintf("%.1e", av), "e+", "e", 1)
	}
	for _, u := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if as >= u.f/10 && av >= u.f {
			return sign + trimZeros(fixed(av/u.f, decimals(as/u.f))) + u.s
		}
	}
	if as < 1e-3 {
		return sign + fmt.Sprintf("%.1e", av)
	}
	return sign + fixed(av, decimals(as))
}

func decimals(step float64) int {
	if step >= 1 {
		return 0
	}
	return min(int(math.Ceil(-math.Log10(step)-1e-9)), 6)
}

func fixed(v float64, dec int) string { return fmt.Sprintf("%.*f", dec, v) }

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// formatNumber prints a single value (not a tick) with three significant digits.
func formatNumber(v float64) string {
	av := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case av >= 1e15 || av < 1e-3:
		return strings.Replace(fmt.Sprintf("%.2e", v), "-", "−", 1)
	case av >= 1000:
		return formatValue(v, av/100)
	}
	s := fmt.Sprintf("%.3g", v)
	return strings.Replace(s, "-", "−", 1)
}
