package charts_test

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/charts"
	"tunebot/session"
)

// look decodes a PNG and measures what a glance would: its size, how much of it is not
// background and how many colours it uses.
type look struct {
	w, h    int
	inked   float64 // share of pixels that are not white
	colours int
	img     image.Image
}

func inspect(t *testing.T, name string, data []byte) look {
	t.Helper()
	if out := os.Getenv("CHARTS_OUT"); out != "" { // CHARTS_OUT=/tmp/x go test ./charts to look at them
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: decoding: %v", name, err)
	}
	b := img.Bounds()
	l := look{w: b.Dx(), h: b.Dy(), img: img}
	seen := map[color.RGBA]bool{}
	inked := 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			seen[c] = true
			if c.R < 250 || c.G < 250 || c.B < 250 {
				inked++
			}
		}
	}
	l.inked = float64(inked) / float64((b.Dx()/2)*(b.Dy()/2))
	l.colours = len(seen)
	return l
}

// readable fails unless the image is the standard size and visibly drawn on.
func readable(t *testing.T, name string, data []byte) look {
	t.Helper()
	l := inspect(t, name, data)
	if l.w != charts.Width || l.h != charts.Height {
		t.Errorf("%s: size %dx%d, want %dx%d", name, l.w, l.h, charts.Width, charts.Height)
	}
	if l.inked < 0.02 || l.colours < 8 {
		t.Errorf("%s looks blank: %.1f%% inked, %d colours", name, 100*l.inked, l.colours)
	}
	return l
}

// near counts pixels within a small distance of c: how much of a palette colour is shown.
func near(l look, c color.RGBA) int {
	n := 0
	b := l.img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			p := color.RGBAModel.Convert(l.img.At(x, y)).(color.RGBA)
			if absd(p.R, c.R)+absd(p.G, c.G)+absd(p.B, c.B) < 30 {
				n++
			}
		}
	}
	return n
}

func absd(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

var (
	blue   = color.RGBA{0, 114, 178, 255}
	orange = color.RGBA{230, 159, 0, 255}
	purple = color.RGBA{123, 50, 148, 255}
	green  = color.RGBA{0, 150, 100, 255}
	red    = color.RGBA{213, 70, 0, 255}
)

func TestTrialReport(t *testing.T) {
	tests := []struct {
		name string
		ref  session.TrialRef
	}{
		{"baseline", session.TrialRef{Number: 0}},
		{"improved", session.TrialRef{Number: 3}},
		{"falls gate", session.TrialRef{Number: 5}},
		{"failed", session.TrialRef{Number: 9}},
		{"rung 2 best", session.TrialRef{Number: 11, Rung: 2}},
	}
	want := []string{"objectives", "reward", "scores", "terms", "terminations", "length", "progress"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			imgs, err := charts.TrialReport(reportInput(tc.ref, 300))
			if err != nil {
				t.Fatal(err)
			}
			if len(imgs) != len(want) {
				t.Fatalf("%d images, want %d", len(imgs), len(want))
			}
			names := charts.ReportNames(tc.ref)
			for i, img := range imgs {
				if img.Name != names[i] {
					t.Errorf("image %d is named %q, but ReportNames says %q", i, img.Name, names[i])
				}
				name := filepath.Base(img.Name)
				if !strings.HasPrefix(name, charts.ImagePrefix(tc.ref)) || !strings.HasSuffix(name, "-"+want[i]+".png") {
					t.Errorf("image %d is named %q, want the %s chart of %s", i, img.Name, want[i], tc.ref)
				}
				if img.Title == "" {
					t.Errorf("%s has no title", img.Name)
				}
				readable(t, img.Name, img.PNG)
			}
		})
	}
}

