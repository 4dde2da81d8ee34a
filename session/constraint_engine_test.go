package session_test

import (
	"context"
	"strings"
	"testing"

	"tunebot/session"
)

// A reject's feedback that names a scalar binds every proposer for the rest of the session:
// the decision says what was read, the next requests carry it (also from an engine started
// again on the same store), and a proposer that ignores it is refused like a rule breach,
// whoever proposes (the advisor's answer goes, the sampler that keeps to it stands in).
func TestRejectFeedbackBecomesAConstraint(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	doubled := session.Patch{Weights: map[string]float64{"is_terminated": -400}}
	// The advisor doubles is_terminated first and keeps doing so; the sampler raises
	// tracking and leaves is_terminated alone.
	h.adv.fn = func(req session.ProposalRequest) (session.Suggestion, error) {
		return session.Suggestion{Patch: doubled.Clone(), Rationale: "falls: double it"}, nil
	}
	st := settings(session.ModeApproval)
	st.Fallback = true
	s, err := h.eng.Start(ctx, st, console)
	if err != nil {
		t.Fatal(err)
	}
	s = h.wait(s.ID)
	p, err := h.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionReject,
		Feedback: "that doubled it: do not touch is_terminated, and lower foot_slip", By: console})
	if err != nil {
		t.Fatal(err)
	}
	if got := session.ConstraintList(p.Decision.Read); got != "keep is_terminated; foot_slip no weaker" {
		t.Errorf("read %q", got)
	}
	if !strings.HasPrefix(p.Decision.Note, "read: keep is_terminated; foot_slip no weaker. Every proposer keeps to this") {
		t.Errorf("note %q", p.Decision.Note)
	}
	s = h.wait(s.ID)
	ps, _ := h.db.Proposals(ctx, s.ID)
	if s.State != session.StateAwaitingApproval || len(ps) != 2 {
		t.Fatalf("state %s (%s), %d proposals", s.State, s.Reason, len(ps))
	}
	if _, moved := ps[1].Patch.Weights["is_terminated"]; moved || ps[1].Source != session.SourceSampler {
		t.Fatalf("proposal 2 %v from %s: the advisor's breach was not refused", ps[1].Patch, ps[1].Source)
	}
	audit, _ := h.db.Audit(ctx, s.ID)
	refused := false
	for _, a := range audit {
		refused = refused || a.Kind == "advisor_fallback" && strings.Contains(a.Detail["error"].(string), `weights.is_terminated must not change (leave it out of the patch): a person asked for "keep is_terminated" when rejecting proposal 1`)
	}
	if !refused {
		t.Error("the advisor's breach is not audited with the constraint it broke")
	}
	for _, r := range append(h.adv.requests()[1:], h.sampler.requests()...) {
		if session.ConstraintList(r.Constraints) != "keep is_terminated; foot_slip no weaker" {
			t.Fatalf("a request after the reject carries constraints %q", session.ConstraintList(r.Constraints))
		}
	}

	// An edit may override a constraint; the decision says so.
	edit := session.Patch{Weights: map[string]float64{"is_terminated": -150}}
	p, err = h.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionEdit, Edit: &edit, By: console})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Decision.Note, "this edit overrides keep is_terminated") {
		t.Errorf("edit note %q", p.Decision.Note)
	}
	s = h.wait(s.ID)

	// The constraints live in the store: an engine started again on it still honours them.
	h.eng.Shutdown(ctx)
	eng := h.engine(h.tr)
	defer eng.Shutdown(ctx)
	before := len(h.sampler.requests())
	if _, err := eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionReject, Feedback: "no", By: console}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	after := h.sampler.requests()
	if len(after) == before || session.ConstraintList(after[len(after)-1].Constraints) != "keep is_terminated; foot_slip no weaker" {
		t.Fatalf("after a restart the sampler was asked %d more times, last with constraints %q", len(after)-before, session.ConstraintList(after[len(after)-1].Constraints))
	}
	if _, err := eng.Cancel(ctx, s.ID, console); err != nil {
		t.Fatal(err)
	}
}

// Feedback that names nothing is said to reach DeepSeek's prompt only, or nobody when the
// session has no advisor.
func TestFeedbackNoteSaysWhereFeedbackGoes(t *testing.T) {
	for _, tc := range []struct {
		advisor bool
		want    string
	}{
		{true, "this feedback reaches only DeepSeek's next prompt; the numeric sampler cannot read it"},
		{false, "this session's numeric sampler cannot read free text, so this feedback changes no proposal"},
	} {
		if got := session.FeedbackNote(nil, tc.advisor); !strings.Contains(got, tc.want) {
			t.Errorf("advisor %v: %q", tc.advisor, got)
		}
	}
}

// A later feedback that turns round what an earlier one asked of the same scalar is
// pointed out: the newer word holds, and the answer says which it replaces (issue 28).
func TestContradictingFeedbackIsPointedOut(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	st := settings(session.ModeApproval)
	st.Fallback = true
	s, err := h.eng.Start(ctx, st, console)
	if err != nil {
		t.Fatal(err)
	}
	s = h.wait(s.ID)
	p, err := h.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionReject, Feedback: "lower foot_slip", By: console})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.Decision.Note, "contradicts") {
		t.Errorf("the first feedback contradicts nothing: %q", p.Decision.Note)
	}
	s = h.wait(s.ID)
	p, err = h.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionReject, Feedback: "weaker foot_slip, keep pose", By: console})
	if err != nil {
		t.Fatal(err)
	}
	want := `this contradicts earlier feedback: "foot_slip no stronger" replaces "foot_slip no weaker" (asked when rejecting proposal 1); the newer word holds.`
	if !strings.HasSuffix(p.Decision.Note, want) {
		t.Errorf("note %q, want it to end %q", p.Decision.Note, want)
	}
}
