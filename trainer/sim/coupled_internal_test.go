package sim

import (
	"testing"

	"tunebot/session"
)

// A coupled surface's groups pay together: every member at its target gains far more than
// the members' gains one at a time added up, which are small or negative (their own optima
// are shallow and hinges and trade-offs cost).
func TestCoupledGroupsPayOnlyTogether(t *testing.T) {
	w, f := session.DefaultObjectiveWeights(), session.DefaultFloors()
	var groups, together int
	for seed := int64(1); seed <= 30; seed++ {
		s, _ := NewFamilySurface(FamilyCoupled, seed)
		for _, g := range s.gen.coupled.synergies {
			groups++
			all, alone := space.Defaults(), 0.0
			for _, m := range g.members {
				one := space.Defaults()
				setUnit(one, m.c, m.target)
				setUnit(all, m.c, m.target)
				gain, _ := s.Gain(one, 2000, w, f)
				alone += gain
			}
			gain, _ := s.Gain(all, 2000, w, f)
			if gain > 0.01 && gain > 3*alone {
				together++
			}
		}
	}
	t.Logf("%d of %d groups pay together", together, groups)
	if groups < 30 || together < groups*3/4 {
		t.Errorf("%d of %d groups over 30 surfaces gain more than 0.01 together and 3× their members' gains one at a time; want most", together, groups)
	}
}
