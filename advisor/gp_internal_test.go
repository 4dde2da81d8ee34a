package advisor

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"

	"tunebot/session"
)

// bumpWorld: foot_slip's effect on the foot slip metric is a bump the parametric model
// cannot follow (a sine of its position), nothing else matters.
func bumpWorld(space *session.Space, c session.RewardConfig) session.Metrics {
	x := math.Log2(c.Weights["foot_slip"] / space.Defaults().Weights["foot_slip"])
	m := session.Metrics{session.MetricVelLinear: 0.2, session.MetricVelAngular: 0.3, session.MetricActionAcc: 10,
		session.MetricOrientation: 0.05, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08, session.MetricPower: 150}
	m[session.MetricFootSlip] *= math.Exp(0.3 * math.Sin(3*x))
	return m
}

// bumpRequest is a session whose finished trials are the defaults and foot_slip at each
// factor, measured in bumpWorld on three seeds 0.2 % apart.
func bumpRequest(space *session.Space, factors ...float64) session.ProposalRequest {
	req := requestOf(space, factors...)
	for i := range req.History {
		h := &req.History[i]
		h.Metrics = bumpWorld(space, h.Config)
		for k, g := range []float64{0.998, 1, 1.002} {
			sm := session.Metrics{}
			for name, v := range h.Metrics {
				sm[name] = v * g
			}
			h.PerSeed[k].Metrics = sm
		}
	}
	return req
}

// slipSpread is the model's mean and spread of the foot slip metric (model units) with
// foot_slip at factor f, over the model's draws.
func slipSpread(m *composite, space *session.Space, f float64, d *draws) (float64, float64, float64) {
	c := space.Defaults()
	c.Weights["foot_slip"] *= f
	x := m.position(c, space)
	var ys []float64
	var clean, noisy [session.NumMetrics]float64
	pt := m.at(x)
	j := 0
	for k, f := range m.fits {
		if f.name == session.MetricFootSlip {
			j = k
		}
	}
	for k := range d.beta {
		m.predict(pt, d, k, &clean, &noisy)
		ys = append(ys, math.Log(clean[j]))
	}
	mean, sd := session.MeanStd(ys)
	return mean, sd, math.Log(bumpWorld(space, c)[session.MetricFootSlip])
}

// With the residual process the model goes through the trials where the parametric model
// alone cannot (a bump of foot_slip), and it is surer at a trial than between trials.
func TestGPInterpolatesTheTrialsAndKnowsWhereItHasNotLooked(t *testing.T) {
	space := session.DefaultSpace()
	factors := []float64{0.5, 0.7, 1.4, 2}
	req := bumpRequest(space, factors...)
	worst := func(gp bool) float64 {
		s := NewSampler(SamplerOptions{Prior: SamplerPrior{GP: gp}})
		m := fitComposite(req, s.unit, s.opts.Prior)
		d := m.sample(tpeRNG(req, samplerStream), 200)
		w := 0.0
		for _, f := range factors {
			mean, _, truth := slipSpread(m, space, f, d)
			w = math.Max(w, math.Abs(mean-truth))
		}
		return w
	}
	with, without := worst(true), worst(false)
	t.Logf("worst error at the trials, log units: %.4f with the process, %.4f without", with, without)
	if with > 0.02 || with > without/3 {
		t.Errorf("worst error at the trials: %.4f with the process, %.4f without; want it within 0.02 and a third of without", with, without)
	}
	s := NewSampler(SamplerOptions{Prior: SamplerPrior{GP: true}})
	m := fitComposite(req, s.unit, s.opts.Prior)
	d := m.sample(tpeRNG(req, samplerStream), 400)
	_, atTrial, _ := slipSpread(m, space, 1.4, d)
	_, between, _ := slipSpread(m, space, 1.7, d)
	_, far, _ := slipSpread(m, space, 0.25, d)
	t.Logf("spread at a trial %.4f, between trials %.4f, beyond them %.4f", atTrial, between, far)
	if !(atTrial < between && between < far) {
		t.Errorf("spread at a trial %.4f, between trials %.4f, beyond them %.4f: want it to grow away from the trials", atTrial, between, far)
	}
}

// The kernel parameters' objective has the gradient it says (checked by finite differences,
// gonum's fd).
func TestGPObjectiveGradient(t *testing.T) {
	space := session.DefaultSpace()
	req := bumpRequest(space, 0.5, 0.7, 1.4, 2)
	req.History[2].Config.Weights["pose"] *= 1.5
	s := NewSampler(SamplerOptions{})
	m := fitComposite(req, s.unit, s.opts.Prior)
	var xs [][]float64
	var r []float64
	for i, h := range req.History {
		xs = append(xs, m.position(h.Config, space))
		r = append(r, 0.1*math.Sin(float64(i)))
	}
	base := mat.NewSymDense(len(xs), nil)
	for i := range xs {
		base.SetSym(i, i, 0.01)
	}
	o := gpObjective{xs: xs, r: r, base: base, prior: gpPrior{amp: 0.05, length: 1}}
	th := make([]float64, 1+len(xs[0]))
	for d := range th {
		th[d] = -0.3 + 0.02*float64(d)
	}
	got := make([]float64, len(th))
	o.value(got, th)
	want := fd.Gradient(nil, func(x []float64) float64 { return o.value(nil, x) }, th, &fd.Settings{Formula: fd.Central})
	for d := range th {
		if math.Abs(got[d]-want[d]) > 1e-5*math.Max(1, math.Abs(want[d])) {
			t.Errorf("∂/∂θ%d: %.8f, finite differences %.8f", d, got[d], want[d])
		}
	}
}
