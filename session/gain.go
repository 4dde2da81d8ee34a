package session

import (
	"context"
	"fmt"
	"math"
)

// A preset's Score is measured against its own session's baseline, and a session that builds
// on another (Settings.From, start=best) or starts from a preset has a baseline that is not
// the defaults: two presets' scores are then against different baselines and do not rank.
// Gain is the one figure that does (docs/design.md §8): the preset's trial scored against the
// task's defaults trained as long, from the metrics of the baseline trial that trained the
// defaults, in its own session or in one it builds on. It is measured, never accumulated: the
// trial's side is its final evaluation on fresh seeds, and the defaults' side a baseline
// trial's, which nothing chose, so neither carries the luck of a choice, and a chain of
// sessions that each found nothing does not climb.

// Gain is a preset's gain over the task's defaults at equal training. When it cannot be known
// (no session it builds on trained the defaults as long, or its trial was not measured on
// fresh seeds), Unknown says why and Score is 0.
type Gain struct {
	// Score is the §3 score of the preset's trial with the defaults' metrics as the baseline.
	Score float64 `json:"score"`
	// SE is Score's standard error over the seeds both sides were evaluated on: paired seed
	// by seed within one session, else unpaired (the two sides' variances added); 0 when it
	// is not known (a preset saved before it was recorded).
	SE float64 `json:"se"`
	// Rung is the trial's rung; the defaults were trained to it too (as many iterations).
	Rung int `json:"rung"`
	// Session is the session whose baseline trial trained the defaults: the preset's own, or
	// one it builds on.
	Session string `json:"session"`
	// Final is true when Score's trial side is its final evaluation (fresh seeds).
	Final bool `json:"final"`
	// Unknown says why there is no figure; "" when Score is one.
	Unknown string `json:"unknown"`
}

// Known reports whether g is a figure.
func (g Gain) Known() bool { return g.Unknown == "" }

// Text is the figure as every preset list shows it: "+0.041 ± 0.012", or the score alone when
// its spread was not recorded.
func (g Gain) Text() string {
	if g.SE > 0 {
		return SignedScore(g.Score) + " ± " + Spread(g.SE)
	}
	return SignedScore(g.Score)
}

// maxBuildsOn bounds the walk from a session through the sessions it builds on.
const maxBuildsOn = 16

// gainOf is t's gain over the defaults at equal training, t being a trial of s (its preset's,
// scored among trials, with its verdict). Its own baseline is used when it trained the
// defaults (the figure and spread of its verdict, so the figure is the one its other surfaces
// show); else the sessions it builds on are walked, nearest first, for a baseline trial that
// trained the defaults to t's rung.
func (e *Engine) gainOf(ctx context.Context, s Session, trials []Trial, t Trial, verdict Verdict) Gain {
	defaults := e.SpaceOf(s.Settings.Task).Defaults()
	if base := ControlAt(trials, 0); base != nil && base.RewardConfig.Equal(defaults) {
		control := ControlAt(trials, t.Rung)
		v, ok := FinalVersusOf(s.Settings, control, t)
		if !ok || !v.Matched() {
			return Gain{Rung: t.Rung, Session: s.ID, Unknown: fmt.Sprintf("the defaults were not trained to rung %d in its session", t.Rung)}
		}
		if !v.Final {
			return Gain{Rung: t.Rung, Session: s.ID, Unknown: "it was not measured on fresh seeds, and the seeds that chose it would overstate it"}
		}
		return Gain{Score: Measured(v.Score), SE: Measured(verdict.SE), Rung: t.Rung, Session: s.ID, Final: true}
	}
	seen := map[string]bool{s.ID: true}
	next := e.buildsOn(ctx, s)
	for i := 0; i < len(next) && i < maxBuildsOn; i++ {
		id := next[i]
		if seen[id] {
			continue
		}
		seen[id] = true
		earlier, err := e.cfg.Store.Session(ctx, id)
		if err != nil {
			continue // pruned or gone: look further
		}
		ets, err := e.cfg.Store.Trials(ctx, id)
		if err != nil {
			continue
		}
		if base := ControlAt(ets, 0); base == nil || !base.RewardConfig.Equal(defaults) {
			next = append(next, e.buildsOn(ctx, earlier)...)
			continue
		}
		return gainAgainst(s.Settings, ControlAt(ets, t.Rung), t, id)
	}
	return Gain{Rung: t.Rung, Unknown: "no session it builds on trained the defaults"}
}

