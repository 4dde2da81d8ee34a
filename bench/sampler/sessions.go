package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"tunebot/advisor"
	"tunebot/bench/internal/memsim"
	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer/sim"
)

// The held-out discipline of README.md: methods and settings are tuned on surface seeds
// below heldOut only; the reported table uses heldOut and up.
const heldOut = 1000

// sessionResult is one whole session, one JSON line.
type sessionResult struct {
	Method     string  `json:"method"`
	Family     string  `json:"family"`
	Surface    int64   `json:"surface"`
	Rep        int     `json:"rep"`
	Gain       float64 `json:"gain"`       // noise-free gain of the shipped configuration at the top rung
	Eligible   bool    `json:"eligible"`   // whether it passes the gates, noise-free
	Attainable float64 `json:"attainable"` // the oracle's gain
	Fraction   float64 `json:"fraction"`   // Gain / Attainable (a shipped configuration that fails a gate counts min(gain, 0))
	Trials     int     `json:"trials"`     // rung-0 trials run (fewer than trial_count: stopped early)
	State      string  `json:"state"`
	// Scores are the rung-0 scores in trial order (null: failed), for reading a session.
	Scores []*float64 `json:"scores"`
	// Truth is each rung-0 configuration's noise-free gain at the top rung, in the same order.
	Truth []float64 `json:"truth"`
	// Eligible0 says whether each rung-0 trial passed the gates (as measured, with its noise).
	Eligible0 []bool `json:"eligible0"`
	// Shipped is the trial number of the configuration the session shipped.
	Shipped int `json:"shipped"`
	// First is, in the warm row, the share of the first session the second built on.
	First *float64 `json:"first,omitempty"`
	// TrialCount is the session's trial_count; ModelStop is set when its model ended rung 0
	// early (session.Session.Stopped; otherwise an early stop was the patience counter's).
	TrialCount int                `json:"trial_count,omitempty"`
	ModelStop  *session.ModelStop `json:"model_stop,omitempty"`
}

// method is one contender: the proposer, and the reward space its patches are checked
// against (the session's rules for tunebot's samplers; the box for random and Optuna).
type method struct {
	name  string
	space *session.Space
	adv   func(surf *sim.Surface) session.Advisor
}

func methods(name string, opts advisor.SamplerOptions) (method, error) {
	switch name {
	case "tunebot":
		return method{name: name, space: session.DefaultSpace(), adv: func(*sim.Surface) session.Advisor { return advisor.NewSampler(opts) }}, nil
	case "old":
		return method{name: name, space: session.DefaultSpace(), adv: func(*sim.Surface) session.Advisor { return advisor.NewTPE(advisor.TPEOptions{}) }}, nil
	case "random":
		return method{name: name, space: boxSpace(), adv: func(*sim.Surface) session.Advisor { return &boxRandom{} }}, nil
	}
	return method{}, fmt.Errorf("unknown method %q (tunebot, old, random; optuna runs through optuna_bench.py)", name)
}

// boxSpace is the default space with the rules relaxed for the whole-box searches: every
// scalar may change at once, and a weight may move anywhere within its 0.5×–2× box around
// the default from anywhere else in it (a step of 0.25×–4×).
func boxSpace() *session.Space {
	sp := session.DefaultSpace()
	sp.MaxChanges = len(sp.Terms) + len(sp.Params)
	sp.StepMin, sp.StepMax = 0.25, 4
	return sp
}

// boxDim is one scalar's 0.5×–2× box around its default, cut to its bounds; weights are
// drawn log-uniformly, params uniformly.
type boxDim struct {
	name   string
	weight bool
	lo, hi float64 // value range (weights: magnitudes)
	sign   float64
}

func boxDims(sp *session.Space) []boxDim {
	var out []boxDim
	for _, t := range sp.Terms {
		if t.Default == 0 {
			continue // 0.5×–2× of 0 is 0: a term off by default stays off
		}
		m := math.Abs(t.Default)
		lo := math.Max(m*0.5, math.Min(math.Abs(t.Min), math.Abs(t.Max)))
		hi := math.Min(m*2, math.Max(math.Abs(t.Min), math.Abs(t.Max)))
		out = append(out, boxDim{name: t.Name, weight: true, lo: lo, hi: hi, sign: math.Copysign(1, t.Default)})
	}
	for _, p := range sp.Params {
		out = append(out, boxDim{name: p.Name, lo: math.Max(p.Default*0.5, p.Min), hi: math.Min(p.Default*2, p.Max), sign: 1})
	}
	return out
}

