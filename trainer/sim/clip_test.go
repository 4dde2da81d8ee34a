package sim_test

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/gif"
	"image/png"
	"testing"

	"tunebot/session"
	"tunebot/trainer/sim"
)

var clipBaseline = session.Metrics{session.MetricVelLinear: 0.21, session.MetricVelAngular: 0.3, session.MetricActionAcc: 12,
	session.MetricOrientation: 0.05, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08, session.MetricPower: 150}

func clipWith(k string, v float64) session.Metrics {
	m := session.Metrics{}
	for n, x := range clipBaseline {
		m[n] = x
	}
	m[k] = v
	return m
}

// frames decodes a clip into its frames as shown (each frame drawn over the last).
func frames(t *testing.T, m session.Metrics) []*image.RGBA {
	t.Helper()
	out, _ := labelled(t, m, sim.NoLabel)
	return out
}

// labelled decodes a clip drawn with label into its frames, and its poster.
func labelled(t *testing.T, m session.Metrics, label sim.ClipLabel) ([]*image.RGBA, image.Image) {
	t.Helper()
	data, poster, err := sim.Clip(m, label)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gif.DecodeAll(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the clip does not decode: %v", err)
	}
	if len(g.Image) != sim.ClipFrames || g.Config.Width != sim.ClipWidth || g.Config.Height != sim.ClipHeight {
		t.Fatalf("%d frames of %d×%d", len(g.Image), g.Config.Width, g.Config.Height)
	}
	if len(data) > 100<<10 {
		t.Errorf("the clip is %d bytes; a few tens of KB expected", len(data))
	}
	canvas := image.NewRGBA(image.Rect(0, 0, sim.ClipWidth, sim.ClipHeight))
	var out []*image.RGBA
	for _, f := range g.Image {
		draw.Draw(canvas, f.Bounds(), f, f.Bounds().Min, draw.Over)
		out = append(out, image.NewRGBA(canvas.Bounds()))
		copy(out[len(out)-1].Pix, canvas.Pix)
	}
	p, err := png.Decode(bytes.NewReader(poster))
	if err != nil {
		t.Fatalf("poster: %v", err)
	}
	for y := 0; y < sim.ClipHeight; y += 7 {
		for x := 0; x < sim.ClipWidth; x += 7 {
			if !sameColor(p.At(x, y), out[sim.PosterFrame].At(x, y)) {
				t.Fatalf("the poster is not frame %d at %d,%d", sim.PosterFrame, x, y)
			}
		}
	}
	return out, p
}

func sameColor(a, b color.Color) bool {
	r1, g1, b1, _ := a.RGBA()
	r2, g2, b2, _ := b.RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2
}

var (
	bodyColor   = color.RGBA{0x2b, 0x3a, 0x55, 0xff}
	targetColor = color.RGBA{0x2e, 0x9e, 0x4f, 0xff}
	slipColor   = color.RGBA{0xd6, 0x45, 0x41, 0xff}
	textColor   = color.RGBA{0x11, 0x11, 0x11, 0xff}
)

// extent is the bounding box of the pixels of colour c.
func extent(img *image.RGBA, c color.Color, rows image.Rectangle) (image.Rectangle, int) {
	box, n := image.Rectangle{}, 0
	for y := rows.Min.Y; y < rows.Max.Y; y++ {
		for x := rows.Min.X; x < rows.Max.X; x++ {
			if sameColor(img.At(x, y), c) {
				box = box.Union(image.Rect(x, y, x+1, y+1))
				n++
			}
		}
	}
	return box, n
}

var scene = image.Rect(0, 30, sim.ClipWidth, sim.ClipHeight) // below the labels

