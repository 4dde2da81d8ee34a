package charts

import (
	"fmt"
	"image"
	"math"
	"sort"
	"strconv"

	"github.com/wcharczuk/go-chart/v2/drawing"

	"tunebot/session"
)

// BestOf returns the trial a chart marks best when it is not told: the eligible trial of the
// highest rung with the highest plotted score (in ScoresVs the figure against the baseline at
// its rung, session.RankFigure, which ranks trials everywhere), a finalist whose final
// evaluation failed a gate excluded; ok is false when no trial is eligible.
func BestOf(trials []session.Trial) (session.TrialRef, bool) {
	var best session.TrialRef
	found := false
	bestScore := math.Inf(-1)
	for _, t := range trials {
		if !t.Eligible() {
			continue
		}
		if !found || t.Rung > best.Rung || t.Rung == best.Rung && plotted(t) > bestScore {
			best, bestScore, found = t.Ref(), plotted(t), true
		}
	}
	return best, found
}

// BestRanked is the trial a session ranks best among trials: BestOf of their figures
// against the baseline at their rung (session.RankFigure, ScoresVs's points), so a report's
// "best" is the trial the table stars, not the highest score against rung 0's baseline.
func BestRanked(st session.Settings, trials []session.Trial) (session.TrialRef, bool) {
	return BestOf(versusTrials(st, trials))
}

// plotted is where t's point goes: its rung evaluation's score, the one that ranked it (a
// final evaluation measures the chosen trial; it never moves a point, so the circled best
// never sits below another eligible point of its rung).
func plotted(t session.Trial) float64 {
	if t.Score == nil {
		return -2
	}
	return t.Score.Total
}

// Scores renders each trial's score (vs the baseline @ rung 0) by trial number, one colour
// per rung; trials that are not eligible are hollow rings, failed ones grey crosses along the
// bottom, the best is circled and labelled, and the trial of meta is shaded. Every trial is
// plotted at its rung evaluation (plotted), the score that ranks it; the baseline carried to a higher
// rung (control) is labelled, since the best is judged against it. best may be nil to let
// BestOf choose.
func Scores(meta Meta, trials []session.Trial, best *session.TrialRef) ([]byte, error) {
	c, _, err := drawScores(meta, trials, best)
	if err != nil {
		return nil, err
	}
	return c.png()
}

// ScoresVs is Scores with each trial plotted against the baseline at its rung when the
// session has that result (session.VersusControl: recomputed from the metrics), else against
// rung 0's, so a rung's points show the gain at equal training (docs/design.md §1).
func ScoresVs(meta Meta, st session.Settings, trials []session.Trial, best *session.TrialRef) ([]byte, error) {
	c, _, err := drawScoresTitled(meta, versusTrials(st, trials), best, "Score by trial (each vs the baseline at its rung, where trained)")
	if err != nil {
		return nil, err
	}
	return c.png()
}

// versusTrials returns copies of trials whose scores above rung 0 are against the baseline
// at their rung (session.VersusControl); trials itself is left as it is.
func versusTrials(st session.Settings, trials []session.Trial) []session.Trial {
	shown := make([]session.Trial, len(trials))
	controls := session.Controls(trials)
	for i, t := range trials {
		shown[i] = t
		v, ok := session.VersusOf(st, controls[t.Rung], t)
		if !ok || t.Rung == 0 {
			continue
		}
		sc := *t.Score
		sc.Total = v.Score
		shown[i].Score = &sc
	}
	return shown
}

// drawScores draws the score chart and returns it with its plot, which knows where its
// marks and labels went.
func drawScores(meta Meta, trials []session.Trial, best *session.TrialRef) (*canvas, *scorePlot, error) {
	return drawScoresTitled(meta, trials, best, "Score by trial (vs baseline @ rung 0)")
}