// patch turns box values (weights as magnitudes) into a patch of every scalar.
func boxPatch(dims []boxDim, x map[string]float64) session.Patch {
	p := session.Patch{Weights: map[string]float64{}, Params: map[string]float64{}}
	for _, d := range dims {
		if d.weight {
			p.Weights[d.name] = d.sign * x[d.name]
		} else {
			p.Params[d.name] = x[d.name]
		}
	}
	return p
}

// boxRandom is random search over the box: every proposal a uniform draw of every scalar.
type boxRandom struct{}

func (boxRandom) Propose(ctx context.Context, req session.ProposalRequest) (session.Suggestion, error) {
	dims := boxDims(req.Space)
	rng := rand.New(rand.NewPCG(uint64(req.Seed), uint64(len(req.History))))
	for try := 0; try < 100; try++ {
		x := map[string]float64{}
		for _, d := range dims {
			if d.weight {
				x[d.name] = math.Exp(math.Log(d.lo) + rng.Float64()*(math.Log(d.hi)-math.Log(d.lo)))
			} else {
				x[d.name] = d.lo + rng.Float64()*(d.hi-d.lo)
			}
		}
		p := boxPatch(dims, x)
		if _, err := req.Space.Validate(req.Base, p, req.Tried); err == nil {
			return session.Suggestion{Patch: p, Rationale: "random point of the box", Source: session.SourceSampler}, nil
		}
	}
	return session.Suggestion{}, errors.New("random: no valid point of the box")
}

// playSession runs one automatic session of the real engine (proposer adv, the sim trainer
// in-process on surf, repetition rep's noise) in a store under dir, removed afterwards, and
// returns the session, its trials, and what it ships when it succeeded (memsim.Shipped).
func playSession(ctx context.Context, dir string, m method, adv session.Advisor, surf *sim.Surface, rep int, st session.Settings, noiseFree bool) (session.Session, []session.Trial, session.Preset, error) {
	var none session.Preset
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return session.Session{}, nil, none, err
	}
	defer os.RemoveAll(dir)
	db, err := store.Open(filepath.Join(dir, "tunebot.db"), store.Options{})
	if err != nil {
		return session.Session{}, nil, none, err
	}
	defer db.Close()
	st.Seed = surf.Seed()*10 + int64(rep)
	return playIn(ctx, db, dir, m, adv, memsim.Trainer{Surf: surf, Rep: rep, NoiseFree: noiseFree}, st)
}

// playIn runs one automatic session of the real engine in db (the session seed is st's)
// and returns it as playSession does.
func playIn(ctx context.Context, db *store.DB, dir string, m method, adv session.Advisor, tr memsim.Trainer, st session.Settings) (session.Session, []session.Trial, session.Preset, error) {
	return memsim.Play(ctx, db, dir, m.space, adv, tr, st)
}

// runSession runs one whole session with the real engine (proposals, rung 0, successive
// halving, final re-evaluation, the preset) on surf and scores what it ships.
func runSession(ctx context.Context, dir string, m method, adv session.Advisor, surf *sim.Surface, rep int, settings session.Settings, attainable float64, noiseFree bool) (sessionResult, error) {
	s, trials, p, err := playSession(ctx, dir, m, adv, surf, rep, settings, noiseFree)
	if err != nil {
		return sessionResult{}, err
	}
	return scoreSession(m, surf, rep, settings, attainable, s, trials, p)
}

// scoreSession scores what session s shipped (p) on surf against the attainable gain.
func scoreSession(m method, surf *sim.Surface, rep int, settings session.Settings, attainable float64, s session.Session, trials []session.Trial, p session.Preset) (sessionResult, error) {
	r := sessionResult{Method: m.name, Family: string(surf.Family()), Surface: surf.Seed(), Rep: rep, Attainable: attainable, State: string(s.State),
		TrialCount: settings.TrialCount, ModelStop: s.Stopped}
	for _, t := range trials {
		if t.Rung == 0 {
			r.Trials++
			var sc *float64
			if t.Score != nil {
				v := t.Score.Total
				sc = &v
			}
			g, _ := surf.Gain(t.RewardConfig, settings.Rungs[len(settings.Rungs)-1], settings.Objective, settings.Floors)
			r.Scores, r.Truth = append(r.Scores, sc), append(r.Truth, g)
			r.Eligible0 = append(r.Eligible0, t.Eligible())
		}
	}
	if s.State != session.StateSucceeded {
		return r, fmt.Errorf("surface %d rep %d: session ended %s: %s", surf.Seed(), rep, s.State, s.Message)
	}
	r.Shipped = p.Trial.Number
	top := settings.Rungs[len(settings.Rungs)-1]
	r.Gain, r.Eligible = surf.Gain(p.Config, top, settings.Objective, settings.Floors)
	g := r.Gain
	if !r.Eligible {
		g = math.Min(g, 0)
	}
	r.Fraction = g / attainable
	return r, nil
}