func TestObjectivesColours(t *testing.T) {
	all := func(v float64) map[string]float64 {
		m := map[string]float64{}
		for _, n := range append(append([]string{}, session.ObjectiveNames...), session.MetricNames...) {
			m[n] = v
		}
		return m
	}
	meta := charts.Meta{SessionID: "abc", Trial: session.TrialRef{Number: 2}}
	tests := []struct {
		name       string
		score      session.Score
		more, less color.RGBA // the colour that must dominate, and the one that must be rare
	}{
		{"better everywhere", session.Score{Total: 0.4, Objectives: all(0.4), Improvements: all(0.4), Eligible: true}, green, red},
		{"worse everywhere", session.Score{Total: -0.4, Objectives: all(-0.4), Improvements: all(-0.4), Reasons: []string{"tracking is 40.0% worse than the baseline (limit 5%)"}}, red, green},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			png, err := charts.Objectives(meta, tc.score, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			l := readable(t, "objectives-"+strings.ReplaceAll(tc.name, " ", "-")+".png", png)
			if m, r := near(l, tc.more), near(l, tc.less); m < 5*r+1000 {
				t.Errorf("%d pixels of the expected colour against %d of the other", m, r)
			}
		})
	}
}

func TestScoresMarksRungs(t *testing.T) {
	trials, _ := session20()
	png, err := charts.Scores(charts.Meta{SessionID: "s", Trial: session.TrialRef{Number: 11, Rung: 2}}, trials, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := readable(t, "scores-rungs.png", png)
	for name, c := range map[string]color.RGBA{"rung 0": blue, "rung 1": orange, "rung 2": purple} {
		if n := near(l, c); n < 200 {
			t.Errorf("%s: only %d pixels of its colour", name, n)
		}
	}
}

func TestTrainingCurvesShowsEachCurve(t *testing.T) {
	meta := charts.Meta{SessionID: "s", Trial: session.TrialRef{Number: 4}}
	tests := []struct {
		name          string
		base, best    []session.Point
		wantOrange    bool
		wantTrialBlue bool
	}{
		{"all three", curve(500, 0, 10, 0.5, 1), curve(500, 0, 12, 0.5, 2), true, true},
		{"no best", curve(500, 0, 10, 0.5, 1), nil, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			png, err := charts.TrainingCurves(meta, charts.TagMeanReward, charts.Curve{Points: curve(500, 0, 15, 0.5, 3)},
				charts.Curve{Points: tc.base}, charts.Curve{Points: tc.best})
			if err != nil {
				t.Fatal(err)
			}
			l := readable(t, "curves-"+strings.ReplaceAll(tc.name, " ", "-")+".png", png)
			if got := near(l, orange) > 300; got != tc.wantOrange {
				t.Errorf("best curve drawn: %v, want %v", got, tc.wantOrange)
			}
			if near(l, blue) < 1000 {
				t.Errorf("the trial's curve is barely visible")
			}
		})
	}
}

