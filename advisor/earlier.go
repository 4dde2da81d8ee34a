package advisor

import (
	"math"

	"tunebot/session"
)

// earlierObservations are the finished rung-0 trials of the session this one builds on
// (req.Earlier), each weighing req.EarlierWeight of one of this session's trials.
//
// A change between the two sessions (a longer training, another terrain, a relabelled
// reward code) moves every metric's level, so an earlier trial enters by what it says
// about differences, not levels: its metrics relative to the earlier trial nearest this
// session's baseline (the same configuration when this session starts from the earlier
// best, or when both start from the defaults), shifted onto this session's baseline, in
// model units. Only the trials' positions and these differences carry over; the trust
// region, the stopping rule and the trial count read this session's trials only.
func earlierObservations(m *composite, req session.ProposalRequest, baseline session.Metrics, floors session.Metrics) []observation {
	var done []session.TrialSummary
	for _, h := range req.Earlier {
		if h.Rung == 0 && h.State == session.TrialCompleted && len(h.Metrics) > 0 {
			done = append(done, h)
		}
	}
	if len(done) == 0 || req.EarlierWeight <= 0 {
		return nil
	}
	xs := make([][]float64, len(done))
	ref, refDist := 0, math.Inf(1)
	for i, h := range done {
		xs[i] = m.position(h.Config, req.Space)
		if d := norm2(xs[i]); d < refDist {
			ref, refDist = i, d
		}
	}
	shift := map[string]float64{}
	for _, name := range session.MetricNames {
		shift[name] = toModel(name, baseline[name], floors) - toModel(name, done[ref].Metrics[name], floors)
	}
	out := make([]observation, len(done))
	for i, h := range done {
		metrics := session.Metrics{}
		for _, name := range session.MetricNames {
			metrics[name] = fromModel(name, toModel(name, h.Metrics[name], floors)+shift[name])
		}
		out[i] = observation{x: xs[i], metrics: metrics, weight: math.Min(req.EarlierWeight, 1)}
	}
	return out
}

// norm2 is x's squared length.
func norm2(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return s
}
