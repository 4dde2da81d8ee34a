package session_test

import (
	"testing"

	"tunebot/session"
)

func TestReadConstraints(t *testing.T) {
	sp := session.DefaultSpace()
	for _, tc := range []struct {
		feedback string
		want     string // session.ConstraintList of what is read
	}{
		{"do not touch is_terminated", "keep is_terminated"},
		{"Don’t touch is_terminated!", "keep is_terminated"},
		// a value word said of a penalty speaks of its value as the card prints it (−0.25 → −0.5
		// is lower), or of what it penalises: "lower foot_slip" asks for less slip (issue 28)
		{"keep is_terminated, lower foot_slip", "keep is_terminated; foot_slip no weaker"},
		{"reduce foot_slip", "foot_slip no weaker"},
		{"weaker foot_slip", "foot_slip no stronger"},                        // a strength word: its strength
		{"lower track_linear_velocity", "track_linear_velocity no stronger"}, // a reward: value and strength agree
		{"leave is_terminated alone and raise the action_rate_l2 penalty", "keep is_terminated; action_rate_l2 no weaker"},
		{"is_terminated should stay as it is", "keep is_terminated"},
		{"foot_slip is too strong", "foot_slip no stronger"},
		{"foot_slip too weak; freeze pose", "foot_slip no weaker; keep pose"},
		{"don't lower foot_gait.period.", "params.foot_gait.period no lower"},
		{"increase params.foot_gait.period", "params.foot_gait.period no lower"},
		{"never increase is_terminated", "is_terminated no weaker"},
		{"lower foot_slip and is_terminated", "foot_slip no weaker; is_terminated no weaker"},
		{"lower the foot_slip penalty", "foot_slip no stronger"},                        // the penalty's size
		{"keep is_terminated. Later: raise is_terminated", "is_terminated no stronger"}, // the later word wins
		// nothing bound: a word that is no link ends the binding
		{"more falls since is_terminated doubled", ""},
		{"the gait looks jumpy", ""},
		{"keep it", ""},
		{"lower foot_slipp", ""}, // names are exact; the reply says nothing was read
	} {
		got := session.ConstraintList(session.ReadConstraints(tc.feedback, sp, 3))
		if got != tc.want {
			t.Errorf("%q: read %q, want %q", tc.feedback, got, tc.want)
		}
	}
}

func TestBrokenConstraintsReadMagnitudes(t *testing.T) {
	sp := session.DefaultSpace()
	base := sp.Defaults()
	cs := session.ReadConstraints("lower foot_slip, keep is_terminated, higher foot_gait.period", sp, 2)
	for _, tc := range []struct {
		patch  session.Patch
		broken string
	}{
		// "lower foot_slip" asks for −0.25 → −0.5 (less slip) and refuses −0.125 (weaker)
		{session.Patch{Weights: map[string]float64{"foot_slip": -0.5}}, ""},
		{session.Patch{Weights: map[string]float64{"foot_slip": -0.125}}, "foot_slip no weaker"},
		{session.Patch{Weights: map[string]float64{"is_terminated": -100}}, "keep is_terminated"},
		{session.Patch{Weights: map[string]float64{"is_terminated": -200}}, ""}, // unchanged
		{session.Patch{Params: map[string]float64{"foot_gait.period": 0.5}}, "params.foot_gait.period no lower"},
		{session.Patch{Params: map[string]float64{"foot_gait.period": 0.7}}, ""},
	} {
		if got := session.ConstraintList(session.BrokenConstraints(cs, base, tc.patch)); got != tc.broken {
			t.Errorf("%v: broken %q, want %q", tc.patch, got, tc.broken)
		}
	}
}

// TestCheckJudgesTheRoundedPatch: a proposer's value is rounded before it runs (Space.Round),
// so ProposalRequest.Check judges the constraints on the rounded patch, as the engine's ask
// does: -200.00001 for a term feedback said to keep is -200 once rounded, which keeps it.
func TestCheckJudgesTheRoundedPatch(t *testing.T) {
	sp := session.DefaultSpace()
	req := session.ProposalRequest{Space: sp, Base: sp.Defaults(), Constraints: session.ReadConstraints("keep is_terminated", sp, 2)}
	patch := session.Patch{Weights: map[string]float64{"foot_slip": -0.125, "is_terminated": -200.00001}}
	if _, err := req.Check(patch); err != nil {
		t.Errorf("a patch that keeps is_terminated once rounded was refused: %v", err)
	}
	patch.Weights["is_terminated"] = -210
	if _, err := req.Check(patch); err == nil {
		t.Error("a patch that moves is_terminated passed")
	}
}