// oracleCache memoises the oracle per surface within one run.
type oracleCache struct {
	mu sync.Mutex
	m  map[*sim.Surface]float64
}

func (c *oracleCache) get(surf *sim.Surface, st session.Settings) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g, ok := c.m[surf]; ok {
		return g
	}
	_, g := surf.Oracle(session.DefaultSpace(), st.Rungs[len(st.Rungs)-1], st.Objective, st.Floors)
	if c.m == nil {
		c.m = map[*sim.Surface]float64{}
	}
	c.m[surf] = g
	return g
}

// benchSettings are the session defaults the benchmark runs with; -patience and
// -eval-seeds override them to measure other defaults while tuning.
func benchSettings(fs *flag.FlagSet) func() (session.Settings, error) {
	patience := fs.Int("patience", 0, "early-stop patience (0: the session default)")
	evalSeeds := fs.Int("eval-seeds", 0, "rung-0 evaluation seeds (0: the session default)")
	changes := fs.Int("sampler-max-changes", -1, "the session's sampler_max_changes (-1: the session default; 0: the space's 4)")
	rung0 := fs.Int("rung0", 0, "diagnostic: rung 0's iterations (0: the session default)")
	trials := fs.Int("trials", 0, "diagnostic: the session's trial_count (0: the session default)")
	return func() (session.Settings, error) {
		st := session.DefaultSettings()
		if *rung0 > 0 {
			st.Rungs[0] = *rung0
			st.Rungs[1], st.Rungs[2] = max(st.Rungs[1], *rung0), max(st.Rungs[2], *rung0)
		}
		if *trials > 0 {
			st.TrialCount = *trials
			st.Promote = nil
		}
		if *changes >= 0 {
			st.SamplerMaxChanges = *changes
		}
		if *patience > 0 {
			st.Patience = *patience
		}
		if *evalSeeds > 0 {
			st.EvalSeeds = nil
			for i := 0; i < *evalSeeds; i++ {
				st.EvalSeeds = append(st.EvalSeeds, i)
			}
		}
		st.Normalize()
		return st, st.Validate()
	}
}

// cmdSessions runs -reps whole sessions on each of -surfaces surfaces from -first with
// one method, -workers at a time, and prints one JSON line per session.
func cmdSessions(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sessions", flag.ContinueOnError)
	name := fs.String("method", "tunebot", "tunebot, old or random")
	first := fs.Int64("first", heldOut, "first surface seed (below 1000 to tune, 1000 and up to report)")
	surfaces := fs.Int("surfaces", 50, "number of surfaces")
	reps := fs.Int("reps", 3, "sessions per surface")
	workers := fs.Int("workers", 2, "sessions run at once")
	tmp := fs.String("tmp", "", "directory for the sessions' stores (default: the system's)")
	label := fs.String("label", "", "the method's name in the results (default: -method)")
	family := familyFlag(fs)
	noiseFree := fs.Bool("noise-free", false, "diagnostic: evaluate the noise-free surface (how much of the gap is the noise's; never in the reported table)")
	settings := benchSettings(fs)
	var opts advisor.SamplerOptions
	samplerFlags(fs, &opts)
	flat := fs.Bool("no-declarations", false, "diagnostic: tunebot's space without what each scalar acts on (a flat prior)")
	var warm warmOptions
	warmFlags(fs, &warm)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *first < 1 {
		return fmt.Errorf("-first %d: surface 0 is the demo's, which the samplers were developed on; use 1–999 to tune, 1000 and up to report", *first)
	}
	st, err := settings()
	if err != nil {
		return err
	}
	m, err := methods(*name, opts)
	if err != nil {
		return err
	}
	warm.coldName = m.name
	if *label != "" {
		m.name = *label
	} else if warm.on {
		m.name += "-warm"
	}
	if *flat {
		m.space = undeclared(m.space)
	}
	root, err := os.MkdirTemp(*tmp, "tunebot-bench-sessions")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	type job struct {
		surf *sim.Surface
		rep  int
	}
	var jobs []job
	for s := *first; s < *first+int64(*surfaces); s++ {
		surf, err := sim.NewFamilySurface(*family, s)
		if err != nil {
			return err
		}
		for rep := 0; rep < *reps; rep++ {
			jobs = append(jobs, job{surf, rep})
		}
	}
	var cache oracleCache
	ctx := context.Background()
	return memsim.Parallel(*workers, jobs, stdout, func(j job) ([]sessionResult, error) {
		dir := filepath.Join(root, fmt.Sprintf("s%d-r%d", j.surf.Seed(), j.rep))
		if warm.on {
			return warm.runWarm(ctx, dir, m, m.adv(j.surf), j.surf, j.rep, st, cache.get(j.surf, st), *noiseFree)
		}
		r, err := runSession(ctx, dir, m, m.adv(j.surf), j.surf, j.rep, st, cache.get(j.surf, st), *noiseFree)
		return []sessionResult{r}, err
	})
}

