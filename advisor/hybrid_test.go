package advisor_test

import (
	"context"
	"errors"
	"testing"

	"tunebot/advisor"
	"tunebot/session"
	"tunebot/session/sessiontest"
)

// stubAdvisor answers with a fixed suggestion or error and counts its calls.
type stubAdvisor struct {
	source string
	err    error
	calls  []session.ProposalRequest
}

func (s *stubAdvisor) Propose(_ context.Context, req session.ProposalRequest) (session.Suggestion, error) {
	s.calls = append(s.calls, req)
	if s.err != nil {
		return session.Suggestion{}, s.err
	}
	return session.Suggestion{Patch: session.Patch{Weights: map[string]float64{"pose": 1.1}}, Source: s.source}, nil
}

// history builds trials from (source, score) pairs after an eligible baseline scoring 0;
// a nil score is a failed trial.
func history(trials ...any) []session.TrialSummary {
	h := []session.TrialSummary{{Number: 0, Source: session.SourceBaseline, Score: ptr(0.0), Eligible: true}}
	for i := 0; i < len(trials); i += 2 {
		t := session.TrialSummary{Number: len(h), Source: trials[i].(string)}
		if sc, ok := trials[i+1].(float64); ok {
			t.Score, t.Eligible = ptr(sc), true
		}
		h = append(h, t)
	}
	return h
}

func TestHybridChoosesTheProposer(t *testing.T) {
	const adv, smp = session.SourceAdvisor, session.SourceSampler
	tests := []struct {
		name       string
		mode       string
		stallAfter int
		hist       []session.TrialSummary
		want       string
	}{
		{"off: advisor", advisor.HybridOff, 3, history(adv, -0.1, adv, -0.1, adv, -0.1), adv},
		{"unknown mode acts as off", "sometimes", 3, history(adv, -0.1, adv, -0.1, adv, -0.1), adv},
		{"alternate: first proposal is the advisor's", advisor.HybridAlternate, 3, history(), adv},
		{"alternate: then the sampler", advisor.HybridAlternate, 3, history(adv, 0.1), smp},
		{"alternate: then the advisor again", advisor.HybridAlternate, 3, history(adv, 0.1, smp, 0.2), adv},
		{"stall: too few advisor trials", advisor.HybridStall, 3, history(adv, -0.1, adv, -0.1), adv},
		{"stall: three without improvement", advisor.HybridStall, 3, history(adv, -0.1, adv, -0.1, adv, 0.005), smp},
		{"stall: the last one improved", advisor.HybridStall, 3, history(adv, -0.1, adv, -0.1, adv, 0.2), adv},
		{"stall: a failed trial is no improvement", advisor.HybridStall, 2, history(adv, 0.3, adv, nil, adv, 0.25), smp},
		{"stall: improvement is against the best before, not the baseline", advisor.HybridStall, 2, history(adv, 0.5, adv, 0.2, adv, 0.4), smp},
		{"stall: after the sampler's turn the advisor gets fresh turns", advisor.HybridStall, 2, history(adv, -0.1, adv, -0.1, smp, -0.1, adv, -0.2), adv},
		{"stall: and stalls again", advisor.HybridStall, 2, history(adv, -0.1, adv, -0.1, smp, -0.1, adv, -0.2, adv, -0.2), smp},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, s := &stubAdvisor{source: adv}, &stubAdvisor{source: smp}
			audit := &sessiontest.AuditLog{}
			h := advisor.NewHybrid(a, s, tc.mode, tc.stallAfter, audit, nil)
			req := session.ProposalRequest{SessionID: "s-1", History: tc.hist}
			sug, err := h.Propose(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if sug.Source != tc.want {
				t.Errorf("proposed by %q, want %q", sug.Source, tc.want)
			}
			if got := len(a.calls) + len(s.calls); got != 1 {
				t.Errorf("%d proposers asked, want 1", got)
			}
			es, _ := audit.Audit(t.Context(), "s-1")
			if len(es) != 1 || es[0].Kind != "proposer_choice" || es[0].Detail["proposer"] != tc.want || es[0].Detail["reason"] == "" {
				t.Errorf("audit = %+v, want one proposer_choice naming %s and why", es, tc.want)
			}
		})
	}
}

func TestHybridPassesErrorsAndHistory(t *testing.T) {
	boom := errors.New("advisor down")
	a, s := &stubAdvisor{err: boom}, &stubAdvisor{}
	audit := &sessiontest.AuditLog{}
	h := advisor.NewHybrid(a, s, advisor.HybridAlternate, 3, audit, nil)
	hist := history()
	if _, err := h.Propose(t.Context(), session.ProposalRequest{SessionID: "s-1", History: hist}); !errors.Is(err, boom) {
		t.Errorf("error = %v, want the advisor's error as is (the engine decides fallback)", err)
	}
	if len(s.calls) != 0 {
		t.Error("the sampler was asked although the hybrid must not fall back on its own")
	}
	// The sampler's turn: it sees the same request, and its suggestion gets its source.
	hist = history(session.SourceAdvisor, 0.1)
	sug, err := h.Propose(t.Context(), session.ProposalRequest{SessionID: "s-1", History: hist})
	if err != nil || sug.Source != session.SourceSampler || len(s.calls) != 1 || len(s.calls[0].History) != 2 {
		t.Errorf("sampler turn: %+v, %v, calls %d", sug, err, len(s.calls))
	}
	es, _ := audit.Audit(t.Context(), "s-1")
	if len(es) != 2 || es[0].Detail["outcome"] != "error: advisor down" || es[1].Detail["outcome"] != "ok" {
		t.Errorf("audit = %+v", es)
	}
}
