package advisor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"tunebot/advisor"
	"tunebot/session"
)

// slipHistory is a session in which every trial that made foot_slip stronger scored about
// 0.05 better and nothing else mattered: the baseline, then trials that each move foot_slip
// and one other scalar, alternately up and down.
func slipHistory(space *session.Space) session.ProposalRequest {
	def := space.Defaults()
	others := []string{"pose", "body_ang_vel", "stand_still", "foot_gait", "joint_pos_limits", "angular_momentum"}
	var hist []session.TrialSummary
	var tried []session.Tried
	add := func(c session.RewardConfig, score float64) {
		s := score
		hist = append(hist, session.TrialSummary{Number: len(hist), State: session.TrialCompleted, Score: &s, Eligible: true, Config: c.Clone()})
		tried = append(tried, session.Tried{Label: fmt.Sprintf("trial %d", len(tried)), Config: c.Clone()})
	}
	add(def, 0)
	for i, o := range others {
		c := def.Clone()
		f := 2.0
		if i%2 == 1 {
			f = 0.5
		}
		c.Weights["foot_slip"] = def.Weights["foot_slip"] * f
		c.Weights[o] = def.Weights[o] * 1.5
		add(c, 0.05*math.Log2(f)+0.002*float64(i%3-1))
	}
	return session.ProposalRequest{SessionID: "s", Space: space, Base: def, History: hist, Tried: tried, Seed: 7}
}

func TestSamplerModelsEveryTrial(t *testing.T) {
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
	if slip.Moved != 6 || slip.PerStep < 0.03 || slip.SD > slip.PerStep/3 {
		t.Errorf("foot_slip effect %+v, want about +0.05 per step, clearly non-zero", slip)
	}
	if pose.Moved != 1 || math.Abs(pose.PerStep) > 0.02 {
		t.Errorf("pose effect %+v, want about 0", pose)
	}
	// With the history past ExploitAfter the proposal follows the model: foot_slip stronger.
	sug, err := s.Propose(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := sug.Patch.Weights["foot_slip"]; !ok || v >= req.Base.Weights["foot_slip"] {
		t.Errorf("proposal %v (%s) does not make foot_slip stronger", sug.Patch, sug.Rationale)
	}
	// The summary says in words what moves and why; the evidence leads with foot_slip's.
	if !strings.HasPrefix(sug.Summary, "Strengthens foot_slip") || !strings.Contains(sug.Summary, "where the model of 7 trials expects the most gain") {
		t.Errorf("summary %q does not say what moves and why", sug.Summary)
	}
	if len(sug.Evidence) == 0 || !strings.HasPrefix(sug.Evidence[0], "foot_slip -0.25 → -0.5 (×2.00, stronger): the model expects +0.0") || !strings.Contains(sug.Evidence[0], "; 6 of 7 trials moved it") {
		t.Errorf("evidence %q does not lead with foot_slip's", sug.Evidence)
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
				Name   string  `json:"name"`
				Effect float64 `json:"effect"`
				SD     float64 `json:"sd"`
				Trials int     `json:"trials_moved"`
			} `json:"effects_per_step_up"`
			NoEffect    []string `json:"did_not_matter"`
			NotYetMoved []string `json:"not_yet_moved"`
		} `json:"sampler_evidence"`
	}
	if err := json.Unmarshal([]byte(user[strings.Index(user, "{"):]), &doc); err != nil {
		t.Fatalf("context is not JSON: %v", err)
	}
	ev := doc.Evidence
	if ev == nil || len(ev.Effects) == 0 || ev.Effects[0].Name != "foot_slip" || ev.Effects[0].Effect < 0.03 || ev.Effects[0].Trials != 6 {
		t.Fatalf("evidence %+v, want foot_slip first with about +0.05 per step", ev)
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
// gains": the proposal leaves it alone and follows the scalar that helped. The linear
// model (CurvSD < 0) has no such term.
func TestSamplerLearnsThatAMoveCostsBothWays(t *testing.T) {
	space := session.DefaultSpace()
	def := space.Defaults()
	var hist []session.TrialSummary
	var tried []session.Tried
	add := func(c session.RewardConfig, score float64) {
		s := score
		hist = append(hist, session.TrialSummary{Number: len(hist), State: session.TrialCompleted, Score: &s, Eligible: true, Config: c.Clone()})
		tried = append(tried, session.Tried{Label: fmt.Sprintf("trial %d", len(tried)), Config: c.Clone()})
	}
	add(def, 0)
	for i := range 6 {
		c := def.Clone()
		switch i % 3 {
		case 0: // foot_slip costs 0.04 whichever way it moves
			c.Weights["foot_slip"] = def.Weights["foot_slip"] * 2
		case 1:
			c.Weights["foot_slip"] = def.Weights["foot_slip"] * 0.5
		case 2: // a stronger action_rate_l2 gains 0.03
			c.Weights["action_rate_l2"] = def.Weights["action_rate_l2"] * 2
		}
		score := -0.04
		if i%3 == 2 {
			score = 0.03
		}
		add(c, score)
	}
	// The base is the best trial, action_rate_l2 ×2.
	req := session.ProposalRequest{SessionID: "s", Space: space, Base: hist[3].Config, BaseTrial: 3, History: hist, Tried: tried, Seed: 7}
	effect := func(s *advisor.Sampler, name string) advisor.Effect {
		for _, e := range s.Effects(req) {
			if e.Name == name {
				return e
			}
		}
		t.Fatalf("no effect for %s", name)
		return advisor.Effect{}
	}
	s := advisor.NewSampler(advisor.SamplerOptions{ExploitAfter: 1})
	// The prior says -0.002 ± 0.003 per squared step; four trials pull it well below.
	if e := effect(s, "foot_slip"); e.Curv > -0.004 || e.CurvSD <= 0 || math.Abs(e.PerStep) > 0.001 {
		t.Errorf("foot_slip %+v, want a negative curvature learned from the trials and no linear effect", e)
	}
	if e := effect(advisor.NewSampler(advisor.SamplerOptions{CurvSD: -1}), "foot_slip"); e.Curv != 0 || e.CurvSD != 0 {
		t.Errorf("linear model: foot_slip %+v has a curvature", e)
	}
	sug, err := s.Propose(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, moved := sug.Patch.Weights["foot_slip"]; moved {
		t.Errorf("patch %v moves foot_slip, which cost both ways", sug.Patch)
	}
	if v, ok := sug.Patch.Weights["action_rate_l2"]; !ok || math.Abs(v) <= math.Abs(hist[3].Config.Weights["action_rate_l2"]) {
		t.Errorf("patch %v does not make action_rate_l2 stronger, which helped", sug.Patch)
	}
}
