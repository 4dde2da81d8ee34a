package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// A second session starts from the first (docs/design.md §1): labs tune the same task again
// after changing training length, terrain or the reward code. Settings.From names the
// earlier session; its finished rung-0 trials seed the numeric sampler's model, each
// weighted FromWeight, its rejected directions stay rejected, and the session starts from
// its best configuration or from the defaults.

// Where a session that builds on an earlier one starts (Settings.FromStart).
const (
	FromBest     = "best"
	FromDefaults = "defaults"
)

// DefaultFromWeight is what one trial of the earlier session weighs in the numeric
// sampler's model against one of this session's: chosen by the worst family's median on
// the sim surfaces below the held-out seeds (bench/sampler/README.md, the warm row).
const DefaultFromWeight = 0.5

// BuiltOn records the earlier session a session builds on, as resolved at its start.
type BuiltOn struct {
	Session string  `json:"session"` // its full id
	Trials  int     `json:"trials"`  // its finished rung-0 trials, which seed the model
	Weight  float64 `json:"weight"`  // each one's weight in the model
	Start   string  `json:"start"`   // FromBest or FromDefaults
	// Trial is the earlier trial whose configuration this session starts from (FromBest),
	// -1 when none (null in JSON). Preset is the preset whose configuration it starts from:
	// the earlier best's own preset (FromBest, when that session saved it), or the preset it
	// was given (FromDefaults with a preset); "" when none.
	Trial  int    `json:"trial"`
	Preset string `json:"preset"`
}

// builtOnJSON is BuiltOn as JSON has it: trial null rather than -1, preset always there.
type builtOnJSON struct {
	Session string  `json:"session"`
	Trials  int     `json:"trials"`
	Weight  float64 `json:"weight"`
	Start   string  `json:"start"`
	Trial   *int    `json:"trial"`
	Preset  string  `json:"preset"`
}

