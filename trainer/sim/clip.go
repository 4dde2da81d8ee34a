package sim

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"math"
	"slices"

	"tunebot/session"
)

// The sim's clip (docs/design.md §4): a schematic side view of a quadruped, drawn with the
// standard library, whose motion follows the evaluation's metrics, so that two trials'
// clips differ the way their numbers do. The same schedule as the mjlab adapter's clip:
// standing, walking, then walking while turning. Every effect is exaggerated enough to
// see at phone size:
//
//   - tracking error: the robot drifts behind the target marker, which moves at the
//     commanded speed;
//   - orientation error: the body wobbles (pitch) with the gait;
//   - foot slip: feet slide while on the ground and leave red skid marks;
//   - falls: a fall rate of 5 % or more falls over (earlier the higher it is), a lower one
//     stumbles;
//   - jerky actions: the legs jitter.
//
// It is labelled SIM in the frame: it is a picture of the numbers, not a simulation.
const (
	ClipWidth   = 288
	ClipHeight  = 162
	ClipDelay   = 10 // hundredths of a second per frame: 10 frames a second
	ClipFrames  = 50
	clipSeconds = ClipFrames * ClipDelay / 100.0
)

// Colours of the clip's palette.
var clipPalette = color.Palette{
	color.RGBA{0xee, 0xf2, 0xf7, 0xff}, // 0 sky
	color.RGBA{0xc9, 0xce, 0xd6, 0xff}, // 1 ground
	color.RGBA{0x55, 0x5b, 0x66, 0xff}, // 2 ground line and ticks
	color.RGBA{0x2b, 0x3a, 0x55, 0xff}, // 3 body and near legs
	color.RGBA{0x8a, 0x96, 0xab, 0xff}, // 4 far legs
	color.RGBA{0x2e, 0x9e, 0x4f, 0xff}, // 5 target marker
	color.RGBA{0xd6, 0x45, 0x41, 0xff}, // 6 slip marks, a fall
	color.RGBA{0x11, 0x11, 0x11, 0xff}, // 7 text
	color.RGBA{0xf6, 0xd3, 0xcf, 0xff}, // 8 the ground lost to the target
	color.RGBA{0xb5, 0xa4, 0x8a, 0xff}, // 9 dust of a sliding foot
	color.RGBA{0xe0, 0x8a, 0x1e, 0xff}, // 10 jolt marks of jerky actions
}

const (
	cSky = iota
	cGround
	cLine
	cBody
	cFar
	cTarget
	cSlip
	cText
	cDrift
	cDust
	cJolt
)

// clipPhase is the command schedule: from second, name, forward speed (m/s), turn rate
// (rad/s). The mjlab adapter's (tunebot_mjlab/clip.py) is the same.
var clipPhases = []struct {
	from   float64
	name   string
	vx, wz float64
}{{0, "STAND", 0, 0}, {1, "WALK", 0.6, 0}, {3, "TURN", 0.4, 0.6}}

func phaseAt(t float64) (string, float64, float64) {
	p := clipPhases[0]
	for _, q := range clipPhases {
		if t >= q.from {
			p = q
		}
	}
	return p.name, p.vx, p.wz
}

// Body geometry in metres, and the drawing scale.
const (
	pxPerM    = 160.0
	bodyLen   = 0.38
	bodyThick = 0.07
	hipHeight = 0.27
	thighLen  = 0.2
	shankLen  = 0.2
	gaitT     = 0.6 // trot period, s
	groundY   = 135 // pixel row of the ground
	flagX     = 236 // pixel column of the target marker: the camera follows the target
)

// ClipLabel names the trial a clip shows, drawn in the frame; a negative Trial draws none.
type ClipLabel struct{ Trial, Rung int }

// NoLabel draws no trial label.
var NoLabel = ClipLabel{Trial: -1, Rung: -1}

// Clip draws the clip of an evaluation with metrics m, labelled with its trial and rung:
// an animated GIF and its frame PosterFrame as a PNG.
func Clip(m session.Metrics, label ClipLabel) (gifData, posterData []byte, err error) {
	return EncodeClip(DrawClip(m, label))
}

// PosterFrame is the frame the poster shows: the end of the walk, when everything the
// metrics say has happened (how far the robot trails the target, its skid marks, a fall),
// rather than the first frames, which all stand still and so look alike.
const PosterFrame = ClipFrames - 1

