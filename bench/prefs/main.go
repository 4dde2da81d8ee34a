// Command prefs benchmarks people's preferences (issue 23): whole sessions of the real
// engine on sim surfaces with a simulated person who answers the A/B cards by a hidden
// "looks right" utility the score does not include (a hopping penalty), with preferences on
// and off. It reports, per setting, the shipped configuration's noise-free score and its
// hidden utility (medians over surfaces × sessions), the paired differences, and how many
// cards were asked and answered. See README.md.
//
//	prefs [-first 1000] [-surfaces 50] [-reps 3] [-weights 0,0.02] [-workers 2] [-tmp DIR]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"tunebot/advisor"
	"tunebot/bench/internal/memsim"
	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer/sim"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// heldOut is where the reported table starts: the weight is chosen on surfaces below it.
const heldOut = 1000

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("prefs", flag.ContinueOnError)
	first := fs.Int64("first", heldOut, "first surface seed (1–999 to choose the weight, 1000 and up to report)")
	surfaces := fs.Int("surfaces", 50, "number of surfaces")
	reps := fs.Int("reps", 3, "sessions per surface and setting")
	weights := fs.String("weights", "0,"+strconv.FormatFloat(session.DefaultPreferenceWeight, 'g', -1, 64), "session.preferences.weight values; 0 runs with preferences off (no card asked)")
	workers := fs.Int("workers", 2, "sessions run at once")
	tmp := fs.String("tmp", "", "directory for the sessions' stores (default: the system's)")
	lines := fs.String("jsonl", "", "also write one JSON line per session to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var ws []float64
	for _, w := range strings.Split(*weights, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		if err != nil || v < 0 || v > 1 {
			fmt.Fprintf(stderr, "prefs: -weights: %q is not a weight in 0–1\n", w)
			return 2
		}
		ws = append(ws, v)
	}
	if *first < 1 {
		fmt.Fprintln(stderr, "prefs: -first: surface 0 is the demo's; use 1–999 to choose the weight, 1000 and up to report")
		return 2
	}
	res, err := runAll(context.Background(), *first, *surfaces, *reps, ws, *workers, *tmp)
	if err != nil {
		fmt.Fprintln(stderr, "prefs:", err)
		return 1
	}
	if *lines != "" {
		f, err := os.Create(*lines)
		if err != nil {
			fmt.Fprintln(stderr, "prefs:", err)
			return 1
		}
		enc := json.NewEncoder(f)
		for _, r := range res {
			_ = enc.Encode(r)
		}
		f.Close()
	}
	report(stdout, res, ws, *first, *surfaces, *reps)
	return 0
}

// The hidden utility: how much a configuration's gait looks like a hopping exploit. It
// rises as the gait reward and the clearance and action-rate penalties get weaker than the
// defaults and as the clearance target rises; each a softplus of the scalar's position in
// the samplers' unit steps (×2 of a weight, a fifth of a param's range), 0 at the defaults.
// The score never sees it: no metric of the evaluation measures hopping.
type hopTerm struct {
	name   string
	weight bool
	sign   float64 // +1: higher is hoppier; -1: weaker (or lower) is hoppier
	k      float64
}

var hopTerms = []hopTerm{
	{"foot_gait", true, -1, 1.0},
	{"foot_clearance", true, -1, 0.5},
	{"foot_clearance.target_height", false, +1, 0.5},
	{"action_rate_l2", true, -1, 0.5},
}

func softplus(z float64) float64 { return math.Log1p(math.Exp(z)) - math.Ln2 }

// utility is the person's hidden "looks right": minus the hopping, 0 at the defaults.
func utility(sp *session.Space, cfg session.RewardConfig) float64 {
	def := sp.Defaults()
	hop := 0.0
	for _, h := range hopTerms {
		var x float64
		if h.weight {
			t, _ := sp.Term(h.name)
			mag := math.Max(math.Abs(cfg.Weights[h.name]), math.Abs(t.Default)/16) // 0 (off) counts as 4 steps weaker
			x = math.Log2(mag / math.Abs(def.Weights[h.name]))
		} else {
			p, _ := sp.Param(h.name)
			x = (cfg.Params[h.name] - def.Params[h.name]) / (0.2 * (p.Max - p.Min))
		}
		hop += h.k * softplus(h.sign*x)
	}
	return -hop
}

// The simulated person: a card whose two gaits differ by less than tieBelow in utility
// looks alike ("can't tell"); otherwise A is chosen with probability σ(ΔU / temperature).
const (
	tieBelow    = 0.05
	temperature = 0.15
)

// person answers the session's open A/B card before each proposal, as someone who watches
// the clips while the next trial trains would, and hands the proposer the request the engine
// builds once the answer is in (the answer goes through Engine.Prefer, as a click does).
type person struct {
	eng   *session.Engine
	inner session.Advisor
	space *session.Space
	rng   *rand.Rand
}

