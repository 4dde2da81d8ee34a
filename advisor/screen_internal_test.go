package advisor

import (
	"math"
	"math/rand/v2"
	"testing"

	"tunebot/session"
)

// A term off by default is one ×2 step from "on at a typical magnitude" (a quarter of its
// largest) in the model, not the several steps a floor three decades down made it (issue 45,
// item 3); a term on by default keeps the three decades below its largest magnitude.
func TestOffTermIsOneStepFromOn(t *testing.T) {
	sp := session.DefaultSpace()
	for _, d := range tpeDims(sp) {
		switch d.name {
		case "electrical_power":
			off, on := d.encode(0), d.encode(-5e-3*offTypical)
			if math.Abs(on-off-math.Ln2) > 1e-12 {
				t.Errorf("electrical_power: on at a quarter of its largest is %.3f steps from off, want 1", (on-off)/math.Ln2)
			}
			if got := d.decode(d.lo, -5e-3, 0); got != -6.25e-4 {
				t.Errorf("electrical_power's floor decodes to %g, want -0.000625 (one step below typical)", got)
			}
		case "foot_slip":
			if math.Abs(d.hi-d.lo-3*math.Ln10) > 1e-12 {
				t.Errorf("foot_slip's model range is %.2f decades, want 3", (d.hi-d.lo)/math.Ln10)
			}
		}
	}
}

// The curvature mean (a best value near the baseline) is in the prior only for a scalar whose
// direction is declared; a param without lowers gets none, so a move either way is not
// predicted to lose before a trial says so (issue 45, item 4).
func TestCurvatureMeanOnlyWhereDirectionIsDeclared(t *testing.T) {
	decl := []declaration{{acts: true, sign: 0}, {acts: true, sign: -1}, {acts: false}}
	obs := []observation{{metrics: session.Metrics{session.MetricFootSlip: 0.1}}}
	m0, _ := metricPrior(session.MetricFootSlip, obs, decl, session.DefaultFloors(), priorOptions{}.withDefaults())
	D := len(decl)
	if m0[1+D] != 0 || m0[1] != 0 {
		t.Errorf("undeclared direction: slope mean %g, curvature mean %g, want 0 and 0", m0[1], m0[1+D])
	}
	if m0[1+D+1] <= 0 || m0[2] >= 0 {
		t.Errorf("declared direction: slope mean %g, curvature mean %g, want negative and positive", m0[2], m0[1+D+1])
	}
}

// A chain of steps on the helpful side slows near the bound: within NearBound steps of it, a
// move goes at most half the way there; the other side, a scalar without a declared side and
// a term that is off keep their room (issue 45, item 5).
func TestStepsSlowNearTheBound(t *testing.T) {
	tests := []struct {
		name          string
		r             room
		side, near    float64
		wantLo, wantH float64
	}{
		{"far from the bound", room{base: 0, lo: -1, hi: 1}, 1, 2, -1, 1},
		{"1.58 steps from the bound", room{base: 0, lo: -1, hi: 1}, 1, 2, -1, 0.79},
		{"chained up to 0.4 from it", room{base: 1.18, lo: 0.18, hi: 1.58}, 1, 2, 0.18, 1.38},
		{"helpful side down", room{base: 0, lo: -1, hi: 1}, -1, 2, -0.5, 1},
		{"no declared side", room{base: 0, lo: -1, hi: 1}, 0, 2, -1, 1},
		{"never (near < 0)", room{base: 0, lo: -1, hi: 1}, 1, -1, -1, 1},
		{"off", room{base: 0, lo: 0, hi: 3, off: true}, 1, 2, 0, 3},
	}
	bounds := map[string][2]float64{"far from the bound": {-3, 3}, "1.58 steps from the bound": {-2, 1.58},
		"chained up to 0.4 from it": {-2, 1.58}, "helpful side down": {-1, 3}, "no declared side": {-1, 1.2},
		"never (near < 0)": {-1, 1.2}, "off": {0, 3}}
	for _, tt := range tests {
		r := tt.r
		b := bounds[tt.name]
		slowNearBound(&r, tt.side, tt.near, b[0], b[1])
		if math.Abs(r.lo-tt.wantLo) > 1e-9 || math.Abs(r.hi-tt.wantH) > 1e-9 {
			t.Errorf("%s: room [%g, %g], want [%g, %g]", tt.name, r.lo, r.hi, tt.wantLo, tt.wantH)
		}
	}
}

// The screen takes a quarter of the session's rung-0 trials, and none when the model would be
// left fewer than screenAfter trials after it (issue 45, item 7: the start-up count as a share
// of the budget).
func TestScreenTrialsAreAShareOfTheBudget(t *testing.T) {
	for _, tt := range []struct {
		share        float64
		budget, want int
	}{{0.25, 12, 3}, {0.25, 0, 3}, {0.25, 20, 5}, {0.25, 8, 2}, {0.25, 7, 0}, {0.25, 4, 0}, {-1, 12, 0}} {
		if got := screenTrials(tt.share, tt.budget); got != tt.want {
			t.Errorf("share %g of %d trials: %d screen trials, want %d", tt.share, tt.budget, got, tt.want)
		}
	}
}

// A term that is off is screened switched on where switching on starts, one step from off,
// and only when it may move up; a scalar with less than half a step either way is not.
func TestScreenTargetSwitchesAnOffTermOn(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	if to, ok := screenTarget(rng, room{off: true, base: 0, lo: 0, hi: 3, onLo: 1, dirUp: true}); !ok || to != 1 {
		t.Errorf("off term: %g, %v, want switched on at 1 step", to, ok)
	}
	if _, ok := screenTarget(rng, room{off: true, base: 0, lo: 0, hi: 3, onLo: 1}); ok {
		t.Error("an off term a constraint keeps off was screened")
	}
	if _, ok := screenTarget(rng, room{base: 0, lo: -0.3, hi: 0.3, dirUp: true, dirDown: true}); ok {
		t.Error("a scalar with 0.3 steps of room was screened")
	}
	if to, ok := screenTarget(rng, room{base: 0, lo: -0.2, hi: 0.6, dirUp: true, dirDown: true}); !ok || to != 0.6 {
		t.Errorf("room mostly up: %g, %v, want to its end, 0.6", to, ok)
	}
}
