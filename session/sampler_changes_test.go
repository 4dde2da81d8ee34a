package session_test

import (
	"context"
	"strings"
	"testing"

	"tunebot/session"
)

// wide raises six weights by 10 % each: more scalars than the space's max_changes of 4.
func wide(req session.ProposalRequest) (session.Suggestion, error) {
	p := session.Patch{Weights: map[string]float64{}}
	for _, n := range []string{"track_linear_velocity", "track_angular_velocity", "body_orientation_l2", "pose", "joint_pos_limits", "is_terminated"} {
		p.Weights[n] = req.Base.Weights[n] * (1.1 + 0.01*float64(len(req.History)))
	}
	return session.Suggestion{Patch: p, Rationale: "six at once", Source: session.SourceSampler}, nil
}

// sampler_max_changes lets the sampler of an automatic session change more scalars than the
// space's max_changes; without it, or in approval mode, the same patch is refused.
func TestSamplerMaxChanges(t *testing.T) {
	for _, tt := range []struct {
		name    string
		mode    string
		changes int
		runs    bool
	}{
		{"automatic, widened", session.ModeAutomatic, 8, true},
		{"automatic, the space's 4", session.ModeAutomatic, 0, false},
		{"approval keeps 4", session.ModeApproval, 8, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, t.TempDir())
			h.sampler.fn = wide
			st := settings(tt.mode)
			st.Fallback, st.SamplerMaxChanges = true, tt.changes
			e, err := session.NewEngine(session.EngineConfig{Store: configStore{h.db}, Trainer: h.tr, Sampler: h.sampler,
				Space: session.DefaultSpace(), SessionsDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			s, err := e.Start(context.Background(), st, console)
			if err != nil {
				t.Fatal(err)
			}
			s, err = e.Wait(context.Background(), s.ID)
			if err != nil {
				t.Fatal(err)
			}
			trials, _ := h.db.Trials(context.Background(), s.ID)
			var six bool
			for _, tr := range trials {
				if tr.Number > 0 && tr.RewardConfig.Weights["pose"] != 1.0 {
					six = true
				}
			}
			if tt.runs {
				if s.State != session.StateSucceeded || !six {
					t.Errorf("state %s (%s), six-scalar trial run: %v; want it run", s.State, s.Message, six)
				}
				return
			}
			if six || !strings.Contains(s.Message, "at most 4 scalars") {
				t.Errorf("state %s (%s), six-scalar trial run: %v; want it refused", s.State, s.Message, six)
			}
		})
	}
	bad := session.DefaultSettings()
	bad.SamplerMaxChanges = 65
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "sampler_max_changes") {
		t.Errorf("Validate(65) = %v", err)
	}
}

// A rejected proposal reaches the next request with its base and patch, so a proposer can
// keep away from its direction.
func TestRejectedPatchReachesTheProposer(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	s := h.startApproval()
	props, _ := h.db.Proposals(ctx, s.ID)
	if len(props) != 1 {
		t.Fatalf("%d proposals", len(props))
	}
	if _, err := h.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionReject, Feedback: "not that", By: console}); err != nil {
		t.Fatal(err)
	}
	h.wait(s.ID)
	reqs := h.adv.requests()
	last := reqs[len(reqs)-1]
	if len(last.Rejected) != 1 || last.Rejected[0].Seq != 1 || last.Rejected[0].Feedback != "not that" ||
		!last.Rejected[0].Patch.Equal(props[0].Patch) || !last.Rejected[0].Base.Equal(props[0].Base) {
		t.Errorf("next request's rejected proposals %+v, want proposal 1 with its patch", last.Rejected)
	}
}
