package advisor

import (
	"fmt"
	"sort"

	"tunebot/session"
)

// ChangeCredit is one change a configuration carries from the defaults and what the
// sampler's model credits it with: the score the configuration would lose if that change
// alone were taken back (mean and deviation over the model's draws, paired).
type ChangeCredit struct {
	Name   string
	Change string // "0.5 → 1 (×2.00, stronger)"
	Gain   float64
	SD     float64
}

// Credited says whether the model credits the change with part of the gain: taking it back
// would lose more than its deviation.
func (c ChangeCredit) Credited() bool { return c.Gain > 0 && c.Gain > c.SD }

// Credit fits the model to req's history and assesses every change configuration c carries
// from the space's defaults, the one most credited first (nil before the baseline has
// metrics). A session's summary says with it how many changes the shipped configuration
// carries and which of them the evidence supports (docs/design.md §5).
func (s *Sampler) Credit(req session.ProposalRequest, c session.RewardConfig) []ChangeCredit {
	m := fitComposite(req, s.unit, s.opts.Prior)
	if m == nil {
		return nil
	}
	sr := &searcher{m: m, draws: m.sample(tpeRNG(req, samplerStream), s.opts.Draws)}
	def := req.Space.Defaults()
	at := sr.scores(m.position(c, req.Space))
	var out []ChangeCredit
	for _, d := range m.dims {
		was, now := d.value(def, req.Space), d.value(c, req.Space)
		if d.encode(was) == d.encode(now) {
			continue
		}
		back := c.Clone()
		if d.weight {
			back.Weights[d.name] = was
		} else {
			back.Params[d.name] = was
		}
		mean, sd := pairedGain(at, sr.scores(m.position(back, req.Space)))
		ch := tpeChange{dim: d, old: was, new: now}
		out = append(out, ChangeCredit{Name: d.name, Change: fmt.Sprintf("%s → %s (%s)", fmtValue(was), fmtValue(now), ch.word()), Gain: mean, SD: sd})
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Gain > out[b].Gain })
	return out
}

// CreditLine says it in one line: "carries 7 changes from the defaults; the model credits
// the gain to foot_slip (+0.031 ± 0.008) and pose (+0.012 ± 0.006), not the other 5".
func CreditLine(cs []ChangeCredit) string {
	if len(cs) == 0 {
		return "carries no change from the defaults"
	}
	var credited []string
	for _, c := range cs {
		if c.Credited() {
			credited = append(credited, fmt.Sprintf("%s (%+.3f ± %.3f)", c.Name, c.Gain, c.SD))
		}
	}
	head := "carries " + plural(len(cs), "change") + " from the defaults"
	switch rest := len(cs) - len(credited); {
	case len(credited) == 0:
		return head + "; the model credits none of them with a gain beyond its doubt"
	case rest == 0:
		return head + "; the model credits the gain to " + andList(credited)
	default:
		return fmt.Sprintf("%s; the model credits the gain to %s, not the other %d", head, andList(credited), rest)
	}
}
