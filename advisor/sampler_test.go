package advisor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tunebot/advisor"
	"tunebot/session"
)

// world is a test's hidden truth: the metrics a configuration measures.
type world func(c session.RewardConfig) session.Metrics

// baseMetrics are the baseline's metrics in the tests' worlds.
func baseMetrics() session.Metrics {
	return session.Metrics{session.MetricVelLinear: 0.2, session.MetricVelAngular: 0.3, session.MetricActionAcc: 10,
		session.MetricOrientation: 0.05, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08, session.MetricPower: 150}
}

// steps is how many ×2 steps a weight's magnitude moved from the default.
func steps(space *session.Space, c session.RewardConfig, name string) float64 {
	return math.Log2(c.Weights[name] / space.Defaults().Weights[name])
}

// scoreOf scores m against the baseline as a session does.
func scoreOf(m session.Metrics) session.Score {
	sc, err := session.Scorer{Baseline: baseMetrics(), Weights: session.DefaultObjectiveWeights(), Floors: session.DefaultFloors()}.Score(m)
	if err != nil {
		panic(err)
	}
	return sc
}

// historyOf is a session whose finished trials are the default configuration (the baseline)
// and configs, each measured in w on three evaluation seeds that differ by 1 % (a session's
// evaluation noise, which the sampler reads from the seeds' spread).
func historyOf(space *session.Space, w world, configs ...session.RewardConfig) session.ProposalRequest {
	var hist []session.TrialSummary
	var tried []session.Tried
	for _, c := range append([]session.RewardConfig{space.Defaults()}, configs...) {
		m := w(c)
		sc := scoreOf(m)
		var seeds []session.SeedMetrics
		for k, f := range []float64{0.99, 1, 1.01} {
			sm := session.Metrics{}
			for name, v := range m {
				sm[name] = v * f
			}
			seeds = append(seeds, session.SeedMetrics{Seed: k, Metrics: sm})
		}
		hist = append(hist, session.TrialSummary{Number: len(hist), State: session.TrialCompleted, Score: &sc.Total, Eligible: sc.Eligible,
			Config: c.Clone(), Metrics: m, PerSeed: seeds})
		tried = append(tried, session.Tried{Label: fmt.Sprintf("trial %d", len(tried)), Config: c.Clone()})
	}
	return session.ProposalRequest{SessionID: "s", Space: space, Base: space.Defaults(), History: hist, Tried: tried, Seed: 7,
		Objective: session.DefaultObjectiveWeights(), Floors: session.DefaultFloors()}
}

// scaled is the default configuration with each named weight's magnitude times its factor.
func scaled(space *session.Space, factors map[string]float64) session.RewardConfig {
	c := space.Defaults()
	for name, f := range factors {
		c.Weights[name] *= f
	}
	return c
}

// slipWorld: a stronger foot_slip penalty lowers the foot slip metric by 30 % per ×2 step,
// and nothing else matters (a little deterministic noise on every metric).
func slipWorld(space *session.Space) world {
	return func(c session.RewardConfig) session.Metrics {
		m := baseMetrics()
		m[session.MetricFootSlip] *= math.Pow(0.7, steps(space, c, "foot_slip"))
		wiggle := 0.005 * math.Sin(7*steps(space, c, "pose")+3*steps(space, c, "stand_still"))
		for k := range m {
			m[k] *= 1 + wiggle
		}
		return m
	}
}

// slipHistory is a session in which every trial moved foot_slip with one other scalar,
// alternately stronger and weaker.
func slipHistory(space *session.Space) session.ProposalRequest {
	others := []string{"pose", "body_ang_vel", "stand_still", "foot_gait", "joint_pos_limits", "angular_momentum"}
	var configs []session.RewardConfig
	for i, o := range others {
		f := 2.0
		if i%2 == 1 {
			f = 0.5
		}
		configs = append(configs, scaled(space, map[string]float64{"foot_slip": f, o: 1.5}))
	}
	return historyOf(space, slipWorld(space), configs...)
}

