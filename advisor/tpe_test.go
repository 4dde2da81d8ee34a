package advisor_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tunebot/advisor"
	"tunebot/session"
)

func TestTPEGamma(t *testing.T) {
	// Hand-checked against Optuna's default_gamma: min(ceil(0.1 n), 25).
	for _, tc := range []struct{ n, want int }{
		{0, 0}, {1, 1}, {9, 1}, {10, 1}, {11, 2}, {12, 2}, {20, 2}, {21, 3}, {100, 10}, {249, 25}, {250, 25}, {1000, 25},
	} {
		if got := advisor.TPEGamma(tc.n); got != tc.want {
			t.Errorf("TPEGamma(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestTPEWeights(t *testing.T) {
	ones := func(n int) []float64 {
		w := make([]float64, n)
		for i := range w {
			w[i] = 1
		}
		return w
	}
	// Hand-checked against Optuna's default_weights: ones below 25, then
	// concatenate(linspace(1/n, 1, n-25), ones(25)).
	for _, tc := range []struct {
		n    int
		want []float64
	}{
		{0, []float64{}},
		{1, ones(1)},
		{3, ones(3)},
		{24, ones(24)},
		{25, ones(25)},
		{26, append([]float64{1.0 / 26}, ones(25)...)},
		{28, append([]float64{1.0 / 28, 0.5178571428571429, 1}, ones(25)...)},
		{30, append([]float64{1.0 / 30, 0.275, 0.5166666666666667, 0.7583333333333333, 1}, ones(25)...)},
	} {
		got := advisor.TPEWeights(tc.n)
		if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); diff != "" {
			t.Errorf("TPEWeights(%d) (-want +got):\n%s", tc.n, diff)
		}
	}
}

// randomHistory builds a session-like history: configurations reached by chains of valid
// patches from the defaults, with scores, ineligible and failed trials mixed in, and some
// hand-made awkward bases (weights at bounds, terms off, tiny magnitudes).
func randomHistory(t *testing.T, r *rand.Rand, space *session.Space) session.ProposalRequest {
	t.Helper()
	n := r.IntN(40)
	rnd := advisor.NewRandom()
	cur := space.Defaults()
	var hist []session.TrialSummary
	var tried []session.Tried
	for i := 0; i <= n; i++ {
		if i > 0 {
			s, err := rnd.Propose(context.Background(), session.ProposalRequest{Space: space, Base: cur, History: hist, Seed: r.Int64()})
			if err != nil {
				t.Fatalf("building history: %v", err)
			}
			next := session.Merge(cur, s.Patch)
			if r.IntN(3) == 0 {
				cur = next
			}
			cur = next
		}
		ts := session.TrialSummary{Number: i, Rung: 0, State: session.TrialCompleted, Config: cur.Clone(), Eligible: r.IntN(5) != 0}
		switch r.IntN(6) {
		case 0:
			ts.State = session.TrialFailed
			ts.Eligible = false
		default:
			sc := r.NormFloat64()
			ts.Score = &sc
		}
		if r.IntN(10) == 0 {
			ts.Rung = 1 // must be ignored
		}
		hist = append(hist, ts)
		tried = append(tried, session.Tried{Label: fmt.Sprintf("trial %d", i), Config: cur.Clone()})
	}
	base := cur.Clone()
	switch r.IntN(5) {
	case 0: // weights pushed to their bounds, terms switched off
		for _, term := range space.Terms {
			switch r.IntN(4) {
			case 0:
				base.Weights[term.Name] = term.Min
			case 1:
				base.Weights[term.Name] = term.Max
			case 2:
				if term.MayBeZero {
					base.Weights[term.Name] = 0
				}
			}
		}
	case 1: // tiny magnitudes below the modelled floor
		base.Weights["joint_acc_l2"] = -1e-12
		base.Weights["soft_landing"] = -1e-9
	}
	if err := space.CheckConfig(base); err != nil {
		t.Fatalf("test built an invalid base: %v", err)
	}
	// Duplicates in tried, and the base itself.
	tried = append(tried, session.Tried{Label: "base", Config: base.Clone()}, tried[len(tried)-1])
	return session.ProposalRequest{SessionID: "s", Space: space, Base: base, History: hist, Tried: tried, Seed: r.Int64()}
}

func TestProposalsObeyPatchRules(t *testing.T) {
	space := session.DefaultSpace()
	advisors := map[string]session.Advisor{"tpe": advisor.NewTPE(advisor.TPEOptions{}), "random": advisor.NewRandom(), "sampler": advisor.NewSampler(advisor.SamplerOptions{})}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		req := randomHistory(t, r, space)
		for name, a := range advisors {
			s, err := a.Propose(context.Background(), req)
			if err != nil {
				t.Fatalf("%s, history %d (n=%d): %v", name, i, len(req.History), err)
			}
			if _, err := space.Validate(req.Base, s.Patch, req.Tried); err != nil {
				t.Fatalf("%s, history %d: proposal %v refused: %v", name, i, s.Patch, err)
			}
			if s.Source != session.SourceSampler || s.Rationale == "" && s.Summary == "" || s.Patch.Len() < 1 || s.Patch.Len() > space.MaxChanges {
				t.Fatalf("%s, history %d: bad suggestion %+v", name, i, s)
			}
		}
	}
}

func TestProposalsAreDeterministic(t *testing.T) {
	space := session.DefaultSpace()
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 30; i++ {
		req := randomHistory(t, r, space)
		for name, a := range map[string]session.Advisor{"tpe": advisor.NewTPE(advisor.TPEOptions{}), "random": advisor.NewRandom(), "sampler": advisor.NewSampler(advisor.SamplerOptions{})} {
			s1, err1 := a.Propose(context.Background(), req)
			s2, err2 := a.Propose(context.Background(), req)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %v, %v", name, err1, err2)
			}
			if diff := cmp.Diff(s1, s2); diff != "" {
				t.Fatalf("%s, history %d: same request, different proposals (-first +second):\n%s", name, i, diff)
			}
		}
	}
}