// gainAgainst scores t against control, a baseline trial of the defaults in session id: at
// equal training only (t's rung, as many iterations), t's side its final evaluation on fresh
// seeds, control's its final evaluation when it had one, else its rung's (nothing chose the
// baseline, so either is an honest measure of the defaults). The two sessions' seeds differ,
// so the spread is unpaired.
func gainAgainst(st Settings, control *Trial, t Trial, id string) Gain {
	g := Gain{Rung: t.Rung, Session: id}
	switch {
	case control == nil || control.Iterations != t.Iterations || control.Metrics == nil:
		g.Unknown = fmt.Sprintf("session %s, which trained the defaults, did not train them as long (rung %d, %d iterations)", short(id), t.Rung, t.Iterations)
		return g
	case t.Final == nil:
		g.Unknown = "its trial was not measured on fresh seeds, and the seeds that chose it would overstate it"
		return g
	}
	ref, refSeeds := control.Metrics, control.PerSeed
	if control.Final != nil {
		ref, refSeeds = control.Final.Metrics, control.Final.PerSeed
	}
	sc := st.scorer(ref)
	s, err := sc.Score(t.Final.Metrics)
	if err != nil {
		g.Unknown = fmt.Sprintf("its metrics do not score against session %s's defaults: %v", short(id), err)
		return g
	}
	g.Score, g.Final = Measured(s.Total), true
	g.SE = Measured(unpairedSE(sc, t.Final.PerSeed, refSeeds))
	return g
}

// unpairedSE is the standard error of the difference of two means of per-seed scores (each
// scored by sc), a's and b's seeds unrelated: √(var a / n a + var b / n b); 0 when either
// side has fewer than two seeds.
func unpairedSE(sc Scorer, a, b []SeedMetrics) float64 {
	varOver := func(per []SeedMetrics) (float64, bool) {
		_, xs := seedScores(sc, per)
		if len(xs) < 2 {
			return 0, false
		}
		se := StdErr(xs)
		return se * se, true
	}
	va, okA := varOver(a)
	vb, okB := varOver(b)
	if !okA || !okB {
		return 0
	}
	return math.Sqrt(va + vb)
}

// buildsOn lists the sessions s's baseline came from: the one it builds on, and the session
// of the preset it started from.
func (e *Engine) buildsOn(ctx context.Context, s Session) []string {
	var out []string
	if s.BuiltOn != nil {
		out = append(out, s.BuiltOn.Session)
	}
	if s.Settings.Preset != "" {
		if p, err := e.cfg.Store.Preset(ctx, s.Settings.Preset); err == nil && p.SessionID != "" {
			out = append(out, p.SessionID)
		}
	}
	return out
}

// StartedFrom says what s's baseline configuration was, as a preset records it
// (Preset.BuiltOn): "preset NAME", "session S's trial N" (an earlier best that saved no
// preset), or "" for the defaults.
func StartedFrom(s Session) string {
	switch b := s.BuiltOn; {
	case s.Settings.Preset != "":
		return "preset " + s.Settings.Preset
	case b != nil && b.Start == FromBest && b.Preset != "":
		return "preset " + b.Preset
	case b != nil && b.Start == FromBest:
		return fmt.Sprintf("session %s's trial %d", short(b.Session), b.Trial)
	}
	return ""
}
