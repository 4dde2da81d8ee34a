package advisor

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"tunebot/session"
)

func TestExplorationWeightSchedule(t *testing.T) {
	cases := []struct {
		beta          float64
		trials, after int
		want          float64
	}{
		{0, 1, 8, 0}, // the default: the mean alone
		{1, 1, 8, 1}, // the baseline alone: all of beta
		{1, 2, 8, 6.0 / 7},
		{1, 7, 8, 1.0 / 7},
		{1, 8, 8, 0}, // from exploitAfter on: the mean alone
		{1, 12, 8, 0},
		{0.5, 30, -1, 0.5}, // negative exploitAfter: beta throughout
	}
	for _, c := range cases {
		if got := explorationWeight(c.beta, c.trials, c.after); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("explorationWeight(%v, %d, %d) = %v, want %v", c.beta, c.trials, c.after, got, c.want)
		}
	}
}

// oneSidedWorld: a stronger foot_slip penalty lowers slip by 20 % per ×2 step and costs
// linear-velocity tracking only past ×1.4 (a hinge), 0.1 log units per step past it.
func oneSidedWorld(space *session.Space, c session.RewardConfig) session.Metrics {
	x := math.Log2(c.Weights["foot_slip"] / space.Defaults().Weights["foot_slip"])
	m := session.Metrics{session.MetricVelLinear: 0.2, session.MetricVelAngular: 0.3, session.MetricActionAcc: 10,
		session.MetricOrientation: 0.05, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08, session.MetricPower: 150}
	m[session.MetricFootSlip] *= math.Pow(0.8, x)
	m[session.MetricVelLinear] *= math.Exp(0.1 * math.Max(x-0.5, 0))
	return m
}

// requestOf is a session whose finished trials are the defaults (the baseline) and the
// default with foot_slip times each factor, measured in oneSidedWorld on three seeds 1 %
// apart.
func requestOf(space *session.Space, factors ...float64) session.ProposalRequest {
	sc := session.Scorer{Weights: session.DefaultObjectiveWeights(), Floors: session.DefaultFloors()}
	var hist []session.TrialSummary
	for _, f := range append([]float64{1}, factors...) {
		c := space.Defaults()
		c.Weights["foot_slip"] *= f
		m := oneSidedWorld(space, c)
		if sc.Baseline == nil {
			sc.Baseline = m
		}
		s, _ := sc.Score(m)
		var seeds []session.SeedMetrics
		for k, g := range []float64{0.99, 1, 1.01} {
			sm := session.Metrics{}
			for name, v := range m {
				sm[name] = v * g
			}
			seeds = append(seeds, session.SeedMetrics{Seed: k, Metrics: sm})
		}
		hist = append(hist, session.TrialSummary{Number: len(hist), State: session.TrialCompleted, Score: &s.Total, Eligible: s.Eligible,
			Config: c, Metrics: m, PerSeed: seeds})
	}
	return session.ProposalRequest{SessionID: "s", Space: space, Base: space.Defaults(), History: hist, Seed: 7,
		Objective: session.DefaultObjectiveWeights(), Floors: session.DefaultFloors()}
}

// chosen is the candidate a sampler ranks first for req.
func chosen(s *Sampler, req session.ProposalRequest) candidate {
	dims := tpeDims(req.Space)
	moves := constrainMoves(req, tpeMovable(req.Space, dims, req.Base))
	rng := rand.New(rand.NewPCG(uint64(req.Seed), uint64(len(req.History))^samplerStream))
	m := fitComposite(req, s.unit, s.opts.Prior)
	return s.searcher(rng, m, req, moves).search(rng, s.opts.Candidates)[0]
}

// Early, with Beta, the sampler proposes where the model is less sure than where the mean
// alone would; once ExploitAfter trials have ended, it proposes exactly what the mean does.
func TestAcquisitionExploresEarlyAndExploitsLate(t *testing.T) {
	space := session.DefaultSpace()
	explore := NewSampler(SamplerOptions{Beta: 1, ExploitAfter: 8, Candidates: 120})
	exploit := NewSampler(SamplerOptions{Candidates: 120})
	early := requestOf(space, 1.3)
	e, x := chosen(explore, early), chosen(exploit, early)
	t.Logf("after 2 trials: spread %.4f exploring, %.4f by the mean", e.sd, x.sd)
	if e.sd <= x.sd {
		t.Errorf("after 2 trials: the exploring proposal's spread %.4f is not above the mean's %.4f", e.sd, x.sd)
	}
	late := requestOf(space, 1.3, 0.7, 1.6, 0.6, 1.2, 0.8, 1.8, 1.1)
	a, err := explore.Propose(context.Background(), late)
	if err != nil {
		t.Fatal(err)
	}
	b, err := exploit.Propose(context.Background(), late)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Patch, b.Patch) {
		t.Errorf("after 9 trials the exploring sampler proposed %v, the mean alone %v", a.Patch, b.Patch)
	}
}

// The hinge follows a cost that sets in only past some strength; the linear and curvature
// terms alone cannot: they smear it over the moves below the hinge.
func TestHingeFitsAOneSidedCost(t *testing.T) {
	space := session.DefaultSpace()
	req := requestOf(space, 0.5, 0.7, 1.2, 1.4, 1.7, 2)
	fitErr := func(prior SamplerPrior) float64 {
		s := NewSampler(SamplerOptions{Prior: prior})
		m := fitComposite(req, s.unit, s.opts.Prior)
		var worst float64
		for _, f := range []float64{0.5, 0.8, 1.3, 1.6, 2} {
			c := space.Defaults()
			c.Weights["foot_slip"] *= f
			got := m.meanMetrics(m.position(c, space))[session.MetricVelLinear]
			want := oneSidedWorld(space, c)[session.MetricVelLinear]
			worst = math.Max(worst, math.Abs(math.Log(got/want)))
		}
		return worst
	}
	with, without := fitErr(SamplerPrior{HingeSD: 0.05}), fitErr(SamplerPrior{})
	t.Logf("worst error of the tracking fit: %.4f with the hinge, %.4f without", with, without)
	if without < 0.01 || with > 0.6*without {
		t.Errorf("worst error of the tracking fit, log units: %.4f with the hinge, %.4f without; want the hinge to cut it by at least 40 %%", with, without)
	}
}
