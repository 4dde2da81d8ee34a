package bot

import (
	"testing"

	"tunebot/session"
)

// TestReadsEndedSession: with no session named and none active, the read commands fall back
// to the newest session; the commands that change a session do not.
func TestReadsEndedSession(t *testing.T) {
	cases := map[Verb]bool{
		VerbStatus: true, VerbBest: true, VerbChart: true, VerbClip: true, VerbWhy: true,
		VerbPause: false, VerbResume: false, VerbCancel: false,
		VerbApprove: false, VerbReject: false, VerbEdit: false,
		VerbPrefer: false, VerbGo: false, VerbPromote: false, VerbDrop: false,
	}
	for v, want := range cases {
		if got := readsEndedSession(v); got != want {
			t.Errorf("readsEndedSession(%s) = %v, want %v", v, got, want)
		}
	}
}

// TestTrialRelatives: a trial's report compares it with its parent and, above rung 0, with
// the baseline that completed the same rung.
func TestTrialRelatives(t *testing.T) {
	done := session.TrialCompleted
	trials := []session.Trial{
		{Number: 0, Rung: 0, State: done},
		{Number: 3, Rung: 0, State: done},
		{Number: 0, Rung: 1, State: done},
		{Number: 3, Rung: 1, State: done},
		{Number: 0, Rung: 2, State: session.TrialFailed},
		{Number: 3, Rung: 2, State: done},
	}
	ref := func(n, rung int) *session.TrialRef { return &session.TrialRef{Number: n, Rung: rung} }
	cases := []struct {
		name                 string
		t                    session.Trial
		wantParent, wantCtrl *session.TrialRef
	}{
		{"rung 0 has no control", session.Trial{Number: 3, Rung: 0}, nil, nil},
		{"rung 1: parent and control", session.Trial{Number: 3, Rung: 1, Parent: ref(3, 0)}, ref(3, 0), ref(0, 1)},
		{"a control that did not complete", session.Trial{Number: 3, Rung: 2, Parent: ref(3, 1)}, ref(3, 1), nil},
		{"a parent not among the trials", session.Trial{Number: 5, Rung: 1, Parent: ref(5, 0)}, nil, ref(0, 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent, control := trialRelatives(c.t, trials)
			if !sameRef(parent, c.wantParent) || !sameRef(control, c.wantCtrl) {
				t.Errorf("trialRelatives = %v, %v; want %v, %v", parent, control, c.wantParent, c.wantCtrl)
			}
		})
	}
}

func sameRef(t *session.Trial, want *session.TrialRef) bool {
	if t == nil || want == nil {
		return t == nil && want == nil
	}
	return t.Ref() == *want
}
