package advisor_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"tunebot/advisor"
	"tunebot/session"
)

// poseHurtsWorld is slipWorld in which a stronger pose penalty also costs linear-velocity
// tracking, 15 % per ×2 step.
func poseHurtsWorld(space *session.Space) world {
	slip := slipWorld(space)
	return func(c session.RewardConfig) session.Metrics {
		m := slip(c)
		m[session.MetricVelLinear] *= math.Pow(1.15, steps(space, c, "pose"))
		return m
	}
}

// poseHurtsHistory is the history both tests read: the configuration at, and four trials
// that move pose, foot_slip and their neighbours alone or in pairs.
func poseHurtsHistory(space *session.Space, w world, at session.RewardConfig) session.ProposalRequest {
	return historyOf(space, w, at,
		scaled(space, map[string]float64{"pose": 2}), scaled(space, map[string]float64{"pose": 1.5, "stand_still": 1.5}),
		scaled(space, map[string]float64{"foot_slip": 1.5}), scaled(space, map[string]float64{"foot_slip": 2, "foot_gait": 0.7}))
}

// The incumbent carries two changes, foot_slip ×2 (which helped) and pose ×2 (which hurt,
// as the trials that moved pose alone say); the sampler takes pose back to its default and
// says so, though its trust region (a fifth of a step, nothing drawn across the region or the box)
// would not reach the default: the undo candidates do.
func TestSamplerTakesBackAChangeThatHurt(t *testing.T) {
	space := session.DefaultSpace()
	w := poseHurtsWorld(space)
	incumbent := scaled(space, map[string]float64{"foot_slip": 2, "pose": 2})
	req := poseHurtsHistory(space, w, incumbent)
	req.Base = incumbent
	for seed := int64(0); seed < 3; seed++ {
		req.Seed = seed
		sug, err := advisor.NewSampler(advisor.SamplerOptions{RadiusStart: 0.2, Across: -1, Wide: -1}).Propose(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := sug.Patch.Weights["pose"]
		if def := space.Defaults().Weights["pose"]; !ok || math.Abs(v) > math.Abs(def)*1.0001 {
			t.Fatalf("seed %d: proposal %v does not take pose back from %g to its default %g", seed, sug.Patch, incumbent.Weights["pose"], def)
		}
		said := false
		for _, line := range sug.Evidence {
			said = said || strings.HasPrefix(line, "pose ") && strings.Contains(line, "back")
		}
		if !said {
			t.Errorf("seed %d: the evidence does not say pose goes back: %q", seed, sug.Evidence)
		}
	}
}

// What the summary says of a configuration: how many changes it carries, and which of them
// the model credits with the gain (foot_slip ×2, not pose ×2, which cost tracking).
func TestCreditNamesTheChangesThatEarnedTheGain(t *testing.T) {
	space := session.DefaultSpace()
	w := poseHurtsWorld(space)
	shipped := scaled(space, map[string]float64{"foot_slip": 2, "pose": 2})
	req := poseHurtsHistory(space, w, shipped)
	cs := advisor.NewSampler(advisor.SamplerOptions{}).Credit(req, shipped)
	if len(cs) != 2 {
		t.Fatalf("credit of %d changes, want 2: %+v", len(cs), cs)
	}
	if cs[0].Name != "foot_slip" || !cs[0].Credited() || cs[1].Name != "pose" || cs[1].Credited() {
		t.Errorf("credit %+v: want foot_slip credited, pose not", cs)
	}
	line := advisor.CreditLine(cs, len(req.History))
	if !strings.HasPrefix(line, fmt.Sprintf("carries 2 changes from the defaults; the sampler's model of the %d rung-0 trials credits the gain to foot_slip (+", len(req.History))) || !strings.Contains(line, "), not the other 1 alone") {
		t.Errorf("credit line %q", line)
	}
	// pose ×2 cost tracking: taking it back alone would gain, and the line says so by name
	// (issue 43, item 5), rather than leaving it among "the other 1".
	if !cs[1].Harmful() || !strings.Contains(line, "; it judges pose (-") || !strings.HasSuffix(line, ") harmful (taking it back alone would gain that)") {
		t.Errorf("pose %+v: harmful %v; credit line %q does not name it harmful", cs[1], cs[1].Harmful(), line)
	}
}