// EncodeClip encodes frames drawn by DrawClip as a GIF and frame PosterFrame as a PNG.
func EncodeClip(frames []*image.Paletted) (gifData, posterData []byte, err error) {
	g := &gif.GIF{LoopCount: 0}
	// After the first frame, each frame holds only the rectangle that changed, and in it
	// the pixels that did not change are transparent: long runs of one index, which LZW
	// packs into almost nothing, so the clip stays a few tens of KB.
	pal := append(slices.Clip(clipPalette), color.RGBA{})
	trans := uint8(len(pal) - 1)
	for i, f := range frames {
		g.Delay = append(g.Delay, ClipDelay)
		g.Disposal = append(g.Disposal, gif.DisposalNone)
		if i == 0 {
			g.Image = append(g.Image, f)
			continue
		}
		prev := frames[i-1]
		x0, y0, x1, y1 := ClipWidth, ClipHeight, 0, 0
		for y := 0; y < ClipHeight; y++ {
			a, b := f.Pix[y*f.Stride:y*f.Stride+ClipWidth], prev.Pix[y*prev.Stride:y*prev.Stride+ClipWidth]
			if bytes.Equal(a, b) {
				continue
			}
			l, r := 0, len(a)
			for a[l] == b[l] {
				l++
			}
			for a[r-1] == b[r-1] {
				r--
			}
			x0, x1, y0, y1 = min(x0, l), max(x1, r), min(y0, y), y+1
		}
		box := image.Rect(x0, y0, x1, y1)
		if box.Empty() {
			box = image.Rect(0, 0, 1, 1)
		}
		sub := image.NewPaletted(box, pal)
		for y := box.Min.Y; y < box.Max.Y; y++ {
			src := f.Pix[y*f.Stride+box.Min.X : y*f.Stride+box.Max.X]
			old := prev.Pix[y*prev.Stride+box.Min.X : y*prev.Stride+box.Max.X]
			dst := sub.Pix[(y-box.Min.Y)*sub.Stride:][:len(src)]
			for i, c := range src {
				if c == old[i] {
					c = trans
				}
				dst[i] = c
			}
		}
		g.Image = append(g.Image, sub)
	}
	var gb, pb bytes.Buffer
	if err := gif.EncodeAll(&gb, g); err != nil {
		return nil, nil, fmt.Errorf("encoding the clip: %w", err)
	}
	if err := png.Encode(&pb, frames[min(PosterFrame, len(frames)-1)]); err != nil {
		return nil, nil, fmt.Errorf("encoding the clip's poster frame: %w", err)
	}
	return gb.Bytes(), pb.Bytes(), nil
}

// leg is one foot's state: on the ground at x, or swinging from x to the next touchdown.
type leg struct {
	hip   float64 // hip offset along the body, m (+ front)
	phase float64 // gait phase offset, 0 or 0.5 (trot: diagonal pairs)
	far   bool
	x     float64 // foot's world x while on the ground
	down  bool
	skid  int  // index of the skid mark it is making (near legs), -1 when none
	slid  bool // it slid in the last step
}

// clipAnchors spread each metric's effect over the range from a tuned policy at the last
// rung (0: no effect) to a poor one at rung 0 (1: the full effect), on the sim's surface:
// the trials one session compares differ by a fraction of a metric's value, and drawn in
// proportion those differences would be a few pixels.
var clipAnchors = map[string][2]float64{
	session.MetricVelLinear: {0.15, 0.40}, session.MetricVelAngular: {0.25, 0.50},
	session.MetricActionAcc: {14, 22}, session.MetricOrientation: {0.04, 0.10},
	session.MetricFallRate: {0.005, 0.05}, session.MetricFootSlip: {0.08, 0.13},
}

// badness is metric name of m on its anchors, clamped to 0–1.
func badness(m session.Metrics, name string) float64 {
	a := clipAnchors[name]
	return math.Max(0, math.Min(1, (m[name]-a[0])/(a[1]-a[0])))
}

// clipEffects are the metrics as the drawing shows them.
type clipEffects struct {
	lin, ang, slipLoss float64 // fractions of the commanded speed lost
	wobble, bob        float64 // pitch (rad) and bounce (m) amplitudes
	jitter             float64 // px of leg and body jitter
	jolts              int     // jolt marks around the body per frame
	slip               float64 // m/s a foot slides while on the ground
	dust               float64 // px radius of the dust a sliding foot raises
	fallAt             float64 // s; +Inf: it does not fall
	stumble            float64 // m the body dips in a stumble
}