// optunaBridge is the proposer of an Optuna session: every proposal is asked of
// optuna_sessions.py over the serve pipe, with every finished rung-0 trial so far (its
// rung-0 score and whether it passed the gates; a failed one without a score). In a warm
// run the same bridge, and so the same Optuna study, proposes for the second session too.
type optunaBridge struct {
	dims []boxDim
	enc  *json.Encoder
	dec  *json.Decoder
	// offset is added to the scores of a second session (warm): its scores are relative to
	// its own baseline, the first session's best, whose score in the first session this is,
	// so that the study goes on with one objective.
	offset float64
}

type bridgeTrial struct {
	Params   map[string]float64 `json:"params"`
	Score    *float64           `json:"score"` // nil: the trial failed
	Eligible bool               `json:"eligible"`
}

type bridgeMsg struct {
	Dims   []boxDim       `json:"dims,omitempty"`
	Trials []bridgeTrial  `json:"trials,omitempty"`
	Result *sessionResult `json:"result,omitempty"`
}

func (b *optunaBridge) Propose(ctx context.Context, req session.ProposalRequest) (session.Suggestion, error) {
	msg := bridgeMsg{Trials: []bridgeTrial{}}
	for _, h := range req.History {
		t := bridgeTrial{Params: map[string]float64{}, Eligible: h.Eligible}
		for _, d := range b.dims {
			x := h.Config.Params[d.name]
			if d.weight {
				x = math.Abs(h.Config.Weights[d.name])
			}
			// The session keeps 4 significant digits, which may put a value at the box's
			// edge just outside it; Optuna refuses a trial outside its distributions.
			t.Params[d.name] = math.Min(math.Max(x, d.lo), d.hi)
		}
		if h.Score != nil && h.State == session.TrialCompleted {
			v := *h.Score + b.offset
			t.Score = &v
		}
		msg.Trials = append(msg.Trials, t)
	}
	if err := b.enc.Encode(msg); err != nil {
		return session.Suggestion{}, err
	}
	var ask struct {
		Params map[string]float64 `json:"params"`
	}
	if err := b.dec.Decode(&ask); err != nil {
		return session.Suggestion{}, fmt.Errorf("reading Optuna's suggestion: %w", err)
	}
	if err := checkInBox(b.dims, ask.Params); err != nil {
		return session.Suggestion{}, fmt.Errorf("checking Optuna's suggestion: %w", err)
	}
	return session.Suggestion{Patch: boxPatch(b.dims, ask.Params), Rationale: "optuna", Source: session.SourceSampler}, nil
}

// checkInBox says which scalar of a point of the box is missing or outside it: a missing
// one would otherwise become a weight of 0 (the term off) or a param of 0, a proposal the
// peer never made.
func checkInBox(dims []boxDim, x map[string]float64) error {
	for _, d := range dims {
		v, ok := x[d.name]
		switch {
		case !ok:
			return fmt.Errorf("%s is missing", d.name)
		case !(v >= d.lo && v <= d.hi): // NaN too
			return fmt.Errorf("%s = %g is outside the box %g–%g", d.name, v, d.lo, d.hi)
		}
	}
	return nil
}

// startScore is the rung-0 score of the trial a second session starts from: the first
// session's best (what it shipped), 0 when it has none.
func startScore(s session.Session, trials []session.Trial) float64 {
	for _, t := range trials {
		if t.Rung == 0 && t.Number == s.BestTrial && t.Score != nil {
			return t.Score.Total
		}
	}
	return 0
}

// MarshalJSON gives optuna_sessions.py a box dimension: weights as magnitudes on a log scale.
func (d boxDim) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"name": d.name, "low": d.lo, "high": d.hi, "log": d.weight})
}