func drawScoresTitled(meta Meta, trials []session.Trial, best *session.TrialRef, title string) (*canvas, *scorePlot, error) {
	c, err := newCanvas(Width, Height)
	if err != nil {
		return nil, nil, err
	}
	y := c.header(title, meta.subtitle()+" · higher is better, 0 = baseline")
	if best == nil {
		if b, ok := BestOf(trials); ok {
			best = &b
		}
	}

	maxRung, minN, maxN := 0, math.MaxInt, math.MinInt
	lo, hi := 0.0, 0.0 // the baseline's 0 is always in view
	for _, t := range trials {
		maxRung = max(maxRung, t.Rung)
		minN, maxN = min(minN, t.Number), max(maxN, t.Number)
		if t.Score != nil {
			lo, hi = math.Min(lo, clampValue(plotted(t))), math.Max(hi, clampValue(plotted(t)))
		}
	}
	y = c.legend(scoreLegend(trials, maxRung), margin, y, c.w-2*margin)
	area := image.Rect(margin, y+8, c.w-margin, c.h-margin/2)
	if len(trials) == 0 {
		c.message(area.Min.X, area.Min.Y, area.Max.X, area.Max.Y, "no trials yet", "scores appear as trials finish")
		return c, nil, nil
	}

	ys := niceScale(lo, hi, 5)
	labelW := 0
	for _, t := range ys.ticks {
		w, _ := c.measure(formatValue(t, ys.step), sizeTick)
		labelW = max(labelW, w)
	}
	p := &scorePlot{c: c, left: area.Min.X + labelW + 14, right: area.Max.X - 10,
		top: area.Min.Y + sizeAxisName + 20, bottom: area.Max.Y - sizeTick - 14 - sizeAxisName - 12}
	ys.lo, ys.hi = p.bottom, p.top
	p.ys = ys
	p.xs = scale{min: float64(minN) - 0.6, max: float64(maxN) + 0.6, lo: p.left, hi: p.right}
	p.labels = placer{c: c, area: image.Rect(p.left+4, p.top-sizeLabel, p.right, p.bottom-4)}
	c.text("score", area.Min.X, area.Min.Y+sizeAxisName, sizeAxisName, colMuted, alignLeft)
	p.axes(meta.Trial.Number, minN, maxN, area.Max.Y)
	p.points(trials, maxRung, best)
	return c, p, nil
}

// scoreLegend names a colour per rung (the last one noting the final seeds, if any) and
// the marks of a trial not eligible and of a failed one.
func scoreLegend(trials []session.Trial, maxRung int) []legendItem {
	finalSeeds := 0
	for _, t := range trials {
		if t.Final != nil {
			finalSeeds = max(finalSeeds, len(t.Final.Seeds))
		}
	}
	var items []legendItem
	for r := 0; r <= maxRung; r++ {
		items = append(items, legendItem{label: "rung " + strconv.Itoa(r), col: rungColour(r), marker: "dot"})
	}
	if finalSeeds > 0 {
		items[len(items)-1].label += fmt.Sprintf(" (final: mean of %d seeds)", finalSeeds)
	}
	return append(items,
		legendItem{label: "not eligible", col: colFailed, marker: "ring"},
		legendItem{label: "failed", col: colFailed, marker: "cross"})
}

// scorePlot is the score chart's plot area: trial numbers across, scores up.
type scorePlot struct {
	c                        *canvas
	xs, ys                   scale
	left, right, top, bottom int
	labels                   placer // the marks drawn, and labels placed clear of them
}

// axes shades the trial the report is about, draws the score grid with the baseline's 0
// marked, and numbers the trials (every one, or every 2^k-th past 20).
func (p scorePlot) axes(trial, minN, maxN, areaBottom int) {
	c, xs, ys, left, right, top, bottom := p.c, p.xs, p.ys, p.left, p.right, p.top, p.bottom
	sx := xs.px(float64(trial))
	half := max(12, (xs.px(1)-xs.px(0))*4/10)
	c.rect(sx-half, top, sx+half, bottom, colPanel)
	for _, t := range ys.ticks {
		py := ys.py(t)
		col, w := colGrid, 1.5
		if t == 0 {
			col, w = colAxis, 3
		}
		c.line(left, py, right, py, col, w, nil)
		c.text(formatValue(t, ys.step), left-10, py+sizeTick/3, sizeTick, colText, alignRight)
	}
	every := 1
	for (maxN-minN)/every > 20 {
		every *= 2
	}
	for n := minN; n <= maxN; n++ {
		if (n-minN)%every == 0 {
			c.text(strconv.Itoa(n), xs.px(float64(n)), bottom+sizeTick+8, sizeTick, colText, alignCentre)
		}
	}
	c.line(left, bottom, right, bottom, colAxis, 2.5, nil)
	c.line(left, top, left, bottom, colAxis, 2.5, nil)
	c.text("trial number", (left+right)/2, areaBottom-6, sizeAxisName, colMuted, alignCentre)
}