func TestSamplerModelsEveryMetric(t *testing.T) {
	space := session.DefaultSpace()
	req := slipHistory(space)
	s := advisor.NewSampler(advisor.SamplerOptions{})
	var slip, pose advisor.Effect
	for _, e := range s.Effects(req) {
		switch e.Name {
		case "foot_slip":
			slip = e
		case "pose":
			pose = e
		}
	}
	// foot_slip's weight is negative: a stronger penalty is a larger magnitude, one step up.
	// The slip objective weighs 10 %: 30 % less slip is about +0.03 on the score.
	if slip.Moved != 6 || slip.PerStep < 0.02 || slip.SD > slip.PerStep/1.5 {
		t.Errorf("foot_slip effect %+v, want about +0.03 per step, clearly non-zero", slip)
	}
	if len(slip.Metrics) == 0 || slip.Metrics[0].Metric != session.MetricFootSlip || !slip.Metrics[0].Declared ||
		math.Abs(slip.Metrics[0].Change-math.Log(0.7)) > 0.08 {
		t.Errorf("foot_slip's metrics %+v, want the foot slip metric first, declared, about %.2f per step", slip.Metrics, math.Log(0.7))
	}
	if pose.Moved != 1 || math.Abs(pose.PerStep) > 0.01 {
		t.Errorf("pose effect %+v, want about 0", pose)
	}
	// The proposal follows the model: foot_slip stronger, and says why in metrics.
	sug, err := s.Propose(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := sug.Patch.Weights["foot_slip"]; !ok || v >= req.Base.Weights["foot_slip"] {
		t.Errorf("proposal %v (%s) does not make foot_slip stronger", sug.Patch, sug.Rationale)
	}
	// The summary says in words what moves and why; the evidence leads with foot_slip's,
	// on the score and on the metric it moves.
	if !strings.HasPrefix(sug.Summary, "Strengthens foot_slip") || !regexp.MustCompile(`to lower [a-z ,]*foot slip`).MatchString(sug.Summary) ||
		!strings.Contains(sug.Summary, "the model of 7 trials expects +0.0") || !strings.Contains(sug.Summary, "the chance that every gate passes is ") {
		t.Errorf("summary %q does not say what moves and why", sug.Summary)
	}
	if len(sug.Evidence) == 0 || !strings.HasPrefix(sug.Evidence[0], "foot_slip -0.25 → ") || !strings.Contains(sug.Evidence[0], "(foot slip -") ||
		!strings.Contains(sug.Evidence[0], "; 6 of 7 trials moved it") {
		t.Errorf("evidence %q does not lead with foot_slip's", sug.Evidence)
	}
}

// gateWorld: a stronger action_rate_l2 smooths the actions (40 % less action acceleration
// per ×2 step) but tracks worse (velocity error 9 % higher per step, and lower when weaker):
// a full step breaks the tracking gate (tracking objective -0.072 < -0.05) although its
// score is the highest, half a step keeps it.
func gateWorld(space *session.Space) world {
	return func(c session.RewardConfig) session.Metrics {
		m := baseMetrics()
		k := steps(space, c, "action_rate_l2")
		m[session.MetricActionAcc] *= math.Pow(0.6, k)
		m[session.MetricVelLinear] *= math.Pow(1.09, k)
		m[session.MetricFootSlip] *= math.Pow(0.9, steps(space, c, "foot_slip"))
		return m
	}
}

// The sampler stays inside the gates: the model predicts the tracking gate from the
// velocity error, and the proposal strengthens action_rate_l2 by less than the full ×2 that
// broke it. A model of the score alone would take the full step every time: its score is
// the highest. It proposes only what passes in 80 % of its draws, and so at least 4 of 6
// proposals pass. (A cost that is one-sided, a kink the quadratic model cannot follow, it
// learns less well: bench/sampler/README.md.)
func TestSamplerStaysInsideTheGates(t *testing.T) {
	space := session.DefaultSpace()
	w := gateWorld(space)
	req := historyOf(space, w,
		scaled(space, map[string]float64{"action_rate_l2": 2}),
		scaled(space, map[string]float64{"action_rate_l2": 0.5, "pose": 1.5}),
		scaled(space, map[string]float64{"foot_slip": 2}),
		scaled(space, map[string]float64{"action_rate_l2": 1.41, "stand_still": 0.5}),
		scaled(space, map[string]float64{"foot_slip": 0.5, "joint_pos_limits": 1.5}),
		scaled(space, map[string]float64{"action_rate_l2": 2, "foot_slip": 1.5}),
		scaled(space, map[string]float64{"body_ang_vel": 1.5}),
	)
	if req.History[1].Eligible {
		t.Fatal("the world is wrong: a full step of action_rate_l2 should break the tracking gate")
	}
	s := advisor.NewSampler(advisor.SamplerOptions{})
	stronger, passed := 0, 0
	for seed := int64(0); seed < 6; seed++ {
		req.Seed = seed
		sug, err := s.Propose(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		c, err := space.Validate(req.Base, sug.Patch, req.Tried)
		if err != nil {
			t.Fatal(err)
		}
		if sc := scoreOf(w(c)); sc.Eligible {
			passed++
		} else {
			t.Logf("seed %d: proposal %v breaks a gate (%v): %s", seed, sug.Patch, sc.Reasons, sug.Summary)
		}
		if sug.Confidence < 0.8 {
			t.Errorf("seed %d: proposal %v passes every gate in %.0f%% of the model's draws, want at least 80%%", seed, sug.Patch, 100*sug.Confidence)
		}
		k := steps(space, c, "action_rate_l2")
		if k > 0.1 {
			stronger++
		}
		if k > 0.97 {
			t.Errorf("seed %d: proposal %v takes the full step that broke the gate: %s", seed, sug.Patch, sug.Summary)
		}
	}
	if passed < 4 {
		t.Errorf("%d of 6 proposals pass the gates, want at least 4", passed)
	}
	if stronger < 3 {
		t.Errorf("action_rate_l2 made stronger in %d of 6 proposals; the gain inside the gate is the best move", stronger)
	}
}

// After a person rejects "foot_slip stronger", the sampler keeps away from that direction
// even though its model prefers it.
func TestSamplerAvoidsRejectedDirection(t *testing.T) {
	space := session.DefaultSpace()
	req := slipHistory(space)
	stronger := req.Base.Weights["foot_slip"] * 1.8
	req.Rejected = []session.Rejected{{Seq: 3, Base: req.Base.Clone(), Patch: session.Patch{Weights: map[string]float64{"foot_slip": stronger}}, Feedback: "no more slip penalty"}}
	s := advisor.NewSampler(advisor.SamplerOptions{})
	for seed := int64(0); seed < 40; seed++ {
		req.Seed = seed
		sug, err := s.Propose(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := sug.Patch.Weights["foot_slip"]; ok && math.Abs(v) > math.Abs(req.Base.Weights["foot_slip"]) {
			t.Fatalf("seed %d: proposal %v makes foot_slip stronger again after the rejection", seed, sug.Patch)
		}
		if _, err := space.Validate(req.Base, sug.Patch, req.Tried); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	// A rejection of several scalars only rules out moving all of them the same way.
	req.Rejected = []session.Rejected{{Seq: 3, Base: req.Base.Clone(), Patch: session.Patch{Weights: map[string]float64{
		"foot_slip": stronger, "pose": 0.5}}}}
	seen := false
	for seed := int64(0); seed < 40; seed++ {
		req.Seed = seed
		sug, err := s.Propose(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		slipUp := math.Abs(sug.Patch.Weights["foot_slip"]) > math.Abs(req.Base.Weights["foot_slip"])
		p, ok := sug.Patch.Weights["pose"]
		if slipUp && ok && p < req.Base.Weights["pose"] {
			t.Fatalf("seed %d: proposal %v repeats the rejected direction", seed, sug.Patch)
		}
		seen = seen || slipUp
	}
	if !seen {
		t.Error("foot_slip stronger never proposed although only its pairing with pose lower was rejected")
	}
}

// The advisor's prompt carries the sampler's evidence: per-scalar effects with their
// deviation, what did not matter, what no trial moved.
func TestPromptCarriesSamplerEvidence(t *testing.T) {
	f := newFake(t, reply{content: good}, reply{content: good})
	d := newAdvisor(t, f, nil, nil)
	req := slipHistory(session.DefaultSpace())
	req.Objective = session.DefaultObjectiveWeights()
	req.Task = session.TaskGo2Flat
	if _, err := d.Propose(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	user := f.requests()[0].req.Messages[1].Content
	var doc struct {
		Evidence *struct {
			Effects []struct {
				Name    string  `json:"name"`
				Effect  float64 `json:"effect"`
				SD      float64 `json:"sd"`
				Trials  int     `json:"trials_moved"`
				Metrics []struct {
					Metric   string  `json:"metric"`
					Change   float64 `json:"change"`
					Declared bool    `json:"declared"`
				} `json:"metrics"`
			} `json:"effects_per_step_up"`
			NoEffect    []string `json:"did_not_matter"`
			NotYetMoved []string `json:"not_yet_moved"`
		} `json:"sampler_evidence"`
	}
	if err := json.Unmarshal([]byte(user[strings.Index(user, "{"):]), &doc); err != nil {
		t.Fatalf("context is not JSON: %v", err)
	}
	ev := doc.Evidence
	if ev == nil || len(ev.Effects) == 0 || ev.Effects[0].Name != "foot_slip" || ev.Effects[0].Effect < 0.02 || ev.Effects[0].Trials != 6 {
		t.Fatalf("evidence %+v, want foot_slip first with about +0.03 per step", ev)
	}
	if ms := ev.Effects[0].Metrics; len(ms) == 0 || ms[0].Metric != session.MetricFootSlip || ms[0].Change > -0.2 || !ms[0].Declared {
		t.Errorf("foot_slip's metrics %+v, want the foot slip metric, declared, about -0.36 per step", ms)
	}
	if !slices.Contains(ev.NoEffect, "pose") || !slices.Contains(ev.NotYetMoved, "action_rate_l2") {
		t.Errorf("did not matter %v, not yet moved %v", ev.NoEffect, ev.NotYetMoved)
	}
	if !strings.Contains(f.requests()[0].req.Messages[0].Content, "sampler_evidence") {
		t.Error("the system prompt does not explain the evidence")
	}
	// One trial (the baseline) teaches nothing: no evidence section.
	req.History = req.History[:1]
	if _, err := d.Propose(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(f.requests()[1].req.Messages[1].Content, "sampler_evidence") {
		t.Error("evidence sent with only the baseline")
	}
}

// A scalar that cost whichever way it moved is learned as curved, not as "the other way
// gains": the proposal leaves it alone and follows the scalar that helped.
func TestSamplerLearnsThatAMoveCostsBothWays(t *testing.T) {
	space := session.DefaultSpace()
	w := func(c session.RewardConfig) session.Metrics {
		m := baseMetrics()
		k := steps(space, c, "foot_slip") // slip rises 50 % a step whichever way
		m[session.MetricFootSlip] *= math.Exp(0.4 * k * k)
		m[session.MetricActionAcc] *= math.Pow(0.8, steps(space, c, "action_rate_l2"))
		return m
	}
	req := historyOf(space, w,
		scaled(space, map[string]float64{"foot_slip": 2}),
		scaled(space, map[string]float64{"foot_slip": 0.5}),
		scaled(space, map[string]float64{"action_rate_l2": 2}),
		scaled(space, map[string]float64{"foot_slip": 2, "pose": 1.5}),
		scaled(space, map[string]float64{"foot_slip": 0.5, "stand_still": 1.5}),
		scaled(space, map[string]float64{"action_rate_l2": 1.5, "body_ang_vel": 1.5}),
	)
	req.Base, req.BaseTrial = req.History[3].Config, 3 // the best trial, action_rate_l2 ×2
	s := advisor.NewSampler(advisor.SamplerOptions{ExploitAfter: 1})
	for _, e := range s.Effects(req) {
		if e.Name != "foot_slip" {
			continue
		}
		if e.PerStep > -0.01 {
			t.Errorf("foot_slip %+v, want a cost one step up", e)
		}
	}
	for seed := int64(0); seed < 4; seed++ {
		req.Seed = seed
		sug, err := s.Propose(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if v, moved := sug.Patch.Weights["foot_slip"]; moved && math.Abs(math.Log2(v/req.Base.Weights["foot_slip"])) > 0.2 {
			t.Errorf("seed %d: patch %v moves foot_slip, which cost both ways", seed, sug.Patch)
		}
	}
}