// TestOddInput feeds every chart what real sessions produce on a bad day; each must still
// give a full-size image with something on it, never an error, a panic or a blank.
func TestOddInput(t *testing.T) {
	long := strings.Repeat("very_long_reward_term_name_", 8)
	huge := []session.Point{{Step: 0, Value: -1e12}, {Step: 1, Value: 3e12}, {Step: 2, Value: 1e300}, {Step: 3, Value: math.Inf(-1)}}
	one := []session.Point{{Step: 7, Value: 3.5}}
	neg := curve(50, -900, -1200, 5, 1)
	flat := []session.Point{{Step: 0, Value: 2}, {Step: 10, Value: 2}, {Step: 20, Value: 2}}
	sameStep := []session.Point{{Step: 5, Value: 1}, {Step: 5, Value: 2}}
	tiny := curve(100, 0, -2.5e-7, 1e-9, 2)
	meta := charts.Meta{SessionID: "0123456789abcdef", Trial: session.TrialRef{Number: 19, Rung: 1}, RunName: strings.Repeat("x", 64)}
	trials, st := session20()
	empty := session.Settings{}

	type render func() ([]byte, error)
	cases := map[string]render{}
	for name, pts := range map[string][]session.Point{"empty": nil, "huge": huge, "one": one, "negative": neg, "flat": flat, "same-step": sameStep, "tiny": tiny} {
		cases["curves-"+name] = func() ([]byte, error) {
			return charts.TrainingCurves(meta, long, charts.Curve{Points: pts}, charts.Curve{Points: one}, charts.Curve{})
		}
		m := map[string][]session.Point{"Episode_Reward/" + long: pts, "Episode_Termination/" + long: pts}
		cases["terms-"+name] = func() ([]byte, error) { return charts.RewardTerms(meta, m, nil, []string{long}) }
		cases["terminations-"+name] = func() ([]byte, error) { return charts.Terminations(meta, m, m) }
	}
	many := map[string][]session.Point{}
	for i := 0; i < 20; i++ {
		many[strings.Repeat("t", i+1)] = curve(10, 0, float64(i), 0, uint64(i))
	}
	cases["terms-none-changed-logged"] = func() ([]byte, error) { return charts.RewardTerms(meta, nil, nil, []string{"pose"}) }
	cases["terms-nil"] = func() ([]byte, error) { return charts.RewardTerms(meta, nil, nil, nil) }
	cases["objectives-empty"] = func() ([]byte, error) { return charts.Objectives(meta, session.Score{}, nil, nil) }
	cases["objectives-reasons"] = func() ([]byte, error) {
		return charts.Objectives(meta, session.Score{Total: math.Inf(1), Reasons: []string{long, long, long}},
			session.Metrics{session.MetricFallRate: 0.5}, session.Metrics{session.MetricFallRate: 0})
	}
	cases["scores-none"] = func() ([]byte, error) { return charts.Scores(meta, nil, nil) }
	cases["scores-all-failed"] = func() ([]byte, error) {
		return charts.Scores(meta, []session.Trial{{Number: 1, State: session.TrialFailed}, {Number: 2, State: session.TrialTraining}}, nil)
	}
	cases["scores-huge-numbers"] = func() ([]byte, error) {
		return charts.Scores(meta, []session.Trial{{Number: 1, State: session.TrialCompleted, Score: &session.Score{Total: 1e9, Eligible: true}}, {Number: 1000, State: session.TrialCompleted, Score: &session.Score{Total: -1e9}}}, nil)
	}
	cases["progress-empty"] = func() ([]byte, error) { return charts.Progress(meta, nil, empty) }
	cases["progress-20"] = func() ([]byte, error) { return charts.Progress(meta, trials, st) }
	cases["failed"] = func() ([]byte, error) { return charts.Failed(meta, long, long, strings.Repeat(long+" ", 40)) }
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			png, err := r()
			if err != nil {
				t.Fatal(err)
			}
			readable(t, name+".png", png)
		})
	}
}

// BenchmarkTrialReport renders a full trial report in a session of 20 trials with 20 tags of
// 2000 iterations each (issue 5: ≤ 200 ms on one core; run with -cpu 1).
func BenchmarkTrialReport(b *testing.B) {
	in := reportInput(session.TrialRef{Number: 11, Rung: 2}, 2000)
	if len(in.Trials) < 18 || len(in.Series(in.Trial.Ref())) != 20 {
		b.Fatalf("fixture has %d trials and %d tags", len(in.Trials), len(in.Series(in.Trial.Ref())))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := charts.TrialReport(in); err != nil {
			b.Fatal(err)
		}
	}
}

// meanY is the mean row of the pixels near c below row top, in the left and right halves.
func meanY(l look, c color.RGBA, top int) (left, right float64) {
	var sum, n [2]float64
	b := l.img.Bounds()
	for y := top; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			p := color.RGBAModel.Convert(l.img.At(x, y)).(color.RGBA)
			if absd(p.R, c.R)+absd(p.G, c.G)+absd(p.B, c.B) < 30 {
				i := 0
				if x >= b.Max.X/2 {
					i = 1
				}
				sum[i] += float64(y)
				n[i]++
			}
		}
	}
	return sum[0] / max(n[0], 1), sum[1] / max(n[1], 1)
}

