package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"sort"

	"tunebot/advisor"
	"tunebot/session"
	"tunebot/trainer/sim"
)

// cmdCalibrate checks the sampler's model against what happened (a diagnostic, never in the
// table): it runs tunebot sessions and, for each proposed rung-0 trial, compares what the
// model fitted to the trials before it predicted (score ± sd, probability of passing the
// gates) with the trial's measured score and eligibility.
func cmdCalibrate(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	d := diagnosticFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	var zs, briers []float64
	var predPass, actPass float64
	var n int
	err := d.each(func(seed int64, surf *sim.Surface, st session.Settings) error {
		s := advisor.NewSampler(d.opts)
		m := method{name: "tunebot", space: session.DefaultSpace()}
		trials, err := sessionTrials(context.Background(), d.tmp, m, s, surf, st)
		if err != nil {
			return err
		}
		var hist []session.TrialSummary
		for _, t := range trials {
			if t.Rung != 0 {
				continue
			}
			if len(hist) > 0 && t.Score != nil {
				req := session.ProposalRequest{Space: m.space, Objective: st.Objective, Floors: st.Floors, History: hist, Base: t.RewardConfig}
				if p, ok := s.Predict(req, t.RewardConfig); ok {
					z := (t.Score.Total - p.Score) / math.Max(p.MeasuredSD, 1e-6)
					zs = append(zs, z)
					act := 0.0
					if t.Eligible() {
						act = 1
					}
					briers = append(briers, (p.Pass-act)*(p.Pass-act))
					predPass += p.Pass
					actPass += act
					n++
					g, _ := surf.Gain(t.RewardConfig, st.Rungs[len(st.Rungs)-1], st.Objective, st.Floors)
					fmt.Fprintf(stdout, "surface %d trial %2d: predicted %+.3f ± %.3f (measured ± %.3f) pass %.2f, measured %+.3f eligible %v %q (z %+.1f), true gain at the top rung %+.3f: %s\n",
						seed, t.Number, p.Score, p.SD, p.MeasuredSD, p.Pass, t.Score.Total, t.Eligible(), t.Score.Reasons, z, g, diffWords(m.space, trials[0].RewardConfig, t.RewardConfig))
				}
			}
			hist = append(hist, session.SummaryOf(t))
		}
		return nil
	})
	if err != nil {
		return err
	}
	mz, sz := session.MeanStd(zs)
	mb, _ := session.MeanStd(briers)
	fmt.Fprintf(stdout, "%d predictions: score z mean %+.2f sd %.2f (1 when calibrated); pass predicted %.0f%% vs measured %.0f%%, Brier %.3f\n",
		n, mz, sz, 100*predPass/float64(n), 100*actPass/float64(n), mb)
	return nil
}

// diagnostic is what calibrate and learned share: a family's tuning surfaces, where their
// sessions' stores go, the session settings and the sampler's options.
type diagnostic struct {
	first    *int64
	surfaces *int
	family   *sim.Family
	tmp      string
	settings func() (session.Settings, error)
	opts     advisor.SamplerOptions
}

func diagnosticFlags(fs *flag.FlagSet) *diagnostic {
	d := &diagnostic{
		first:    fs.Int64("first", 1, "first surface seed (below 1000)"),
		surfaces: fs.Int("surfaces", 10, "number of surfaces"),
		family:   familyFlag(fs),
	}
	fs.StringVar(&d.tmp, "tmp", "", "directory for the sessions' stores")
	d.settings = benchSettings(fs)
	samplerFlags(fs, &d.opts)
	return d
}

// each reads the settings (after the flags are parsed) and calls f on every surface.
func (d *diagnostic) each(f func(seed int64, surf *sim.Surface, st session.Settings) error) error {
	st, err := d.settings()
	if err != nil {
		return err
	}
	for seed := *d.first; seed < *d.first+int64(*d.surfaces); seed++ {
		surf, err := sim.NewFamilySurface(*d.family, seed)
		if err != nil {
			return err
		}
		if err := f(seed, surf, st); err != nil {
			return err
		}
	}
	return nil
}

// sessionTrials runs one tunebot session (playSession) in a store under tmp and returns
// its trials.
func sessionTrials(ctx context.Context, tmp string, m method, adv session.Advisor, surf *sim.Surface, st session.Settings) ([]session.Trial, error) {
	dir, err := os.MkdirTemp(tmp, "tunebot-sampler")
	if err != nil {
		return nil, err
	}
	_, trials, _, err := playSession(ctx, dir, m, adv, surf, 0, st, false)
	return trials, err
}

