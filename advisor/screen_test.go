package advisor_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"tunebot/advisor"
	"tunebot/session"
)

// unjudged are the default space's scalars the prior cannot judge: every param (none
// declares lowers) and electrical_power (off by default).
func unjudged(space *session.Space, name string) bool {
	if p, ok := space.Param(name); ok {
		return p.Lowers == ""
	}
	t, _ := space.Term(name)
	return t.Default == 0
}

// The screen (issue 45, items 1–3): after the baseline, the first quarter of the session's
// trials move only the scalars the prior cannot judge, one step each (a param a fifth of its
// range; a term that is off switched on at a quarter of its largest magnitude), each scalar
// in one screen trial only, several at once; then the search proposes.
func TestScreenMovesWhatThePriorCannotJudge(t *testing.T) {
	space := session.DefaultSpace()
	req := historyOf(space, slipWorld(space))
	req.TrialBudget = 12
	s := advisor.NewSampler(advisor.SamplerOptions{})
	screened := map[string]bool{}
	for i := 0; i < 4; i++ {
		sug, err := s.Propose(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		screen := strings.Contains(sug.Summary, "as a screen")
		if i < 3 != screen {
			t.Fatalf("proposal %d: screen %v, want the first 3 of a 12-trial budget only: %s", i+1, screen, sug.Summary)
		}
		if !screen {
			break
		}
		n := 0
		for name, v := range sug.Patch.Weights {
			n++
			if !unjudged(space, name) || v != -1.25e-3 {
				t.Errorf("proposal %d: %s → %g, want only electrical_power switched on at -0.00125", i+1, name, v)
			}
			if screened[name] {
				t.Errorf("proposal %d screens %s again", i+1, name)
			}
			screened[name] = true
		}
		for name, v := range sug.Patch.Params {
			n++
			p, _ := space.Param(name)
			if !unjudged(space, name) || math.Abs(math.Abs(v-p.Default)-0.2*(p.Max-p.Min)) > 0.002*(p.Max-p.Min) && v != p.Min && v != p.Max {
				t.Errorf("proposal %d: %s %g → %g, want one step (a fifth of its range) or to its bound", i+1, name, p.Default, v)
			}
			if screened[name] {
				t.Errorf("proposal %d screens %s again", i+1, name)
			}
			screened[name] = true
		}
		if n < 2 {
			t.Errorf("proposal %d screens %d scalars, want several at once", i+1, n)
		}
		if sug.Outlook != nil {
			t.Errorf("proposal %d: a screen carries the model's outlook, which cannot judge these yet", i+1)
		}
		req.Tried = append(req.Tried, session.Tried{Config: session.Merge(req.Base, sug.Patch)})
	}
	if len(screened) < 8 {
		t.Errorf("the screen moved %d scalars in 3 trials, want most of the 15 unjudged", len(screened))
	}
}

// paramsMoved is space's defaults with every param moved a tenth of its range (down where up
// would leave it): more than half a step, so each has evidence once a trial ran it.
func paramsMoved(space *session.Space) session.RewardConfig {
	moved := space.Defaults()
	for _, p := range space.Params {
		moved.Params[p.Name] = p.Default + 0.1*(p.Max-p.Min)
		if moved.Params[p.Name] > p.Max {
			moved.Params[p.Name] = p.Default - 0.1*(p.Max-p.Min)
		}
	}
	return moved
}

// A scalar that some trial (or the session built on) moved half a step has evidence: no
// screen when every unjudged scalar has; no screen with Screen negative.
func TestScreenEndsWhenEveryScalarHasEvidence(t *testing.T) {
	space := session.DefaultSpace()
	moved := paramsMoved(space)
	moved.Weights["electrical_power"] = -1e-3
	for name, req := range map[string]session.ProposalRequest{
		"every unjudged scalar moved": historyOf(space, slipWorld(space), moved),
		"screen off":                  historyOf(space, slipWorld(space)),
	} {
		req.TrialBudget = 12
		opts := advisor.SamplerOptions{}
		if name == "screen off" {
			opts.Screen = -1
		}
		sug, err := advisor.NewSampler(opts).Propose(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(sug.Summary, "as a screen") {
			t.Errorf("%s: %s", name, sug.Summary)
		}
	}
}

// A trial that failed is no evidence: the scalars it moved are screened still, though its
// configuration is among the tried ones.
func TestAFailedTrialIsNoEvidence(t *testing.T) {
	space := session.DefaultSpace()
	moved := paramsMoved(space)
	req := historyOf(space, slipWorld(space), moved)
	req.TrialBudget = 12
	req.History[1].State, req.History[1].Metrics, req.History[1].PerSeed, req.History[1].Score = session.TrialFailed, nil, nil, nil
	sug, err := advisor.NewSampler(advisor.SamplerOptions{}).Propose(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sug.Summary, "as a screen") {
		t.Errorf("a failed trial counted as evidence: %s", sug.Summary)
	}
}

// The screen is stateless and deterministic: the same request gives the same proposal.
func TestScreenIsDeterministic(t *testing.T) {
	space := session.DefaultSpace()
	req := historyOf(space, slipWorld(space))
	req.TrialBudget = 12
	a, err := advisor.NewSampler(advisor.SamplerOptions{}).Propose(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := advisor.NewSampler(advisor.SamplerOptions{}).Propose(context.Background(), req)
	if a.Summary != b.Summary || len(a.Patch.Params) != len(b.Patch.Params) {
		t.Errorf("two proposals for one request: %q and %q", a.Summary, b.Summary)
	}
	for k, v := range a.Patch.Params {
		if b.Patch.Params[k] != v {
			t.Errorf("%s: %g then %g", k, v, b.Patch.Params[k])
		}
	}
}
