package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"tunebot/bench/internal/memsim"
	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer/sim"
)

// The warm row (bench/sampler/README.md): on each surface and repetition, a first session
// as the tunebot row runs it, then a second on the same surface that builds on it
// (session.Settings.From), with another realisation of the noise and another session seed,
// as a lab's second session after another training run would have. The second session's
// result is the row's.

// Offsets of the second session: its evaluation seeds (memsim.Trainer.Rep, ×1000) and its
// session seed, both far from any first session's.
const (
	warmRepOffset  = 500
	warmSeedOffset = 1_000_000
)

// warmOptions are the -warm flags.
type warmOptions struct {
	on      bool
	start   string
	weights []float64 // one second session per weight, all built on the same first
	// withFirst also reports each first session, under coldName: it is the very session a
	// run without -warm makes (the same seed and noise), so one run gives both rows.
	withFirst bool
	coldName  string
	// between, when set, is told the first session, its trials and its result (labelled
	// coldName) before the second starts: the Optuna bridge reports the result then, and
	// takes the second session's level from it.
	between func(r1 sessionResult, s session.Session, trials []session.Trial) error
}

func warmFlags(fs *flag.FlagSet, w *warmOptions) {
	fs.BoolVar(&w.on, "warm", false, "run a second session on each surface that builds on the first (from=), and report the second")
	fs.StringVar(&w.start, "warm-start", "", "the second session's start: best or defaults (empty: the session default)")
	fs.BoolVar(&w.withFirst, "warm-with-first", false, "with -warm, also print each first session's result, labelled as the row without -warm (it is the same session)")
	fs.Func("warm-weight", "the weight of each of the first session's trials (default: session.DefaultFromWeight); a comma-separated list runs one second session per weight on the same first, labelled -w<weight>", func(v string) error {
		w.weights = nil
		for _, f := range strings.Split(v, ",") {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil || x <= 0 || x > 1 {
				return fmt.Errorf("%q is not a weight in (0, 1]", f)
			}
			w.weights = append(w.weights, x)
		}
		return nil
	})
}

// runWarm runs the first session and the second(s) that build on it in one store under
// dir, and scores the second(s); First is the first session's share of the attainable gain.
// With withFirst the first session's result comes first, labelled coldName.
func (w warmOptions) runWarm(ctx context.Context, dir string, m method, adv session.Advisor, surf *sim.Surface, rep int, st session.Settings, attainable float64, noiseFree bool) ([]sessionResult, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	db, err := store.Open(filepath.Join(dir, "tunebot.db"), store.Options{})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	first := st
	first.Seed = surf.Seed()*10 + int64(rep)
	s1, trials1, p1, err := playIn(ctx, db, dir, m, adv, memsim.Trainer{Surf: surf, Rep: rep, NoiseFree: noiseFree}, first)
	if err != nil {
		return nil, err
	}
	r1, err := scoreSession(m, surf, rep, st, attainable, s1, trials1, p1)
	if err != nil {
		return nil, fmt.Errorf("first session: %w", err)
	}
	weights := w.weights
	if len(weights) == 0 {
		weights = []float64{0}
	}
	var out []sessionResult
	r1.Method = w.coldName
	if w.withFirst {
		out = append(out, r1)
	}
	if w.between != nil {
		if err := w.between(r1, s1, trials1); err != nil {
			return nil, err
		}
	}
	for _, weight := range weights {
		second := st
		second.Seed = first.Seed + warmSeedOffset
		second.From, second.FromStart, second.FromWeight = s1.ID, w.start, weight
		mw := m
		if len(weights) > 1 {
			mw.name += "-w" + strconv.FormatFloat(weight, 'g', -1, 64)
		}
		s2, trials2, p2, err := playIn(ctx, db, dir, mw, m.adv(surf), memsim.Trainer{Surf: surf, Rep: rep + warmRepOffset, NoiseFree: noiseFree}, second)
		if err != nil {
			return out, err
		}
		r, err := scoreSession(mw, surf, rep, st, attainable, s2, trials2, p2)
		if err != nil {
			return out, err
		}
		r.First = &r1.Fraction
		out = append(out, r)
	}
	return out, nil
}
