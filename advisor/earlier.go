package advisor

import (
	"math"

	"tunebot/session"
)

// earlierObservations are the finished rung-0 trials of the session this one builds on
// (req.Earlier), each weighing req.EarlierWeight of one of this session's trials (1, a full
// trial, by default), and per metric the prior mean of the earlier session's level offset.
//
// A change between the two sessions (a longer training, another terrain, a relabelled
// reward code) moves every metric's level, so an earlier trial enters at its own level
// and the model fits, per metric, an offset between the two sessions' levels (the last
// coefficient of the regression, features), as a GP with a per-task mean would. The two
// baselines tell it: its prior mean is the earlier trial nearest this session's baseline
// (the same configuration when this session starts from the earlier best, or when both
// start from the defaults) less this session's baseline, in model units, and its prior is
// wide (SamplerPrior.LevelSD), so the trials that both sessions can compare move it. Only
// the trials' positions and metrics carry over; the trust region, the stopping rule and
// the trial count read this session's trials only.
func earlierObservations(m *composite, req session.ProposalRequest, baseline session.Metrics, floors session.Metrics) ([]observation, map[string]float64) {
	var done []session.TrialSummary
	for _, h := range req.Earlier {
		if h.Rung == 0 && h.State == session.TrialCompleted && len(h.Metrics) > 0 {
			done = append(done, h)
		}
	}
	if len(done) == 0 || req.EarlierWeight <= 0 {
		return nil, nil
	}
	xs := make([][]float64, len(done))
	ref, refDist := 0, math.Inf(1)
	for i, h := range done {
		xs[i] = m.position(h.Config, req.Space)
		if d := dot(xs[i], xs[i]); d < refDist {
			ref, refDist = i, d
		}
	}
	offset := map[string]float64{}
	for _, name := range session.MetricNames {
		offset[name] = toModel(name, done[ref].Metrics[name], floors) - toModel(name, baseline[name], floors)
	}
	out := make([]observation, len(done))
	for i, h := range done {
		out[i] = observation{x: xs[i], metrics: h.Metrics, weight: math.Min(req.EarlierWeight, 1), earlier: true}
	}
	return out, offset
}