func (p *person) Propose(ctx context.Context, req session.ProposalRequest) (session.Suggestion, error) {
	s, err := p.eng.Store().Session(ctx, req.SessionID)
	if err != nil {
		return session.Suggestion{}, err
	}
	if card, ok := s.OpenCard(); ok {
		du := utility(p.space, card.AConfig) - utility(p.space, card.BConfig)
		answer := session.AnswerB
		switch {
		case math.Abs(du) < tieBelow:
			answer = session.AnswerTie
		case p.rng.Float64() < 1/(1+math.Exp(-du/temperature)):
			answer = session.AnswerA
		}
		if _, err := p.eng.Prefer(ctx, session.PreferRequest{SessionID: s.ID, Card: card.Seq, Answer: answer,
			By: session.Actor{Platform: "bench", ID: "person"}}); err != nil {
			return session.Suggestion{}, fmt.Errorf("answering card %d: %w", card.Seq, err)
		}
		if s, err = p.eng.Store().Session(ctx, req.SessionID); err != nil {
			return session.Suggestion{}, err
		}
		req.Preferences = nil
		for _, x := range s.Preferences {
			if x.Decided() {
				req.Preferences = append(req.Preferences, x)
			}
		}
	}
	return p.inner.Propose(ctx, req)
}

// result is one whole session.
type result struct {
	Surface  int64   `json:"surface"`
	Rep      int     `json:"rep"`
	Weight   float64 `json:"weight"` // 0: preferences off
	Gain     float64 `json:"gain"`   // noise-free score of the shipped configuration at the top rung (ineligible: at most 0)
	Utility  float64 `json:"utility"`
	Asked    int     `json:"asked"`
	Answered int     `json:"answered"`
	Shipped  int     `json:"shipped"`
}

func runAll(ctx context.Context, first int64, surfaces, reps int, ws []float64, workers int, tmp string) ([]result, error) {
	root, err := os.MkdirTemp(tmp, "tunebot-bench-prefs")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	type job struct {
		seed   int64
		rep    int
		weight float64
	}
	var jobs []job
	for s := first; s < first+int64(surfaces); s++ {
		for rep := range reps {
			for _, w := range ws {
				jobs = append(jobs, job{s, rep, w})
			}
		}
	}
	var (
		mu  sync.Mutex
		out []result
	)
	err = memsim.Each(workers, jobs, func(j job) error {
		r, err := runSession(ctx, filepath.Join(root, fmt.Sprintf("s%d-r%d-w%g", j.seed, j.rep, j.weight)), j.seed, j.rep, j.weight)
		mu.Lock()
		out = append(out, r)
		mu.Unlock()
		return err
	})
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.Surface != y.Surface {
			return x.Surface < y.Surface
		}
		if x.Rep != y.Rep {
			return x.Rep < y.Rep
		}
		return x.Weight < y.Weight
	})
	return out, err
}

