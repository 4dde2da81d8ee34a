package charts

import (
	"fmt"
	"math"
	"strings"

	"github.com/wcharczuk/go-chart/v2/drawing"

	"tunebot/session"
)

// The tracking gate of docs/design.md §3, where it is drawn; whether a value passes it is
// session's judgement (session.TrackingPasses, session.FallRatePasses), the one the
// eligibility of every surface comes from.
const gateTracking = session.GateTrackingMin

var objectiveLabels = map[string]string{
	session.ObjTracking: "tracking", session.ObjSmoothness: "smoothness", session.ObjStability: "stability",
	session.ObjFalls: "falls", session.ObjSlip: "foot slip", session.ObjEnergy: "energy",
}

// Objectives renders a trial's evaluation against the baseline: one bar per objective
// (improvement from −100 % to +100 %, green when better, red when worse) with the tracking
// gate at −5 %, then one bar per raw metric with its value next to the baseline's and the
// fall-rate limit (baseline + 0.02). A banner says whether the trial is eligible and why not.
// metrics and baseline are the trial's and the baseline's evaluation metrics; either may be
// nil, which leaves the raw values out.
func Objectives(meta Meta, score session.Score, metrics, baseline session.Metrics) ([]byte, error) {
	return ObjectivesVs(meta, score, metrics, baseline, 0)
}

// ObjectivesVs is Objectives against the baseline at baseRung: score and baseline are the
// control's at the trial's rung (session.ScoreVersus) when baseRung is the trial's rung, and
// the title says which baseline it is and whether it was trained less.
func ObjectivesVs(meta Meta, score session.Score, metrics, baseline session.Metrics, baseRung int) ([]byte, error) {
	c, err := newCanvas(Width, Height)
	if err != nil {
		return nil, err
	}
	sub := meta.subtitle() + fmt.Sprintf(" · both at rung %d", baseRung)
	if meta.Trial.Rung > baseRung {
		sub = meta.subtitle() + fmt.Sprintf(" · baseline at rung %d, trained less", baseRung)
	}
	y := c.header(fmt.Sprintf("Evaluation vs baseline @ rung %d", baseRung), sub)
	y = verdictBanner(c, y, score)

	rowH := (c.h - margin/2 - y - 2*barHeadH - barScaleH - 16) / (len(session.ObjectiveNames) + len(session.MetricNames))
	rowH = min(rowH, 48)
	b := &barRows{c: c, y: y, rowH: rowH, barH: rowH * 6 / 10}

	b.section("Objectives: improvement vs baseline", session.ObjectiveNames,
		func(n string) (float64, bool) { v, ok := score.Objectives[n]; return v, ok },
		func(n string) string { return objectiveLabels[n] },
		objectiveNote(score), true)
	// the tracking gate, drawn over the tracking row
	if rowH > 0 {
		trackRow := b.y - 8 - barScaleH - rowH*len(session.ObjectiveNames)
		c.line(b.px(gateTracking), trackRow+2, b.px(gateTracking), trackRow+rowH-2, colBad, 4, nil)
	}

	b.section("Metrics (lower is better): trial vs baseline", session.MetricNames,
		func(n string) (float64, bool) { v, ok := score.Improvements[n]; return v, ok },
		session.MetricLabel,
		metricNote(metrics, baseline), false)
	return c.png()
}

// verdictBanner draws the verdict from y down, readable at a glance: the colour says
// eligible or not, the text says why; it returns the y below it.
func verdictBanner(c *canvas, y int, score session.Score) int {
	verdict := []string{"score " + scoreText(score.Total) + " · eligible"}
	vcol := colGood
	if !score.Eligible {
		why := strings.Join(score.Reasons, "; ")
		if why == "" {
			why = "no reason given"
		}
		verdict = wrap(c, "score "+scoreText(score.Total)+" · NOT eligible: "+why,
			sizeLabel, c.w-2*margin-28, 2)
		vcol = colBad
	}
	y += 4
	lineH := sizeLabel + 10
	c.rect(margin, y, c.w-margin, y+lineH*len(verdict)+12, vcol)
	for i, l := range verdict {
		c.text(c.fit(l, sizeLabel, c.w-2*margin-28), margin+14, y+(i+1)*lineH, sizeLabel, colBackground, alignLeft)
	}
	return y + lineH*len(verdict) + 12 + 6
}

// The bar panel's columns: labels end at barLabelRight, bars span barLeft..barRight around
// their zero, notes follow on the right.
const (
	barLabelRight, barLeft, barRight = 250, 268, 800
	barZero                          = (barLeft + barRight) / 2
	barHeadH, barScaleH              = 40, 28
)

// barRows draws sections of improvement bars down the canvas; y is where the next one starts.
type barRows struct {
	c             *canvas
	y, rowH, barH int
}

// px is the x of an improvement v, clipped to ±100 %.
func (b *barRows) px(v float64) int {
	return barZero + int(math.Round(clip(v)*float64(barRight-barZero)))
}