// MarshalJSON writes no trial as null: -1 is not a trial number a reader should see.
func (b BuiltOn) MarshalJSON() ([]byte, error) {
	j := builtOnJSON{Session: b.Session, Trials: b.Trials, Weight: b.Weight, Start: b.Start, Preset: b.Preset}
	if b.Trial >= 0 {
		j.Trial = &b.Trial
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a null (or absent) trial back as -1, and the -1 stored before.
func (b *BuiltOn) UnmarshalJSON(data []byte) error {
	var j builtOnJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*b = BuiltOn{Session: j.Session, Trials: j.Trials, Weight: j.Weight, Start: j.Start, Trial: -1, Preset: j.Preset}
	if j.Trial != nil {
		b.Trial = *j.Trial
	}
	return nil
}

// Line says what the session builds on, as its start message, first card, page and
// summary show it: "builds on session abc123: 11 trials, each weighted 0.5, starting
// from its best configuration (trial 7)".
func (b BuiltOn) Line() string {
	s := fmt.Sprintf("builds on session %s: %d trials, each weighted %s", short(b.Session), b.Trials, strconv.FormatFloat(b.Weight, 'g', 3, 64))
	if b.Start == FromBest {
		if b.Preset != "" {
			return s + fmt.Sprintf(", starting from its best configuration (trial %d, preset %s)", b.Trial, b.Preset)
		}
		return s + fmt.Sprintf(", starting from its best configuration (trial %d)", b.Trial)
	}
	if b.Preset != "" {
		return s + ", starting from preset " + b.Preset
	}
	return s + ", starting from the defaults"
}

// StartLine says what session s starts from, as its start message says it on every
// surface: what it builds on (BuiltOn.Line), else "starts from preset NAME"; "" when it
// starts from the defaults.
func StartLine(s Session) string {
	switch {
	case s.BuiltOn != nil:
		return s.BuiltOn.Line()
	case s.Settings.Preset != "":
		return "starts from preset " + s.Settings.Preset
	}
	return ""
}

// fromStart is FromStart or its default, FromBest: a lab tunes again after a change, and
// the earlier best is the best configuration it knows; the session measures it again as its
// baseline, so it ships something else only when that beats it under the change.
func (s Settings) fromStart() string {
	if s.FromStart == "" {
		return FromBest
	}
	return s.FromStart
}

// fromWeight is FromWeight or DefaultFromWeight.
func (s Settings) fromWeight() float64 {
	if s.FromWeight == 0 {
		return DefaultFromWeight
	}
	return s.FromWeight
}

// fromProblems: from names a session, and a start or weight of an earlier session is given
// only with from.
func (s Settings) fromProblems() []string {
	if s.From == "" {
		if s.FromStart != "" || s.FromWeight != 0 {
			return []string{"start and weight of an earlier session were given without from (the session to build on)"}
		}
		return nil
	}
	if !ValidName(s.From) {
		return []string{fmt.Sprintf("%q is not a session id", s.From)}
	}
	return nil
}

// fromStartProblems: where a session that builds on another starts is best or defaults.
func (s Settings) fromStartProblems() []string {
	if st := s.FromStart; s.From != "" && st != "" && st != FromBest && st != FromDefaults {
		return []string{fmt.Sprintf("%q is not %s or %s%s", st, FromBest, FromDefaults, DidYouMean(st, []string{FromBest, FromDefaults}))}
	}
	return nil
}

// fromWeightProblems: an earlier trial's weight is 0–1 (0: the default).
func (s Settings) fromWeightProblems() []string {
	if w := s.FromWeight; s.From != "" && (!finite(w) || w < 0 || w > 1) {
		return []string{fmt.Sprintf("%g is outside 0–1 (0: the default, %g)", w, DefaultFromWeight)}
	}
	return nil
}

// presetAndFromBest: a preset and from's start=best both choose where a session starts.
func (s Settings) presetAndFromBest() []string {
	if s.From != "" && s.Preset != "" && s.fromStart() == FromBest {
		return []string{"a preset and from's start=best both choose where the session starts; give start=defaults to start from the preset"}
	}
	return nil
}

// earlierTrials are the trials of an earlier session a later one learns from: its finished
// rung-0 trials with metrics, in number order (its baseline first).
func earlierTrials(trials []Trial) []Trial {
	var out []Trial
	for _, t := range trials {
		if t.Rung == 0 && t.State == TrialCompleted && len(t.Metrics) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// buildOn resolves st.From at a session's start: the earlier session must exist, tune the
// same task and have a finished trial. It returns the record, st with From as the full id,
// and the configuration to start from (base, or the earlier best for FromBest).
func (e *Engine) buildOn(ctx context.Context, st Settings, base RewardConfig) (*BuiltOn, Settings, RewardConfig, error) {
	if st.From == "" {
		return nil, st, base, nil
	}
	id, err := ResolveID(ctx, e.cfg.Store, st.From)
	if err != nil {
		var ue *UserError
		if errors.As(err, &ue) {
			return nil, st, base, &UserError{Msg: "from: " + ue.Msg, Err: err} // the settings key, as every surface names a problem, not one surface's syntax
		}
		return nil, st, base, fmt.Errorf("finding session %s to build on: %w", st.From, err)
	}
	earlier, err := e.cfg.Store.Session(ctx, id)
	if err != nil {
		return nil, st, base, fmt.Errorf("reading session %s to build on: %w", short(id), err)
	}
	if earlier.Settings.Task != st.Task {
		return nil, st, base, Userf(ErrConflict, "from: session %s tuned task %s, not %s; a session builds only on one of the same task", short(id), earlier.Settings.Task, st.Task)
	}
	trials, err := e.cfg.Store.Trials(ctx, id)
	if err != nil {
		return nil, st, base, fmt.Errorf("reading the trials of session %s: %w", short(id), err)
	}
	done := earlierTrials(trials)
	if len(done) == 0 {
		return nil, st, base, Userf(ErrConflict, "from: session %s has no finished trial to build on", short(id))
	}
	st.From = id
	b := &BuiltOn{Session: id, Trials: len(done), Weight: st.fromWeight(), Start: st.fromStart(), Trial: -1, Preset: st.Preset}
	if b.Start == FromBest {
		t := earlierBest(earlier, trials, done)
		if err := e.SpaceOf(st.Task).CheckConfig(t.RewardConfig); err != nil {
			return nil, st, base, Userf(ErrConflict, "from: session %s's best configuration (trial %d) no longer fits the reward space (%v); from_start %s starts from the defaults instead", short(id), t.Number, err, FromDefaults)
		}
		base, b.Trial = t.RewardConfig.Clone(), t.Number
		if earlier.Preset != "" && earlier.IsBest(t) {
			b.Preset = earlier.Preset // the best it shipped: what stands if nothing beats it
		}
	}
	return b, st, base, nil
}

// earlierBest is an earlier session's best trial: the one it names (what it shipped, or
// its best so far), else its best eligible rung-0 trial by score, else its baseline.
func earlierBest(s Session, trials, done []Trial) Trial {
	if t := s.BestOf(trials); t != nil {
		return *t
	}
	best := done[0]
	for _, t := range done {
		if t.Eligible() && (!best.Eligible() || t.Score.Total > best.Score.Total) {
			best = t
		}
	}
	return best
}

// addEarlier adds to req what the session builds on: the earlier session's finished rung-0
// trials with their weight, and its rejected proposals, so that no proposer repeats one.
func (e *Engine) addEarlier(ctx context.Context, s Session, req *ProposalRequest) error {
	b := s.BuiltOn
	if b == nil {
		return nil
	}
	trials, err := e.cfg.Store.Trials(ctx, b.Session)
	if err != nil {
		return fmt.Errorf("reading the trials of session %s it builds on: %w", short(b.Session), err)
	}
	for _, t := range earlierTrials(trials) {
		req.Earlier = append(req.Earlier, e.summary(ctx, t, false))
	}
	req.EarlierWeight = b.Weight
	ps, err := e.cfg.Store.Proposals(ctx, b.Session)
	if err != nil {
		return fmt.Errorf("reading the proposals of session %s it builds on: %w", short(b.Session), err)
	}
	for _, p := range ps {
		if p.State != ProposalRejected {
			continue
		}
		r := Rejected{Seq: p.Seq, Base: p.Base.Clone(), Patch: p.Patch.Clone(), Session: b.Session}
		if p.Decision != nil {
			r.Feedback = p.Decision.Feedback
		}
		req.Rejected = append(req.Rejected, r)
	}
	return nil
}
