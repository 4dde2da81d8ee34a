package bot

import "testing"

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
