package sim_test

import (
	"math"
	"sort"
	"strings"
	"testing"

	"tunebot/session"
	"tunebot/trainer/sim"
)

// The coupled family's surfaces are deterministic, noisy by 1–5 %, have a clear attainable
// gain within the bounds, and are other problems than the generic and domain families' of
// the same seed.
func TestCoupledSurfacesAreProblemsOfTheirOwn(t *testing.T) {
	if f, err := sim.ParseFamily("coupled"); err != nil || f != sim.FamilyCoupled {
		t.Errorf("ParseFamily(coupled) = %q, %v", f, err)
	}
	if _, err := sim.ParseFamily("nope"); err == nil || !strings.Contains(err.Error(), "generic, domain, coupled, separable or levers") {
		t.Errorf("unknown family = %v, want the four names", err)
	}
	sp := session.DefaultSpace()
	w, f := session.DefaultObjectiveWeights(), session.DefaultFloors()
	c := with(map[string]float64{"action_rate_l2": -0.1, "foot_slip": -0.5}, map[string]float64{"foot_gait.period": 0.7})
	for seed := int64(1); seed <= 4; seed++ {
		a, _ := sim.NewFamilySurface(sim.FamilyCoupled, seed)
		b, _ := sim.NewFamilySurface(sim.FamilyCoupled, seed)
		if a.Family() != sim.FamilyCoupled {
			t.Fatalf("family %q", a.Family())
		}
		if !equal(a.Evaluate(c, 300, 3), b.Evaluate(c, 300, 3)) {
			t.Errorf("coupled surface %d is not deterministic", seed)
		}
		for _, other := range []sim.Family{sim.FamilyGeneric, sim.FamilyDomain} {
			o, _ := sim.NewFamilySurface(other, seed)
			if equal(a.Expected(c, 2000), o.Expected(c, 2000)) {
				t.Errorf("coupled surface %d is the %s surface %d", seed, other, seed)
			}
		}
		best, gain := a.Oracle(sp, 2000, w, f)
		if err := sp.CheckConfig(best); err != nil || gain < 0.05 {
			t.Errorf("coupled surface %d: oracle gain %.3f, config %v", seed, gain, err)
		}
		checkNoise(t, a, c)
	}
}

// namedShares measures, over surfaces 1–40 of fam, for the weights whose name says which
// metric a stronger one lowers: how often a ×1.3 of the term moves that metric more than
// any other (where it matters at all), and how often, of those, it raises it instead.
func namedShares(fam sim.Family) (own, raises float64) {
	named := map[string]string{
		"track_linear_velocity": session.MetricVelLinear, "track_angular_velocity": session.MetricVelAngular,
		"action_rate_l2": session.MetricActionAcc, "joint_acc_l2": session.MetricActionAcc,
		"body_orientation_l2": session.MetricOrientation, "foot_slip": session.MetricFootSlip,
		"foot_clearance": session.MetricFootSlip, "is_terminated": session.MetricFallRate,
		"stand_still": session.MetricPower,
	}
	var n, hit, up int
	for seed := int64(1); seed <= 40; seed++ {
		s, _ := sim.NewFamilySurface(fam, seed)
		base := s.Expected(defaults(), 2000)
		for term, metric := range named {
			def, _ := session.DefaultSpace().Term(term)
			m := s.Expected(with(map[string]float64{term: def.Default * 1.3}, nil), 2000)
			top, topName := 0.0, ""
			for _, name := range session.MetricNames {
				if d := math.Abs(math.Log(m[name] / base[name])); d > top {
					top, topName = d, name
				}
			}
			if top < 1e-9 {
				continue // does not matter on this surface
			}
			n++
			if topName == metric {
				hit++
				if m[metric] > base[metric] {
					up++
				}
			}
		}
	}
	return float64(hit) / float64(n), float64(up) / float64(max(hit, 1))
}

