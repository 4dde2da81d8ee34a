package session

import (
	"context"
	"fmt"
	"time"
)

// Stopping by the model (docs/design.md §1, §5). A proposer with a model (the numeric
// sampler) says with each proposal what it expects of the most promising candidate it
// found (Outlook). Rung 0's search ends early when no candidate is expected to beat the
// best so far by more than one evaluation's noise: its expected gain is no more than the
// noise, and fewer than one in ModelStopChance⁻¹ of the model's draws has it beat the best
// by more than the noise. Another trial would then most likely measure noise.
// While the model expects more, the search goes on to the trial count, however many trials
// in a row did not improve. The patience counter (Settings.Patience) stays only as the
// stop for proposers without a model (DeepSeek, Optuna, random search), whose proposals
// carry no Outlook.

// Outlook is what a proposer's model expects of the most promising candidates it found.
type Outlook struct {
	// Gain is the expected improvement over the best so far: over the model's draws, the
	// mean of how much a candidate's noise-free score exceeds the best configuration's (0
	// where it does not, or where a gate fails), the most among the candidates it ranked
	// first.
	Gain float64 `json:"gain"`
	// Chance is the most chance among the same candidates of beating the best by more than
	// the noise (and NoiseMargin).
	Chance float64 `json:"chance"`
	// Noise is one evaluation's noise on the score, as the model estimates it.
	Noise float64 `json:"noise"`
}

// ModelStopFrom is the least number of finished tuned rung-0 trials before a model may end
// the search: before them it knows little beyond its prior.
const ModelStopFrom = 4

// ModelStopChance is the chance of beating the best by more than the noise below which a
// candidate is not worth its trial.
const ModelStopChance = 0.1

// ModelSaysStop is the stop rule: the model has seen at least ModelStopFrom tuned trials
// and expects no candidate to beat the best by more than the noise (expected gain at most
// the noise, chance below ModelStopChance). A proposal without an Outlook never stops the
// search this way.
func ModelSaysStop(o *Outlook, tuned int) bool {
	return o != nil && tuned >= ModelStopFrom && o.Gain <= o.Noise && o.Chance < ModelStopChance
}

// ModelStop records that rung 0's search ended early on the model's word.
type ModelStop struct {
	Trials   int `json:"trials"`   // tuned rung-0 trials finished when it stopped
	Proposal int `json:"proposal"` // the proposal (Seq) voided instead of run
	Outlook
}

// Text says why the search stopped, with the numbers.
func (m ModelStop) Text() string {
	return fmt.Sprintf("rung 0 stopped after %d tuned trials: the model expected no candidate to beat the best by more than the noise (expected gain %+.4f against noise %.4f; chance of beating it by more: %.0f%%)",
		m.Trials, m.Gain, m.Noise, 100*m.Chance)
}

// searchGoesOn says whether rung 0's search asks for more trials: below the trial count,
// not stopped by the model, and, when the latest proposal came without a model's outlook,
// within the patience.
func searchGoesOn(s Session, r0 []Trial, ps []Proposal) bool {
	if len(r0) >= s.Settings.TrialCount || s.Stopped != nil {
		return false
	}
	if latestHasOutlook(ps) {
		return true // the model decides, at its next proposal
	}
	noImprove, _ := noImprovement(r0)
	return noImprove < s.Settings.Patience
}

// latestHasOutlook reports whether the session's latest proposal carries a model's outlook.
func latestHasOutlook(ps []Proposal) bool {
	latest := -1
	for i, p := range ps {
		if latest < 0 || p.Seq > ps[latest].Seq {
			latest = i
		}
	}
	return latest >= 0 && ps[latest].Outlook != nil
}

// tunedDone counts the finished tuned (not the baseline) rung-0 trials.
func tunedDone(r0 []Trial) int {
	n := 0
	for _, t := range r0 {
		if t.Number != 0 && t.State.Terminal() {
			n++
		}
	}
	return n
}

// stopByModel ends rung 0's search when proposal p's outlook says so (ModelSaysStop): the
// proposal is voided instead of run, the session records why (Session.Stopped), and people
// are told with the model's numbers. It reports whether it stopped.
func (e *Engine) stopByModel(ctx context.Context, n snapshot, p Proposal) (bool, error) {
	tuned := tunedDone(n.rung(0))
	if !ModelSaysStop(p.Outlook, tuned) {
		return false, nil
	}
	stop := ModelStop{Trials: tuned, Proposal: p.Seq, Outlook: *p.Outlook}
	if _, err := e.cfg.Store.UpdateProposal(ctx, p.SessionID, p.ID, func(x *Proposal) error {
		x.State = ProposalVoid
		return nil
	}); err != nil {
		return false, fmt.Errorf("voiding proposal: %w", err)
	}
	s2, err := e.cfg.Store.UpdateSession(ctx, p.SessionID, func(x *Session) error {
		x.Stopped, x.Message, x.UpdatedAt = &stop, stop.Text(), time.Now().UTC()
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("updating session: %w", err)
	}
	e.audit(ctx, p.SessionID, "model_stop", System, map[string]any{"proposal": p.Seq, "trials": tuned, "gain": stop.Gain, "noise": stop.Noise, "chance": stop.Chance})
	e.notify(Event{Kind: EventSessionUpdated, Session: s2, Text: fmt.Sprintf("session %s: %s", short(p.SessionID), stop.Text())})
	return true, nil
}