// cmdOptunaSession runs one whole session whose proposals come from optuna_sessions.py over
// stdin and stdout (see optunaBridge), and ends with the session's result. With -warm it
// runs the first session, sends its result, then runs a second that builds on it (the warm
// row's), proposed by the same study, and ends with the second's result.
func cmdOptunaSession(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("optuna-session", flag.ContinueOnError)
	seed := fs.Int64("surface", heldOut, "surface seed")
	rep := fs.Int("rep", 0, "repetition")
	tmp := fs.String("tmp", "", "directory for the session's store (default: the system's)")
	family := familyFlag(fs)
	settings := benchSettings(fs)
	var warm warmOptions
	warmFlags(fs, &warm)
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := settings()
	if err != nil {
		return err
	}
	surf, err := sim.NewFamilySurface(*family, *seed)
	if err != nil {
		return err
	}
	if *seed < 1 {
		return fmt.Errorf("-surface %d: use 1–999 to tune, 1000 and up to report", *seed)
	}
	sp := boxSpace()
	b := &optunaBridge{dims: boxDims(sp), enc: json.NewEncoder(stdout), dec: json.NewDecoder(stdin)}
	if err := b.enc.Encode(bridgeMsg{Dims: b.dims}); err != nil {
		return err
	}
	root, err := os.MkdirTemp(*tmp, "tunebot-bench-optuna")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	var cache oracleCache
	m := method{name: "optuna", space: sp, adv: func(*sim.Surface) session.Advisor { return b }}
	rs := make([]sessionResult, 1)
	if warm.on {
		// The first session's result goes out as soon as it ends, so that the peer tells the
		// second session's trials as a new session of the same study.
		warm.withFirst, warm.coldName, m.name = false, m.name, m.name+"-warm"
		warm.between = func(r1 sessionResult, s1 session.Session, trials1 []session.Trial) error {
			b.offset = startScore(s1, trials1)
			return b.enc.Encode(bridgeMsg{Result: &r1})
		}
		rs, err = warm.runWarm(context.Background(), root, m, b, surf, *rep, st, cache.get(surf, st), false)
	} else {
		rs[0], err = runSession(context.Background(), root, m, b, surf, *rep, st, cache.get(surf, st), false)
	}
	if err != nil {
		return err
	}
	for i := range rs {
		if err := b.enc.Encode(bridgeMsg{Result: &rs[i]}); err != nil {
			return err
		}
	}
	return nil
}

// familyFlag is the -family flag: the family of sim surfaces a command runs on.
func familyFlag(fs *flag.FlagSet) *sim.Family {
	f := sim.FamilyGeneric
	fs.Func("family", "surface family: generic (default), domain, coupled or separable", func(v string) error {
		fam, err := sim.ParseFamily(v)
		f = fam
		return err
	})
	return &f
}

// undeclared is sp without the declarations of what each scalar acts on.
func undeclared(sp *session.Space) *session.Space {
	out := *sp
	out.Terms = append([]session.Term(nil), sp.Terms...)
	out.Params = append([]session.Param(nil), sp.Params...)
	for i := range out.Terms {
		out.Terms[i].Acts = nil
	}
	for i := range out.Params {
		out.Params[i].Acts, out.Params[i].Lowers = nil, ""
	}
	return &out
}

