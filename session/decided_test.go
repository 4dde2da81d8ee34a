package session_test

import (
	"testing"

	"tunebot/session"
)

func TestDecidedWord(t *testing.T) {
	dec := func(action string) *session.Decision { return &session.Decision{Action: action} }
	tests := []struct {
		name string
		p    session.Proposal
		want string
	}{
		{"approved", session.Proposal{State: session.ProposalApproved, Decision: dec(session.ActionApprove)}, "approved"},
		{"used after approval", session.Proposal{State: session.ProposalUsed, Decision: dec(session.ActionApprove)}, "approved"},
		{"used in automatic mode", session.Proposal{State: session.ProposalUsed}, "approved"},
		{"edited", session.Proposal{State: session.ProposalUsed, Decision: dec(session.ActionEdit)}, "edited and approved"},
		{"rejected", session.Proposal{State: session.ProposalRejected, Decision: dec(session.ActionReject)}, "rejected"},
		// A voided proposal is named as voided whatever decision it had: the engine and
		// chat used to disagree here.
		{"voided undecided", session.Proposal{State: session.ProposalVoid}, "voided (the session moved on before it was decided)"},
		{"voided after approval", session.Proposal{State: session.ProposalVoid, Decision: dec(session.ActionApprove)}, "voided (approved, but the session moved on before it ran)"},
		{"voided after an edit", session.Proposal{State: session.ProposalVoid, Decision: dec(session.ActionEdit)}, "voided (approved, but the session moved on before it ran)"},
		{"pending", session.Proposal{State: session.ProposalPending}, "pending"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := session.DecidedWord(tc.p); got != tc.want {
				t.Errorf("DecidedWord = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBareDecisionTarget(t *testing.T) {
	p := func(id string, st session.ProposalState) session.Proposal { return session.Proposal{ID: id, State: st} }
	tests := []struct {
		name string
		ps   []session.Proposal
		want string
	}{
		{"the pending one", []session.Proposal{p("a", session.ProposalUsed), p("b", session.ProposalPending), p("c", session.ProposalRejected)}, "b"},
		{"none pending: the newest", []session.Proposal{p("a", session.ProposalUsed), p("b", session.ProposalApproved)}, "b"},
		{"one", []session.Proposal{p("a", session.ProposalVoid)}, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := session.BareDecisionTarget(tc.ps).ID; got != tc.want {
				t.Errorf("BareDecisionTarget = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTriedConfigsAreRungZero(t *testing.T) {
	cfg := func(v float64) session.RewardConfig {
		return session.RewardConfig{Weights: map[string]float64{"x": v}}
	}
	trials := []session.Trial{{Number: 0, Rung: 0, RewardConfig: cfg(1)}, {Number: 0, Rung: 1, RewardConfig: cfg(1)}, {Number: 3, Rung: 0, RewardConfig: cfg(2)}}
	got := session.TriedConfigs(trials)
	if len(got) != 2 || got[0].Label != "trial 0" || got[1].Label != "trial 3" || got[1].Config.Weights["x"] != 2 {
		t.Errorf("TriedConfigs = %+v", got)
	}
}