// runSession runs one whole automatic session of the real engine (the numeric sampler,
// session defaults) on surface seed, with preferences at weight (0: off), and scores what
// it ships.
func runSession(ctx context.Context, dir string, seed int64, rep int, weight float64) (result, error) {
	r := result{Surface: seed, Rep: rep, Weight: weight}
	surf, err := sim.NewSurface(seed)
	if err != nil {
		return r, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	db, err := store.Open(filepath.Join(dir, "tunebot.db"), store.Options{})
	if err != nil {
		return r, err
	}
	defer db.Close()
	s, err := playSession(ctx, db, dir, surf, seed, rep, weight)
	if err != nil {
		return r, err
	}
	return scoreSession(ctx, db, surf, s, r)
}

// playSession runs the session of runSession in db to its end, the person answering its
// cards, and returns it; one that did not succeed is an error.
func playSession(ctx context.Context, db *store.DB, dir string, surf *sim.Surface, seed int64, rep int, weight float64) (session.Session, error) {
	sp := session.DefaultSpace()
	p := &person{inner: advisor.NewSampler(advisor.SamplerOptions{}), space: sp,
		rng: rand.New(rand.NewPCG(uint64(seed), uint64(rep)+0x9e3779b9))}
	eng, err := session.NewEngine(session.EngineConfig{Store: db, Trainer: memsim.Trainer{Surf: surf, Rep: rep}, Sampler: p,
		Space: sp, SessionsDir: filepath.Join(dir, "sessions")})
	if err != nil {
		return session.Session{}, err
	}
	p.eng = eng
	defer eng.Shutdown(context.WithoutCancel(ctx))
	st := session.DefaultSettings()
	st.Fallback = true
	st.Seed = seed*10 + int64(rep) // the session seed of bench/sampler, so "off" is its tunebot row
	memsim.FixFinalSeeds(&st)
	st.Preferences.Weight = weight
	if weight == 0 {
		st.Preferences.Ask = session.AskOff
	}
	s, err := eng.Start(ctx, st, session.System)
	if err != nil {
		return s, err
	}
	if s, err = eng.Wait(ctx, s.ID); err != nil {
		return s, err
	}
	if s.State != session.StateSucceeded {
		return s, fmt.Errorf("surface %d rep %d weight %g: session ended %s: %s", seed, rep, weight, s.State, s.Message)
	}
	return s, nil
}

// scoreSession fills r from session s: the cards asked and answered, the trial it ships,
// and that configuration's noise-free gain at the top rung and its utility.
func scoreSession(ctx context.Context, db *store.DB, surf *sim.Surface, s session.Session, r result) (result, error) {
	for _, x := range s.Preferences {
		if x.Asked {
			r.Asked++
		}
		if x.Decided() {
			r.Answered++
		}
	}
	trials, err := db.Trials(ctx, s.ID)
	if err != nil {
		return r, err
	}
	ref, shipped, err := memsim.Shipped(ctx, db, s, trials)
	if err != nil {
		return r, err
	}
	r.Shipped = ref.Number
	st := s.Settings
	gain, ok := surf.Gain(shipped, st.Rungs[len(st.Rungs)-1], st.Objective, st.Floors)
	if !ok {
		gain = math.Min(gain, 0)
	}
	r.Gain, r.Utility = gain, utility(session.DefaultSpace(), shipped)
	return r, nil
}

// report prints, per weight, the medians of the shipped configuration's score and utility,
// the cards asked and answered, and against preferences off the paired differences with a
// bootstrap 95 % interval of their mean.
func report(w io.Writer, res []result, ws []float64, first int64, surfaces, reps int) {
	fmt.Fprintf(w, "surfaces %d..%d, %d sessions each per setting; score: noise-free gain of the shipped configuration at the top rung; utility: the hidden \"looks right\" (0 at the defaults, higher is better)\n",
		first, first+int64(surfaces)-1, reps)
	by := map[float64][]result{}
	for _, r := range res {
		by[r.Weight] = append(by[r.Weight], r)
	}
	fmt.Fprintln(w, "| preferences | sessions | median score | median utility | mean utility | 10th pct utility | ships a hopping gait | cards asked (mean, max) | answered (mean) | Δ score vs off (mean, 95 % CI) | Δ utility vs off (mean, 95 % CI) | utility better / worse |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	off := index(by[0])
	for _, wt := range ws {
		rs := by[wt]
		if len(rs) == 0 {
			continue
		}
		var gains, utils, asked, answered []float64
		maxAsked := 0
		var dg, du []float64
		better, worse := 0, 0
		for _, r := range rs {
			gains, utils = append(gains, r.Gain), append(utils, r.Utility)
			asked, answered = append(asked, float64(r.Asked)), append(answered, float64(r.Answered))
			maxAsked = max(maxAsked, r.Asked)
			if o, ok := off[key{r.Surface, r.Rep}]; ok && wt != 0 {
				dg, du = append(dg, r.Gain-o.Gain), append(du, r.Utility-o.Utility)
				switch {
				case r.Utility > o.Utility+1e-9:
					better++
				case r.Utility < o.Utility-1e-9:
					worse++
				}
			}
		}
		name := "off"
		if wt > 0 {
			name = fmt.Sprintf("on, weight %g", wt)
		}
		paired := func(xs []float64) string {
			if len(xs) == 0 {
				return "—"
			}
			lo, hi := bootstrap(xs)
			return fmt.Sprintf("%+.4f (%+.4f … %+.4f)", mean(xs), lo, hi)
		}
		bw := "—"
		if wt > 0 {
			bw = fmt.Sprintf("%d / %d", better, worse)
		}
		hopping := 0
		for _, u := range utils {
			if u < hoppingBelow {
				hopping++
			}
		}
		fmt.Fprintf(w, "| %s | %d | %+.4f | %+.3f | %+.3f | %+.3f | %.0f %% | %.1f, %d | %.1f | %s | %s | %s |\n", name, len(rs), median(gains), median(utils), mean(utils),
			quantile(utils, 0.1), 100*float64(hopping)/float64(len(rs)), mean(asked), maxAsked, mean(answered), paired(dg), paired(du), bw)
	}
}

type key struct {
	surface int64
	rep     int
}

func index(rs []result) map[key]result {
	out := map[key]result{}
	for _, r := range rs {
		out[key{r.Surface, r.Rep}] = r
	}
	return out
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}

// hoppingBelow is the utility under which a shipped gait hops: the gait reward one step (×½)
// weaker than the default costs 0.62.
const hoppingBelow = -0.5

func median(xs []float64) float64 { return quantile(xs, 0.5) }

// quantile is the q-quantile of xs, interpolated between the closest ranks.
func quantile(xs []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// bootstrap is a 95 % percentile interval of the mean of xs, from 2000 resamples with a
// fixed seed (the table is the same on every run).
func bootstrap(xs []float64) (lo, hi float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	means := make([]float64, 2000)
	for i := range means {
		s := 0.0
		for range xs {
			s += xs[rng.IntN(len(xs))]
		}
		means[i] = s / float64(len(xs))
	}
	sort.Float64s(means)
	return means[len(means)*25/1000], means[len(means)*975/1000]
}
