package advisor

import (
	"fmt"
	"math"
	"sort"

	"tunebot/session"
)

// What the sampler has learned, said in words: the rationale of its proposals, and the
// per-metric evidence the DeepSeek prompt carries (docs/design.md §5).

// metricWords names each metric as a person says it.
var metricWords = map[string]string{
	session.MetricVelLinear:   "linear velocity error",
	session.MetricVelAngular:  "angular velocity error",
	session.MetricActionAcc:   "action acceleration",
	session.MetricOrientation: "orientation error",
	session.MetricFallRate:    "fall rate",
	session.MetricFootSlip:    "foot slip",
	session.MetricPower:       "power",
}

// MetricEffect is the model's estimate of how one step up of a scalar from the base moves one
// metric: the change of its log (about the relative change; for the fall rate, of its
// log-odds) with its deviation, and whether the space declares that the scalar acts on it.
type MetricEffect struct {
	Metric   string
	Change   float64
	SD       float64
	Declared bool
}

// Effect is what the sampler has learned about one scalar: the predicted change of the score
// for one step up from the base (a ×2 of a weight's magnitude, a fifth of a param's range)
// with its deviation, how many trials moved it, and the metrics it is estimated to move,
// strongest first (those declared, or whose change is larger than its deviation).
type Effect struct {
	Name    string
	Weight  bool
	PerStep float64
	SD      float64
	Moved   int
	Metrics []MetricEffect
	// NoEvidence: the prior cannot judge the scalar (its direction is not declared, or it
	// is off in the base) and no configuration the model sees has moved it half a step, so
	// the model knows nothing yet of which way it acts (screen.go).
	NoEvidence bool
}

// Effects fits the sampler's model to the request's history and returns every scalar's
// effect estimate, in the space's order (nil before the baseline has metrics). The
// advisor's prompt carries them, so that the language model and the sampler reason from
// the same evidence.
func (s *Sampler) Effects(req session.ProposalRequest) []Effect {
	m := fitComposite(req, s.unit, s.opts.Prior)
	if m == nil {
		return nil
	}
	rng := tpeRNG(req, samplerStream)
	sr := &searcher{m: m, base: m.position(req.Base, req.Space), draws: m.sample(rng, s.opts.Draws)}
	at := sr.scores(sr.base)
	out := make([]Effect, len(m.dims))
	seen := seenPositions(m, req)
	for i, d := range m.dims {
		up := append([]float64(nil), sr.base...)
		up[i]++
		mean, sd := pairedGain(sr.scores(up), at)
		e := Effect{Name: d.name, Weight: d.weight, PerStep: mean, SD: sd, Moved: m.moved[i],
			NoEvidence: unjudgedDim(req.Space, d, d.value(req.Base, req.Space) == 0) && !hasEvidence(seen, i)}
		for _, f := range m.fits {
			c, csd := f.change(i, sr.base[i], sr.base[i]+1)
			if f.declared[i] || math.Abs(c) > csd {
				e.Metrics = append(e.Metrics, MetricEffect{Metric: f.name, Change: c, SD: csd, Declared: f.declared[i]})
			}
		}
		sort.SliceStable(e.Metrics, func(a, b int) bool { return math.Abs(e.Metrics[a].Change) > math.Abs(e.Metrics[b].Change) })
		out[i] = e
	}
	return out
}

// scores returns the score at x under each of the model's draws, noise-free.
func (s *searcher) scores(x []float64) []float64 {
	pt := s.m.at(x)
	out := make([]float64, len(s.beta))
	var clean, noisy [session.NumMetrics]float64
	for k := range s.beta {
		s.m.predict(pt, s.draws, k, &clean, &noisy)
		out[k], _ = s.m.scorer.Quick(clean)
	}
	return out
}

// pairedGain is the mean and deviation over the model's draws of how much score a beats b,
// draw by draw (a and b are scores' answers at two positions).
func pairedGain(a, b []float64) (float64, float64) {
	d := make([]float64, len(a))
	for k := range a {
		d[k] = a[k] - b[k]
	}
	return session.MeanStd(d)
}

// change is the posterior mean and deviation of the metric's change (model units) when dim i
// alone moves from position a to b.
func (f metricFit) change(i int, a, b float64) (float64, float64) {
	D := len(f.declared)
	idx := [3]int{1 + i, 1 + D + i, 1 + 2*D + i}
	delta := [3]float64{b - a, b*b - a*a, hinge(b) - hinge(a)}
	var mean, v float64
	for j := range idx {
		mean += f.mean[idx[j]] * delta[j]
		for k := range idx {
			v += delta[j] * delta[k] * f.cov.At(idx[j], idx[k])
		}
	}
	return mean, math.Sqrt(math.Max(v, 0))
}