// On the coupled family a term acts on the metric its name is about, but a stronger
// penalty raises it about 4 times in 10 (an over-regularised gait); on the domain family
// the name's sign holds far more often.
func TestCoupledTermsOftenActTheOtherWay(t *testing.T) {
	own, raises := namedShares(sim.FamilyCoupled)
	t.Logf("coupled family: own metric most moved in %.0f %%, raised in %.0f %% of those", 100*own, 100*raises)
	if own < 0.7 || raises < 0.25 || raises > 0.55 {
		t.Errorf("coupled family: a term moves its own metric most in %.0f %% of cases, raising it in %.0f %%; want most, and about 40 %%", 100*own, 100*raises)
	}
	_, domainRaises := namedShares(sim.FamilyDomain)
	t.Logf("domain family: raised in %.0f %%", 100*domainRaises)
	if domainRaises > raises/2 {
		t.Errorf("the domain family's terms raise their metric in %.0f %% of cases, the coupled family's in %.0f %%: no more often", 100*domainRaises, 100*raises)
	}
}

// unitMove is one scalar of the default space moved one step: ×2 of a weight's magnitude
// (×0.5 when ×2 leaves its bounds), a fifth of a param's range up (down when up leaves them).
type unitMove struct {
	weight bool
	name   string
	value  float64
}

func (m unitMove) apply(c session.RewardConfig) {
	if m.weight {
		c.Weights[m.name] = m.value
	} else {
		c.Params[m.name] = m.value
	}
}

func unitMoves() []unitMove {
	sp := session.DefaultSpace()
	var out []unitMove
	for _, term := range sp.Terms {
		if term.Default == 0 {
			continue
		}
		m := unitMove{weight: true, name: term.Name, value: term.Default * 2}
		if m.value < term.Min || m.value > term.Max {
			m.value = term.Default / 2
		}
		out = append(out, m)
	}
	for _, p := range sp.Params {
		m := unitMove{name: p.Name, value: p.Default + 0.2*(p.Max-p.Min)}
		if m.value > p.Max {
			m.value = p.Default - 0.2*(p.Max-p.Min)
		}
		out = append(out, m)
	}
	return out
}

// metricLogs is each metric of s's expected metrics for c at iteration it in log units (the
// fall rate as its log-odds): the units the families' pins and interactions are counted in.
func metricLogs(s *sim.Surface, c session.RewardConfig, it int) [session.NumMetrics]float64 {
	m := s.Expected(c, it)
	var out [session.NumMetrics]float64
	for i, name := range session.MetricNames {
		x := m[name]
		if name == session.MetricFallRate {
			x /= 0.9 - x
		}
		out[i] = math.Log(x)
	}
	return out
}

// eachSingleMove calls fn, for each k of ks, with the defaults of sp with one scalar moved
// alone by k steps (×2 of a weight, a fifth of a param's range), cut to its bounds: every
// weight, then every param.
func eachSingleMove(sp *session.Space, ks []float64, fn func(c session.RewardConfig)) {
	for _, k := range ks {
		for _, term := range sp.Terms {
			c := sp.Defaults()
			c.Weights[term.Name] = math.Min(math.Max(term.Default*math.Pow(2, k), term.Min), term.Max)
			fn(c)
		}
		for _, p := range sp.Params {
			c := sp.Defaults()
			c.Params[p.Name] = math.Min(math.Max(p.Default+0.2*k*(p.Max-p.Min), p.Min), p.Max)
			fn(c)
		}
	}
}

// interactingPairs counts, over surfaces 1–10 of fam, the pairs of one-step moves whose
// joint effect on some metric, in log units (the fall rate: log-odds), differs from the sum
// of their effects by more than 0.002: where the gain of one move depends on the other.
func interactingPairs(fam sim.Family) int {
	moves := unitMoves()
	var n int
	for seed := int64(1); seed <= 10; seed++ {
		s, _ := sim.NewFamilySurface(fam, seed)
		logs := func(ms ...unitMove) [session.NumMetrics]float64 {
			c := defaults()
			for _, m := range ms {
				m.apply(c)
			}
			return metricLogs(s, c, 2000)
		}
		base := logs()
		single := make([][session.NumMetrics]float64, len(moves))
		for i, m := range moves {
			single[i] = logs(m)
		}
		for i := range moves {
			for j := i + 1; j < len(moves); j++ {
				both := logs(moves[i], moves[j])
				for k := range both {
					if math.Abs(both[k]-single[i][k]-single[j][k]+base[k]) > 0.002 {
						n++
						break
					}
				}
			}
		}
	}
	return n
}

