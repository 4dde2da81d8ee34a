package sim_test

import (
	"math"
	"testing"

	"tunebot/session"
	"tunebot/trainer/sim"
)

// separableSum is, on s, the sum of every metric's log (the fall rate's log-odds) at 300
// and at 2000 iterations over every scalar moved alone by half a step and a step either
// way (×√2 and ×2 of a weight, a tenth and a fifth of a param's range), cut to its bounds:
// the wells, decoys, trade-offs, early signals and cliffs all count.
func separableSum(s *sim.Surface) float64 {
	sum := 0.0
	eachSingleMove(session.DefaultSpace(), []float64{-1, -0.5, 0.5, 1}, func(c session.RewardConfig) {
		for _, it := range []int{300, 2000} {
			for _, l := range metricLogs(s, c, it) {
				sum += l
			}
		}
	})
	return sum
}

// The separable family is frozen (TestFamiliesAreFrozen pins one configuration; these pins
// add every scalar moved alone, at rung 0's 300 iterations and at the top rung's 2000).
// They were printed once, when the family was drawn, before any method was measured on it.
func TestSeparableFamilyIsFrozen(t *testing.T) {
	pins := map[int64]float64{1: -1113.18909404, 500: -1112.65668766, 1000: -1113.92475887, 1049: -1114.65002061}
	for seed, want := range pins {
		s, err := sim.NewFamilySurface(sim.FamilySeparable, seed)
		if err != nil {
			t.Fatal(err)
		}
		if got := separableSum(s); math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("separable surface %d: %.12g, pinned %.12g: the family changed", seed, got, want)
		}
	}
}

// The separable family is named by the flag and config key, and its surfaces are other
// problems than the other families' of the same seed: the same seed gives the same surface,
// another family another one, with noise of its own.
func TestSeparableSurfacesAreProblemsOfTheirOwn(t *testing.T) {
	if f, err := sim.ParseFamily("separable"); err != nil || f != sim.FamilySeparable {
		t.Errorf("ParseFamily(separable) = %q, %v", f, err)
	}
	c := with(map[string]float64{"action_rate_l2": -0.1, "foot_slip": -0.5, "pose": 1.4}, map[string]float64{"foot_gait.period": 0.7, "track_linear_velocity.std": 0.6})
	for seed := int64(1); seed <= 4; seed++ {
		a, _ := sim.NewFamilySurface(sim.FamilySeparable, seed)
		b, _ := sim.NewFamilySurface(sim.FamilySeparable, seed)
		if a.Family() != sim.FamilySeparable || a.Seed() != seed {
			t.Fatalf("family %q seed %d", a.Family(), a.Seed())
		}
		if a.Evaluate(c, 300, 3)[session.MetricFootSlip] != b.Evaluate(c, 300, 3)[session.MetricFootSlip] {
			t.Errorf("surface %d differs from itself", seed)
		}
		for _, other := range []sim.Family{sim.FamilyGeneric, sim.FamilyDomain, sim.FamilyCoupled} {
			o, _ := sim.NewFamilySurface(other, seed)
			same := 0
			for _, name := range session.MetricNames {
				if a.Evaluate(c, 300, 3)[name] == o.Evaluate(c, 300, 3)[name] {
					same++
				}
			}
			if same > 0 {
				t.Errorf("separable surface %d measures %d metrics as the %s surface does", seed, same, other)
			}
		}
	}
}
