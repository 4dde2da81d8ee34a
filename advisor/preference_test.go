package advisor_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"tunebot/advisor"
	"tunebot/session"
)

// flatHistory is a session in which nothing mattered to the score: the baseline and six
// trials that each moved two unrelated scalars, all scoring 0. Trials 8 and 5 walk the same
// but for foot_gait: trial 8's is twice the default, trial 5's half of it.
func flatHistory(space *session.Space) (session.ProposalRequest, session.RewardConfig, session.RewardConfig) {
	def := space.Defaults()
	var hist []session.TrialSummary
	var tried []session.Tried
	add := func(c session.RewardConfig) {
		zero := 0.0
		hist = append(hist, session.TrialSummary{Number: len(hist), State: session.TrialCompleted, Score: &zero, Eligible: true, Config: c.Clone(),
			Metrics: baseMetrics()})
		tried = append(tried, session.Tried{Label: fmt.Sprintf("trial %d", len(tried)), Config: c.Clone()})
	}
	add(def)
	for i, pair := range [][2]string{{"pose", "body_ang_vel"}, {"stand_still", "joint_pos_limits"}, {"angular_momentum", "soft_landing"},
		{"pose", "stand_still"}, {"body_ang_vel", "angular_momentum"}, {"joint_pos_limits", "soft_landing"}} {
		c := def.Clone()
		f := 2.0
		if i%2 == 1 {
			f = 0.5
		}
		c.Weights[pair[0]] *= f
		c.Weights[pair[1]] *= 1 / f
		add(c)
	}
	win, lose := def.Clone(), def.Clone()
	win.Weights["foot_gait"], lose.Weights["foot_gait"] = 1.0, 0.25
	return session.ProposalRequest{SessionID: "s", Space: space, Base: def, History: hist, Tried: tried, Seed: 7}, win, lose
}

// The sampler's next proposal moves towards the preferred trial's configuration: in a
// session where the score says nothing, a person preferred trial 8's gait (foot_gait
// stronger) over trial 5's (weaker), so the proposal makes foot_gait stronger, and its card
// says so; without the preference it does not.
func TestSamplerFollowsAPreference(t *testing.T) {
	space := session.DefaultSpace()
	req, win, lose := flatHistory(space)
	s := advisor.NewSampler(advisor.SamplerOptions{})
	// A session seed at which, without a preference, the proposal leaves foot_gait as it is
	// or weakens it (the search may try anything where the score says nothing).
	var before session.Suggestion
	for seed := int64(7); ; seed++ {
		req.Seed = seed
		var err error
		if before, err = s.Propose(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if v, ok := before.Patch.Weights["foot_gait"]; !ok || v <= req.Base.Weights["foot_gait"] {
			break
		}
		if seed == 27 {
			t.Fatalf("without a preference every proposal makes foot_gait stronger, as %v: the test proves nothing", before.Patch)
		}
	}
	if strings.Contains(before.Summary, "preference") {
		t.Errorf("summary %q speaks of a preference there is none of", before.Summary)
	}
	req.Preferences = []session.Preference{{Seq: 1, A: 8, B: 5, AConfig: win, BConfig: lose, Answer: session.AnswerA, Note: "trots; 5 hops"}}
	// The sampler's prior expects a little of every scalar no trial has moved; a weight
	// well above the default makes the preference outweigh those hopes, so the test is
	// built so that the proposal must follow it.
	req.PreferenceWeight = 5 * session.DefaultPreferenceWeight
	sug, err := s.Propose(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := sug.Patch.Weights["foot_gait"]; !ok || v <= req.Base.Weights["foot_gait"] {
		t.Fatalf("proposal %v does not make foot_gait stronger, towards the preferred trial 8", sug.Patch)
	}
	if !strings.HasSuffix(sug.Summary, " It builds on your preference for trial 8's gait over trial 5's.") {
		t.Errorf("summary %q does not say which preference it follows", sug.Summary)
	}
	// The same answer the other way round leads the other way.
	req.Preferences[0].Answer = session.AnswerB
	sug, err = s.Propose(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := sug.Patch.Weights["foot_gait"]; ok && v > req.Base.Weights["foot_gait"] {
		t.Errorf("preferring trial 5 still made foot_gait stronger: %v", sug.Patch)
	}
}

func TestPreferenceUtility(t *testing.T) {
	space := session.DefaultSpace()
	req, win, lose := flatHistory(space)
	if u, ok := advisor.PreferenceUtility(req); ok || u(win) != 0 {
		t.Fatalf("no preference: ok %v, u %v", ok, u(win))
	}
	req.Preferences = []session.Preference{{A: 8, B: 5, AConfig: win, BConfig: lose, Answer: session.AnswerA}}
	u, ok := advisor.PreferenceUtility(req)
	one := u(win) - u(lose)
	if !ok || one <= 0 || one > 1 {
		t.Fatalf("one answer: u(winner) − u(loser) = %g, want a small positive logit (the prior keeps it small)", one)
	}
	// More answers the same way make it surer; a "can't tell" of the same pair pulls back.
	for i := 0; i < 3; i++ {
		req.Preferences = append(req.Preferences, session.Preference{A: 8, B: 5, AConfig: win, BConfig: lose, Answer: session.AnswerA})
	}
	u, _ = advisor.PreferenceUtility(req)
	four := u(win) - u(lose)
	req.Preferences = append(req.Preferences, session.Preference{A: 8, B: 5, AConfig: win, BConfig: lose, Answer: session.AnswerTie},
		session.Preference{A: 8, B: 5, AConfig: win, BConfig: lose, Answer: session.AnswerTie})
	u, _ = advisor.PreferenceUtility(req)
	if tied := u(win) - u(lose); !(four > one && tied < four && tied > 0) {
		t.Errorf("u differences: one answer %g, four %g, four and two can't-tells %g", one, four, tied)
	}
}
