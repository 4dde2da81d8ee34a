package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"tunebot/advisor"
	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer/sim"
)

// cmdCalibrate checks the sampler's model against what happened (a diagnostic, never in the
// table): it runs tunebot sessions and, for each proposed rung-0 trial, compares what the
// model fitted to the trials before it predicted (score ± sd, probability of passing the
// gates) with the trial's measured score and eligibility.
func cmdCalibrate(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	first := fs.Int64("first", 1, "first surface seed (below 1000)")
	surfaces := fs.Int("surfaces", 10, "number of surfaces")
	family := familyFlag(fs)
	tmp := fs.String("tmp", "", "directory for the sessions' stores")
	settings := benchSettings(fs)
	var opts advisor.SamplerOptions
	fs.BoolVar(&opts.Prior.Adapt, "adapt", false, "SamplerPrior.Adapt")
	fs.Float64Var(&opts.Beta, "beta", 0, "SamplerOptions.Beta")
	fs.Float64Var(&opts.Prior.NoiseFloor, "noise-floor", 0, "SamplerPrior.NoiseFloor")
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := settings()
	if err != nil {
		return err
	}
	var zs, briers []float64
	var predPass, actPass float64
	var n int
	for seed := *first; seed < *first+int64(*surfaces); seed++ {
		surf, err := sim.NewFamilySurface(*family, seed)
		if err != nil {
			return err
		}
		dir, err := os.MkdirTemp(*tmp, "tunebot-calibrate")
		if err != nil {
			return err
		}
		s := advisor.NewSampler(opts)
		m := method{name: "tunebot", space: session.DefaultSpace()}
		trials, err := sessionTrials(context.Background(), dir, m, s, surf, st)
		os.RemoveAll(dir)
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
					z := (t.Score.Total - p.Score) / math.Max(p.SD, 1e-6)
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
					fmt.Fprintf(stdout, "surface %d trial %2d: predicted %+.3f ± %.3f pass %.2f (trust %.2g spread %.2g), measured %+.3f eligible %v (z %+.1f), true gain at the top rung %+.3f: %s\n",
						seed, t.Number, p.Score, p.SD, p.Pass, p.Trust, p.Spread, t.Score.Total, t.Eligible(), z, g, diffWords(m.space, trials[0].RewardConfig, t.RewardConfig))
				}
			}
			ts := session.TrialSummary{Number: t.Number, Rung: 0, Source: t.Source, State: t.State, Eligible: t.Eligible(),
				Config: t.RewardConfig, Metrics: t.Metrics, PerSeed: t.PerSeed}
			if t.Score != nil {
				v := t.Score.Total
				ts.Score = &v
			}
			hist = append(hist, ts)
		}
	}
	mz, sz := session.MeanStd(zs)
	mb, _ := session.MeanStd(briers)
	fmt.Fprintf(stdout, "%d predictions: score z mean %+.2f sd %.2f (1 when calibrated); pass predicted %.0f%% vs measured %.0f%%, Brier %.3f\n",
		n, mz, sz, 100*predPass/float64(n), 100*actPass/float64(n), mb)
	return nil
}

// sessionTrials runs one tunebot session (as runSession) and returns its trials.
func sessionTrials(ctx context.Context, dir string, m method, adv session.Advisor, surf *sim.Surface, st session.Settings) ([]session.Trial, error) {
	db, err := store.Open(filepath.Join(dir, "tunebot.db"), store.Options{})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	eng, err := session.NewEngine(session.EngineConfig{Store: db, Trainer: memTrainer{surf: surf}, Sampler: adv,
		Space: m.space, SessionsDir: filepath.Join(dir, "sessions")})
	if err != nil {
		return nil, err
	}
	defer eng.Shutdown(context.WithoutCancel(ctx))
	st.Fallback = true
	st.Seed = surf.Seed() * 10
	s, err := eng.Start(ctx, st, session.System)
	if err != nil {
		return nil, err
	}
	if s, err = eng.Wait(ctx, s.ID); err != nil {
		return nil, err
	}
	return db.Trials(ctx, s.ID)
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
