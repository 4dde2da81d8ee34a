// Package charts renders a tuning session's curves, scores and progress as PNG images sized
// and coloured to be read on a phone: 1200×800 pixels, large type, thick lines, the
// Okabe–Ito palette, few series per image, and the session and trial in every subtitle.
//
// Every function is pure: it takes data and returns PNG bytes, touches no file or store and
// starts no goroutine, so the caller decides where (off the training path) it runs. Empty
// input gives a readable "no data" image rather than an error or a blank one.
package charts

import (
	"fmt"
	"image"
	"math"
	"sort"
	"strings"

	"tunebot/session"
)

// Meta identifies the session and trial an image belongs to; it goes in every subtitle.
type Meta struct {
	SessionID string
	Trial     session.TrialRef
	RunName   string
}

// shortID is the first 8 characters of a session id, as people quote it.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func (m Meta) subtitle() string {
	parts := []string{"session " + shortID(m.SessionID), fmt.Sprintf("trial %d @ rung %d", m.Trial.Number, m.Trial.Rung)}
	if m.RunName != "" {
		parts = append(parts, m.RunName)
	}
	return strings.Join(parts, " · ")
}

// Curve is a labelled series of points.
type Curve struct {
	Label  string
	Points []session.Point
}

// Tag prefixes of the per-term curves RSL-RL logs.
const (
	PrefixReward      = "Episode_Reward/"
	PrefixTermination = "Episode_Termination/"
)

// Tags of the two headline training curves.
const (
	TagMeanReward        = "Train/mean_reward"
	TagMeanEpisodeLength = "Train/mean_episode_length"
)

// describeTag returns a title and the y-axis unit for a tag.
func describeTag(tag string) (title, unit string) {
	switch {
	case tag == TagMeanReward:
		return "Mean episode reward", "reward per episode"
	case tag == TagMeanEpisodeLength:
		return "Mean episode length", "steps per episode"
	case strings.HasPrefix(tag, PrefixReward):
		return "Reward term " + strings.TrimPrefix(tag, PrefixReward), "reward per episode"
	case strings.HasPrefix(tag, PrefixTermination):
		return "Termination " + strings.TrimPrefix(tag, PrefixTermination), "terminated envs per reset"
	case strings.HasPrefix(tag, "Loss/"):
		return "Loss " + strings.TrimPrefix(tag, "Loss/"), "loss"
	}
	return tag, "value"
}

// isReward reports whether tag is a reward (the total or a term's), whose value depends on
// the reward weights being tuned.
func isReward(tag string) bool {
	return tag == TagMeanReward || strings.HasPrefix(tag, PrefixReward)
}

// endValue is the mean of the last tenth of a curve: what it settled at, less noisy than the
// last point.
func endValue(pts []session.Point) (float64, bool) {
	if len(pts) == 0 {
		return 0, false
	}
	k := max(1, len(pts)/10)
	sum := 0.0
	for _, p := range pts[len(pts)-k:] {
		sum += clampValue(p.Value)
	}
	return sum / float64(k), true
}

func withEnd(label string, pts []session.Point) string {
	if v, ok := endValue(pts); ok {
		return label + ": " + formatNumber(v)
	}
	return label
}

// change describes how far a is from b in percent, for a subtitle.
func change(a, b float64) string {
	if b == 0 || math.IsInf(a/b, 0) {
		return ""
	}
	pct := 100 * (a - b) / math.Abs(b)
	return fmt.Sprintf(" (%s%.0f%% vs baseline)", signOf(pct), math.Abs(pct))
}

func signOf(v float64) string {
	if v < 0 {
		return "−"
	}
	return "+"
}

// TrainingCurves renders one training tag (for example Train/mean_reward) of this trial
// against the baseline and the current best; a curve with no points is left out. Each curve
// is down-sampled to MaxPoints with LTTB. Legend entries carry each curve's end value.
func TrainingCurves(meta Meta, tag string, trial, baseline, best Curve) ([]byte, error) {
	c, err := newCanvas(Width, Height)
	if err != nil {
		return nil, err
	}
	title, unit := describeTag(tag)
	sub := meta.subtitle()
	if isReward(tag) {
		// A reward is the sum of weighted terms: under other weights it is another measure,
		// so no percentage is headlined across them; the score compares trials.
		if len(baseline.Points) > 0 || len(best.Points) > 0 {
			sub += " · other weights' rewards don't compare"
		}
	} else if v, ok := endValue(trial.Points); ok {
		if b, ok := endValue(baseline.Points); ok {
			title += change(v, b)
		}
	}
	y := c.header(title, sub)
	label := func(cv Curve, def string) string {
		if cv.Label != "" {
			return cv.Label
		}
		return def
	}
	var items []legendItem
	var ss []series
	add := func(cv Curve, def string, s series) {
		if len(cv.Points) == 0 {
			return
		}
		s.pts = cv.Points
		ss = append(ss, s)
		items = append(items, legendItem{label: withEnd(label(cv, def), cv.Points), col: s.col, width: s.width, dash: s.dash})
	}
	add(trial, fmt.Sprintf("trial %d", meta.Trial.Number), series{col: colTrial, width: 7, smooth: true})
	add(best, "best", series{col: colBest, width: 5, smooth: true})
	add(baseline, "baseline", series{col: colBaseline, width: 4.5, smooth: true})
	y = c.legend(items, margin, y, c.w-2*margin)
	c.plot(image.Rect(margin, y+8, c.w-margin, c.h-margin/2), plotOpts{xName: "training iteration", yName: unit}, ss)
	return c.png()
}

