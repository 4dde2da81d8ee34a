package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

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
	on     bool
	start  string
	weight float64
}

func warmFlags(fs *flag.FlagSet, w *warmOptions) {
	fs.BoolVar(&w.on, "warm", false, "run a second session on each surface that builds on the first (from=), and report the second")
	fs.StringVar(&w.start, "warm-start", "", "the second session's start: best or defaults (empty: the session default)")
	fs.Float64Var(&w.weight, "warm-weight", 0, "the weight of each of the first session's trials (0: session.DefaultFromWeight)")
}

// runWarm runs the first session and the second that builds on it in one store under dir,
// and scores the second; First is the first session's share of the attainable gain.
func (w warmOptions) runWarm(ctx context.Context, dir string, m method, adv session.Advisor, surf *sim.Surface, rep int, st session.Settings, attainable float64, noiseFree bool) (sessionResult, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return sessionResult{}, err
	}
	defer os.RemoveAll(dir)
	db, err := store.Open(filepath.Join(dir, "tunebot.db"), store.Options{})
	if err != nil {
		return sessionResult{}, err
	}
	defer db.Close()
	first := st
	first.Seed = surf.Seed()*10 + int64(rep)
	s1, trials1, p1, err := playIn(ctx, db, dir, m, adv, memsim.Trainer{Surf: surf, Rep: rep, NoiseFree: noiseFree}, first)
	if err != nil {
		return sessionResult{}, err
	}
	r1, err := scoreSession(m, surf, rep, st, attainable, s1, trials1, p1)
	if err != nil {
		return sessionResult{}, fmt.Errorf("first session: %w", err)
	}
	second := st
	second.Seed = first.Seed + warmSeedOffset
	second.From, second.FromStart, second.FromWeight = s1.ID, w.start, w.weight
	s2, trials2, p2, err := playIn(ctx, db, dir, m, advisorFor(m, surf, adv), memsim.Trainer{Surf: surf, Rep: rep + warmRepOffset, NoiseFree: noiseFree}, second)
	if err != nil {
		return sessionResult{}, err
	}
	r, err := scoreSession(m, surf, rep, st, attainable, s2, trials2, p2)
	r.First = &r1.Fraction
	return r, err
}

// advisorFor is the second session's proposer: a fresh one, as the daemon would have after
// a restart (tunebot's sampler is stateless, so this only matters to stateful ones).
func advisorFor(m method, surf *sim.Surface, adv session.Advisor) session.Advisor {
	if m.adv == nil {
		return adv
	}
	return m.adv(surf)
}

