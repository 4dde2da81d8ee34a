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
	data, poster, err := sim.Clip(m)
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
			if !sameColor(p.At(x, y), out[0].At(x, y)) {
				t.Fatalf("the poster is not the first frame at %d,%d", x, y)
			}
		}
	}
	return out
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
	again, _, _ := sim.Clip(clipBaseline)
	first, _, _ := sim.Clip(clipBaseline)
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
	_, marks := extent(last, slipColor, scene)
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