// points marks each trial at its rank score (a ring when not eligible, a cross on the
// axis when failed), rings the best, then labels the best, the baseline carried to the top
// rung and the baseline's 0 line where the label covers no mark (issue 20: "best:" sat on
// the best's own rung-1 point and "baseline" on the last trial's).
func (p *scorePlot) points(trials []session.Trial, maxRung int, best *session.TrialRef) {
	c, xs, ys, bottom := p.c, p.xs, p.ys, p.bottom
	// rungs of one trial number sit side by side instead of on top of each other
	rungsOf := map[int]int{}
	for _, t := range trials {
		rungsOf[t.Number] = max(rungsOf[t.Number], t.Rung)
	}
	offset := func(t session.Trial) int { return (t.Rung*2 - rungsOf[t.Number]) * 10 }
	var control *session.Trial
	for i, t := range trials {
		x := xs.px(float64(t.Number)) + offset(t)
		switch {
		case t.Score == nil:
			if t.State == session.TrialFailed {
				c.cross(x, bottom-14, 10, colFailed)
				p.labels.mark(x, bottom-14, 12)
			}
		case !t.PassesGates():
			c.dot(x, ys.py(clampValue(plotted(t))), 12, colFailed, true)
			p.labels.mark(x, ys.py(clampValue(plotted(t))), 14)
		default:
			c.dot(x, ys.py(clampValue(plotted(t))), 13, rungColour(t.Rung), false)
			p.labels.mark(x, ys.py(clampValue(plotted(t))), 15)
		}
		if t.Number == 0 && t.Rung > 0 && t.Rung == maxRung && t.Score != nil && (best == nil || t.Ref() != *best) {
			control = &trials[i]
		}
	}
	// beside is where a label of trial t may go: right of its number's marks, left of
	// them, above or below its own.
	beside := func(t session.Trial, gap, size int) []spot {
		x, py := xs.px(float64(t.Number))+offset(t), ys.py(clampValue(plotted(t)))
		xr := xs.px(float64(t.Number)) + rungsOf[t.Number]*10 + gap
		xl := xs.px(float64(t.Number)) - rungsOf[t.Number]*10 - gap
		mid := py + size/3
		return []spot{{xr, mid, alignLeft}, {xl, mid, alignRight}, {x, py - gap, alignCentre}, {x, py + gap + size, alignCentre},
			{xr, py - gap, alignLeft}, {xl, py - gap, alignRight}, {xr, py + gap + size, alignLeft}, {xl, py + gap + size, alignRight}}
	}
	if best != nil {
		for _, t := range trials {
			if t.Ref() != *best || t.Score == nil {
				continue
			}
			x, py := xs.px(float64(t.Number))+offset(t), ys.py(clampValue(plotted(t)))
			c.dot(x, py, 22, colText, true)
			p.labels.mark(x, py, 24)
			p.labels.place(fmt.Sprintf("best: trial %d @ rung %d", t.Number, t.Rung), sizeLabel, colText, beside(t, 30, sizeLabel)...)
		}
	}
	if control != nil {
		p.labels.place(fmt.Sprintf("baseline @ rung %d", control.Rung), sizeTick-4, colMuted, beside(*control, 22, sizeTick-4)...)
	}
	p.baselineLabel()
}

// baselineLabel places "baseline" on its 0 line, once the points are marked: at the right
// end, else the first place along it that is free.
func (p *scorePlot) baselineLabel() {
	var along []spot
	py0 := p.ys.py(0)
	for _, dy := range []int{-10, sizeTick + 2} {
		for x := p.right - 6; x > p.left+100; x -= 40 {
			along = append(along, spot{x, py0 + dy, alignRight})
		}
	}
	p.labels.place("baseline", sizeTick-4, colMuted, along...)
}

// placer puts labels where they cover none of a chart's marks nor each other.
type placer struct {
	c      *canvas
	area   image.Rectangle   // where a label may go
	marks  []image.Rectangle // the marks drawn
	placed []image.Rectangle // the labels placed
}

// spot is a label's place: x as its alignment says, y its baseline.
type spot struct {
	x, y int
	a    align
}

// mark notes a mark of radius r at x, y.
func (l *placer) mark(x, y, r int) { l.marks = append(l.marks, image.Rect(x-r, y-r, x+r, y+r)) }

// box is the rectangle text s of size takes at sp.
func (l *placer) box(s string, size int, sp spot) image.Rectangle {
	w, _ := l.c.measure(s, float64(size))
	x0 := sp.x
	switch sp.a {
	case alignCentre:
		x0 -= w / 2
	case alignRight:
		x0 -= w
	}
	return image.Rect(x0, sp.y-size*4/5, x0+w, sp.y+size/4)
}