func effectsOf(m session.Metrics) clipEffects {
	e := clipEffects{
		lin: 0.6 * badness(m, session.MetricVelLinear), ang: 0.5 * badness(m, session.MetricVelAngular),
		slipLoss: 0.35 * badness(m, session.MetricFootSlip),
		wobble:   0.04 + 0.4*badness(m, session.MetricOrientation), bob: 0.01 + 0.04*badness(m, session.MetricOrientation),
		jitter: 12 * badness(m, session.MetricActionAcc), jolts: int(math.Round(4 * badness(m, session.MetricActionAcc))),
		fallAt: math.Inf(1), stumble: 0.1 * math.Min(1, m[session.MetricFallRate]/0.05),
	}
	if s := badness(m, session.MetricFootSlip); s > 0 {
		e.slip, e.dust = 0.1+0.4*s, 2+5*s
	}
	if fall := m[session.MetricFallRate]; fall >= 0.05 {
		e.fallAt = 4.5 - 3*math.Min(1, (fall-0.05)/0.3) // 4.5 s at 5 %, 1.5 s at 35 % and more
	}
	return e
}

// Times of the stumbles: the first for any fall rate, the second from 2 %.
const stumbleAt, stumbleAt2 = 2.2, 3.7

// DrawClip draws the clip's frames for metrics m, labelled with label.
func DrawClip(m session.Metrics, label ClipLabel) []*image.Paletted {
	e := effectsOf(m)
	legs := []*leg{{hip: bodyLen / 2, phase: 0}, {hip: -bodyLen / 2, phase: 0.5},
		{hip: bodyLen / 2, phase: 0.5, far: true}, {hip: -bodyLen / 2, phase: 0, far: true}}
	for _, l := range legs {
		l.x, l.down, l.skid = l.hip, true, -1
	}
	const dt = 0.01
	robotX, targetX, gaitClock := 0.0, 0.0, 0.0
	var skids [][2]float64 // world x ranges a near foot slid over: they stay on the ground
	var out []*image.Paletted
	for f := 0; f < ClipFrames; f++ {
		until := float64(f) * ClipDelay / 100
		for t := until - ClipDelay/100.0 + dt; f > 0 && t <= until+1e-9; t += dt {
			_, vx, wz := phaseAt(t)
			targetX += vx * dt
			if t < e.fallAt {
				// a turn's error adds to the lag (the robot is off its heading), and
				// sliding feet lose ground
				loss := math.Min(0.9, e.lin+e.ang*boolf(wz != 0)+e.slipLoss)
				robotX += vx * (1 - loss) * dt
				if vx > 0 {
					gaitClock += dt
				}
			}
			for _, l := range legs {
				stance := vx == 0 || math.Mod(gaitClock/gaitT+l.phase, 1) < 0.5
				if stance && !l.down { // touchdown ahead of the hip
					l.x, l.down, l.skid = robotX+l.hip+0.25*vx*gaitT, true, -1
				}
				l.slid = stance && vx > 0 && t < e.fallAt && e.slip > 0
				if l.slid { // a sliding foot: one skid mark per touchdown, growing
					l.x -= e.slip * dt
					if !l.far && l.skid < 0 {
						l.skid = len(skids)
						skids = append(skids, [2]float64{l.x, l.x + e.slip*dt})
					}
					if !l.far {
						skids[l.skid][0] = l.x
					}
				}
				if !stance {
					l.down = false
				}
			}
		}
		var sliding []float64 // near feet sliding as the frame is drawn
		for _, l := range legs {
			if l.slid && !l.far {
				sliding = append(sliding, l.x)
			}
		}
		out = append(out, drawFrame(e, label, f, until, robotX, targetX, gaitClock, legs, skids, sliding))
	}
	return out
}

