package sim_test

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/session"
	"tunebot/trainer/sim"
)

// The domain family's surfaces are deterministic, noisy by 1–5 %, have a clear attainable
// gain within the bounds, and are other problems than the generic family's of the same seed.
func TestDomainSurfacesAreProblemsOfTheirOwn(t *testing.T) {
	if _, err := sim.NewFamilySurface("nope", 3); err == nil || !strings.Contains(err.Error(), `"nope" is unknown`) {
		t.Errorf("unknown family = %v", err)
	}
	sp := session.DefaultSpace()
	w, f := session.DefaultObjectiveWeights(), session.DefaultFloors()
	c := with(map[string]float64{"action_rate_l2": -0.1, "foot_slip": -0.5}, map[string]float64{"foot_gait.period": 0.7})
	for seed := int64(1); seed <= 4; seed++ {
		a, _ := sim.NewFamilySurface(sim.FamilyDomain, seed)
		b, _ := sim.NewFamilySurface(sim.FamilyDomain, seed)
		g, _ := sim.NewSurface(seed)
		if a.Family() != sim.FamilyDomain || g.Family() != sim.FamilyGeneric {
			t.Fatalf("families %q, %q", a.Family(), g.Family())
		}
		if !equal(a.Evaluate(c, 300, 3), b.Evaluate(c, 300, 3)) {
			t.Errorf("domain surface %d is not deterministic", seed)
		}
		if equal(a.Expected(c, 2000), g.Expected(c, 2000)) {
			t.Errorf("domain surface %d is the generic surface %d", seed, seed)
		}
		best, gain := a.Oracle(sp, 2000, w, f)
		if err := sp.CheckConfig(best); err != nil || gain < 0.05 {
			t.Errorf("domain surface %d: oracle gain %.3f, config %v", seed, gain, err)
		}
		checkNoise(t, a, c)
	}
}

// On the domain family a term acts mostly on the metrics its name is about: a ×2 of the
// term moves those metrics more than any other in most surfaces where it matters at all,
// and a stronger penalty most often lowers its metric at first. On the generic family the
// same holds no better than chance.
func TestDomainTermsActOnTheMetricsOfTheirName(t *testing.T) {
	own, raises := namedShares(sim.FamilyDomain)
	lowers := 1 - raises
	t.Logf("domain family: own metric most moved in %.0f %%, lowered in %.0f %% of those", 100*own, 100*lowers)
	if own < 0.6 || lowers < 0.6 {
		t.Errorf("domain family: a term moves its own metric most in %.0f %% of cases, lowering it in %.0f %%; want most", 100*own, 100*lowers)
	}
	g, _ := namedShares(sim.FamilyGeneric)
	t.Logf("generic family: own metric most moved in %.0f %%", 100*g)
	if g > 0.4 {
		t.Errorf("generic family: a term moves its own metric most in %.0f %% of cases; its primaries are drawn at random", 100*g)
	}
}

// A domain surface has cliffs (moves past a threshold make the robot fall) and optima near
// the defaults for most scalars, a few far.
func TestDomainSurfacesHaveCliffsAndMostlyNearOptima(t *testing.T) {
	sp := session.DefaultSpace()
	var cliffs, near, far int
	for seed := int64(1); seed <= 6; seed++ {
		s, _ := sim.NewFamilySurface(sim.FamilyDomain, seed)
		base := s.Expected(sp.Defaults(), 2000)
		for _, term := range sp.Terms {
			for _, v := range []float64{term.Min, term.Max} {
				c := sp.Defaults()
				c.Weights[term.Name] = v
				if v == 0 {
					continue
				}
				if s.Expected(c, 2000)[session.MetricFallRate] > base[session.MetricFallRate]+0.1 {
					cliffs++
				}
			}
		}
		best, _ := s.Oracle(sp, 2000, session.DefaultObjectiveWeights(), session.DefaultFloors())
		for _, term := range sp.Terms {
			if term.Default == 0 {
				continue
			}
			switch r := math.Abs(math.Log2(best.Weights[term.Name] / term.Default)); {
			case r <= 1.5:
				near++
			case r > 1.5:
				far++
			}
		}
	}
	t.Logf("%d cliffs, %d near optima, %d far", cliffs, near, far)
	if cliffs == 0 || far == 0 || near < 3*far {
		t.Errorf("over 6 domain surfaces: %d cliffs, %d optima within 1.5 steps of the default, %d beyond", cliffs, near, far)
	}
}