// place draws s at the first spot where it stays in the area and covers no mark and no
// label; when none is free, at the first spot.
func (l *placer) place(s string, size int, col drawing.Color, spots ...spot) {
	at := spots[0]
	for _, sp := range spots {
		if b := l.box(s, size, sp); b.In(l.area) && !overlapsAny(b, l.marks) && !overlapsAny(b, l.placed) {
			at = sp
			break
		}
	}
	l.placed = append(l.placed, l.box(s, size, at))
	l.c.text(s, at.x, at.y, float64(size), col, at.a)
}

func overlapsAny(b image.Rectangle, rs []image.Rectangle) bool {
	for _, r := range rs {
		if b.Overlaps(r) {
			return true
		}
	}
	return false
}

// py is px for a vertical scale; kept separate so call sites read as x or y.
func (s scale) py(v float64) int { return s.px(v) }

// Progress renders how far the session is: per rung one box per planned trial (filled in
// the rung's colour when done, grey when not eligible, a cross when failed, partly filled
// while training), then the training iterations done against the plan. The plan comes from
// settings (trial_count, rungs, promote).
func Progress(meta Meta, trials []session.Trial, settings session.Settings) ([]byte, error) {
	c, err := newCanvas(Width, Height)
	if err != nil {
		return nil, err
	}
	y := c.header("Session progress", meta.subtitle())
	p := planProgress(trials, settings)
	y = c.legend(progressLegend(len(p.rungs)), margin, y, c.w-2*margin)
	c.progressRows(meta, p, y)
	c.progressBar(p)
	return c.png()
}

// progressPlan is what the progress image shows: the session's rungs, its trials by rung,
// how many trials each rung plans, and the training iterations planned and done.
type progressPlan struct {
	rungs             []int // iterations of each rung; one rung of 0 when the settings have none
	byRung            [][]session.Trial
	planned           []int
	itPlanned, itDone float64
}

// planProgress counts the plan: a rung plans the trials it promotes (the settings' promote,
// else DefaultPromote), one more when the baseline is carried along as the control besides
// them, and never fewer than it holds. A rung's planned iterations are those beyond the
// rung before; a trial's done ones are those beyond where it started (all of them once
// trained).
func planProgress(trials []session.Trial, settings session.Settings) progressPlan {
	p := progressPlan{rungs: settings.Rungs}
	if len(p.rungs) == 0 {
		p.rungs = []int{0}
	}
	promote := settings.Promote
	if len(promote) == 0 {
		promote = session.DefaultPromote(settings.TrialCount)
	}
	p.byRung = make([][]session.Trial, len(p.rungs))
	for _, t := range trials {
		if t.Rung >= 0 && t.Rung < len(p.rungs) {
			p.byRung[t.Rung] = append(p.byRung[t.Rung], t)
		}
	}
	p.planned = make([]int, len(p.rungs))
	for r := range p.rungs {
		if r < len(promote) {
			p.planned[r] = promote[r]
			if r > 0 && settings.Control && !baselineAmongTop(p.byRung[r-1], promote[r]) {
				p.planned[r]++ // the baseline is carried along besides the promoted trials
			}
		}
		p.planned[r] = max(p.planned[r], len(p.byRung[r]))
		prev := 0
		if r > 0 {
			prev = p.rungs[r-1]
		}
		p.itPlanned += float64(p.planned[r] * max(p.rungs[r]-prev, 0))
	}
	for _, t := range trials {
		done := t.Progress
		if t.Trained || t.State == session.TrialCompleted {
			done = t.Iterations
		}
		p.itDone += float64(max(done-t.StartIter, 0))
	}
	return p
}

// progressLegend names every colour the progress image draws: one per rung, running, not
// eligible, failed, to do.
func progressLegend(rungs int) []legendItem {
	var items []legendItem
	for r := range rungs {
		items = append(items, legendItem{label: fmt.Sprintf("rung %d done", r), col: rungColour(r), marker: "box"})
	}
	running := rungColour(0)
	running.A = 120
	return append(items,
		legendItem{label: "running (pale)", col: running, marker: "box"},
		legendItem{label: "not eligible", col: colFailed, marker: "box"},
		legendItem{label: "failed", col: colBad, marker: "cross"},
		legendItem{label: "to do", col: colTodo, marker: "box"})
}

