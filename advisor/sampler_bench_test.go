package advisor_test

import (
	"context"
	"testing"

	"tunebot/advisor"
	"tunebot/session"
)

// BenchmarkSamplerPropose times one proposal (what runs between two training jobs) on a
// session of seven finished trials whose incumbent carries two changes (so the undo
// candidates have something to take back), with the sampler's defaults and with each
// candidate source or model part on or off, so that a part that is off is seen to cost
// nothing.
func BenchmarkSamplerPropose(b *testing.B) {
	space := session.DefaultSpace()
	req := slipHistory(space)
	req.Base = req.History[1].Config.Clone()
	for _, bc := range []struct {
		name string
		opts advisor.SamplerOptions
	}{
		{"defaults", advisor.SamplerOptions{}},
		{"no-wide", advisor.SamplerOptions{Wide: -1}},
		{"no-undo-no-wide", advisor.SamplerOptions{Undo: -1, Wide: -1}},
		{"edges-8", advisor.SamplerOptions{Edges: 8}},
		{"gp", advisor.SamplerOptions{Prior: advisor.SamplerPrior{GP: true}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := advisor.NewSampler(bc.opts)
			for b.Loop() {
				if _, err := s.Propose(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
