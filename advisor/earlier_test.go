package advisor_test

import (
	"context"
	"math"
	"testing"

	"tunebot/advisor"
	"tunebot/session"
)

// builtOn is a session that has measured only its baseline and builds on an earlier one
// whose trials are slipHistory's, measured at level × every metric (a change between the
// sessions, say a longer training), each weighing weight.
func builtOn(space *session.Space, level, weight float64) session.ProposalRequest {
	earlier := slipHistory(space)
	for i, h := range earlier.History {
		m := session.Metrics{}
		for k, v := range h.Metrics {
			m[k] = v * level
		}
		earlier.History[i].Metrics = m
	}
	req := historyOf(space, slipWorld(space))
	req.Earlier, req.EarlierWeight = earlier.History, weight
	return req
}

// slipEffect is the model's change of the foot slip metric per step of foot_slip, and its
// spread.
func slipEffect(t *testing.T, req session.ProposalRequest) (advisor.Effect, advisor.MetricEffect) {
	t.Helper()
	for _, e := range advisor.NewSampler(advisor.SamplerOptions{}).Effects(req) {
		if e.Name != "foot_slip" {
			continue
		}
		for _, me := range e.Metrics {
			if me.Metric == session.MetricFootSlip {
				return e, me
			}
		}
	}
	t.Fatal("no foot_slip effect on the foot slip metric")
	return advisor.Effect{}, advisor.MetricEffect{}
}

func TestEarlierTrialsSeedTheModelDownWeighted(t *testing.T) {
	space := session.DefaultSpace()
	_, alone := slipEffect(t, historyOf(space, slipWorld(space)))
	full, fullM := slipEffect(t, builtOn(space, 1, 1))
	_, halfM := slipEffect(t, builtOn(space, 1, 0.2))
	// The earlier trials teach the model what foot_slip does (30 % less slip per step)...
	if math.Abs(fullM.Change-math.Log(0.7)) > 0.08 {
		t.Errorf("with the earlier trials at full weight: %+v, want about %.2f per step", fullM, math.Log(0.7))
	}
	// ...a down-weighted trial moves the fit less from the prior, and leaves it less sure.
	if moved, movedFull := math.Abs(halfM.Change-alone.Change), math.Abs(fullM.Change-alone.Change); !(moved < movedFull) || !(halfM.SD > fullM.SD) {
		t.Errorf("weight 0.2 moved the fit %.3f (sd %.3f), weight 1 %.3f (sd %.3f): the lighter must move it less", moved, halfM.SD, movedFull, fullM.SD)
	}
	// They are evidence, not this session's trials: no trial of this session moved it.
	if full.Moved != 0 {
		t.Errorf("foot_slip moved in %d trials of this session, want 0", full.Moved)
	}
}

func TestEarlierTrialsEnterRelativeToTheirOwnLevel(t *testing.T) {
	space := session.DefaultSpace()
	_, same := slipEffect(t, builtOn(space, 1, 0.5))
	_, shifted := slipEffect(t, builtOn(space, 1.3, 0.5))
	if math.Abs(same.Change-shifted.Change) > 1e-9 || math.Abs(same.SD-shifted.SD) > 1e-9 {
		t.Errorf("every earlier metric 30 %% higher changed the fitted effect: %+v, was %+v", shifted, same)
	}
}

func TestEarlierRejectedDirectionIsNeverProposed(t *testing.T) {
	space := session.DefaultSpace()
	req := builtOn(space, 1, 0.5)
	// The search's proposals, not the screen's (the earlier trials never moved a param).
	s := advisor.NewSampler(advisor.SamplerOptions{Screen: -1})
	stronger := func(p session.Patch) bool {
		v, ok := p.Weights["foot_slip"]
		return ok && math.Abs(v) > math.Abs(req.Base.Weights["foot_slip"])
	}
	proposed := false // without the rejection, the earlier trials lead to a stronger foot_slip
	for seed := int64(0); seed < 10 && !proposed; seed++ {
		req.Seed = seed
		sug, err := s.Propose(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		proposed = stronger(sug.Patch)
	}
	if !proposed {
		t.Fatal("foot_slip stronger never proposed even without the rejection: the test shows nothing")
	}
	req.Rejected = []session.Rejected{{Seq: 2, Session: "earlier", Base: space.Defaults(),
		Patch: session.Patch{Weights: map[string]float64{"foot_slip": space.Defaults().Weights["foot_slip"] * 1.5}}}}
	for seed := int64(0); seed < 30; seed++ {
		req.Seed = seed
		sug, err := s.Propose(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if stronger(sug.Patch) {
			t.Fatalf("seed %d: proposal %v makes foot_slip stronger, rejected in the earlier session", seed, sug.Patch)
		}
	}
}

// TestEarlierLevelIsFittedWithTheEffects: the earlier session measured foot_slip only
// moved (×2 or ×0.5, each with another scalar), never this session's baseline, at a level
// 30 % above this session's. Its level is then an offset the model fits with the effects,
// not the difference to its nearest trial: taking that difference as the level would read
// the nearest trial's own move (×2, 30 % less slip) as part of the level and flatten the
// effect of foot_slip.
func TestEarlierLevelIsFittedWithTheEffects(t *testing.T) {
	space := session.DefaultSpace()
	req := builtOn(space, 1.3, 1)
	req.Earlier = req.Earlier[1:] // without its baseline
	_, me := slipEffect(t, req)
	if math.Abs(me.Change-math.Log(0.7)) > 0.08 {
		t.Errorf("foot_slip's effect on the foot slip metric: %+.3f ± %.3f per step, want about %.2f", me.Change, me.SD, math.Log(0.7))
	}
}
