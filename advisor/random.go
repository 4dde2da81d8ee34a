package advisor

import (
	"context"
	"fmt"
	"math/rand/v2"

	"tunebot/session"
)

// Random proposes a uniformly random valid patch: 1 to MaxChanges scalars, each drawn
// uniformly from its trust region (log-magnitude space for weights, linear for params).
// It is the benchmark's baseline for the TPE sampler.
type Random struct {
	// MaxTries bounds the fresh draws when one is refused (duplicates); default 200.
	MaxTries int
}

var _ session.Advisor = (*Random)(nil)

// NewRandom returns a random proposer.
func NewRandom() *Random { return &Random{MaxTries: 200} }

// Propose implements session.Advisor.
func (r *Random) Propose(ctx context.Context, req session.ProposalRequest) (session.Suggestion, error) {
	if err := tpeCheckRequest(req); err != nil {
		return session.Suggestion{}, err
	}
	moves := constrainMoves(req, tpeMovable(req.Space, tpeDims(req.Space), req.Base))
	if len(moves) == 0 {
		return session.Suggestion{}, fmt.Errorf("random: %w: no scalar can move from the base configuration", ErrNoValidPatch)
	}
	tries := r.MaxTries
	if tries <= 0 {
		tries = 200
	}
	return tpeRandomSuggestion(ctx, tpeRNG(req, tpeStreamRandom), req, moves, tries, "random")
}

func tpeRandomSuggestion(ctx context.Context, rng *rand.Rand, req session.ProposalRequest, moves []tpeMove, tries int, label string) (session.Suggestion, error) {
	var lastErr error
	for try := 0; try < tries; try++ {
		if err := ctx.Err(); err != nil {
			return session.Suggestion{}, err
		}
		changes := tpeRandomPatch(rng, req.Space, moves)
		patch := tpePatch(changes)
		if _, err := req.Check(patch); err != nil {
			lastErr = err
			continue
		}
		return session.Suggestion{
			Patch:      patch,
			Rationale:  fmt.Sprintf("%s: %s", label, tpeDescribe(changes)),
			Confidence: 0.3,
			Source:     session.SourceSampler,
		}, nil
	}
	return session.Suggestion{}, fmt.Errorf("%s: %w after %d tries: %v", label, ErrNoValidPatch, tries, lastErr)
}