// On the coupled family the gain of a move depends on others far more often than on the
// domain family: pairs of terms interact, and the members of a group pay together.
func TestCoupledSurfacesInteract(t *testing.T) {
	coupled, domain := interactingPairs(sim.FamilyCoupled), interactingPairs(sim.FamilyDomain)
	t.Logf("interacting pairs of one-step moves over 10 surfaces: coupled %d, domain %d", coupled, domain)
	if coupled < 30 || coupled < 2*domain {
		t.Errorf("interacting pairs over 10 surfaces: coupled %d, domain %d; want many, at least twice the domain family's", coupled, domain)
	}
}

// singleShares measures, over surfaces 1–6 of fam, what scalars moved alone reach against
// the oracle's gain: the median share of the best single move (anywhere in its bounds,
// eligible), and the median share of the sum of every scalar's best single move (what the
// moves would reach together if their gains added up).
func singleShares(fam sim.Family) (best, sum float64) {
	sp := session.DefaultSpace()
	w, f := session.DefaultObjectiveWeights(), session.DefaultFloors()
	var bests, sums []float64
	for seed := int64(1); seed <= 6; seed++ {
		s, _ := sim.NewFamilySurface(fam, seed)
		_, oracle := s.Oracle(sp, 2000, w, f)
		top, total := 0.0, 0.0
		sweep := func(set func(c session.RewardConfig, x float64)) {
			b := 0.0
			for i := 0; i <= 40; i++ {
				c := sp.Defaults()
				set(c, float64(i)/40)
				if g, ok := s.Gain(c, 2000, w, f); ok && sp.CheckConfig(c) == nil && g > b {
					b = g
				}
			}
			top, total = math.Max(top, b), total+b
		}
		for _, term := range sp.Terms {
			sweep(func(c session.RewardConfig, x float64) { c.Weights[term.Name] = term.Min + x*(term.Max-term.Min) })
		}
		for _, p := range sp.Params {
			sweep(func(c session.RewardConfig, x float64) { c.Params[p.Name] = p.Min + x*(p.Max-p.Min) })
		}
		bests, sums = append(bests, top/oracle), append(sums, total/oracle)
	}
	median := func(xs []float64) float64 { sort.Float64s(xs); return (xs[2] + xs[3]) / 2 }
	return median(bests), median(sums)
}

// The coupled family's optimum needs several moves at once: the best single move reaches a
// small share of the attainable gain, much less than on the domain family, and all the
// single moves' gains added up still fall well short of it (the groups and the pairs pay
// only together; TestCoupledGroupsPayOnlyTogether looks at the groups themselves), where on
// the domain family they add up to about the optimum or more.
func TestCoupledOptimumNeedsSeveralMoves(t *testing.T) {
	coupledBest, coupledSum := singleShares(sim.FamilyCoupled)
	domainBest, domainSum := singleShares(sim.FamilyDomain)
	t.Logf("best single move: coupled %.0f %%, domain %.0f %%; single moves added up: coupled %.0f %%, domain %.0f %% of the attainable gain",
		100*coupledBest, 100*domainBest, 100*coupledSum, 100*domainSum)
	if coupledBest > 0.1 || coupledBest > domainBest/2 {
		t.Errorf("best single move: coupled %.0f %%, domain %.0f %% of the attainable gain; want at most 10 %%, and half the domain family's", 100*coupledBest, 100*domainBest)
	}
	if coupledSum > 0.6 || coupledSum > domainSum/2 {
		t.Errorf("single moves added up: coupled %.0f %%, domain %.0f %% of the attainable gain; want at most 60 %%, and half the domain family's", 100*coupledSum, 100*domainSum)
	}
}

// A coupled surface has cliffs: somewhere in the bounds the robot falls.
func TestCoupledSurfacesHaveCliffs(t *testing.T) {
	sp := session.DefaultSpace()
	var cliffs int
	for seed := int64(1); seed <= 6; seed++ {
		s, _ := sim.NewFamilySurface(sim.FamilyCoupled, seed)
		base := s.Expected(sp.Defaults(), 2000)
		for _, term := range sp.Terms {
			for _, v := range []float64{term.Min, term.Max} {
				c := sp.Defaults()
				c.Weights[term.Name] = v
				if v != 0 && s.Expected(c, 2000)[session.MetricFallRate] > base[session.MetricFallRate]+0.1 {
					cliffs++
				}
			}
		}
	}
	if cliffs < 3 {
		t.Errorf("over 6 coupled surfaces: %d bounds where the robot falls", cliffs)
	}
}

