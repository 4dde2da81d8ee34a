package sim

import (
	"math"
	"testing"

	"tunebot/session"
)

// singleBest is the best gain at 2000 iterations of d moved alone on a 41-point grid
// between lo and hi (positions), and where it is; 0 and the default when nothing gains.
func singleBest(s *Surface, d coord, lo, hi float64) (float64, float64) {
	w, f := session.DefaultObjectiveWeights(), session.DefaultFloors()
	best, at := 0.0, d.def
	for k := 0; k <= 40; k++ {
		u := lo + (hi-lo)*float64(k)/40
		c := space.Defaults()
		setUnit(c, d, u)
		if g, ok := s.Gain(c, 2000, w, f); ok && g > best {
			best, at = g, u
		}
	}
	return best, at
}

// On a separable surface the gains lie within the box and come from separate terms: every
// scalar's best single move over its whole bounds lies inside its box and off the bounds,
// the single moves' gains add up to about the oracle's, and about half of the scalars gain
// nothing alone.
func TestSeparableGainsAreWithinTheBoxAndAddUp(t *testing.T) {
	w, f := session.DefaultObjectiveWeights(), session.DefaultFloors()
	var scalars, matter int
	for seed := int64(1); seed <= 6; seed++ {
		s, _ := NewFamilySurface(FamilySeparable, seed)
		_, att := s.Oracle(space, 2000, w, f)
		sum := 0.0
		for _, d := range coords(space) {
			scalars++
			gain, at := singleBest(s, d, 0, 1)
			sum += gain
			if gain < 0.01*att {
				continue
			}
			matter++
			lo, hi, _ := separableBox(space, d)
			if at < lo-0.03 || at > hi+0.03 || at < 0.01 || at > 0.99 {
				t.Errorf("surface %d: %s gains most at %.3f, outside its box %.3f–%.3f or at a bound", seed, d.name, at, lo, hi)
			}
		}
		if sum < 0.9*att || sum > 1.25*att {
			t.Errorf("surface %d: the single moves add up to %.4f of the oracle's %.4f: the gains do not come from separate terms", seed, sum, att)
		}
	}
	t.Logf("%d of %d scalars gain alone", matter, scalars)
	if matter < scalars*3/10 || matter > scalars*6/10 {
		t.Errorf("%d of %d scalars gain anything alone; want about half", matter, scalars)
	}
}

// A move of a scalar that does not matter costs a little, so carrying it is bad; the
// optimum with every such scalar moved half a step is worse than the optimum.
func TestSeparableIdleMovesCost(t *testing.T) {
	w, f := session.DefaultObjectiveWeights(), session.DefaultFloors()
	for seed := int64(1); seed <= 4; seed++ {
		s, _ := NewFamilySurface(FamilySeparable, seed)
		best, att := s.Oracle(space, 2000, w, f)
		carried := session.Merge(best, session.Patch{})
		idle := 0
		for _, d := range coords(space) {
			if gain, _ := singleBest(s, d, 0, 1); gain > 0 {
				continue
			}
			idle++
			c := space.Defaults()
			u := math.Min(d.def+0.5*domainStep(d), 1)
			setUnit(c, d, u)
			if g, _ := s.Gain(c, 2000, w, f); g >= 0 {
				t.Errorf("surface %d: %s, which does not matter, moved half a step gains %.5f; want a small cost", seed, d.name, g)
			}
			setUnit(carried, d, u)
		}
		g, _ := s.Gain(carried, 2000, w, f)
		t.Logf("surface %d: %d idle scalars; the optimum carrying them keeps %.0f %% of the gain", seed, idle, 100*g/att)
		if idle < 8 || g > 0.98*att {
			t.Errorf("surface %d: the optimum with %d idle scalars moved half a step keeps %.4f of %.4f; want a loss", seed, idle, g, att)
		}
	}
}

// The first moves a search makes are often wrong: on a decoy scalar a small move away from
// the optimum gains and a small move towards it loses; on an overshoot scalar a small move
// gains and a full step the same way loses; some moves look good at rung 0 and are not at
// the top rung.
func TestSeparableFirstMovesMislead(t *testing.T) {
	w, f := session.DefaultObjectiveWeights(), session.DefaultFloors()
	var decoys, overshoots, fading int
	for seed := int64(1); seed <= 10; seed++ {
		s, _ := NewFamilySurface(FamilySeparable, seed)
		gainAt := func(d coord, steps float64, it int) float64 {
			c := space.Defaults()
			setUnit(c, d, d.def+steps*domainStep(d))
			g, _ := s.Gain(c, it, w, f)
			return g
		}
		for _, d := range coords(space) {
			best, at := singleBest(s, d, 0, 1)
			if best <= 0 {
				continue
			}
			dir := math.Copysign(1, at-d.def)
			switch {
			case gainAt(d, -0.15*dir, 2000) > 0 && gainAt(d, 0.15*dir, 2000) < 0:
				decoys++
			case gainAt(d, 0.3*dir, 2000) > 0 && gainAt(d, dir, 2000) < 0:
				overshoots++
			}
		}
		for _, d := range coords(space) {
			for _, k := range []float64{-0.5, 0.5} {
				if gainAt(d, k, 300) > 0.002 && gainAt(d, k, 2000) < 0 {
					fading++
				}
			}
		}
	}
	t.Logf("10 surfaces: %d decoys, %d overshoots, %d half-step moves that gain at rung 0 and lose at the top", decoys, overshoots, fading)
	if decoys < 15 || overshoots < 15 || fading < 15 {
		t.Errorf("10 surfaces: %d decoys, %d overshoots, %d fading signals; want at least 15 of each", decoys, overshoots, fading)
	}
}

// No point of the box falls off a cliff, but a search that goes on past it may: the cliffs
// lie beyond the box's edge.
func TestSeparableCliffsLieBeyondTheBox(t *testing.T) {
	var cliffs int
	for seed := int64(1); seed <= 20; seed++ {
		s, _ := NewFamilySurface(FamilySeparable, seed)
		for _, c := range s.gen.cliffs {
			cliffs++
			lo, hi, _ := separableBox(space, c.c)
			if (c.dir > 0 && c.at < hi) || (c.dir < 0 && c.at > lo) {
				t.Errorf("surface %d: the cliff of %s at %.3f lies within its box %.3f–%.3f", seed, c.c.name, c.at, lo, hi)
			}
		}
	}
	if cliffs < 15 {
		t.Errorf("20 surfaces have %d cliffs; want one or two most of the time", cliffs)
	}
}
