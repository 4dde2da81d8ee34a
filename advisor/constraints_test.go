package advisor_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"tunebot/advisor"
	"tunebot/session"
)

// Feedback such as "do not touch is_terminated" binds every numeric proposer: each first
// proposes freely; then the scalars it moved are constrained (kept, or only the opposite
// way) and none of its proposals breaks a constraint again, over many histories.
func TestNumericProposersHonourConstraints(t *testing.T) {
	space := session.DefaultSpace()
	proposers := map[string]session.Advisor{"sampler": advisor.NewSampler(advisor.SamplerOptions{}), "tpe": advisor.NewTPE(advisor.TPEOptions{}), "random": advisor.NewRandom()}
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 150; i++ {
		req := randomHistory(t, r, space)
		for name, a := range proposers {
			free, err := a.Propose(context.Background(), req)
			if err != nil {
				t.Fatalf("%s, history %d: %v", name, i, err)
			}
			// Forbid what it just did: keep the first scalar it moved, and turn each other
			// one round ("lower X" after X went up).
			var feedback []string
			for _, c := range space.Diff(req.Base, session.Merge(req.Base, free.Patch)) {
				up := c.New > c.Old
				if c.Kind == "weight" {
					up = math.Abs(c.New) > math.Abs(c.Old)
				}
				switch {
				case len(feedback) == 0:
					feedback = append(feedback, "do not touch "+c.Name)
				case up:
					feedback = append(feedback, "lower "+c.Name)
				default:
					feedback = append(feedback, "raise "+c.Name)
				}
			}
			creq := req
			creq.Constraints = session.ReadConstraints(strings.Join(feedback, ". "), space, 1)
			if len(creq.Constraints) != len(feedback) {
				t.Fatalf("%q read as %q", feedback, session.ConstraintList(creq.Constraints))
			}
			sug, err := a.Propose(context.Background(), creq)
			if err != nil {
				continue // everything it could move may be constrained away; the engine then pauses
			}
			if broken := session.BrokenConstraints(creq.Constraints, creq.Base, sug.Patch); len(broken) > 0 {
				t.Fatalf("%s, history %d: %v breaks %q (asked: %q)", name, i, sug.Patch, session.ConstraintList(broken), feedback)
			}
			if _, err := creq.Check(sug.Patch); err != nil {
				t.Fatalf("%s, history %d: %v", name, i, err)
			}
		}
	}
}

// DeepSeek sees the constraints in its context, and an answer that breaks one goes back
// with the broken constraint named, like any broken rule; the advisor returns the repaired
// patch.
func TestAdvisorIsToldConstraintsAndRepairsABreach(t *testing.T) {
	breach := answer(`{"weights": {"is_terminated": -400}}`, "Falls dominate: double the termination penalty.")
	f := newFake(t, reply{content: breach}, reply{content: good})
	d := newAdvisor(t, f, nil, nil)
	req := proposalRequest()
	req.Constraints = session.ReadConstraints("do not touch is_terminated", req.Space, 1)
	sug, err := d.Propose(context.Background(), req)
	if err != nil {
		t.Fatalf("Propose: %v", err)
	}
	if _, ok := sug.Patch.Weights["is_terminated"]; ok {
		t.Fatalf("patch %v moves the kept is_terminated", sug.Patch)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want the breach and one repair", len(reqs))
	}
	first := reqs[0].req.Messages
	_, js, _ := strings.Cut(first[1].Content, "\n")
	var doc struct {
		Constraints []string `json:"constraints"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || len(doc.Constraints) != 1 || doc.Constraints[0] != "keep is_terminated" {
		t.Errorf("context constraints %q (%v), want [keep is_terminated]", doc.Constraints, err)
	}
	if !strings.Contains(first[0].Content, `"keep X" leaves X out of the patch`) {
		t.Error("the system prompt does not say what a constraint means")
	}
	repair := reqs[1].req.Messages
	if last := repair[len(repair)-1].Content; !strings.Contains(last, "weights.is_terminated must not change") {
		t.Errorf("repair message %q does not name the broken constraint", last)
	}
}