func TestTPEStartupExplores(t *testing.T) {
	// Before Startup (2) trials finished, a proposal is exploration only: 3 scalars of the
	// default space, each weight moved ×1.41–×2 or ×0.5–×0.71 (a term that is off may be
	// switched on anywhere), each param by 7.5–15 % of its range, and not the random
	// proposer's draw for the same request.
	space := session.DefaultSpace()
	tpe, rnd := advisor.NewTPE(advisor.TPEOptions{}), advisor.NewRandom()
	base := space.Defaults()
	score := 0.0
	baseline := []session.TrialSummary{{Number: 0, State: session.TrialCompleted, Score: &score, Eligible: true, Config: base.Clone()}}
	same := 0
	for seed := int64(0); seed < 50; seed++ {
		for _, hist := range [][]session.TrialSummary{nil, baseline} {
			req := session.ProposalRequest{Space: space, Base: base, History: hist, Seed: seed}
			s, err := tpe.Propose(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if s.Patch.Len() != 3 {
				t.Errorf("seed %d, n=%d: %d changes, want 3: %v", seed, len(hist), s.Patch.Len(), s.Patch)
			}
			for name, v := range s.Patch.Weights {
				old := base.Weights[name]
				if old == 0 {
					continue
				}
				if f := math.Abs(math.Log(v / old)); f < math.Log(math.Sqrt2)-1e-3 || f > math.Log(2)+1e-9 {
					t.Errorf("seed %d: weight %s %g → %g is a step of ×%.3g, want ×1.41–×2 either way", seed, name, old, v, v/old)
				}
			}
			for name, v := range s.Patch.Params {
				p, _ := space.Param(name)
				if d := math.Abs(v-base.Params[name]) / (p.Max - p.Min); d < 0.075-1e-3 || d > 0.15+1e-9 {
					t.Errorf("seed %d: param %s %g → %g moves %.3f of its range, want 0.075–0.15", seed, name, base.Params[name], v, d)
				}
			}
			r, err := rnd.Propose(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if cmp.Equal(s.Patch, r.Patch) {
				same++
			}
		}
	}
	if same > 0 {
		t.Errorf("%d start-up proposals equal the random proposer's: the two must not share draws", same)
	}
}

// chain builds a history on smallSpace: the baseline (score 0) and then one trial per
// patch, each patching the best eligible configuration so far, with the given scores.
func chain(t *testing.T, space *session.Space, patches []session.Patch, scores []float64) (hist []session.TrialSummary, best session.RewardConfig) {
	t.Helper()
	best = space.Defaults()
	bestScore := 0.0
	zero := 0.0
	hist = []session.TrialSummary{{Number: 0, State: session.TrialCompleted, Score: &zero, Eligible: true, Config: best.Clone()}}
	for i, p := range patches {
		cfg, err := space.Validate(best, p, nil)
		if err != nil {
			t.Fatalf("test patch %d: %v", i, err)
		}
		sc := scores[i]
		hist = append(hist, session.TrialSummary{Number: i + 1, State: session.TrialCompleted, Score: &sc, Eligible: true, Config: cfg})
		if sc > bestScore {
			best, bestScore = cfg.Clone(), sc
		}
	}
	return hist, best
}

func TestTPEEvidenceMoves(t *testing.T) {
	space := smallSpace()
	w := func(kv ...any) session.Patch {
		p := session.Patch{Weights: map[string]float64{}, Params: map[string]float64{}}
		for i := 0; i < len(kv); i += 2 {
			p.Weights[kv[i].(string)] = kv[i+1].(float64)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		patches []session.Patch
		scores  []float64
		check   func(base session.RewardConfig, p session.Patch) string
	}{
		{
			// Doubling a hurt badly: the model turns it around (a below its default of 1),
			// and explores the untouched scalars with the rest of the budget.
			name: "a move that hurt is reflected", patches: []session.Patch{w("a", 2.0)}, scores: []float64{-0.3},
			check: func(base session.RewardConfig, p session.Patch) string {
				if v, ok := p.Weights["a"]; !ok || v >= 1 {
					return fmt.Sprintf("a not moved below 1: %v", p)
				}
				if p.Len() != 4 {
					return fmt.Sprintf("%d changes, want 1 reflection and 3 explorations: %v", p.Len(), p)
				}
				return ""
			},
		},
		{
			name: "a move down that hurt is reflected up", patches: []session.Patch{w("a", 0.5)}, scores: []float64{-0.3},
			check: func(base session.RewardConfig, p session.Patch) string {
				if v, ok := p.Weights["a"]; !ok || v <= 1 {
					return fmt.Sprintf("a not moved above 1: %v", p)
				}
				return ""
			},
		},
		{
			// Doubling a helped and is kept in the base: it is not pushed further (nor back),
			// the proposal explores the other scalars.
			name: "a kept move is not extrapolated", patches: []session.Patch{w("a", 2.0)}, scores: []float64{0.3},
			check: func(base session.RewardConfig, p session.Patch) string {
				if _, ok := p.Weights["a"]; ok {
					return fmt.Sprintf("a moved again: %v", p)
				}
				return ""
			},
		},
		{
			// Two scalars moved together and hurt; b alone then helped. The shared blame on
			// a is still negative and a has not moved in the base: a is reflected.
			name: "blame is shared among a trial's scalars", patches: []session.Patch{w("a", 2.0, "b", -2.0), w("b", -1.5)}, scores: []float64{-0.3, 0.1},
			check: func(base session.RewardConfig, p session.Patch) string {
				if v, ok := p.Weights["a"]; !ok || v >= 1 {
					return fmt.Sprintf("a not moved below 1: %v", p)
				}
				if _, ok := p.Weights["b"]; ok {
					return fmt.Sprintf("b, kept in the base, moved again: %v", p)
				}
				return ""
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hist, base := chain(t, space, tc.patches, tc.scores)
			for seed := int64(0); seed < 30; seed++ {
				s, err := advisor.NewTPE(advisor.TPEOptions{}).Propose(context.Background(), session.ProposalRequest{Space: space, Base: base, History: hist, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				if msg := tc.check(base, s.Patch); msg != "" {
					t.Fatalf("seed %d: %s (rationale %q)", seed, msg, s.Rationale)
				}
			}
		})
	}
}

// smallSpace has an optimum away from its defaults.
func smallSpace() *session.Space {
	return &session.Space{
		Terms: []session.Term{
			{Name: "a", Default: 1, Min: 0.1, Max: 10},
			{Name: "b", Default: -1, Min: -10, Max: -0.1},
			{Name: "c", Default: -0.01, Min: -1, Max: 0, MayBeZero: true},
		},
		Params:     []session.Param{{Name: "p", Default: 0.3, Min: 0, Max: 1}},
		MaxChanges: 4, StepMin: 0.5, StepMax: 2,
	}
}

func TestTPEConcentratesOnGoodRegion(t *testing.T) {
	// 60 finished trials explored weight a and param p across their whole bounds; the score
	// peaks at a = 1.6 and ignores p. After start-up the merged proposals should keep a in
	// the good region (|log(a/1.6)| < log 1.15) far more often than random moves within the
	// same rules do.
	space := smallSpace()
	score := func(c session.RewardConfig) float64 {
		d := math.Log(c.Weights["a"] / 1.6)
		return -d * d
	}
	good := func(c session.RewardConfig) bool {
		return math.Abs(math.Log(c.Weights["a"]/1.6)) < math.Log(1.15)
	}
	tpe, rnd := advisor.NewTPE(advisor.TPEOptions{}), advisor.NewRandom()
	const seeds = 40
	inT, inR := 0, 0
	for seed := int64(0); seed < seeds; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		var hist []session.TrialSummary
		var base session.RewardConfig
		best := math.Inf(-1)
		for i := 0; i < 60; i++ {
			c := space.Defaults()
			c.Weights["a"] = 0.1 * math.Pow(100, r.Float64())
			c.Params["p"] = r.Float64()
			sc := score(c)
			hist = append(hist, session.TrialSummary{Number: i, State: session.TrialCompleted, Score: &sc, Eligible: true, Config: c})
			if sc > best {
				best, base = sc, c
			}
		}
		req := session.ProposalRequest{Space: space, Base: base, History: hist, Seed: seed}
		for _, x := range []struct {
			a  session.Advisor
			in *int
		}{{tpe, &inT}, {rnd, &inR}} {
			s, err := x.a.Propose(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if good(session.Merge(base, s.Patch)) {
				*x.in++
			}
		}
	}
	t.Logf("merged proposal in the good region: tpe %d/%d, random %d/%d", inT, seeds, inR, seeds)
	// Fixed seeds: deterministic. The random count guards the test itself: if random also
	// scored high, the region would be too easy to say anything.
	if inT < 3*seeds/4 || inR > seeds/2 {
		t.Fatalf("merged proposal in the good region: tpe %d/%d (want ≥ %d), random %d/%d (want ≤ %d)", inT, seeds, 3*seeds/4, inR, seeds, seeds/2)
	}
}
