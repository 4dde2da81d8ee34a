package memsim

import (
	"context"
	"fmt"

	"tunebot/session"
)

// Presets is the part of the store Shipped reads.
type Presets interface {
	Preset(ctx context.Context, name string) (session.Preset, error)
}

// Shipped is what a succeeded session ships, for a benchmark to score: its preset, or, when
// nothing beat the baseline (session.OutcomeNoImprovement, which saves no preset), the
// baseline's own trial, whose configuration is the defaults that stand.
func Shipped(ctx context.Context, db Presets, s session.Session, trials []session.Trial) (session.TrialRef, session.RewardConfig, error) {
	if s.Preset != "" {
		p, err := db.Preset(ctx, s.Preset)
		return p.Trial, p.Config, err
	}
	if s.Outcome != session.OutcomeNoImprovement {
		return session.TrialRef{}, session.RewardConfig{}, fmt.Errorf("session %s succeeded with no preset and outcome %q", session.Short(s.ID), s.Outcome)
	}
	if t := s.BestOf(trials); t != nil {
		return t.Ref(), t.RewardConfig, nil
	}
	return session.TrialRef{}, session.RewardConfig{}, fmt.Errorf("session %s: its best trial %d @ rung %d is not among its trials", session.Short(s.ID), s.BestTrial, s.BestRung)
}