// section draws a titled row per name: its label, its bar (green better, red worse), and
// its note; scaleBelow adds the percent scale under the rows.
func (b *barRows) section(title string, names []string, value func(string) (float64, bool), label func(string) string, note func(string) (string, drawing.Color), scaleBelow bool) {
	c, rowH, barH, px := b.c, b.rowH, b.barH, b.px
	c.text(title, margin, b.y+barHeadH-10, sizeLabel, colText, alignLeft)
	b.y += barHeadH
	top := b.y
	for _, t := range []float64{-1, -0.5, 0.5, 1} {
		c.line(px(t), top, px(t), top+rowH*len(names), colGrid, 1.5, nil)
	}
	for _, name := range names {
		mid := b.y + rowH/2
		c.text(c.fit(label(name), sizeLabel-2, barLabelRight-margin), barLabelRight, mid+(sizeLabel-2)/3, sizeLabel-2, colText, alignRight)
		v, ok := value(name)
		if ok {
			col := colGood
			if v < 0 {
				col = colBad
			}
			x0, x1 := barZero, px(v)
			if x1 < x0 {
				x0, x1 = x1, x0
			}
			if x1-x0 < 3 { // a zero improvement still shows a sliver
				x0, x1 = barZero-2, barZero+2
				col = colMuted
			}
			c.rect(x0, mid-barH/2, x1, mid+barH/2, col)
		}
		if n, col := note(name); n != "" {
			c.text(c.fit(n, sizeLabel-4, c.w-margin-barRight-16), barRight+16, mid+(sizeLabel-4)/3, sizeLabel-4, col, alignLeft)
		}
		b.y += rowH
	}
	c.line(barZero, top-4, barZero, b.y+4, colAxis, 3, nil)
	if scaleBelow {
		for _, t := range []float64{-1, -0.5, 0, 0.5, 1} {
			l := "0"
			if t != 0 {
				l = fmt.Sprintf("%s%.0f%%", signOf(t), math.Abs(100*t))
			}
			c.text(l, px(t), b.y+barScaleH-2, sizeTick-4, colMuted, alignCentre)
		}
		b.y += barScaleH
	}
	b.y += 8
}

// objectiveNote is the note beside an objective's bar: its improvement, and for tracking
// where it stands against the gate.
func objectiveNote(score session.Score) func(string) (string, drawing.Color) {
	return func(n string) (string, drawing.Color) {
		v, ok := score.Objectives[n]
		if !ok {
			return "no value", colMuted
		}
		s := percent(v)
		if n == session.ObjTracking {
			if !session.TrackingPasses(v) {
				return s + "  below gate −5%", colBad
			}
			return s + "  (gate −5%)", colText
		}
		return s, colText
	}
}

// metricNote is the note beside a metric's bar: the trial's value against the baseline's,
// and for the fall rate its limit.
func metricNote(metrics, baseline session.Metrics) func(string) (string, drawing.Color) {
	return func(n string) (string, drawing.Color) {
		m, ok := metrics[n]
		if !ok {
			return "", colText
		}
		unit := session.MetricUnits[n]
		if unit != "" {
			unit = " " + unit
		}
		b, bok := baseline[n]
		if !bok {
			return formatNumber(m) + unit, colText
		}
		if n == session.MetricFallRate {
			// A share of episodes reads best as a percentage, and stays short enough
			// for the column with its gate beside it.
			limit := b + session.GateFallRateMargin
			s := fallPercent(m) + " vs " + fallPercent(b)
			if !session.FallRatePasses(m, b) {
				return s + ", over max " + fallPercent(limit), colBad
			}
			return s + ", max " + fallPercent(limit), colText
		}
		return formatNumber(m) + " vs " + formatNumber(b) + unit, colText
	}
}

func clip(v float64) float64 { return math.Max(-1, math.Min(1, clampValue(v))) }

// scoreText prints a total score the way cards do: signed, three decimals.
func scoreText(v float64) string {
	v = clampValue(v)
	if math.Abs(v) >= 1000 {
		return signOf(v) + formatNumber(math.Abs(v))
	}
	return fmt.Sprintf("%s%.3f", signOf(v), math.Abs(v))
}

// fallPercent prints a fall rate (a fraction of episodes) as a percentage with two
// significant digits below 10% and whole percents above: 0.00759 → "0.76%", 1 → "100%".
func fallPercent(v float64) string {
	switch p := 100 * v; {
	case p == 0:
		return "0%"
	case math.Abs(p) >= 10:
		return fmt.Sprintf("%.0f%%", p)
	default:
		return fmt.Sprintf("%.2g%%", p)
	}
}

func percent(v float64) string {
	return fmt.Sprintf("%s%.1f%%", signOf(v), math.Abs(100*v))
}

// Failed renders the image that stands in for a chart a trial cannot have (it failed, or
// has no evaluation yet): the title, the session and trial, and the reason in words.
func Failed(meta Meta, title, headline, reason string) ([]byte, error) {
	c, err := newCanvas(Width, Height)
	if err != nil {
		return nil, err
	}
	y := c.header(title, meta.subtitle())
	lines := []string{headline}
	lines = append(lines, wrap(c, reason, sizeLabel, c.w-2*margin-60, 6)...)
	c.message(margin, y+10, c.w-margin, c.h-margin, lines...)
	return c.png()
}

// wrap breaks s into at most n lines of at most maxW pixels.
func wrap(c *canvas, s string, size float64, maxW, n int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		next := strings.TrimSpace(cur + " " + w)
		if cw, _ := c.measure(next, size); cw > maxW && cur != "" {
			lines = append(lines, cur)
			cur = w
			continue
		}
		cur = next
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	if len(lines) > n {
		lines = append(lines[:n-1], lines[n-1]+" …")
	}
	return lines
}