// The coupled family is frozen too (TestFamiliesAreFrozen), but the one configuration pinned
// there rarely reaches its groups, hinges and cliffs. These pins add, per surface, the sum
// of every metric's log (the fall rate's log-odds) over every scalar moved alone by one
// and two steps either way, cut to its bounds, and over every pair of one-step moves
// (unitMoves): the shallow optima, the groups (a member alone still moves its group's
// metric a little), the hinges, the cliffs and the pairs' interactions all count.
// They were printed once, when the family was drawn, before any method was measured on it.
func TestCoupledFamilyIsFrozen(t *testing.T) {
	pins := map[int64]float64{1: -2793.4292926, 500: -2784.45732377, 1000: -2785.4552775, 1049: -2801.92161586}
	sp := session.DefaultSpace()
	for seed, want := range pins {
		s, _ := sim.NewFamilySurface(sim.FamilyCoupled, seed)
		sum := 0.0
		add := func(c session.RewardConfig) {
			for _, l := range metricLogs(s, c, 2000) {
				sum += l
			}
		}
		eachSingleMove(sp, []float64{-2, -1, 1, 2}, add)
		moves := unitMoves()
		for i := range moves {
			for j := i + 1; j < len(moves); j++ {
				c := sp.Defaults()
				moves[i].apply(c)
				moves[j].apply(c)
				add(c)
			}
		}
		if math.Abs(sum-want) > 1e-9*math.Abs(want) {
			t.Errorf("coupled surface %d: %.12g, pinned %.12g: the family changed", seed, sum, want)
		}
	}
}

// trackingKinks counts, over surfaces 1–20 of fam, the weights whose tracking errors (in log
// units), as the weight is strengthened from its default up to 4× (or its bound), bend at one
// point: the second differences of a 60-point scan sit nearly all in one place, with a
// straight line before it. A trade-off that costs tracking in proportion to the move has no
// bend; a hinge (nothing until some strength, then a cost per step) has one.
func trackingKinks(fam sim.Family) int {
	sp := session.DefaultSpace()
	var n int
	for seed := int64(1); seed <= 20; seed++ {
		s, _ := sim.NewFamilySurface(fam, seed)
		for _, term := range sp.Terms {
			if term.Default == 0 {
				continue
			}
			top := math.Min(4, 0.999*math.Max(math.Abs(term.Min), math.Abs(term.Max))/math.Abs(term.Default))
			var track []float64
			for i := 0; i <= 60; i++ {
				c := sp.Defaults()
				c.Weights[term.Name] = term.Default * math.Pow(top, float64(i)/60)
				m := s.Expected(c, 2000)
				track = append(track, math.Log(m[session.MetricVelLinear])+math.Log(m[session.MetricVelAngular]))
			}
			var sum, peak float64
			at := 0
			for i := 1; i < 60; i++ {
				d := math.Abs(track[i+1] - 2*track[i] + track[i-1])
				sum += d
				if d > peak {
					peak, at = d, i
				}
			}
			if peak > 1e-4 && peak > 0.8*sum && at > 1 && math.Abs(track[at]-track[0]-float64(at)*(track[1]-track[0])) < 1e-9 {
				n++
			}
		}
	}
	return n
}

// On the coupled family strengthening a weight often costs tracking only past some
// strength (a hinge), which the domain family's proportional trade-offs never do.
func TestCoupledTrackingCostsSetInPastAHinge(t *testing.T) {
	coupled, domain := trackingKinks(sim.FamilyCoupled), trackingKinks(sim.FamilyDomain)
	t.Logf("weights whose tracking cost sets in past a hinge, over 20 surfaces: coupled %d, domain %d", coupled, domain)
	if coupled < 15 || domain > 0 {
		t.Errorf("hinges in the tracking cost over 20 surfaces: coupled %d, domain %d; want many on the coupled family, none on the domain one", coupled, domain)
	}
}
