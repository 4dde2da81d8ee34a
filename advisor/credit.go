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
	Label  string // the name as people read it (session/display.go): "params.foot_gait.period"
	Change string // "0.5 → 1 (×2.00, stronger)"
	Gain   float64
	SD     float64
}

// Credited says whether the model credits the change with part of the gain: taking it back
// would lose more than its deviation.
func (c ChangeCredit) Credited() bool { return c.Gain > 0 && c.Gain > c.SD }

// Harmful says whether the model judges the change harmful: taking it back alone would gain
// more than its deviation.
func (c ChangeCredit) Harmful() bool { return c.Gain < 0 && -c.Gain > c.SD }

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
		out = append(out, ChangeCredit{Name: d.name, Label: d.label(), Change: fmt.Sprintf("%s → %s (%s)", fmtValue(was), fmtValue(now), ch.word()), Gain: mean, SD: sd})
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Gain > out[b].Gain })
	return out
}

// CreditLine says it in one line, naming the model (the sampler's, fitted to the session's
// rung-0 trials) so it is never read as a measurement: "carries 7 changes from the
// defaults; the sampler's model of the 12 rung-0 trials credits the gain to foot_slip
// (+0.031 ± 0.008) and pose (+0.012 ± 0.006), not the other 5 alone; it judges
// action_rate_l2 harmful (-0.051 ± 0.011: taking it back alone would gain that)". When it
// credits no change alone, it says the measured gain is then not traced to any one of them,
// not that there was none.
func CreditLine(cs []ChangeCredit, trials int) string {
	if len(cs) == 0 {
		return "carries no change from the defaults"
	}
	var credited, harmful []string
	for _, c := range cs {
		name := c.Label
		if name == "" {
			name = c.Name
		}
		switch {
		case c.Credited():
			credited = append(credited, fmt.Sprintf("%s (%+.3f ± %.3f)", name, c.Gain, c.SD))
		case c.Harmful():
			harmful = append(harmful, fmt.Sprintf("%s (%+.3f ± %.3f)", name, c.Gain, c.SD))
		}
	}
	head := "carries " + plural(len(cs), "change") + " from the defaults; the sampler's model of the " + plural(trials, "rung-0 trial")
	var line string
	switch rest := len(cs) - len(credited); {
	case len(credited) == 0:
		line = head + " credits none of them alone with a gain beyond its doubt, so it traces the measured gain to no one change (they may earn it together)"
	case rest == 0:
		line = head + " credits the gain to " + andList(credited)
	default:
		line = fmt.Sprintf("%s credits the gain to %s, not the other %d alone", head, andList(credited), rest)
	}
	if len(harmful) > 0 {
		line += "; it judges " + andList(harmful) + " harmful (taking it back alone would gain that)"
	}
	return line
}