// A checkpoint of one family's surface is evaluated on that surface and on no other
// family's surface of the same seed.
func TestEvalRefusesAnotherFamily(t *testing.T) {
	named := func(f sim.Family) string {
		if f == sim.FamilyGeneric {
			return ""
		}
		return " (" + string(f) + " family)"
	}
	for _, trained := range []sim.Family{sim.FamilyDomain, sim.FamilyCoupled, sim.FamilySeparable, sim.FamilyLevers} {
		dir := t.TempDir()
		run := filepath.Join(dir, "run")
		o := sim.TrainOptions{Task: session.TaskGo2Flat, RunDir: run, RewardConfig: writeConfig(t, dir, defaults()),
			Iterations: 4, Target: 4, NumEnvs: 16, SurfaceSeed: 5, Family: trained}
		if err := sim.Train(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		for _, evaluated := range sim.Families {
			e := sim.EvalOptions{Task: session.TaskGo2Flat, Checkpoint: filepath.Join(run, "model_4.pt"), Output: filepath.Join(run, "ev.json"),
				Seeds: []int{0}, NumEnvs: 8, Steps: 10, SurfaceSeed: 5, Family: evaluated}
			err := sim.Eval(context.Background(), e)
			want := "surface seed 5" + named(trained) + ", not 5" + named(evaluated)
			switch {
			case evaluated == trained && err != nil:
				t.Errorf("%s checkpoint evaluated on its own surface: %v", trained, err)
			case evaluated != trained && (err == nil || !strings.HasSuffix(err.Error(), want)):
				t.Errorf("%s checkpoint evaluated on the %s surface 5: %v, want a family mismatch ending %q", trained, evaluated, err, want)
			}
		}
	}
}

// Every family is frozen: the methods were measured on them, and a held-out table means
// nothing if its problems change underneath it. These numbers were printed once, when each
// family was drawn; a change to any family's generator fails here.
func TestFamiliesAreFrozen(t *testing.T) {
	c := with(map[string]float64{"action_rate_l2": -0.1, "foot_slip": -0.5, "pose": 0.5}, map[string]float64{"foot_gait.period": 0.7})
	for fam, pins := range frozen {
		for seed, want := range pins {
			s, err := sim.NewFamilySurface(fam, seed)
			if err != nil {
				t.Fatal(err)
			}
			got := [3]float64{s.Expected(c, 2000)[session.MetricVelLinear], s.Expected(c, 300)[session.MetricFootSlip], s.Evaluate(c, 300, 7)[session.MetricPower]}
			for i := range got {
				if math.Abs(got[i]-want[i]) > 1e-9*math.Abs(want[i]) {
					t.Errorf("%s surface %d: %.12g, pinned %.12g: the family changed", fam, seed, got, want)
					break
				}
			}
		}
	}
}

// frozen pins, per family and surface seed, the noise-free linear velocity error at 2000
// iterations, the foot slip at 300, and the power one evaluation measures at 300 (seed 7),
// of one configuration off the defaults.
var frozen = map[sim.Family]map[int64][3]float64{
	sim.FamilyGeneric: {
		1:    {0.211631224231, 0.0908268226589, 164.899358861},
		500:  {0.210000680231, 0.0908928634132, 149.906868813},
		1000: {0.221125116908, 0.0908268226589, 165.372525018},
		1049: {0.202148358028, 0.0908268226589, 164.411170794},
	},
	sim.FamilyDomain: {
		1:    {0.207687606784, 0.0885780630805, 166.130252511},
		500:  {0.227708350068, 0.0923672773023, 174.365570152},
		1000: {0.224150901361, 0.0831879624451, 153.582027481},
		1049: {0.222670803472, 0.0942248392735, 154.578197356},
	},
	// Printed when the coupled family was drawn, before any method was measured on it.
	sim.FamilyCoupled: {
		1:    {0.218878841372, 0.0926003794648, 159.688126447},
		500:  {0.208272356316, 0.107756139189, 158.219420699},
		1000: {0.204089697402, 0.0977960829525, 165.427767321},
		1049: {0.210000680231, 0.089853414523, 155.744662918},
	},
	// Printed when the separable family was drawn, before any method was measured on it.
	sim.FamilySeparable: {
		1:    {0.210000680231, 0.0920218135433, 164.029691842},
		500:  {0.210000680231, 0.0918721500083, 155.391231661},
		1000: {0.212944307814, 0.0853782308048, 152.547061146},
		1049: {0.210000680231, 0.0923039751003, 161.557226146},
	},
	// Printed when the levers family was drawn, before any method was measured on it.
	sim.FamilyLevers: {
		1:    {0.210000680231, 0.0908268226589, 159.469919769},
		500:  {0.208122304245, 0.0866966071008, 160.437110121},
		1000: {0.211860681522, 0.0879706582575, 156.926805463},
		1049: {0.210000680231, 0.0893498493439, 163.984846849},
	},
}