// diffWords lists c's changes from base, a weight as its factor, a param as its new value.
func diffWords(sp *session.Space, base, c session.RewardConfig) string {
	var out string
	for _, ch := range sp.Diff(base, c) {
		if out != "" {
			out += " "
		}
		if ch.Kind == "weight" {
			out += fmt.Sprintf("%s×%.2f", ch.Name, ch.Factor())
		} else {
			out += fmt.Sprintf("%s=%.3g", ch.Name, ch.New)
		}
	}
	return out
}

// cmdLearned is a diagnostic (never in the table): after each whole session, how well the
// model fitted to all of its rung-0 trials knows the single moves from the session's last
// base: the share of moves whose sign of gain it gets right (among moves that change the
// noise-free rung-0 score by more than 0.005), and the correlation of predicted and true gains.
func cmdLearned(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("learned", flag.ContinueOnError)
	d := diagnosticFlags(fs)
	screen := fs.Int("half-steps", 0, "propose k random half steps instead of the sampler (a screening design)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var allRight, allN int
	var cors, nexts []float64
	err := d.each(func(seed int64, surf *sim.Surface, st session.Settings) error {
		s := advisor.NewSampler(d.opts)
		m := method{name: "tunebot", space: session.DefaultSpace()}
		var proposer session.Advisor = s
		if *screen > 0 {
			m.space = boxSpace()
			proposer = halfSteps{*screen}
		}
		trials, err := sessionTrials(context.Background(), d.tmp, m, proposer, surf, st)
		if err != nil {
			return err
		}
		m.space = session.DefaultSpace()
		var hist []session.TrialSummary
		best, bestScore := trials[0].RewardConfig, math.Inf(-1)
		for _, t := range trials {
			if t.Rung != 0 {
				continue
			}
			if t.Score != nil && t.Eligible() && t.Score.Total > bestScore {
				best, bestScore = t.RewardConfig, t.Score.Total
			}
			hist = append(hist, session.SummaryOf(t))
		}
		req := session.ProposalRequest{Space: m.space, Objective: st.Objective, Floors: st.Floors, History: hist, Base: best}
		at, _ := s.Predict(req, best)
		scorer := session.Scorer{Baseline: surf.Expected(trials[0].RewardConfig, st.Rungs[0]), Weights: st.Objective, Floors: st.Floors}
		truth0, _ := scorer.Score(surf.Expected(best, st.Rungs[0]))
		var ps, ts []float64
		right, n := 0, 0
		for _, name := range m.space.Names() {
			for _, dir := range []float64{-0.5, 0.5} {
				c := best.Clone()
				if term, ok := m.space.Term(name); ok {
					if c.Weights[name] == 0 {
						continue
					}
					v := c.Weights[name] * math.Pow(2, dir)
					c.Weights[name] = math.Max(math.Min(v, math.Max(term.Min, term.Max)), math.Min(term.Min, term.Max))
				} else {
					p, _ := m.space.Param(name)
					c.Params[name] = math.Max(math.Min(c.Params[name]+dir*0.2*(p.Max-p.Min), p.Max), p.Min)
				}
				if m.space.CheckConfig(c) != nil {
					continue
				}
				pr, _ := s.Predict(req, c)
				tr, _ := scorer.Score(surf.Expected(c, st.Rungs[0]))
				dp, dt := pr.Score-at.Score, tr.Total-truth0.Total
				ps, ts = append(ps, dp), append(ts, dt)
				if math.Abs(dt) > 0.005 {
					n++
					if dp*dt > 0 {
						right++
					}
				}
			}
		}
		c := correlation(ps, ts)
		cors = append(cors, c)
		// What the model would propose now, and how good that is at the top rung.
		req.Tried = nil
		for _, h := range hist {
			req.Tried = append(req.Tried, session.Tried{Config: h.Config})
		}
		req.Seed = seed
		sp12 := *m.space
		sp12.MaxChanges = 12
		req.Space = &sp12
		if sug, err := s.Propose(context.Background(), req); err == nil {
			top := st.Rungs[len(st.Rungs)-1]
			g, ok := surf.Gain(session.Merge(best, sug.Patch), top, st.Objective, st.Floors)
			gb, _ := surf.Gain(best, top, st.Objective, st.Floors)
			_, att := surf.Oracle(m.space, top, st.Objective, st.Floors)
			if !ok {
				g = math.Min(g, 0)
			}
			sc, _ := session.Scorer{Baseline: surf.Expected(trials[0].RewardConfig, top), Weights: st.Objective, Floors: st.Floors}.Score(surf.Expected(session.Merge(best, sug.Patch), top))
			pp, _ := s.Predict(req, session.Merge(best, sug.Patch))
			tm := surf.Expected(session.Merge(best, sug.Patch), st.Rungs[0])
			for _, mn := range session.MetricNames {
				fmt.Fprintf(stdout, "   %s predicted %.4g true %.4g (%+.0f%%)\n", mn, pp.Metrics[mn], tm[mn], 100*(pp.Metrics[mn]/tm[mn]-1))
			}
			base0 := surf.Expected(best, st.Rungs[0])
			pb, _ := s.Predict(req, best)
			for _, ch := range m.space.Diff(best, session.Merge(best, sug.Patch)) {
				one := best.Clone()
				if ch.Kind == "weight" {
					one.Weights[ch.Name] = ch.New
				} else {
					one.Params[ch.Name] = ch.New
				}
				p1, _ := s.Predict(req, one)
				t1 := surf.Expected(one, st.Rungs[0])
				fmt.Fprintf(stdout, "   %-32s %.4g→%.4g  vel_lin true %+.3f predicted %+.3f\n", ch.Name, ch.Old, ch.New,
					math.Log(t1[session.MetricVelLinear]/base0[session.MetricVelLinear]), math.Log(p1.Metrics[session.MetricVelLinear]/pb.Metrics[session.MetricVelLinear]))
			}
			sc0, _ := session.Scorer{Baseline: surf.Expected(trials[0].RewardConfig, st.Rungs[0]), Weights: st.Objective, Floors: st.Floors}.Score(surf.Expected(session.Merge(best, sug.Patch), st.Rungs[0]))
			fmt.Fprintf(stdout, "surface %d: the base is at %.0f%% of the optimum, the model's next proposal (%d changes, pass %.2f) at %.0f%% %v; at rung 0 tracking %+.3f score %+.3f; std %v\n", seed, 100*gb/att, len(sug.Patch.Weights)+len(sug.Patch.Params), sug.Confidence, 100*g/att, sc.Reasons, sc0.Objectives["tracking"], sc0.Total, sug.Patch.Params["track_linear_velocity.std"])
			nexts = append(nexts, g/att)
		}
		allRight += right
		allN += n
		fmt.Fprintf(stdout, "surface %d: signs right %d/%d, correlation %.2f\n", seed, right, n, c)
		return nil
	})
	if err != nil {
		return err
	}
	mc, _ := session.MeanStd(cors)
	sort.Float64s(nexts)
	fmt.Fprintf(stdout, "signs right %.0f%% of %d moves that matter; mean correlation %.2f; the next proposal's median %.0f%% of the optimum\n", 100*float64(allRight)/float64(max(allN, 1)), allN, mc, 100*quantile(nexts, 0.5))
	return nil
}

func correlation(a, b []float64) float64 {
	ma, sa := session.MeanStd(a)
	mb, sb := session.MeanStd(b)
	if sa == 0 || sb == 0 {
		return 0
	}
	s := 0.0
	for i := range a {
		s += (a[i] - ma) * (b[i] - mb)
	}
	return s / float64(len(a)) / (sa * sb)
}

// halfSteps is a diagnostic proposer: k random scalars, each moved half a step up or down
// from the base (a screening design), within the session's rules.
type halfSteps struct{ k int }

func (h halfSteps) Propose(ctx context.Context, req session.ProposalRequest) (session.Suggestion, error) {
	rng := rand.New(rand.NewPCG(uint64(req.Seed), uint64(len(req.History))))
	names := req.Space.Names()
	for try := 0; try < 100; try++ {
		p := session.Patch{Weights: map[string]float64{}, Params: map[string]float64{}}
		for _, i := range rng.Perm(len(names))[:h.k] {
			name := names[i]
			dir := float64(1 - 2*rng.IntN(2))
			if t, ok := req.Space.Term(name); ok {
				v := req.Base.Weights[name]
				if v == 0 {
					continue
				}
				p.Weights[name] = math.Max(math.Min(v*math.Pow(2, dir/2), math.Max(t.Min, t.Max)), math.Min(t.Min, t.Max))
			} else {
				pp, _ := req.Space.Param(name)
				p.Params[name] = math.Max(math.Min(req.Base.Params[name]+dir*0.1*(pp.Max-pp.Min), pp.Max), pp.Min)
			}
		}
		if _, err := req.Space.Validate(req.Base, p, req.Tried); err == nil {
			return session.Suggestion{Patch: p, Rationale: "half steps", Source: session.SourceSampler}, nil
		}
	}
	return session.Suggestion{}, fmt.Errorf("half steps: no valid patch")
}