// progressRows draws a row per rung from y down: its label, and a box per planned trial.
func (c *canvas) progressRows(meta Meta, p progressPlan, y int) {
	rowH := min((c.h-y-190)/max(len(p.rungs), 1), 130)
	const labelW = 270
	for r := range p.rungs {
		top := y + 20 + r*rowH
		c.text(fmt.Sprintf("rung %d", r), margin, top+sizeLabel+4, sizeLabel+2, colText, alignLeft)
		c.text(fmt.Sprintf("%s it · %d/%d", formatValue(float64(p.rungs[r]), 1), countDone(p.byRung[r]), p.planned[r]), margin, top+2*sizeLabel+14, sizeTick-2, colMuted, alignLeft)
		n := max(p.planned[r], 1)
		gap := 8
		bw := (c.w - margin - labelW - margin - gap*(n-1)) / n
		bh := min(rowH-30, 70)
		for i := 0; i < n; i++ {
			x0 := labelW + margin + i*(bw+gap)
			box := image.Rect(x0, top, x0+bw, top+bh)
			c.rect(box.Min.X, box.Min.Y, box.Max.X, box.Max.Y, colTodo)
			if i < len(p.byRung[r]) {
				c.trialBox(meta, p.byRung[r][i], r, box)
			}
		}
	}
}

// trialBox fills a trial's box by its state: a cross when it failed, grey when it finished
// not eligible, its rung's colour when it finished, else pale as far as its training got.
// The trial the image is about is outlined.
func (c *canvas) trialBox(meta Meta, t session.Trial, r int, b image.Rectangle) {
	x0, top, x1, y1 := b.Min.X, b.Min.Y, b.Max.X, b.Max.Y
	bw, bh := b.Dx(), b.Dy()
	switch {
	case t.State == session.TrialFailed:
		c.cross((x0+x1)/2, (top+y1)/2, min(bw, bh)/4, colBad)
	case finished(t) && !t.PassesGates():
		c.rect(x0, top, x1, y1, colFailed)
	case finished(t):
		c.rect(x0, top, x1, y1, rungColour(r))
	default: // training or evaluating: fill as far as it got
		f := 0.0
		if span := t.Iterations - t.StartIter; span > 0 {
			f = math.Min(1, math.Max(0, float64(t.Progress-t.StartIter)/float64(span)))
		}
		col := rungColour(r)
		col.A = 120
		c.rect(x0, y1-int(f*float64(bh)), x1, y1, col)
	}
	if t.Ref() == meta.Trial { // outline the trial this image is about
		c.frame(x0-5, top-5, x1+5, y1+5, colText, 4)
	}
	if bw >= 30 {
		c.text(strconv.Itoa(t.Number), (x0+x1)/2, y1+sizeTick+4, sizeTick-4, colMuted, alignCentre)
	}
}

// progressBar draws the overall bar: training iterations, the unit GPU time is spent in.
func (c *canvas) progressBar(p progressPlan) {
	top := c.h - 150
	frac := 0.0
	if p.itPlanned > 0 {
		frac = math.Min(1, p.itDone/p.itPlanned)
	}
	c.text(fmt.Sprintf("training iterations: %s of %s planned (%.0f%%)", formatValue(p.itDone, 1), formatValue(p.itPlanned, 1), 100*frac),
		margin, top, sizeLabel, colText, alignLeft)
	c.rect(margin, top+20, c.w-margin, top+80, colPanel)
	c.rect(margin, top+20, margin+int(frac*float64(c.w-2*margin)), top+80, colTrial)
	c.text("early stopping may end the session before the plan", margin, c.h-margin/2-4, sizeTick-4, colMuted, alignLeft)
}

// baselineAmongTop reports whether the baseline is one of the k best eligible trials of ts,
// so that it is promoted as one of them rather than as the control besides them.
func baselineAmongTop(ts []session.Trial, k int) bool {
	var el []session.Trial
	for _, t := range ts {
		if t.Eligible() {
			el = append(el, t)
		}
	}
	sort.SliceStable(el, func(i, j int) bool {
		if a, b := plotted(el[i]), plotted(el[j]); a != b {
			return a > b
		}
		return el[i].Number < el[j].Number
	})
	for i := 0; i < len(el) && i < k; i++ {
		if el[i].Number == 0 {
			return true
		}
	}
	return false
}

func countDone(ts []session.Trial) int {
	n := 0
	for _, t := range ts {
		if t.State.Terminal() || finished(t) {
			n++
		}
	}
	return n
}

// finished reports whether t has its rung result: completed, or scored and now in its final
// re-evaluation, which does not undo the rung's training and evaluation.
func finished(t session.Trial) bool {
	return t.Score != nil && (t.State == session.TrialCompleted || t.State == session.TrialEvaluating)
}
