package advisor_test

import (
	"context"
	"testing"

	"tunebot/advisor"
	"tunebot/session"
)

// A model of the baseline alone cannot know that a patch passes every gate, nor that it
// beats the best: neither chance it gives claims more than Laplace's rule allows one trial
// (issue 28, item 3: "confidence 92 %" with a model of one trial).
func TestSamplerClaimsNoCertaintyItsModelCannotHave(t *testing.T) {
	space := session.DefaultSpace()
	for _, n := range []int{0, 1} {
		var configs []session.RewardConfig
		if n == 1 {
			configs = append(configs, scaled(space, map[string]float64{"foot_slip": 1.5}))
		}
		req := historyOf(space, gateWorld(space), configs...)
		hi, lo := session.Credible(1, len(req.History)), session.Credible(0, len(req.History))
		for seed := int64(0); seed < 3; seed++ {
			req.Seed = seed
			sug, err := advisor.NewSampler(advisor.SamplerOptions{}).Propose(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if sug.Confidence > hi || sug.Confidence < lo {
				t.Errorf("%d trials, seed %d: gates pass %.2f, want within %.2f–%.2f", len(req.History), seed, sug.Confidence, lo, hi)
			}
			if sug.BeatBest == nil || *sug.BeatBest > hi || *sug.BeatBest < lo {
				t.Errorf("%d trials, seed %d: chance of beating the best %v, want one within %.2f–%.2f", len(req.History), seed, sug.BeatBest, lo, hi)
			}
		}
	}
}