// drawFrame draws one frame. The camera follows the target, so the robot's place in the
// frame is its lag; when it trails by more than the frame holds, the camera keeps it in
// and the target leaves on the right.
func drawFrame(e clipEffects, label ClipLabel, f int, until, robotX, targetX, gaitClock float64, legs []*leg, skids [][2]float64, sliding []float64) *image.Paletted {
	name, vx, _ := phaseAt(until)
	img := image.NewPaletted(image.Rect(0, 0, ClipWidth, ClipHeight), clipPalette)
	d := drawer{img: img, camX: math.Min(targetX-flagX/pxPerM, robotX-bodyLen/2-16/pxPerM)}
	d.background()
	for _, s := range skids {
		d.skid(s[0], s[1], e.dust/4)
	}

	pitch, height, fallen := bodyPose(e, f, until, gaitClock, vx)

	// the ground the robot has lost to the target, shaded from its nose to the marker
	nose, _ := d.px(robotX+bodyLen/2+0.06, 0)
	flag, _ := d.px(targetX, 0)
	d.rect(int(nose), markerTop, int(flag), groundY, cDrift)
	d.marker(targetX)

	for _, l := range legs {
		if l.far {
			d.leg(robotX, height, pitch, l, gaitClock, vx, fallen, e.jitter*hash01(f, l.hip, 1), cFar)
		}
	}
	d.body(robotX, height, pitch)
	for _, l := range legs {
		if !l.far {
			d.leg(robotX, height, pitch, l, gaitClock, vx, fallen, e.jitter*hash01(f, l.hip, 2), cBody)
		}
	}
	for _, x := range sliding { // dust from a sliding foot
		px, _ := d.px(x, 0)
		d.disc(px-e.dust, groundY-e.dust, e.dust, cDust)
	}
	if fallen == 0 {
		d.jolts(robotX, height, e.jolts, f)
	}
	d.text(6, 6, "SIM", cText)
	if label.Trial >= 0 {
		s := fmt.Sprintf("TRIAL %d RUNG %d", label.Trial, label.Rung)
		d.text((ClipWidth-textWidth(s))/2, 6, s, cText)
	}
	if fallen > 0 {
		name = "FELL"
	}
	d.text(ClipWidth-6-textWidth(name), 6, name, cText)
	return img
}

