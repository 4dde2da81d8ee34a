package memsim_test

import (
	"slices"
	"testing"

	"tunebot/bench/internal/memsim"
	"tunebot/session"
)

// TestFixFinalSeedsDrawsAsASession: the seeds are the ones a session draws, by its session
// seed: the same for the same seed, none of them an evaluation seed, and the default count
// when the settings set none (no count left the list empty, so the session drew seeds from
// its random id and the benchmark's sessions differed from run to run).
func TestFixFinalSeedsDrawsAsASession(t *testing.T) {
	st := session.DefaultSettings()
	st.Seed = 10
	a, b := st, st
	memsim.FixFinalSeeds(&a)
	memsim.FixFinalSeeds(&b)
	if len(a.FinalEvalSeeds) != st.FinalEvalCount || !slices.Equal(a.FinalEvalSeeds, b.FinalEvalSeeds) {
		t.Errorf("final seeds %v and %v, want the same %d", a.FinalEvalSeeds, b.FinalEvalSeeds, st.FinalEvalCount)
	}
	for _, s := range a.FinalEvalSeeds {
		if slices.Contains(st.EvalSeeds, s) {
			t.Errorf("final seed %d is an evaluation seed", s)
		}
	}
	none := st
	none.FinalEvalCount = 0
	memsim.FixFinalSeeds(&none)
	if len(none.FinalEvalSeeds) != session.DefaultFinalEvalCount {
		t.Errorf("no count set: final seeds %v, want %d", none.FinalEvalSeeds, session.DefaultFinalEvalCount)
	}
}
