package session

import (
	"context"
	"fmt"
	"slices"
)

// A preset's Score is measured against its own session's baseline, and a session that builds
// on another (Settings.From, start=best) or starts from a preset has a baseline that is not
// the defaults: two presets' scores are then against different baselines and do not rank.
// Gain is the one figure that does (docs/design.md §8): the preset's trial scored against the
// task's defaults trained as long, from the metrics of the baseline trial that trained the
// defaults, in its own session or in one it builds on.

// Gain is a preset's gain over the task's defaults at equal training. When it cannot be known
// (no session it builds on trained the defaults as long), Unknown says why and Score is 0.
type Gain struct {
	// Score is the §3 score of the preset's trial with the defaults' metrics as the baseline.
	Score float64 `json:"score"`
	// Rung is the trial's rung; the defaults were trained to it too (as many iterations).
	Rung int `json:"rung"`
	// Session is the session whose baseline trial trained the defaults: the preset's own, or
	// one it builds on.
	Session string `json:"session"`
	// Final is true when Score compares final re-evaluations on the same seeds.
	Final bool `json:"final"`
	// Unknown says why there is no figure; "" when Score is one.
	Unknown string `json:"unknown"`
}

// Known reports whether g is a figure.
func (g Gain) Known() bool { return g.Unknown == "" }

// maxBuildsOn bounds the walk from a session through the sessions it builds on.
const maxBuildsOn = 16

// gainOf is t's gain over the defaults at equal training, t being a trial of s (its preset's,
// scored among trials). Its own baseline is used when it trained the defaults (VersusControl,
// so the figure is the one its other surfaces show); else the sessions it builds on are
// walked, nearest first, for a baseline trial that trained the defaults to t's rung.
func (e *Engine) gainOf(ctx context.Context, s Session, trials []Trial, t Trial) Gain {
	defaults := e.SpaceOf(s.Settings.Task).Defaults()
	if base := ControlAt(trials, 0); base != nil && base.RewardConfig.Equal(defaults) {
		v, ok := VersusControl(s.Settings, trials, t)
		if !ok || !v.Matched() {
			return Gain{Rung: t.Rung, Session: s.ID, Unknown: fmt.Sprintf("the defaults were not trained to rung %d in its session", t.Rung)}
		}
		return Gain{Score: Measured(v.Score), Rung: t.Rung, Session: s.ID, Final: v.Final}
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
// equal training only (t's rung, as many iterations), final re-evaluations when both have
// them on the same seeds.
func gainAgainst(st Settings, control *Trial, t Trial, id string) Gain {
	g := Gain{Rung: t.Rung, Session: id}
	if control == nil || control.Iterations != t.Iterations || t.Metrics == nil {
		g.Unknown = fmt.Sprintf("session %s, which trained the defaults, did not train them as long (rung %d, %d iterations)", short(id), t.Rung, t.Iterations)
		return g
	}
	sc := st.scorer(control.Metrics)
	mine := t.Metrics
	if t.Final != nil && control.Final != nil && slices.Equal(t.Final.Seeds, control.Final.Seeds) {
		sc.Baseline, mine, g.Final = control.Final.Metrics, t.Final.Metrics, true
	}
	s, err := sc.Score(mine)
	if err != nil {
		g.Unknown = fmt.Sprintf("its metrics do not score against session %s's defaults: %v", short(id), err)
		return g
	}
	g.Score = Measured(s.Total)
	return g
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