// bodyPose is the body's pitch and hip height in frame f, and how far it has fallen (0–1):
// pitch wobbles with the gait, a stumble dips it, a fall lays it down.
func bodyPose(e clipEffects, f int, until, gaitClock, vx float64) (pitch, height, fallen float64) {
	phase := 2 * math.Pi * (gaitClock/gaitT*2 + 0.1*until)
	pitch = e.wobble * math.Sin(phase)
	height = hipHeight + e.bob*math.Sin(2*phase+1)
	if vx == 0 {
		pitch, height = 0.4*e.wobble*math.Sin(2*math.Pi*until), hipHeight
	}
	dip := math.Exp(-sq((until - stumbleAt) / 0.15))
	if e.stumble >= 0.04 {
		dip += math.Exp(-sq((until - stumbleAt2) / 0.15))
	}
	height -= e.stumble * dip
	pitch -= 4 * e.stumble * dip // nose down
	fallen = math.Min(1, math.Max(0, (until-e.fallAt)/0.4))
	height -= fallen * (hipHeight - bodyThick/2)
	pitch += fallen * 0.2
	height += e.jitter / 3 * hash01(f, 0, 3) / pxPerM
	return pitch, height, fallen
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// hash01 is a deterministic pseudo-random number in [-1, 1) for frame f and a leg.
func hash01(f int, a float64, salt uint64) float64 {
	h := uint64(f)*0x9e3779b97f4a7c15 ^ math.Float64bits(a)*0xbf58476d1ce4e5b9 ^ salt*0x94d049bb133111eb
	h ^= h >> 31
	h *= 0xd6e8feb86659fd93
	h ^= h >> 29
	return float64(h>>11)/float64(1<<52) - 1
}

type drawer struct {
	img  *image.Paletted
	camX float64 // world x at the left edge
}

func (d drawer) px(x, y float64) (float64, float64) {
	return (x - d.camX) * pxPerM, groundY - y*pxPerM
}

func (d drawer) background() {
	// the palette's indices: sky (0) is the zero value, the ground's rows are filled
	for i := groundY * d.img.Stride; i < len(d.img.Pix); i++ {
		d.img.Pix[i] = cGround
	}
	d.line(0, groundY, ClipWidth, groundY, 1, cLine)
	// ticks every 0.25 m, so the ground is seen to pass
	for k := math.Floor(d.camX / 0.25); k*0.25 < d.camX+ClipWidth/pxPerM; k++ {
		x, _ := d.px(k*0.25, 0)
		d.line(x, groundY, x-6, groundY+8, 1, cLine)
	}
}

// skid marks the ground where a foot slid from world x to to, w px wider than a hairline.
func (d drawer) skid(x, to, w float64) {
	a, _ := d.px(x, 0)
	b, _ := d.px(to, 0)
	if b < 0 || a > ClipWidth {
		return
	}
	d.line(a, groundY+2+w, b, groundY+2+w, 1.2+w, cSlip)
}

// rect fills the pixels x0 ≤ x < x1, y0 ≤ y < y1 inside the frame.
func (d drawer) rect(x0, y0, x1, y1 int, c uint8) {
	for y := max(y0, 0); y < min(y1, ClipHeight); y++ {
		for x := max(x0, 0); x < min(x1, ClipWidth); x++ {
			d.img.Pix[y*d.img.Stride+x] = c
		}
	}
}

// jolts draws n short strokes around the body of a robot whose actions jerk, in new
// places each frame.
func (d drawer) jolts(x, h float64, n, f int) {
	cx, cy := d.px(x, h+bodyThick)
	for i := 0; i < n; i++ {
		a := math.Pi * (1.1 + 0.8*(hash01(f, float64(i), 4)+1)/2) // above the body
		r := 0.3 * pxPerM
		px, py := cx+r*math.Cos(a), cy+0.5*r*math.Sin(a)
		d.line(px-4, py-3, px+4, py+3, 1.3, cJolt)
		d.line(px+4, py+3, px-2, py+6, 1.3, cJolt)
	}
}

// markerTop is the pixel row of the target marker's top.
const markerTop = groundY - 72

// marker is the target: a pennant a little taller than the robot.
func (d drawer) marker(x float64) {
	const top = markerTop
	px, _ := d.px(x, 0)
	d.line(px, groundY, px, top, 1.2, cTarget)
	for i := 0; i < 14; i++ {
		d.line(px, float64(top+i), px+20-1.4*float64(i), float64(top+i), 0.6, cTarget)
	}
}

func bodyEnds(x, h, pitch float64) (fx, fy, rx, ry float64) {
	c, s := math.Cos(pitch), math.Sin(pitch)
	return x + c*bodyLen/2, h + s*bodyLen/2, x - c*bodyLen/2, h - s*bodyLen/2
}

func (d drawer) body(x, h, pitch float64) {
	fx, fy, rx, ry := bodyEnds(x, h+bodyThick/2, pitch)
	ax, ay := d.px(fx, fy)
	bx, by := d.px(rx, ry)
	d.line(ax, ay, bx, by, bodyThick*pxPerM/2, cBody)
	hx, hy := d.px(fx+0.05*math.Cos(pitch), fy+0.05*math.Sin(pitch)+0.03) // the head
	d.disc(hx, hy, 0.04*pxPerM, cBody)
}

// leg draws a two-link leg from the hip to its foot, the knee bent backwards.
func (d drawer) leg(x, h, pitch float64, l *leg, clock, vx, fallen, jit float64, c uint8) {
	fx, fy, rx, ry := bodyEnds(x, h, pitch)
	hx, hy := rx, ry
	if l.hip > 0 {
		hx, hy = fx, fy
	}
	footX, footY := l.x, 0.0
	if !l.down { // swinging: from behind the hip to ahead of it, lifted
		p := math.Mod(clock/gaitT+l.phase, 1)*2 - 1 // 0 → 1 over the swing
		footX = x + l.hip + (p-0.5)*0.5*vx*gaitT
		footY = 0.06 * math.Sin(math.Pi*p)
	}
	if fallen > 0 { // lying on its side: the legs stick out along the ground
		out := 0.22
		if l.hip < 0 {
			out = -out
		}
		footX = (1-fallen)*footX + fallen*(hx+out)
		footY = (1-fallen)*footY + fallen*math.Max(0.01, hy-0.06)
	}
	ax, ay := d.px(hx, hy)
	bx, by := d.px(footX, footY)
	by += jit
	// knee by the law of cosines, bent back
	dx, dy := bx-ax, by-ay
	dist := math.Min(math.Hypot(dx, dy), (thighLen+shankLen)*pxPerM*0.999)
	t, s := thighLen*pxPerM, shankLen*pxPerM
	ang := math.Atan2(dy, dx)
	k := math.Acos(math.Max(-1, math.Min(1, (t*t+dist*dist-s*s)/(2*t*dist))))
	kx, ky := ax+t*math.Cos(ang-k), ay+t*math.Sin(ang-k)
	if l.hip < 0 {
		kx, ky = ax+t*math.Cos(ang+k), ay+t*math.Sin(ang+k)
	}
	d.line(ax, ay, kx, ky, 2.2, c)
	d.line(kx, ky, bx, by, 1.8, c)
	d.disc(bx, by, 2.6, c)
}

// line draws a segment of half-width w (a capsule).
func (d drawer) line(x0, y0, x1, y1, w float64, c uint8) {
	minX, maxX := int(math.Floor(math.Min(x0, x1)-w)), int(math.Ceil(math.Max(x0, x1)+w))
	minY, maxY := int(math.Floor(math.Min(y0, y1)-w)), int(math.Ceil(math.Max(y0, y1)+w))
	dx, dy := x1-x0, y1-y0
	l2, w2 := dx*dx+dy*dy, w*w
	for y := max(minY, 0); y <= min(maxY, ClipHeight-1); y++ {
		row := d.img.Pix[y*d.img.Stride:]
		for x := max(minX, 0); x <= min(maxX, ClipWidth-1); x++ {
			px, py := float64(x)+0.5, float64(y)+0.5
			t := 0.0
			if l2 > 0 {
				t = ((px-x0)*dx + (py-y0)*dy) / l2
				t = max(0, min(1, t))
			}
			if ex, ey := px-(x0+t*dx), py-(y0+t*dy); ex*ex+ey*ey <= w2 {
				row[x] = c
			}
		}
	}
}

func (d drawer) disc(x, y, r float64, c uint8) { d.line(x, y, x, y, r, c) }

// A 3×5 pixel font for the few words the clip writes, drawn at twice the size.
var glyphs = map[rune][5]string{
	'S': {"###", "#..", "###", "..#", "###"}, 'I': {"###", ".#.", ".#.", ".#.", "###"},
	'M': {"#.#", "###", "###", "#.#", "#.#"}, 'T': {"###", ".#.", ".#.", ".#.", ".#."},
	'A': {".#.", "#.#", "###", "#.#", "#.#"}, 'N': {"#.#", "###", "###", "###", "#.#"},
	'D': {"##.", "#.#", "#.#", "#.#", "##."}, 'W': {"#.#", "#.#", "###", "###", "#.#"},
	'L': {"#..", "#..", "#..", "#..", "###"}, 'K': {"#.#", "#.#", "##.", "#.#", "#.#"},
	'U': {"#.#", "#.#", "#.#", "#.#", "###"}, 'R': {"##.", "#.#", "##.", "#.#", "#.#"},
	'F': {"###", "#..", "##.", "#..", "#.."}, 'E': {"###", "#..", "##.", "#..", "###"},
	'G': {"###", "#..", "#.#", "#.#", "###"}, ' ': {},
	'0': {"###", "#.#", "#.#", "#.#", "###"}, '1': {".#.", "##.", ".#.", ".#.", "###"},
	'2': {"###", "..#", "###", "#..", "###"}, '3': {"###", "..#", ".##", "..#", "###"},
	'4': {"#.#", "#.#", "###", "..#", "..#"}, '5': {"###", "#..", "###", "..#", "###"},
	'6': {"###", "#..", "###", "#.#", "###"}, '7': {"###", "..#", "..#", "..#", "..#"},
	'8': {"###", "#.#", "###", "#.#", "###"}, '9': {"###", "#.#", "###", "..#", "###"},
}

const glyphScale = 2

func textWidth(s string) int { return len(s)*4*glyphScale - glyphScale }

func (d drawer) text(x, y int, s string, c uint8) {
	for i, r := range s {
		g := glyphs[r]
		for row, line := range g {
			for col, ch := range line {
				if ch != '#' {
					continue
				}
				for a := 0; a < glyphScale; a++ {
					for b := 0; b < glyphScale; b++ {
						d.img.SetColorIndex(x+i*4*glyphScale+col*glyphScale+b, y+row*glyphScale+a, c)
					}
				}
			}
		}
	}
}
