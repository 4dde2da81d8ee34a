package sim_test

import (
	"testing"

	"tunebot/session"
	"tunebot/trainer/sim"
)

// The levers family is what its comment says, on the surfaces a sampler is tuned on: the
// params nobody declared a direction for hold a large share of the attainable gain, the term
// off by default is switched on by the oracle, and the linear tracking weight at its bound
// (its helpful side, where its tracking gain lies) breaks the fall-rate gate.
func TestLeversFamilyHoldsItsGainWhereNothingIsDeclared(t *testing.T) {
	sp := session.DefaultSpace()
	w, f := session.DefaultObjectiveWeights(), session.DefaultFloors()
	var undeclaredHalf, switchedOn, cliffAtBound int
	const n = 8
	for seed := int64(1); seed <= n; seed++ {
		s, err := sim.NewFamilySurface(sim.FamilyLevers, seed)
		if err != nil {
			t.Fatal(err)
		}
		best, gain := s.Oracle(sp, 2000, w, f)
		if gain < 0.03 {
			t.Errorf("surface %d: attainable gain %.3f, want a clear one", seed, gain)
			continue
		}
		if best.Weights["electrical_power"] != 0 {
			switchedOn++
		}
		back := best.Clone()
		for _, p := range sp.Params {
			back.Params[p.Name] = p.Default // every undeclared param back at its default
		}
		if g, ok := s.Gain(back, 2000, w, f); !ok || g < gain-0.2*gain {
			undeclaredHalf++
		}
		if _, ok := s.Gain(with(map[string]float64{"track_linear_velocity": 3}, nil), 2000, w, f); !ok {
			cliffAtBound++
		}
	}
	if undeclaredHalf < n*3/4 {
		t.Errorf("the undeclared params hold at least a fifth of the gain on %d of %d surfaces, want most", undeclaredHalf, n)
	}
	if switchedOn < n*3/4 {
		t.Errorf("the oracle switches electrical_power on on %d of %d surfaces, want most", switchedOn, n)
	}
	if cliffAtBound != n {
		t.Errorf("track_linear_velocity at its bound breaks a gate on %d of %d surfaces, want all", cliffAtBound, n)
	}
}