// explain says what candidate c moves and why: the summary, one sentence (what moves, what
// it is expected to lower and at what cost, and what the model expects of the whole patch),
// and the evidence, one line per move with what the model expects of it alone, on the
// score and on each metric it moves (explainMoves' order and form).
func (s *searcher) explain(c candidate, changes []tpeChange, baseTrial int) (string, []string) {
	return s.explainWhy(c, changes, baseTrial, "")
}

// explainWhy is explain with the sentence's why given ("": what the model expects the
// patch to do to the metrics).
func (s *searcher) explainWhy(c candidate, changes []tpeChange, baseTrial int, why string) (string, []string) {
	at := s.m.meanMetrics(s.base)
	baseScores := s.scores(s.base)
	moves := make([]moveEvidence, len(c.moved))
	for k, ri := range c.moved {
		r := s.rooms[ri]
		mean, sd := pairedGain(s.scores(s.with(s.base, r, c.x[r.dim])), baseScores)
		mv := moveEvidence{change: changes[k], expected: mean, sd: sd, moved: s.m.moved[r.dim], back: takesBack(r.base, c.x[r.dim])}
		for _, f := range s.m.fits {
			d, dsd := f.change(r.dim, s.base[r.dim], c.x[r.dim])
			if math.Abs(d) < 0.005 && !f.declared[r.dim] {
				continue
			}
			// A change of the log, said as the relative change a person reads.
			mv.metrics = append(mv.metrics, fmt.Sprintf("%s %+.0f%% ± %.0f%%", metricWords[f.name], 100*math.Expm1(d), 100*math.Exp(d)*dsd))
		}
		moves[k] = mv
	}
	ms := rankMoves(moves)
	evidence := make([]string, len(ms))
	for i, m := range ms {
		evidence[i] = m.line(s.m.trials)
	}
	// What the whole patch is expected to do to each metric.
	after := s.m.meanMetrics(c.x)
	var better, worse []string
	for _, name := range session.MetricNames {
		d := math.Log(after[name] / at[name])
		switch {
		case d < -0.01:
			better = append(better, metricWords[name])
		case d > 0.01:
			worse = append(worse, metricWords[name])
		}
	}
	switch {
	case why != "":
	case len(better) > 0:
		why = "to lower " + andList(better)
		if len(worse) > 0 {
			why += " at some cost in " + andList(worse)
		}
	default:
		why = "where the model expects the most"
	}
	baseMean, _ := session.MeanStd(baseScores)
	// The chance the gates pass is the one the card shows beside it (Suggestion.Confidence):
	// the model's draws, never beyond what its trials allow (session.Credible).
	summary := fmt.Sprintf("%s %s: the model of %s expects %+.3f ± %.3f over %s, which it patches; the chance that every gate passes is %.0f %%.",
		capitalise(movesSentence(ms)), why, plural(s.m.trials, "trial"), c.mean-baseMean, c.sd, session.TrialName(baseTrial), 100*session.Credible(c.pass, s.m.trials))
	return summary, evidence
}

// Prediction is what the model expects of a configuration: its score without noise, the
// score's deviation over the model's draws, and the probability that every gate passes
// once it is measured (an evaluation's noise included).
type Prediction struct {
	Score, SD, Pass float64
	// MeasuredSD is the spread of the score a trial there would measure (SD and an
	// evaluation's noise).
	MeasuredSD float64
	// Metrics is the model's mean of each metric there.
	Metrics session.Metrics
}

// Predict fits the model to req's history and predicts configuration c; false before the
// baseline has metrics.
func (s *Sampler) Predict(req session.ProposalRequest, c session.RewardConfig) (Prediction, bool) {
	m := fitComposite(req, s.unit, s.opts.Prior)
	if m == nil {
		return Prediction{}, false
	}
	sr := &searcher{m: m, draws: m.sample(tpeRNG(req, samplerStream), s.opts.Draws)}
	a := sr.assess(m.position(c, req.Space))
	return Prediction{Metrics: m.meanMetrics(m.position(c, req.Space)), Score: a.mean, SD: a.sd, MeasuredSD: a.measuredSD, Pass: a.pass}, true
}

// takesBack says how a move from position base to to (steps from the defaults) takes back
// an earlier change: to the default, past it, or toward it; "" when it does not.
func takesBack(base, to float64) string {
	switch {
	case math.Abs(base) < 1e-9:
		return ""
	case math.Abs(to) < 1e-9:
		return "back to the default"
	case to*base < 0:
		return "back past the default"
	case math.Abs(to) < math.Abs(base):
		return "back toward the default"
	}
	return ""
}