// Terms lists the tags of m with prefix, most important first: those named in want (in
// that order), else the ones with the largest end values; at most n.
func pickTags(trial, baseline map[string][]session.Point, prefix string, want []string, n int) []string {
	has := func(tag string) bool { return len(trial[tag]) > 0 || len(baseline[tag]) > 0 }
	var out []string
	seen := map[string]bool{}
	for _, w := range want {
		tag := prefix + w
		if !seen[tag] && has(tag) {
			seen[tag] = true
			out = append(out, tag)
		}
	}
	if len(out) > 0 || len(want) > 0 {
		return out[:min(len(out), n)]
	}
	var all []string
	for tag := range trial {
		if strings.HasPrefix(tag, prefix) && has(tag) {
			all = append(all, tag)
		}
	}
	mag := func(tag string) float64 { v, _ := endValue(trial[tag]); return math.Abs(v) }
	sort.Slice(all, func(i, j int) bool {
		if mi, mj := mag(all[i]), mag(all[j]); mi != mj {
			return mi > mj
		}
		return all[i] < all[j]
	})
	return all[:min(len(all), n)]
}

// termOf maps a changed weight or parameter name (foot_gait.period) to its reward term.
func termOf(name string) string {
	if i := strings.IndexByte(name, '.'); i >= 0 {
		return name[:i]
	}
	return name
}

// RewardTerms renders the Episode_Reward/* curves of the terms whose weight or parameters
// changed in this trial (changed holds names such as "foot_slip" or "foot_gait.period"),
// one small panel per term, this trial against the baseline. With nothing changed (the
// baseline itself) it shows the largest terms instead. trial and baseline map tags to points,
// as the store keeps them.
func RewardTerms(meta Meta, trial, baseline map[string][]session.Point, changed []string) ([]byte, error) {
	var want []string
	for _, n := range changed {
		want = append(want, termOf(n))
	}
	tags := pickTags(trial, baseline, PrefixReward, want, 6)
	title := "Reward terms changed from the parent"
	if len(changed) == 0 {
		title = "Largest reward terms"
	}
	return smallMultiples(meta, title, "reward per episode", PrefixReward, tags, trial, baseline)
}

// Terminations renders the Episode_Termination/* curves (why episodes ended), this trial
// against the baseline, one small panel per cause, at most six.
func Terminations(meta Meta, trial, baseline map[string][]session.Point) ([]byte, error) {
	tags := pickTags(trial, baseline, PrefixTermination, nil, 6)
	return smallMultiples(meta, "Why episodes ended", "terminated envs per reset", PrefixTermination, tags, trial, baseline)
}

func smallMultiples(meta Meta, title, unit, prefix string, tags []string, trial, baseline map[string][]session.Point) ([]byte, error) {
	c, err := newCanvas(Width, Height)
	if err != nil {
		return nil, err
	}
	y := c.header(title, meta.subtitle()+" · y: "+unit+", x: iteration")
	items := []legendItem{{label: fmt.Sprintf("trial %d", meta.Trial.Number), col: colTrial, width: 6}}
	for _, tag := range tags {
		if len(baseline[tag]) > 0 { // the baseline's own report has nothing to compare with
			items = append(items, legendItem{label: "baseline", col: colBaseline, width: 4})
			break
		}
	}
	y = c.legend(items, margin, y, c.w-2*margin)
	area := image.Rect(margin, y+6, c.w-margin, c.h-margin/2)
	if len(tags) == 0 {
		c.message(area.Min.X, area.Min.Y, area.Max.X, area.Max.Y, "no data yet", "no "+strings.TrimSuffix(prefix, "/")+" curves were logged")
		return c.png()
	}
	cols, rows := grid(len(tags))
	cw, ch := area.Dx()/cols, area.Dy()/rows
	for i, tag := range tags {
		x0, y0 := area.Min.X+(i%cols)*cw, area.Min.Y+(i/cols)*ch
		name := c.fit(strings.TrimPrefix(tag, prefix), sizePanel, cw-24)
		c.text(name, x0+8, y0+sizePanel, sizePanel, colText, alignLeft)
		ts := float64(sizeTick)
		if cols > 2 {
			ts = sizeTick - 3
		}
		c.plot(image.Rect(x0, y0+sizePanel+12, x0+cw-22, y0+ch-10), plotOpts{tickSize: ts, yTicks: 5}, []series{
			{pts: trial[tag], col: colTrial, width: 6, smooth: true},
			{pts: baseline[tag], col: colBaseline, width: 4, smooth: true},
		})
	}
	return c.png()
}

// grid picks columns and rows for n panels on a landscape image.
func grid(n int) (cols, rows int) {
	switch {
	case n <= 1:
		return 1, 1
	case n == 2:
		return 2, 1
	case n <= 4:
		return 2, 2
	}
	return 3, 2
}
