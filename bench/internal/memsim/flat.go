package memsim

import "tunebot/session"

// flatten makes ev, an evaluation of cfg at iteration, one of a surface on which nothing beats
// the defaults: each seed's metrics are the defaults' noise-free ones times the noise that
// seed drew for cfg (its measured value over cfg's noise-free one), so configurations differ
// by their evaluation noise alone, and each keeps its own.
func (m Trainer) flatten(ev *session.Evaluation, cfg session.RewardConfig, iteration int) {
	def := m.Surf.Expected(m.Surf.Space().Defaults(), iteration)
	own := m.Surf.Expected(cfg, iteration)
	for i := range ev.PerSeed {
		for k, v := range ev.PerSeed[i].Metrics {
			if own[k] != 0 {
				ev.PerSeed[i].Metrics[k] = def[k] * v / own[k]
			} else {
				ev.PerSeed[i].Metrics[k] = def[k]
			}
		}
	}
	for _, name := range session.MetricNames {
		xs := make([]float64, len(ev.PerSeed))
		for i, ps := range ev.PerSeed {
			xs[i] = ps.Metrics[name]
		}
		ev.Metrics[name], _ = session.MeanStd(xs)
	}
}