// samplerFlags registers the sampler's tuning knobs (advisor.SamplerOptions), for surfaces
// below 1000 only: zero values take the sampler's defaults.
func samplerFlags(fs *flag.FlagSet, opts *advisor.SamplerOptions) {
	fs.Float64Var(&opts.Prior.DeclaredSD, "declared-sd", 0, "tunebot: SamplerPrior.DeclaredSD")
	fs.Float64Var(&opts.Prior.DeclaredMean, "declared-mean", 0, "tunebot: SamplerPrior.DeclaredMean")
	fs.Float64Var(&opts.Prior.DeclaredCurvMean, "declared-curv-mean", 0, "tunebot: SamplerPrior.DeclaredCurvMean")
	fs.Float64Var(&opts.Prior.UndeclaredCurvMean, "undeclared-curv-mean", 0, "tunebot: SamplerPrior.UndeclaredCurvMean (0: none, the default; 0.02 was the prior before Search V)")
	fs.Float64Var(&opts.Prior.DeclaredCurvSD, "declared-curv-sd", 0, "tunebot: SamplerPrior.DeclaredCurvSD")
	fs.Float64Var(&opts.Prior.WeakSD, "weak-sd", 0, "tunebot: SamplerPrior.WeakSD")
	fs.Float64Var(&opts.Prior.WeakCurvSD, "weak-curv-sd", 0, "tunebot: SamplerPrior.WeakCurvSD")
	fs.Float64Var(&opts.Prior.TrackSD, "track-sd", 0, "tunebot: SamplerPrior.TrackSD")
	fs.Float64Var(&opts.Prior.TrackMean, "track-mean", 0, "tunebot: SamplerPrior.TrackMean")
	fs.Float64Var(&opts.Prior.FallScale, "fall-scale", 0, "tunebot: SamplerPrior.FallScale")
	fs.Float64Var(&opts.Prior.NoiseFloor, "noise-floor", 0, "tunebot: SamplerPrior.NoiseFloor")
	fs.Float64Var(&opts.Prior.HingeSD, "hinge-sd", 0, "tunebot: SamplerPrior.HingeSD (0: no hinge, the default; 0.05 was measured)")
	fs.BoolVar(&opts.NoOutlook, "no-model-stop", false, "tunebot: SamplerOptions.NoOutlook (stop by the patience counter, not the model)")
	fs.Float64Var(&opts.ParamStep, "param-step", 0, "tunebot: SamplerOptions.ParamStep (0: its default)")
	fs.Float64Var(&opts.WeightStep, "weight-step", 0, "tunebot: SamplerOptions.WeightStep (0: its default)")
	fs.IntVar(&opts.ExploitAfter, "exploit-after", 0, "tunebot: SamplerOptions.ExploitAfter")
	fs.IntVar(&opts.MaxChanges, "max-changes", 0, "tunebot: SamplerOptions.MaxChanges (0: the space's)")
	fs.Float64Var(&opts.Beta, "beta", 0, "tunebot: SamplerOptions.Beta")
	fs.Float64Var(&opts.MinPass, "min-pass", 0, "tunebot: SamplerOptions.MinPass")
	fs.IntVar(&opts.Candidates, "candidates", 0, "tunebot: SamplerOptions.Candidates")
	fs.IntVar(&opts.Draws, "draws", 0, "tunebot: SamplerOptions.Draws")
	fs.Float64Var(&opts.RadiusStart, "radius", 0, "tunebot: SamplerOptions.RadiusStart")
	fs.IntVar(&opts.RadiusFails, "radius-fails", 0, "tunebot: SamplerOptions.RadiusFails")
	fs.Float64Var(&opts.Across, "across", 0, "tunebot: SamplerOptions.Across")
	fs.IntVar(&opts.Ascents, "ascents", 0, "tunebot: SamplerOptions.Ascents")
	fs.Float64Var(&opts.MoveCost, "move-cost", 0, "tunebot: SamplerOptions.MoveCost")
	fs.BoolVar(&opts.Prior.GP, "gp", false, "tunebot: SamplerPrior.GP (the residual Gaussian process)")
	fs.Float64Var(&opts.Prior.GPAmp, "gp-amp", 0, "tunebot: SamplerPrior.GPAmp")
	fs.Float64Var(&opts.Prior.GPLength, "gp-length", 0, "tunebot: SamplerPrior.GPLength")
	fs.Float64Var(&opts.Prior.LevelSD, "level-sd", 0, "tunebot: SamplerPrior.LevelSD")
	fs.IntVar(&opts.Undo, "undo", 0, "tunebot: SamplerOptions.Undo (negative: no undo candidates)")
	fs.IntVar(&opts.Wide, "wide", 0, "tunebot: SamplerOptions.Wide (negative: no space-filling candidates)")
	fs.IntVar(&opts.Edges, "edges", 0, "tunebot: SamplerOptions.Edges (0: no edge candidates)")
	fs.Float64Var(&opts.Tie, "tie", 0, "tunebot: SamplerOptions.Tie (0: off)")
	fs.Float64Var(&opts.Screen, "screen", 0, "tunebot: SamplerOptions.Screen, the screen's share of the trials (0: its default; negative: none)")
	fs.Float64Var(&opts.ScreenPass, "screen-pass", 0, "tunebot: SamplerOptions.ScreenPass (0: MinPass)")
	fs.Float64Var(&opts.NearBound, "near-bound", 0, "tunebot: SamplerOptions.NearBound (0: its default; negative: never slow)")
	fs.Float64Var(&opts.CarryCost, "carry-cost", 0, "tunebot: SamplerOptions.CarryCost (negative: none)")
}