// The score chart plots a finalist at its rung evaluation, the score that ranks it: the final
// evaluation measures the chosen trial on fresh seeds and never moves a point (issue 43,
// item 3), so trial 1, better on the rung's seeds, sits above trial 4, better on the final.
func TestScoresPlotsFinalistsWhereTheirRungPutThem(t *testing.T) {
	final := func(num int, rung, final float64) session.Trial {
		return session.Trial{Number: num, Rung: 2, State: session.TrialCompleted, Score: &session.Score{Total: rung, Eligible: true},
			Final: &session.Final{Seeds: []int{0, 1, 2}, Score: session.Score{Total: final, Eligible: true}, ScoreStd: 0.01}}
	}
	trials := []session.Trial{final(1, 0.30, 0.10), final(4, 0.05, 0.20)}
	png, err := charts.Scores(charts.Meta{SessionID: "s", Trial: session.TrialRef{Number: 4, Rung: 2}}, trials, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := readable(t, "scores-finals.png", png)
	left, right := meanY(l, purple, 260) // below the legend
	if !(left < right-20) {
		t.Errorf("trial 1 (rung +0.30) drawn at row %.0f, trial 4 (rung +0.05) at row %.0f: want trial 1 higher", left, right)
	}
}

// A finalist in its final re-evaluation has its rung result: the progress chart fills its box
// in the rung's colour, as for a completed trial, not the pale of one still training.
func TestProgressCountsFinalistsBeingReevaluated(t *testing.T) {
	st := session.DefaultSettings()
	st.Normalize()
	trial := func(num int, state session.TrialState) session.Trial {
		return session.Trial{Number: num, Rung: 2, Iterations: 2000, StartIter: 900, Progress: 2000, Trained: true, State: state,
			Score: &session.Score{Total: 0.2, Eligible: true}}
	}
	meta := charts.Meta{SessionID: "s", Trial: session.TrialRef{Number: 9, Rung: 2}}
	done, err := charts.Progress(meta, []session.Trial{trial(3, session.TrialCompleted), trial(5, session.TrialCompleted)}, st)
	if err != nil {
		t.Fatal(err)
	}
	evaluating, err := charts.Progress(meta, []session.Trial{trial(3, session.TrialEvaluating), trial(5, session.TrialCompleted)}, st)
	if err != nil {
		t.Fatal(err)
	}
	want, got := near(readable(t, "progress-done.png", done), purple), near(readable(t, "progress-final-eval.png", evaluating), purple)
	if got < want*95/100 {
		t.Errorf("%d pixels of rung 2's colour while trial 3 is re-evaluated, %d when it is completed", got, want)
	}
}

// BestOf picks as the session does: the highest rung, then the rung's score (a final
// evaluation chooses nothing), and never a finalist whose final evaluation failed a gate.
func TestBestOfRanksByTheRungNeverTheFinal(t *testing.T) {
	tr := func(num, rung int, score float64, final *session.Score) session.Trial {
		t := session.Trial{Number: num, Rung: rung, State: session.TrialCompleted, Score: &session.Score{Total: score, Eligible: true}}
		if final != nil {
			t.Final = &session.Final{Seeds: []int{0, 1, 2}, Score: *final}
		}
		return t
	}
	trials := []session.Trial{tr(1, 0, 0.5, nil), tr(2, 1, 0.3, &session.Score{Total: 0.1, Eligible: true}),
		tr(3, 1, 0.2, &session.Score{Total: 0.2, Eligible: true}), tr(4, 1, 0.4, &session.Score{Total: 0.4})}
	if got, ok := charts.BestOf(trials); !ok || got != (session.TrialRef{Number: 2, Rung: 1}) {
		t.Errorf("BestOf = %v, %v; want trial 2 @ rung 1", got, ok)
	}
}

// A rung-2 trial's evaluation chart is against the baseline trained to rung 2 when it exists,
// and says rung 0 only when it does not.
func TestTrialReportObjectivesAgainstTheSameRung(t *testing.T) {
	in := reportInput(session.TrialRef{Number: 11, Rung: 2}, 50)
	imgs, err := charts.TrialReport(in)
	if err != nil {
		t.Fatal(err)
	}
	if imgs[0].Title != "Evaluation vs baseline @ rung 0" {
		t.Errorf("without a baseline at rung 2: title %q", imgs[0].Title)
	}
	control := *in.Baseline
	control.Rung, control.Iterations, control.Metrics = 2, in.Trial.Iterations, session.Metrics{}
	for k, v := range in.Baseline.Metrics {
		control.Metrics[k] = 0.8 * v
	}
	in.Control = &control
	imgs, err = charts.TrialReport(in)
	if err != nil {
		t.Fatal(err)
	}
	if imgs[0].Title != "Evaluation vs baseline @ rung 2" {
		t.Errorf("with the baseline at rung 2: title %q", imgs[0].Title)
	}
	readable(t, imgs[0].Name, imgs[0].PNG)
}
