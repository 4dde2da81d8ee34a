package memsim

import (
	"context"
	"fmt"
	"path/filepath"

	"tunebot/session"
	"tunebot/store"
)

// Play runs one automatic session of the real engine in db (proposer adv, which the numeric
// sampler stands in for, the reward space space, the trainer tr; the session seed is st's,
// and the fresh final seeds derive from it) to its end, and returns the session, its trials, and what it ships when it succeeded
// (Shipped), as a preset's trial and configuration.
func Play(ctx context.Context, db *store.DB, dir string, space *session.Space, adv session.Advisor, tr Trainer, st session.Settings) (session.Session, []session.Trial, session.Preset, error) {
	var none session.Preset
	eng, err := session.NewEngine(session.EngineConfig{Store: db, Trainer: tr, Sampler: adv,
		Space: space, SessionsDir: filepath.Join(dir, "sessions")})
	if err != nil {
		return session.Session{}, nil, none, err
	}
	defer eng.Shutdown(context.WithoutCancel(ctx))
	st.Fallback = true
	FixFinalSeeds(&st)
	s, err := eng.Start(ctx, st, session.System)
	if err != nil {
		return session.Session{}, nil, none, err
	}
	if s, err = eng.Wait(ctx, s.ID); err != nil {
		return session.Session{}, nil, none, err
	}
	trials, err := db.Trials(ctx, s.ID)
	if err != nil || s.State != session.StateSucceeded {
		return s, trials, none, err
	}
	ref, cfg, err := Shipped(ctx, db, s, trials)
	return s, trials, session.Preset{Trial: ref, Config: cfg}, err
}

// FixFinalSeeds gives st the final seeds a session would draw (Session.FinalSeeds: its own
// when it lists fresh ones, else FinalEvalCount, or the default count, fresh ones), keyed by
// its session seed rather than its random id, so that a benchmark's sessions come out the
// same in every run.
func FixFinalSeeds(st *session.Settings) {
	st.FinalEvalSeeds = session.Session{ID: fmt.Sprintf("bench-%d", st.Seed), Settings: *st}.FinalSeeds()
}