func TestSimClipFollowsTheMetrics(t *testing.T) {
	base := frames(t, clipBaseline)
	last := base[len(base)-1]

	// deterministic
	again, _, _ := sim.Clip(clipBaseline, sim.NoLabel)
	first, _, _ := sim.Clip(clipBaseline, sim.NoLabel)
	if !bytes.Equal(again, first) {
		t.Error("the same metrics drew two different clips")
	}
	// labelled: SIM in the top-left corner
	if _, n := extent(last, textColor, image.Rect(0, 0, 40, 20)); n < 20 {
		t.Errorf("no SIM label in the frame (%d text pixels)", n)
	}

	// tracking error: the robot ends farther behind the target marker
	lag := func(img *image.RGBA) int {
		body, _ := extent(img, bodyColor, scene)
		marker, _ := extent(img, targetColor, scene)
		return marker.Min.X - body.Max.X
	}
	if good, bad := lag(frames(t, clipWith(session.MetricVelLinear, 0.05))[sim.ClipFrames-1]), lag(frames(t, clipWith(session.MetricVelLinear, 0.35))[sim.ClipFrames-1]); !(bad > good+30) {
		t.Errorf("a robot tracking worse does not trail the marker more: %d px vs %d px", bad, good)
	}

	// foot slip: red skid marks, none without slip
	_, marks := extent(frames(t, clipWith(session.MetricFootSlip, 0.12))[sim.ClipFrames-1], slipColor, scene)
	_, none := extent(frames(t, clipWith(session.MetricFootSlip, 0))[sim.ClipFrames-1], slipColor, scene)
	if marks == 0 || none != 0 {
		t.Errorf("skid marks: %d pixels with slip, %d without", marks, none)
	}

	// orientation error: the body's outline varies more across frames when it wobbles
	wobble := func(fs []*image.RGBA) int {
		lo, hi := 1<<30, 0
		for _, f := range fs[20:40] { // walking
			b, _ := extent(f, bodyColor, scene)
			lo, hi = min(lo, b.Dy()), max(hi, b.Dy())
		}
		return hi - lo
	}
	if steady, shaky := wobble(frames(t, clipWith(session.MetricOrientation, 0.01))), wobble(frames(t, clipWith(session.MetricOrientation, 0.15))); !(shaky > steady) {
		t.Errorf("more orientation error does not wobble more: %d vs %d px", shaky, steady)
	}

	// falls: the robot ends on the ground, and says FELL
	fell := frames(t, clipWith(session.MetricFallRate, 0.2))
	body, _ := extent(fell[sim.ClipFrames-1], bodyColor, scene)
	stand, _ := extent(last, bodyColor, scene)
	if !(body.Min.Y > stand.Min.Y+10) {
		t.Errorf("a 20 %% fall rate does not fall: body top at %d, standing at %d", body.Min.Y, stand.Min.Y)
	}
	if _, n := extent(fell[sim.ClipFrames-1], textColor, image.Rect(sim.ClipWidth-60, 0, sim.ClipWidth, 20)); n == 0 {
		t.Error("a fallen robot's frame does not say so")
	}
}

// The demo's trial 10 @ rung 2 (score +0.266) and trial 6 @ rung 0 (−0.164), as sim-eval
// measured them: no metric differs by more than half, yet the two must not look alike.
var (
	demoGood = session.Metrics{session.MetricVelLinear: 0.1656, session.MetricVelAngular: 0.2710, session.MetricActionAcc: 13.80,
		session.MetricOrientation: 0.04601, session.MetricFallRate: 0.006541, session.MetricFootSlip: 0.07978, session.MetricPower: 178.1}
	demoBad = session.Metrics{session.MetricVelLinear: 0.1843, session.MetricVelAngular: 0.3544, session.MetricActionAcc: 20.27,
		session.MetricOrientation: 0.06691, session.MetricFallRate: 0.02659, session.MetricFootSlip: 0.1169, session.MetricPower: 222.5}
)

// differing is the fraction of pixels that differ between a and b.
func differing(a, b *image.RGBA) float64 {
	n := 0
	for y := 0; y < sim.ClipHeight; y++ {
		for x := 0; x < sim.ClipWidth; x++ {
			if !sameColor(a.At(x, y), b.At(x, y)) {
				n++
			}
		}
	}
	return float64(n) / (sim.ClipWidth * sim.ClipHeight)
}

func TestSimClipsOfDifferentTrialsLookDifferent(t *testing.T) {
	good, goodPoster := labelled(t, demoGood, sim.ClipLabel{Trial: 10, Rung: 2})
	bad, _ := labelled(t, demoBad, sim.ClipLabel{Trial: 6, Rung: 0})

	// at a glance: some frames differ in well over 15 % of their pixels
	most, at := 0.0, 0
	for i := range good {
		if d := differing(good[i], bad[i]); d > most {
			most, at = d, i
		}
	}
	if most < 0.15 {
		t.Errorf("the clips of trial 10 (+0.266) and trial 6 (-0.164) differ in at most %.1f %% of a frame's pixels (frame %d); over 15 %% expected", 100*most, at)
	}
	// the poster is a walking frame, not the standing first one every clip shares
	first := image.NewRGBA(good[0].Bounds())
	draw.Draw(first, first.Bounds(), goodPoster, image.Point{}, draw.Src)
	if d := differing(first, good[0]); d < 0.05 {
		t.Errorf("the poster differs from the first (standing) frame in %.1f %% of its pixels", 100*d)
	}
	// the trial and rung are written on it: the labels of two trials differ, in the
	// top middle of the frame, and a clip without one has none there
	label := image.Rect(60, 0, sim.ClipWidth-60, 24)
	_, n := extent(good[0], textColor, label)
	_, none := extent(frames(t, demoGood)[0], textColor, label)
	if n < 40 || none != 0 {
		t.Errorf("the trial label has %d text pixels (%d without a label)", n, none)
	}
	same := true
	for y := label.Min.Y; y < label.Max.Y; y++ {
		for x := label.Min.X; x < label.Max.X; x++ {
			same = same && sameColor(good[0].At(x, y), bad[0].At(x, y))
		}
	}
	if same {
		t.Error("trial 10 @ rung 2 and trial 6 @ rung 0 carry the same label")
	}
}
