package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// snapshot is what one step plans from.
type snapshot struct {
	s         Session
	trials    []Trial
	proposals []Proposal
	// running is the set of jobs that ran when the snapshot was read (read just before it).
	running map[TrialRef]bool
}

func (n snapshot) trial(num, rung int) *Trial {
	for i := range n.trials {
		if n.trials[i].Number == num && n.trials[i].Rung == rung {
			return &n.trials[i]
		}
	}
	return nil
}

func (n snapshot) rung(r int) []Trial {
	var out []Trial
	for _, t := range n.trials {
		if t.Rung == r {
			out = append(out, t)
		}
	}
	return out
}

func (e *Engine) load(ctx context.Context, id string) (snapshot, error) {
	s, err := e.cfg.Store.Session(ctx, id)
	if err != nil {
		return snapshot{}, fmt.Errorf("loading session: %w", err)
	}
	trials, err := e.cfg.Store.Trials(ctx, id)
	if err != nil {
		return snapshot{}, fmt.Errorf("loading trials: %w", err)
	}
	ps, err := e.cfg.Store.Proposals(ctx, id)
	if err != nil {
		return snapshot{}, fmt.Errorf("loading proposals: %w", err)
	}
	return snapshot{s: s, trials: trials, proposals: ps}, nil
}

// step plans the next piece of work of the session from the store: it starts trial jobs in
// free slots (each in a goroutine of its own, j) and reports whether it should plan again
// at once. With nothing more to start it returns false; the worker then waits for a job
// to end or a wake-up, or leaves when nothing runs. Everything it decides derives from
// the store, so a crash between two steps loses at most the jobs that were running.
func (e *Engine) step(ctx context.Context, id string, j *jobs, log *slog.Logger) (bool, error) {
	// Which jobs run is read before the snapshot: a job that ends in between has stored
	// its trial's end by the time the snapshot is read, so it is never taken for a trial
	// left unfinished and started again.
	running := e.beginStep(j)
	j.wakeAt = time.Time{}
	n, err := e.load(ctx, id)
	if err != nil {
		return false, err
	}
	n.running = running
	s := n.s
	if ok, err := e.mayStartJobs(ctx, n, j); !ok || err != nil {
		return false, err
	}
	if err := e.judgeGates(ctx, &n); err != nil {
		return false, err
	}

	// 1. Trials left unfinished (pause between jobs, crash, cancel) are finished first.
	if again, err := e.finishUnfinished(ctx, n, j, log); again || err != nil {
		return again, err
	}

	// 2. The baseline, alone: every other trial is scored against it.
	if ready, err := e.baselineStep(ctx, n, j, log); !ready || err != nil {
		return false, err
	}

	// 3. The search at rung 0, with up to parallel trials (and proposals) in flight.
	r0 := n.rung(0)
	if searchGoesOn(s, r0, n.proposals) {
		return e.searchStep(ctx, n, j, log)
	}
	if len(r0) < s.Settings.TrialCount {
		e.voidPending(ctx, id)
	}
	if !allTerminal(r0) {
		return false, nil // the rung-0 trials still running finish before any promotion
	}

	// 4. Successive halving: each promoted trial resumes its own parent's checkpoint.
	if done, err := e.promoteStep(ctx, &n, j, log); !done || err != nil {
		return false, err
	}
	if e.busy(n, j) > 0 {
		return false, nil // the finalists are known once nothing runs
	}

	// 5. The finalist the top rung chose and the baseline trained as long are measured on
	// fresh seeds, which chose nothing (docs/design.md §3, the final evaluation).
	if e.reevaluateFinalists(ctx, n, j, log) {
		return false, nil
	}

	// 6. The chosen finalist becomes a preset; its verdict says whether it improved.
	return false, e.finish(ctx, n)
}

// judgeGates stores each trial's gates judged against the baseline trained as long (Judge)
// where that changed: a rung's control may end after the trials it judges, and a
// finalist's final re-evaluation before the control's. It runs before anything is ranked
// (promotion, finalists, the preset), so each sees the same judgement as every surface. A
// trial whose job runs is left to that job, the only writer of its record meanwhile. The
// session's headline, which ranks by the judgement, is kept current with it.
func (e *Engine) judgeGates(ctx context.Context, n *snapshot) error {
	trials := append([]Trial(nil), n.trials...)
	var judged []Trial
	for _, i := range JudgeAll(n.s.Settings, trials) {
		t := trials[i]
		if n.running[t.Ref()] {
			continue
		}
		if err := e.cfg.Store.PutTrial(ctx, t); err != nil {
			return fmt.Errorf("saving trial: %w", err)
		}
		n.trials[i] = t
		judged = append(judged, t)
	}
	if len(judged) == 0 {
		return nil
	}
	s, err := e.cfg.Store.UpdateSession(ctx, n.s.ID, func(x *Session) error {
		x.setResult(n.trials)
		return nil
	})
	if err != nil {
		return fmt.Errorf("updating session: %w", err)
	}
	n.s.Result = s.Result
	for _, t := range judged {
		e.audit(ctx, n.s.ID, "gates_judged", System, map[string]any{"trial": t.Number, "rung": t.Rung, "eligible": t.Eligible(), "reason": t.Reason})
		text := fmt.Sprintf("trial %d @ rung %d, judged against the baseline trained as long: passes the gates", t.Number, t.Rung)
		if !t.Eligible() {
			text = fmt.Sprintf("trial %d @ rung %d, judged against the baseline trained as long: %s", t.Number, t.Rung, GateReason(t))
		}
		e.notify(Event{Kind: EventSessionUpdated, Session: n.s, Text: text})
	}
	return nil
}

// withTrial is trials with t in place of the record of the same trial and rung, or added.
func withTrial(trials []Trial, t Trial) []Trial {
	for i := range trials {
		if trials[i].Ref() == t.Ref() {
			trials[i] = t
			return trials
		}
	}
	return append(trials, t)
}

// mayStartJobs says whether the session may start jobs at this step: not when it has ended
// or is paused, not when no job could ever start under this executor (it pauses, saying
// why), not when a pause was asked (it pauses once its running jobs end), and not when a
// budget is spent (checkBudget pauses it), not when a disk has less free space than the
// floor (checkDisk pauses it).
func (e *Engine) mayStartJobs(ctx context.Context, n snapshot, j *jobs) (bool, error) {
	s, id, running := n.s, n.s.ID, n.running
	switch s.State {
	case StateCancelled, StateFailed, StateSucceeded, StateInterrupted:
		return false, nil
	case StatePaused:
		return false, nil
	}
	if err := e.checkGPUs(s.Settings); err != nil && len(running) == 0 {
		// Started under another executor (more GPUs per trial now): no job could ever
		// start, so say why rather than wait for nothing.
		var ue *UserError
		errors.As(err, &ue)
		return false, e.pauseFor(ctx, id, ue.Msg, false)
	}
	if s.PauseAsked {
		return false, e.pauseAsked(ctx, s, len(running))
	}
	if paused, err := e.checkBudget(ctx, s, len(running)); paused || err != nil {
		return false, err
	}
	if low, err := e.checkDisk(ctx, n, j); low || err != nil {
		return false, err
	}
	return true, nil
}

// pauseAsked pauses a session whose pause was asked, once no job of it runs.
func (e *Engine) pauseAsked(ctx context.Context, s Session, running int) error {
	if running > 0 {
		return nil // no new job; paused once the running ones end
	}
	msg := "paused; resume to continue"
	if s.Reason != "" {
		msg = "paused: " + s.Reason
	}
	s, err := e.setState(ctx, s.ID, StatePaused, msg, func(x *Session) { x.PauseAsked = false })
	if err != nil {
		return err
	}
	// Nothing runs now: a trial whose job a full disk ended is not left looking running.
	e.markUnfinished(ctx, s.ID, "paused")
	e.audit(ctx, s.ID, "paused", System, nil)
	text := fmt.Sprintf("session %s paused after its current job", short(s.ID))
	if s.Reason != "" {
		text = fmt.Sprintf("session %s paused: %s", short(s.ID), s.Reason)
	}
	e.notify(Event{Kind: EventSessionUpdated, Session: s, Text: text})
	return nil
}

// finishUnfinished finishes the trials left unfinished (pause between jobs, crash, cancel)
// first; a remote job an earlier tunebot started is awaited, not started again. A trial
// whose rung result stands (only its final re-evaluation was cut short) is marked completed
// and the step runs again.
func (e *Engine) finishUnfinished(ctx context.Context, n snapshot, j *jobs, log *slog.Logger) (bool, error) {
	for _, t := range n.trials {
		if t.State.Terminal() || n.running[t.Ref()] {
			continue
		}
		remote := t.RemoteJob() != nil
		if t.Score != nil && !remote {
			// Only its final re-evaluation was cut short: its rung result stands, and step 5
			// runs the re-evaluation again.
			t.State, t.Reason = TrialCompleted, ""
			if err := e.cfg.Store.PutTrial(ctx, t); err != nil {
				return false, fmt.Errorf("saving trial: %w", err)
			}
			return true, nil
		}
		e.start(ctx, n, j, t, log)
	}
	return false, nil
}

// baselineStep starts the baseline, alone, and reports whether it has ended: every other
// trial is scored against it, so a failed baseline fails the session.
func (e *Engine) baselineStep(ctx context.Context, n snapshot, j *jobs, log *slog.Logger) (bool, error) {
	s := n.s
	base := n.trial(0, 0)
	if base == nil {
		t := Trial{SessionID: s.ID, Number: 0, Rung: 0, Iterations: s.Settings.Rungs[0], Source: SourceBaseline,
			RewardConfig: s.Base.Clone(), State: TrialQueued}
		if s.Settings.Preset != "" {
			t.Source = SourcePreset
		}
		_, err := e.startNew(ctx, n, j, t, log)
		return false, err
	}
	if base.State == TrialFailed {
		return false, fmt.Errorf("the baseline trial failed, so nothing can be scored: %s", base.Reason)
	}
	return base.State.Terminal(), nil
}

// promoteStep runs successive halving: each promoted trial resumes its own parent's
// checkpoint, all of a rung at once; a rung is ranked only when every trial below it has
// ended, and its plan is shown first and waits for people as the session's promotion review
// says (docs/design.md §1). It reports whether every rung's promotions have started.
func (e *Engine) promoteStep(ctx context.Context, n *snapshot, j *jobs, log *slog.Logger) (bool, error) {
	s := n.s
	for rung := 1; rung < len(s.Settings.Rungs); rung++ {
		if !allTerminal(n.rung(rung - 1)) {
			return false, nil
		}
		plan, wait, err := e.reviewPlan(ctx, n, j, rung)
		if err != nil || wait {
			return false, err
		}
		var by func(int) *Promotion
		if rv := n.s.review(rung); rv != nil {
			by = rv.PromotedBy
		}
		for _, parent := range controlFirst(plan) {
			if n.trial(parent.Number, rung) != nil {
				continue
			}
			t := Trial{SessionID: s.ID, Number: parent.Number, Rung: rung, Iterations: s.Settings.Rungs[rung],
				StartIter: parent.Iterations, Source: parent.Source, ProposalID: parent.ProposalID,
				Parent: &TrialRef{parent.Number, parent.Rung}, RewardConfig: parent.RewardConfig.Clone(), State: TrialQueued}
			if by != nil {
				t.PromotedBy = by(parent.Number)
			}
			started, err := e.startNew(ctx, *n, j, t, log)
			if err != nil || !started {
				return false, err
			}
			n.trials = append(n.trials, t)
		}
	}
	return true, nil
}

// reevaluateFinalists starts the final evaluation of each trial of finalPlan that has none and
// reports whether any is still waiting for it.
func (e *Engine) reevaluateFinalists(ctx context.Context, n snapshot, j *jobs, log *slog.Logger) bool {
	waiting := false
	for _, t := range finalPlan(n) {
		if t.Final == nil && !t.FinalFailed {
			waiting = true
			e.startFinal(ctx, n, j, t, log)
		}
	}
	return waiting
}

// controlFirst returns plan with the baseline (the control, when carried along) first: it
// starts before the tuned trials of its rung, so that each of them, when it finishes, is
// shown against the baseline trained as long (VersusControl) rather than rung 0's.
func controlFirst(plan []Trial) []Trial {
	out := make([]Trial, 0, len(plan))
	for _, t := range plan {
		if t.Number == 0 {
			out = append(out, t)
		}
	}
	for _, t := range plan {
		if t.Number != 0 {
			out = append(out, t)
		}
	}
	return out
}

// allTerminal reports whether every trial of ts has ended.
func allTerminal(ts []Trial) bool {
	for _, t := range ts {
		if !t.State.Terminal() {
			return false
		}
	}
	return true
}

// start runs trial t (training unless done, then evaluation and scoring) in a free slot,
// and reports whether it started.
func (e *Engine) start(ctx context.Context, n snapshot, j *jobs, t Trial, log *slog.Logger) bool {
	return e.launch(ctx, n.s, j, t.Ref(), "starting", func(ctx context.Context, sl *slot) error {
		return e.runTrial(ctx, n, j, sl, t, log)
	})
}

// startNew stores trial t, new, as queued and starts it as start does. It is stored first:
// a later step must find every trial whose job it counts as running in its snapshot, or it
// would take one whose job ended meanwhile for a trial never started and run it again (a
// fast job can end between that step's snapshot and its launch, which then finds the slot
// free). One that finds no slot now starts at the next step (step 1).
func (e *Engine) startNew(ctx context.Context, n snapshot, j *jobs, t Trial, log *slog.Logger) (bool, error) {
	if err := e.cfg.Store.PutTrial(ctx, t); err != nil {
		return false, fmt.Errorf("saving trial: %w", err)
	}
	return e.start(ctx, n, j, t, log), nil
}

// startFinal runs finalist t's re-evaluation in a free slot.
func (e *Engine) startFinal(ctx context.Context, n snapshot, j *jobs, t Trial, log *slog.Logger) bool {
	return e.launch(ctx, n.s, j, t.Ref(), "final evaluation", func(ctx context.Context, sl *slot) error {
		return e.finalEval(ctx, n, j, sl, t, log)
	})
}

const budgetReason = "budget reached:"

// checkBudget pauses the session when it has used its GPU-hour or advisor-token cap, unless
// a person already chose to go on past it.
func (e *Engine) checkBudget(ctx context.Context, s Session, running int) (bool, error) {
	st := s.Settings
	if s.BudgetWaived || (st.BudgetGPUHours == 0 && st.BudgetTokens == 0) {
		return false, nil
	}
	var why string
	if hours := s.GPUSeconds / 3600; st.BudgetGPUHours > 0 && hours >= st.BudgetGPUHours {
		why = fmt.Sprintf("%s %.2f of %.2f GPU hours used", budgetReason, hours, st.BudgetGPUHours)
	}
	if why == "" && st.BudgetTokens > 0 {
		used, err := SessionAdvisorTokens(ctx, e.cfg.Store, s.ID)
		if err != nil {
			return false, fmt.Errorf("reading the advisor tokens used: %w", err)
		}
		if used >= st.BudgetTokens {
			why = fmt.Sprintf("%s %d of %d advisor tokens used", budgetReason, used, st.BudgetTokens)
		}
	}
	if why == "" {
		return false, nil
	}
	if running > 0 {
		return true, nil // nothing new starts; paused once the running jobs end
	}
	s2, err := e.setState(ctx, s.ID, StatePaused, "paused: "+why+"; resume to go on past the budget, or cancel", func(x *Session) { x.Reason = why })
	if err != nil {
		return false, err
	}
	e.audit(ctx, s.ID, "budget_reached", System, map[string]any{"reason": why})
	e.notify(Event{Kind: EventSessionUpdated, Session: s2, Text: fmt.Sprintf("session %s paused: %s. Resume to go on past it, or cancel.", short(s.ID), why)})
	return true, nil
}

// bestOf returns the best eligible completed trial of ts (trials of one rung), if any,
// ranked by their equal-training figure among trials, the session's (Figures).
func bestOf(st Settings, trials, ts []Trial) (Trial, bool) {
	var el []Trial
	for _, t := range ts {
		if t.Eligible() {
			el = append(el, t)
		}
	}
	if len(el) == 0 {
		return Trial{}, false
	}
	FiguresAmong(st, trials, el).Sort(el)
	return el[0], true
}

// promoted lists the parents promoted to rung: the top promote[rung] eligible trials of
// the rung below, ranked by score and people's preferences (rankForPromotion). With a
// control the baseline is carried in addition to them, never in place of a tuned trial, so
// a rung always gets its promote[rung] tuned finalists (docs/design.md §1); without one it
// competes for those places like any trial.
func promoted(n snapshot, rung int) []Trial {
	control := n.s.Settings.Control
	el := promotable(&n.s, n.trials, rung)
	if k := n.s.Settings.Promote[rung]; len(el) > k {
		el = el[:k]
	}
	if control {
		if b := n.trial(0, rung-1); b != nil && b.State == TrialCompleted {
			el = append(el, *b)
		}
	}
	return el
}

// topRung is the highest rung that has any trial.
func topRung(n snapshot) int {
	top := 0
	for _, t := range n.trials {
		top = max(top, t.Rung)
	}
	return top
}

// chosenFinalist is the trial the session ships, or would once its final evaluation passes
// the gates: the best eligible trial of the highest rung that has one, by the rung's
// equal-training figure (bestOf). The baseline carried along competes (a tuned trial that it
// beats at equal training is no improvement); a finalist whose final evaluation failed a gate
// is no longer eligible, and the next in rank is chosen.
func chosenFinalist(n snapshot) (Trial, bool) {
	for r := topRung(n); r >= 0; r-- {
		if best, ok := bestOf(n.s.Settings, n.trials, n.rung(r)); ok {
			return best, true
		}
	}
	return Trial{}, false
}

// finalPlan lists what the final evaluation measures: the chosen finalist (a tuned trial) and
// the baseline's result at its rung. It measures and never chooses: the finalist was chosen
// on the evaluation seeds, and its gain on those seeds carries their luck (the winner's
// curse), so it is measured again on fresh ones, with the baseline trained as long beside it
// for a paired comparison (VerdictOf). Nothing is measured when the baseline was chosen.
func finalPlan(n snapshot) []Trial {
	chosen, ok := chosenFinalist(n)
	if !ok || chosen.Number == 0 {
		return nil
	}
	out := []Trial{chosen}
	if c := n.trial(0, chosen.Rung); c != nil && c.State == TrialCompleted {
		out = append(out, *c)
	}
	return out
}

// searchStep keeps the rung-0 search going: approved proposals start in free slots, an
// automatic session approves what it proposes, and new proposals are asked for while a
// slot would be free for them, each seeing the trials still running (docs/design.md §1).
// In approval mode up to parallel proposals wait at once, each with its own card.
func (e *Engine) searchStep(ctx context.Context, n snapshot, j *jobs, log *slog.Logger) (bool, error) {
	s := n.s
	next := nextTrialNumber(n)
	r0 := len(n.rung(0))
	pending, again, err := e.runDecided(ctx, &n, j, &next, &r0, log)
	if again || err != nil {
		return again, err
	}
	// Ask for more while a slot would be free for them and the trial count allows.
	for e.freeFor(n, j) > len(pending) && r0+len(pending) < s.Settings.TrialCount {
		for _, t := range n.trials {
			next = max(next, t.Number+1)
		}
		p, err := e.propose(ctx, n, next, log)
		if err != nil {
			var ue *UserError
			if errors.As(err, &ue) && ctx.Err() == nil {
				return false, e.pauseFor(ctx, s.ID, ue.Msg, e.busy(n, j) > 0)
			}
			return false, err
		}
		if stop, err := e.stopByModel(ctx, n, p); stop || err != nil {
			return stop, err
		}
		n.proposals = append(n.proposals, p)
		next = p.Number + 1
		if s.Settings.Mode == ModeAutomatic {
			started, again, err := e.approveAndRun(ctx, &n, j, p, next, log)
			if again || err != nil {
				return again, err
			}
			if started {
				r0++
			}
			continue
		}
		pending = append(pending, p)
		if err := e.proposalWaits(ctx, &s, n, j, pending, p); err != nil {
			return false, err
		}
	}
	return false, e.awaitPeople(ctx, s, n, j, pending)
}

// nextTrialNumber is the number the next trial takes: past every trial and every proposal
// approved or waiting.
func nextTrialNumber(n snapshot) int {
	next := 0
	for _, t := range n.trials {
		next = max(next, t.Number+1)
	}
	for _, p := range n.proposals {
		if p.State == ProposalPending || p.State == ProposalApproved {
			next = max(next, p.Number+1)
		}
	}
	return next
}

// runDecided starts the approved proposals a slot is free for, while the trial count
// allows (*r0 counts rung 0's trials), and returns the proposals still waiting for people.
// In an automatic session a waiting proposal is approved at once and the step runs again.
func (e *Engine) runDecided(ctx context.Context, n *snapshot, j *jobs, next, r0 *int, log *slog.Logger) ([]Proposal, bool, error) {
	s := n.s
	var pending []Proposal
	for _, p := range n.proposals {
		switch p.State {
		case ProposalApproved:
			if *r0 >= s.Settings.TrialCount || e.freeFor(*n, j) == 0 {
				continue
			}
			started, err := e.runProposal(ctx, n, j, p, *next, log)
			if err != nil {
				return nil, false, err
			}
			if started {
				*r0++
				*next = max(*next, p.Number+1)
			}
		case ProposalPending:
			if s.Settings.Mode == ModeAutomatic {
				if _, err := e.Decide(ctx, DecideRequest{SessionID: s.ID, ProposalID: p.ID, Action: ActionApprove, By: System}); err != nil && !errors.Is(err, ErrConflict) {
					return nil, false, err
				}
				return nil, true, nil
			}
			pending = append(pending, p)
		}
	}
	return pending, false, nil
}

// approveAndRun approves an automatic session's proposal and starts its trial; a proposal
// voided as a duplicate while a slot is free makes the step plan again.
func (e *Engine) approveAndRun(ctx context.Context, n *snapshot, j *jobs, p Proposal, next int, log *slog.Logger) (started, again bool, err error) {
	p, err = e.Decide(ctx, DecideRequest{SessionID: n.s.ID, ProposalID: p.ID, Action: ActionApprove, By: System})
	if err != nil {
		return false, false, err
	}
	started, err = e.runProposal(ctx, n, j, p, next, log)
	if err != nil {
		return false, false, err
	}
	return started, !started && e.freeFor(*n, j) > 0, nil
}

// proposalWaits tells the thread that proposal p waits for a decision; when nothing runs,
// the session is awaiting approval first (*s follows its state).
func (e *Engine) proposalWaits(ctx context.Context, s *Session, n snapshot, j *jobs, pending []Proposal, p Proposal) error {
	cur := *s
	if e.busy(n, j) == 0 {
		var err error
		if cur, err = e.setState(ctx, s.ID, StateAwaitingApproval, waitingText(pending), nil); err != nil {
			return err
		}
		s.State = cur.State
	}
	e.notify(Event{Kind: EventProposalReady, Session: cur, Proposal: &p, Text: fmt.Sprintf("proposal %d for trial %d waits for a decision", p.Seq, p.Number)})
	return nil
}

// awaitPeople: when proposals wait and nothing runs, the session waits for people, and
// says what waits (a restart re-posts it).
func (e *Engine) awaitPeople(ctx context.Context, s Session, n snapshot, j *jobs, pending []Proposal) error {
	if len(pending) == 0 || e.busy(n, j) > 0 || s.State == StateAwaitingApproval {
		return nil
	}
	s2, err := e.setState(ctx, s.ID, StateAwaitingApproval, waitingText(pending), nil)
	if err != nil {
		return err
	}
	for _, p := range pending {
		e.notify(Event{Kind: EventProposalReady, Session: s2, Proposal: &p, Text: fmt.Sprintf("proposal %d for trial %d waits for a decision", p.Seq, p.Number)})
	}
	return nil
}

// waitingText is the session message while proposals wait for a decision.
func waitingText(pending []Proposal) string {
	if len(pending) == 1 {
		return proposalNames(pending) + " waits for a decision"
	}
	return proposalNames(pending) + " wait for a decision"
}

// proposalNames is "proposal 1", or "proposals 1, 2" when there are several.
func proposalNames(ps []Proposal) string {
	if len(ps) == 1 {
		return fmt.Sprintf("proposal %d", ps[0].Seq)
	}
	seqs := make([]string, len(ps))
	for i, p := range ps {
		seqs[i] = fmt.Sprint(p.Seq)
	}
	return "proposals " + strings.Join(seqs, ", ")
}

// pauseFor pauses the session with reason: at once when nothing runs, else once its
// running jobs have ended (no new job starts meanwhile).
func (e *Engine) pauseFor(ctx context.Context, id, reason string, running bool) error {
	reason = CapText(reason, TextLimit) // it may quote a proposer's or a trainer's words
	if running {
		s, err := e.cfg.Store.UpdateSession(ctx, id, func(x *Session) error {
			x.PauseAsked, x.Reason = true, reason
			x.Message = "pausing once the running trials end: " + reason
			x.UpdatedAt = time.Now().UTC()
			return nil
		})
		if err != nil {
			return err
		}
		e.notify(Event{Kind: EventSessionUpdated, Session: s, Text: fmt.Sprintf("session %s will pause once its running trials end: %s", short(id), reason)})
		return nil
	}
	s2, err := e.setState(ctx, id, StatePaused, "paused: "+reason, func(x *Session) { x.Reason, x.PauseAsked = reason, false })
	if err != nil {
		return err
	}
	e.audit(ctx, id, "paused", System, map[string]any{"reason": reason})
	e.notify(Event{Kind: EventSessionUpdated, Session: s2, Text: fmt.Sprintf("session %s paused: %s", short(id), reason)})
	return nil
}

// propose asks the advisor (or, when the session allows, the sampler) for a patch of the
// best rung-0 configuration and stores it as a pending proposal. Every suggestion is
// validated here again, whoever made it.
func (e *Engine) propose(ctx context.Context, n snapshot, next int, log *slog.Logger) (Proposal, error) {
	s := n.s
	req, err := e.proposalRequest(ctx, n)
	if err != nil {
		return Proposal{}, err
	}
	sug, err := e.suggest(ctx, s, req, log)
	if err != nil {
		return Proposal{}, err
	}
	seq := len(n.proposals) + 1
	p := Proposal{
		ID: fmt.Sprintf("%s-p%02d", short(s.ID), seq), SessionID: s.ID, Seq: seq, Number: next, BaseTrial: req.BaseTrial,
		Base: req.Base, Patch: sug.Patch.Clone(), Rationale: sug.Rationale, Summary: sug.Summary, Evidence: sug.Evidence, ExpectedImpact: sug.ExpectedImpact,
		Confidence: sug.Confidence, BeatBest: sug.BeatBest, Source: sug.Source, Model: sug.Model, State: ProposalPending, CreatedAt: time.Now().UTC(),
		Outlook: sug.Outlook,
	}
	if seq == 1 && s.BuiltOn != nil {
		p.BuiltOn = "this session " + s.BuiltOn.Line()
	}
	if err := e.cfg.Store.PutProposal(ctx, p); err != nil {
		return Proposal{}, fmt.Errorf("saving proposal: %w", err)
	}
	e.audit(ctx, s.ID, "proposal_created", System, map[string]any{"proposal": p.ID, "seq": seq, "source": p.Source, "model": p.Model, "patch": p.Patch, "base_trial": req.BaseTrial})
	return p, nil
}

// proposalRequest is what a proposer is told: the best rung-0 trial as the base, what was
// tried, the constraints, the preferences, every rung-0 trial's summary, the earlier session
// it builds on, and the rejected proposals with the last four people's feedback.
func (e *Engine) proposalRequest(ctx context.Context, n snapshot) (ProposalRequest, error) {
	s := n.s
	r0 := n.rung(0)
	_, bestNum := noImprovement(r0)
	baseTrial := n.trial(bestNum, 0)
	req := ProposalRequest{
		SessionID: s.ID, Task: s.Settings.Task, Objective: s.Settings.Objective, Floors: s.Settings.Floors, Space: e.SpaceOf(s.Settings.Task),
		Base: baseTrial.RewardConfig.Clone(), BaseTrial: bestNum, Tried: append(append(TriedConfigs(n.trials), rejectedConfigs(n.proposals)...), waitingConfigs(n.proposals)...),
		Constraints: SessionConstraints(n.proposals), Seed: s.Settings.Seed,
		PreferenceWeight: s.Settings.Preferences.Weight, TrialBudget: s.Settings.TrialCount,
	}
	for _, p := range s.Preferences {
		if p.Decided() {
			req.Preferences = append(req.Preferences, p)
		}
	}
	for _, t := range r0 {
		// Only the advisor reads curves (reward reflection); the sampler needs scores.
		req.History = append(req.History, e.summary(ctx, t, e.cfg.Advisor != nil))
	}
	if err := e.addEarlier(ctx, s, &req); err != nil {
		return ProposalRequest{}, err
	}
	feedback, rejected := rejections(n.proposals)
	req.Feedback, req.Rejected = append(req.Feedback, feedback...), append(req.Rejected, rejected...)
	if len(req.Feedback) > 4 {
		req.Feedback = req.Feedback[len(req.Feedback)-4:] // the last four only
	}
	return req, nil
}

// rejections are the session's rejected proposals and the feedback people gave (what a
// proposer is told not to do again).
func rejections(ps []Proposal) (feedback []string, rejected []Rejected) {
	for _, p := range ps {
		if p.State != ProposalRejected {
			continue
		}
		r := Rejected{Seq: p.Seq, Base: p.Base.Clone(), Patch: p.Patch.Clone()}
		if p.Decision != nil {
			r.Feedback = p.Decision.Feedback
			if p.Decision.Feedback != "" {
				feedback = append(feedback, p.Decision.Feedback)
			}
		}
		rejected = append(rejected, r)
	}
	return feedback, rejected
}

// suggest asks the advisor, and the numeric sampler when the advisor cannot propose and the
// session falls back (its space allows the sampler's changes). A proposer that cannot
// propose pauses the session with what it said (a UserError).
func (e *Engine) suggest(ctx context.Context, s Session, req ProposalRequest, log *slog.Logger) (Suggestion, error) {
	advisorErr := errors.New("no advisor configured")
	if e.cfg.Advisor != nil {
		sug, err := e.ask(ctx, e.cfg.Advisor, req)
		if err == nil {
			if sug.Source == "" {
				sug.Source = SourceAdvisor
			}
			return sug, nil
		}
		advisorErr = err
	}
	if ctx.Err() != nil {
		return Suggestion{}, ctx.Err()
	}
	why, _ := UserMessage(advisorErr)
	if !s.Settings.Fallback || e.cfg.Sampler == nil {
		return Suggestion{}, &UserError{Msg: "the advisor could not propose: " + why + "; resume to ask again", Err: advisorErr}
	}
	if e.cfg.Advisor != nil {
		log.Warn("advisor failed; the sampler proposes instead", "err", advisorErr)
		e.audit(ctx, s.ID, "advisor_fallback", System, map[string]any{"error": why})
	}
	sreq := req
	sreq.Space = e.spaceFor(s.Settings, SourceSampler)
	sug, err := e.ask(ctx, e.cfg.Sampler, sreq)
	if err != nil {
		if ctx.Err() != nil {
			return Suggestion{}, ctx.Err()
		}
		why, _ := UserMessage(err)
		return Suggestion{}, &UserError{Msg: "the numeric sampler could not propose: " + why + "; resume to ask again", Err: err}
	}
	if sug.Source == "" {
		sug.Source = SourceSampler
	}
	return sug, nil
}

// rejectedConfigs lists the merged configurations of the session's rejected proposals. They
// go into every proposer's tried list, and the engine checks each answer against them, so a
// rejected patch is never proposed again, whoever proposes (docs/design.md §2, §6).
func rejectedConfigs(ps []Proposal) []Tried {
	var out []Tried
	for _, p := range ps {
		if p.State == ProposalRejected {
			out = append(out, Tried{Label: fmt.Sprintf("proposal %d", p.Seq), Config: Merge(p.Base, p.Patch), Rejected: true})
		}
	}
	return out
}

// waitingConfigs lists the merged configurations of proposals that wait for a decision or
// to start: with several in flight, a new proposal must not repeat one of them.
func waitingConfigs(ps []Proposal) []Tried {
	var out []Tried
	for _, p := range ps {
		if p.State == ProposalPending || p.State == ProposalApproved {
			out = append(out, Tried{Label: fmt.Sprintf("proposal %d (waiting)", p.Seq), Config: Merge(p.Base, p.Effective())})
		}
	}
	return out
}

// ask runs one proposer and re-validates its answer under the session's rules.
func (e *Engine) ask(ctx context.Context, a Advisor, req ProposalRequest) (Suggestion, error) {
	sug, err := a.Propose(ctx, req)
	if err != nil {
		return Suggestion{}, err
	}
	sug.Patch = req.Space.Round(req.Base, sug.Patch) // the proposal is stored as it will run
	if _, err := req.Check(sug.Patch); err != nil {
		// One line, with the rule it breaks: it becomes part of the session's pause reason.
		return Suggestion{}, &UserError{Msg: "its patch breaks the rules: " + err.Error(), Err: err}
	}
	return sug, nil
}

// spaceFor is the reward space a proposal from source is checked against: the engine's,
// except that a sampler proposal of an automatic session may change up to
// sampler_max_changes scalars (every other rule stays).
func (e *Engine) spaceFor(st Settings, source string) *Space {
	space := e.SpaceOf(st.Task)
	if st.Mode != ModeAutomatic || source != SourceSampler || st.SamplerMaxChanges <= space.MaxChanges {
		return space
	}
	sp := *space
	sp.MaxChanges = st.SamplerMaxChanges
	return &sp
}

// summary is what proposers see of a trial, with curves (when asked for) cut to 64 points
// per tag.
func (e *Engine) summary(ctx context.Context, t Trial, curves bool) TrialSummary {
	ts := SummaryOf(t)
	if !curves {
		return ts
	}
	tags, err := e.cfg.Store.SeriesTags(ctx, t.SessionID, t.Ref())
	if err != nil {
		return ts
	}
	ts.Curves = map[string][]Point{}
	for _, tag := range tags {
		pts, err := e.cfg.Store.Series(ctx, SeriesKey{t.SessionID, t.Number, t.Rung, tag})
		if err == nil && len(pts) > 0 {
			ts.Curves[tag] = Downsample(pts, 64)
		}
	}
	return ts
}

// runProposal creates the rung-0 trial of an approved proposal and starts it in a free
// slot; it reports whether a trial started (a proposal that became a duplicate is voided).
func (e *Engine) runProposal(ctx context.Context, n *snapshot, j *jobs, p Proposal, next int, log *slog.Logger) (bool, error) {
	base := n.trial(p.BaseTrial, 0)
	if base == nil {
		return false, fmt.Errorf("proposal %d names base trial %d, which does not exist", p.Seq, p.BaseTrial)
	}
	space := e.SpaceOf(n.s.Settings.Task)
	if p.Decision == nil || p.Decision.Edited == nil {
		space = e.spaceFor(n.s.Settings, p.Source)
	}
	merged, err := space.Validate(p.Base, p.Effective(), TriedConfigs(n.trials))
	if err != nil {
		// A configuration can become a duplicate only through a race with another trial;
		// refuse it and ask again rather than spend GPU time on it.
		_, _ = e.cfg.Store.UpdateProposal(ctx, n.s.ID, p.ID, func(x *Proposal) error { x.State = ProposalVoid; return nil })
		e.audit(ctx, n.s.ID, "proposal_void", System, map[string]any{"proposal": p.ID, "error": err.Error()})
		return false, nil
	}
	source := p.Source
	if p.Decision != nil && p.Decision.Edited != nil {
		source = SourceEdit
	}
	num := p.Number
	if num <= 0 || n.trial(num, 0) != nil {
		num = next
	}
	t := Trial{SessionID: n.s.ID, Number: num, Rung: 0, Iterations: n.s.Settings.Rungs[0], Source: source,
		ProposalID: p.ID, Parent: &TrialRef{p.BaseTrial, 0}, RewardConfig: merged, State: TrialQueued}
	if err := e.cfg.Store.PutTrial(ctx, t); err != nil {
		return false, fmt.Errorf("saving trial: %w", err)
	}
	if _, err := e.cfg.Store.UpdateProposal(ctx, n.s.ID, p.ID, func(x *Proposal) error { x.State = ProposalUsed; return nil }); err != nil {
		return false, fmt.Errorf("marking proposal used: %w", err)
	}
	n.trials = append(n.trials, t)
	for i := range n.proposals {
		if n.proposals[i].ID == p.ID {
			n.proposals[i].State = ProposalUsed
		}
	}
	// A stored queued trial that finds no slot now starts at the next step (step 1).
	e.start(ctx, *n, j, t, log)
	return true, nil
}

func (e *Engine) setState(ctx context.Context, id string, st State, msg string, also func(*Session)) (Session, error) {
	return e.cfg.Store.UpdateSession(ctx, id, func(s *Session) error {
		if !s.State.Active() {
			return Userf(ErrConflict, "session %s is %s", short(id), s.State)
		}
		s.State, s.Message, s.UpdatedAt = st, msg, time.Now().UTC()
		if also != nil {
			also(s)
		}
		return nil
	})
}

// runTrial trains (unless a finished training run is already there) and evaluates t in
// slot sl, then scores it. A failed job fails the trial, not the session. A remote job an
// earlier tunebot started for t (t.Proc) is re-attached instead of started again.
func (e *Engine) runTrial(ctx context.Context, n snapshot, j *jobs, sl *slot, t Trial, log *slog.Logger) error {
	s := n.s
	if sl.gpus != nil {
		s.Settings.GPUs = sl.gpus // this job's own GPUs, never another's
	}
	log = log.With("trial", t.Number, "rung", t.Rung)
	runDir, attach, err := e.prepareRunDir(s.ID, &t)
	if err != nil {
		return err
	}
	if err := e.makeDir(filepath.Join(s.ID, t.RunDir)); err != nil {
		return e.trialDone(ctx, s, t, &JobError{Job: "train", Reason: "cannot create the run directory: " + err.Error(), Err: err}, log)
	}
	if !t.Trained {
		if err := e.setPhase(ctx, s.ID, j, sl, "training"); err != nil {
			return err
		}
		var trainAttach *Proc
		if attach != nil && attach.Job == "train" {
			trainAttach, attach = attach, nil
		}
		if err := e.train(ctx, s, &t, runDir, trainAttach, log); err != nil {
			return e.trialDone(ctx, s, t, err, log)
		}
		if cur, err := e.cfg.Store.Session(ctx, s.ID); err == nil && cur.PauseAsked {
			// Step pauses; the evaluation runs on resume. Nothing runs meanwhile, so the
			// trial must not look as if it still evaluated (status, the root message).
			t.State, t.Reason = TrialInterrupted, "paused after its training: it is evaluated on resume"
			if err := e.cfg.Store.PutTrial(ctx, t); err != nil {
				return fmt.Errorf("saving trial: %w", err)
			}
			return nil
		}
	}
	if err := e.setPhase(ctx, s.ID, j, sl, "evaluating"); err != nil {
		return err
	}
	ev, err := e.evaluate(ctx, s, &t, runDir, e.cfg.Trainer.EvaluationFile(false), s.Settings.EvalSeeds, true, attach, log)
	if err != nil {
		return e.trialDone(ctx, s, t, err, log)
	}
	t.Metrics, t.PerSeed = ev.Metrics, ev.PerSeed
	t.Clip, t.ClipNote = e.clipOf(s.ID, ev, log)
	baseline := t.Metrics
	if !(t.Number == 0 && t.Rung == 0) {
		b := n.trial(0, 0)
		if b == nil || b.Metrics == nil {
			return errors.New("the baseline has no metrics to score against")
		}
		baseline = b.Metrics
	}
	sc, err := s.Settings.scorer(baseline).Score(t.Metrics)
	if err != nil {
		return e.trialDone(ctx, s, t, &JobError{Job: "evaluate", Reason: err.Error(), Err: err}, log)
	}
	t.Score = &sc
	return e.trialDone(ctx, s, t, nil, log)
}

// prepareRunDir names trial t's run directory in session id and decides what of an earlier
// run of t stays: a finished training run whose checkpoint is still there, or a remote job
// an earlier tunebot started (returned, to re-attach; a training job's is trained again by
// attaching). Whatever a half-done run left is discarded, so the trial starts clean. It
// returns the run directory's absolute path.
func (e *Engine) prepareRunDir(id string, t *Trial) (runDir string, attach *Proc, err error) {
	sdir := e.SessionDir(id)
	t.RunDir = e.cfg.Trainer.RunDir(t.Ref())
	runDir = filepath.Join(sdir, t.RunDir)
	attach = t.RemoteJob()
	t.Proc = nil
	if t.Trained && t.Checkpoint != "" && (attach == nil || attach.Job != "train") {
		if _, err := os.Stat(filepath.Join(sdir, t.Checkpoint)); err != nil {
			t.Trained = false
		}
	}
	if attach != nil && attach.Job == "train" {
		t.Trained = false
	}
	if !t.Trained && attach == nil {
		if err := e.removeDir(filepath.Join(id, t.RunDir)); err != nil {
			return runDir, attach, fmt.Errorf("discarding the half-done run dir %s: %w", runDir, err)
		}
		t.Progress, t.Checkpoint, t.Policy, t.Metrics, t.Score, t.Reason, t.LogTail = 0, "", "", nil, nil, "", ""
		t.Clip, t.ClipNote = nil, ""
	}
	return runDir, attach, nil
}

func (e *Engine) train(ctx context.Context, s Session, t *Trial, runDir string, attach *Proc, log *slog.Logger) error {
	job := TrainJob{SessionID: s.ID, Trial: t.Ref(), RunDir: runDir, Config: t.RewardConfig, Settings: s.Settings,
		Iterations: t.Iterations - t.StartIter, Target: t.Iterations, StartIter: t.StartIter, Attach: attach,
		Space: e.SpaceOf(s.Settings.Task)}
	ckpt, err := e.parentCheckpoint(ctx, s.ID, *t)
	if err != nil {
		return err
	}
	job.Checkpoint = ckpt
	if err := e.markTraining(ctx, s, t, attach); err != nil {
		return err
	}
	log.Info("training", "iterations", job.Iterations, "target", job.Target, "resume", job.Checkpoint != "", "gpus", s.Settings.GPUs, "attach", attach != nil)
	running := false
	defer func() {
		if running {
			e.jobEnded()
		}
	}()
	start := time.Now()
	res, err := e.cfg.Trainer.Train(ctx, job, e.trainHooks(ctx, s, t, &running, log))
	t.GPUSeconds += time.Since(start).Seconds() * float64(e.jobGPUs(s))
	t.Proc = nil
	if err != nil {
		return err
	}
	if err := e.keepTrained(ctx, s.ID, t, res, log); err != nil {
		return err
	}
	t.State = TrialEvaluating
	if err := e.cfg.Store.PutTrial(ctx, *t); err != nil {
		return fmt.Errorf("saving trial: %w", err)
	}
	return nil
}

// parentCheckpoint is the checkpoint a promoted trial resumes: its own parent's, which must
// exist ("" at rung 0, which trains from scratch).
func (e *Engine) parentCheckpoint(ctx context.Context, id string, t Trial) (string, error) {
	if t.Rung == 0 {
		return "", nil
	}
	parent := t.Parent
	if parent == nil {
		return "", &JobError{Job: "train", Reason: "a promoted trial has no parent checkpoint"}
	}
	trials, err := e.cfg.Store.Trials(ctx, id)
	if err != nil {
		return "", fmt.Errorf("loading trials: %w", err)
	}
	ckpt := ""
	for _, p := range trials {
		if p.Ref() == *parent {
			ckpt = filepath.Join(e.SessionDir(id), p.Checkpoint)
		}
	}
	if ckpt == "" {
		return "", &JobError{Job: "train", Reason: fmt.Sprintf("the parent %s has no checkpoint", parent)}
	}
	return ckpt, nil
}

// markTraining stores the trial as training before its job starts, with the process it
// attaches to recorded until the job is seen again (so a crash now cannot lose it), and
// tells the thread.
func (e *Engine) markTraining(ctx context.Context, s Session, t *Trial, attach *Proc) error {
	t.State, t.EndedAt = TrialTraining, time.Time{}
	if attach == nil || t.StartedAt.IsZero() {
		t.StartedAt = time.Now().UTC()
	}
	t.Proc = attach
	if err := e.cfg.Store.PutTrial(ctx, *t); err != nil {
		return fmt.Errorf("saving trial: %w", err)
	}
	started := *t
	e.notify(Event{Kind: EventTrialStarted, Session: s, Trial: &started, Text: fmt.Sprintf("trial %d @ rung %d started (%d iterations)", t.Number, t.Rung, t.Iterations)})
	return nil
}

// trainHooks records the trainer's process on the trial as soon as it starts (and counts it
// as a running job, *running), follows a remote job's status, and tells the thread of the
// training's progress at most every 2 s (and at its end).
func (e *Engine) trainHooks(ctx context.Context, s Session, t *Trial, running *bool, log *slog.Logger) JobHooks {
	lastNote := time.Time{}
	return JobHooks{
		Started: func(p Proc) {
			*running = true
			e.jobStarted()
			p.Job = "train"
			t.Proc = &p
			if err := e.cfg.Store.PutTrial(context.WithoutCancel(ctx), *t); err != nil {
				log.Error("recording the trainer process", "err", err)
			}
		},
		Status: e.statusHook(ctx, s, t, "train", log),
		Progress: func(it int) {
			t.Progress = it
			if time.Since(lastNote) >= 2*time.Second || it >= t.Iterations {
				lastNote = time.Now()
				cur := *t
				e.notify(Event{Kind: EventTrialProgress, Session: s, Trial: &cur, Text: fmt.Sprintf("trial %d @ rung %d: iteration %d of %d", t.Number, t.Rung, it, t.Iterations)})
			}
		},
	}
}

// keepTrained records what a training job left: its checkpoint and policy, which must lie
// inside the session directory, and its curves.
func (e *Engine) keepTrained(ctx context.Context, id string, t *Trial, res TrainResult, log *slog.Logger) error {
	sdir := e.SessionDir(id)
	rel, rerr := filepath.Rel(sdir, res.Checkpoint)
	if rerr != nil {
		return fmt.Errorf("checkpoint %s is outside the session directory", res.Checkpoint)
	}
	t.Checkpoint, t.Trained, t.Progress = rel, true, res.Iteration
	t.Policy = ""
	if res.Policy != "" {
		prel, perr := filepath.Rel(sdir, res.Policy)
		if perr != nil || !filepath.IsLocal(prel) {
			return fmt.Errorf("policy %s is outside the session directory", res.Policy)
		}
		t.Policy = prel
	}
	if len(res.Series) > 0 {
		if err := e.putSeries(ctx, id, t.Ref(), res.Series); err != nil {
			log.Error("saving series", "err", err)
		}
	}
	return nil
}

// statusHook records a remote job's state (pending and why, running where) on the trial
// and tells the session's thread when it changes.
func (e *Engine) statusHook(ctx context.Context, s Session, t *Trial, job string, log *slog.Logger) func(Proc) {
	// The trainer calls it from the goroutine that follows the job, as it does Started.
	return func(p Proc) {
		p.Job = job
		changed := t.Proc == nil || t.Proc.JobState != p.JobState || t.Proc.JobReason != p.JobReason || t.Proc.Node != p.Node
		t.Proc = &p
		if !changed {
			return
		}
		if err := e.cfg.Store.PutTrial(context.WithoutCancel(ctx), *t); err != nil {
			log.Error("recording the job's state", "err", err)
		}
		cur := *t
		e.notify(Event{Kind: EventTrialProgress, Session: s, Trial: &cur, Text: fmt.Sprintf("trial %d @ rung %d: %s", t.Number, t.Rung, ProcText(p))})
	}
}

// ProcText says where a trial's job runs, the same on every surface (chat, terminal,
// monitoring page): its GPUs, or its cluster job (Slurm's or Ray's) with state and node,
// or while it waits the reason Slurm gives. The cluster's words are outside text: they are
// reduced to the characters such words use and capped, so they are never markup on any
// platform.
func ProcText(p Proc) string {
	if engine, id := p.Cluster(); engine != "" {
		s := engine + " job " + clusterWord(id, 64)
		if st := clusterWord(p.JobState, 40); st != "" {
			s += " " + st
		}
		switch {
		case p.JobState == "PENDING" || p.JobState == "":
			if r := clusterWord(p.JobReason, 40); r != "" && r != "None" {
				s += " (" + r + ")"
			}
		case p.Node != "":
			s += " on " + clusterWord(p.Node, 40)
		}
		return s
	}
	switch len(p.GPUs) {
	case 0:
		return "running"
	case 1:
		return fmt.Sprintf("GPU %d", p.GPUs[0])
	}
	ids := make([]string, len(p.GPUs))
	for i, g := range p.GPUs {
		ids[i] = fmt.Sprint(g)
	}
	return "GPUs " + strings.Join(ids, ",")
}

var clusterUnsafe = regexp.MustCompile(`[^A-Za-z0-9_.,:+\[\]-]+`)

// clusterWord is s reduced to the characters a job id, state or node name uses, at most
// limit runes.
func clusterWord(s string, limit int) string {
	s = clusterUnsafe.ReplaceAllString(strings.TrimSpace(s), "_")
	if r := []rune(s); len(r) > limit {
		s = string(r[:limit-1]) + "…"
	}
	return s
}

// trialAuditor is implemented by stores that can write a trial and its audit line in one
// transaction.
type trialAuditor interface {
	PutTrialAudited(ctx context.Context, t Trial, e AuditEntry) error
}

// putTrialAudited records a trial's result together with its audit line when the store
// can, so a crash between the two cannot leave one without the other.
func (e *Engine) putTrialAudited(ctx context.Context, t Trial, entry AuditEntry) error {
	if a, ok := e.cfg.Store.(trialAuditor); ok {
		return a.PutTrialAudited(ctx, t, entry)
	}
	if err := e.cfg.Store.PutTrial(ctx, t); err != nil {
		return err
	}
	return e.cfg.Store.Append(ctx, entry)
}

// seriesBatcher is implemented by stores that can write many series in one transaction.
type seriesBatcher interface {
	PutSeriesBatch(ctx context.Context, sessionID string, ref TrialRef, series map[string][]Point) error
}

// MaxStoredPoints bounds the points kept per series of a trial: charts are phone-sized
// and the advisor sees 64, while a long run logs tens of thousands of iterations per tag
// and a daemon keeps every session for months. LTTB keeps the shape (peaks, troughs, both
// ends); the event files in the run directory keep every point.
const MaxStoredPoints = 4096

func (e *Engine) putSeries(ctx context.Context, id string, ref TrialRef, series map[string][]Point) error {
	kept := make(map[string][]Point, len(series))
	for tag, pts := range series {
		if len(pts) > MaxStoredPoints {
			pts = Downsample(pts, MaxStoredPoints)
		}
		kept[tag] = pts
	}
	series = kept
	if b, ok := e.cfg.Store.(seriesBatcher); ok {
		return b.PutSeriesBatch(ctx, id, ref, series)
	}
	for tag, pts := range series {
		if err := e.cfg.Store.PutSeries(ctx, SeriesKey{id, ref.Number, ref.Rung, tag}, pts); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) evaluate(ctx context.Context, s Session, t *Trial, runDir, output string, seeds []int, clip bool, attach *Proc, log *slog.Logger) (Evaluation, error) {
	t.State = TrialEvaluating
	t.Proc = attach
	if err := e.cfg.Store.PutTrial(ctx, *t); err != nil {
		return Evaluation{}, fmt.Errorf("saving trial: %w", err)
	}
	job := EvalJob{SessionID: s.ID, Trial: t.Ref(), RunDir: runDir, Checkpoint: filepath.Join(e.SessionDir(s.ID), t.Checkpoint),
		Seeds: seeds, Output: filepath.Join(runDir, output), Settings: s.Settings, Attach: attach, Clip: clip,
		Space: e.SpaceOf(s.Settings.Task)}
	if attach == nil {
		_ = os.Remove(job.Output) // a stale file from an interrupted evaluation must not count
	}
	log.Info("evaluating", "seeds", seeds)
	start := time.Now()
	running := false
	defer func() {
		if running {
			e.jobEnded()
		}
	}()
	ev, err := e.cfg.Trainer.Evaluate(ctx, job, JobHooks{Started: func(p Proc) {
		running = true
		e.jobStarted()
		p.Job = "evaluate"
		t.Proc = &p
		if err := e.cfg.Store.PutTrial(context.WithoutCancel(ctx), *t); err != nil {
			log.Error("recording the evaluator process", "err", err)
		}
	}, Status: e.statusHook(ctx, s, t, "evaluate", log)})
	t.GPUSeconds += time.Since(start).Seconds() * float64(e.jobGPUs(s))
	t.Proc = nil
	return ev, err
}

// clipOf is the clip an evaluation reported, with its paths made relative to the session
// directory as every path on a trial is; a clip outside it is dropped with a note.
func (e *Engine) clipOf(sessionID string, ev Evaluation, log *slog.Logger) (*Clip, string) {
	if ev.Clip == nil {
		return nil, ev.ClipNote
	}
	c := *ev.Clip
	sdir := e.SessionDir(sessionID)
	rel := func(f *File) bool {
		r, err := filepath.Rel(sdir, f.Path)
		if err != nil || !filepath.IsLocal(r) {
			return false
		}
		f.Path = r
		return true
	}
	if !rel(&c.File) {
		log.Warn("the clip is outside the session directory; not recorded", "path", ev.Clip.Path)
		return nil, "clip refused: it is outside the session directory"
	}
	if c.Poster != nil {
		p := *c.Poster
		c.Poster = &p
		if !rel(c.Poster) {
			c.Poster = nil
		}
	}
	return &c, ev.ClipNote
}

// trialDone records a trial's end. A cancelled context leaves the trial to the caller's
// stop state (interrupted); any other error fails the trial with its reason and log tail.
func (e *Engine) trialDone(ctx context.Context, s Session, t Trial, jobErr error, log *slog.Logger) error {
	if jobErr != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if jobErr != nil && e.jobOutOfSpace(ctx, s.ID, jobErr) {
		return e.trialOutOfSpace(ctx, s, t, jobErr)
	}
	if clusterUnavailable(jobErr) {
		return e.trialClusterUnavailable(ctx, s, t, jobErr)
	}
	t.EndedAt = time.Now().UTC()
	if jobErr != nil {
		var je *JobError
		if !errors.As(jobErr, &je) {
			return jobErr
		}
		t.State, t.Reason, t.LogTail = TrialFailed, CapText(je.Error(), TextLimit), je.LogTail
		// A failed trial is a result of the search, told on every surface by its trial
		// event; at Info it stays in the log without being said twice in a terminal.
		log.Info("trial failed", "reason", je.Reason)
	} else {
		t.State = TrialCompleted
		t.Reason = GateReason(t)
	}
	trials, err := e.cfg.Store.Trials(ctx, s.ID)
	if err != nil {
		return fmt.Errorf("listing trials: %w", err)
	}
	trials = withTrial(trials, t)
	// Judged against the baseline trained as long when it has ended (a control that ends
	// later judges it at the next step, judgeGates).
	t = Judge(s.Settings, ControlAt(trials, t.Rung), t)
	trials = withTrial(trials, t)
	entry := AuditEntry{Time: time.Now().UTC(), SessionID: s.ID, Kind: "trial_finished", Actor: System,
		Detail: map[string]any{"trial": t.Number, "rung": t.Rung, "state": string(t.State), "score": scoreOrNil(t), "reason": t.Reason}}
	if err := e.putTrialAudited(ctx, t, entry); err != nil {
		return fmt.Errorf("saving trial: %w", err)
	}
	s2, card, err := e.recordLive(ctx, s, t, trials)
	if err != nil {
		return err
	}
	done := t
	e.notify(Event{Kind: EventTrialFinished, Session: s2, Trial: &done, Text: trialLine(s.Settings, trials, t)})
	if card != nil {
		e.audit(ctx, s.ID, "preference_asked", System, map[string]any{"seq": card.Seq, "a": card.A, "b": card.B})
		e.notify(Event{Kind: EventPreferenceAsked, Session: s2, Preference: card, Text: card.Verdict()})
	}
	return nil
}

// recordLive writes session s's live status once trial t has ended, trials being all of
// its trials with t's end: the best so far and the proposals without improvement, which
// derive from the rung-0 trials, in the same update as the GPU time and the headline. It
// returns the session and the preference card t asks, nil when none.
func (e *Engine) recordLive(ctx context.Context, s Session, t Trial, trials []Trial) (Session, *Preference, error) {
	var r0 []Trial
	for _, x := range trials {
		if x.Rung == 0 {
			r0 = append(r0, x)
		}
	}
	ni, _ := noImprovement(r0)
	best, haveBest := bestOf(s.Settings, trials, r0) // ranked before the transaction, not in it
	var card *Preference
	s, err := e.cfg.Store.UpdateSession(ctx, s.ID, func(x *Session) error {
		// Which walks better? Asked when the trial scores within the noise of the best so
		// far; it never holds the session up (docs/design.md §1).
		card = askCard(x, t, r0, time.Now().UTC())
		x.GPUSeconds += t.GPUSeconds
		x.UpdatedAt = time.Now().UTC()
		x.NoImprove = ni
		if haveBest && x.BestRung == 0 {
			x.BestTrial, x.BestScore = best.Number, best.Score.Total
		}
		x.setResult(trials)
		return nil
	})
	if err != nil {
		return Session{}, nil, fmt.Errorf("updating session: %w", err)
	}
	return s, card, nil
}

// setResult sets s's headline (Result) from its trials as they stand, nil while no tuned
// trial is eligible (Compare).
func (s *Session) setResult(trials []Trial) {
	s.Result = nil
	if c, ok := Compare(*s, trials); ok {
		s.Result = &c
	}
}

func scoreOrNil(t Trial) any {
	if t.Score == nil {
		return nil
	}
	return t.Score.Total
}

// trialLine says how trial t ended; a score is against the baseline at its rung when the
// session has it (VersusControl), else against rung 0's, and says which.
func trialLine(st Settings, trials []Trial, t Trial) string {
	v, ok := VersusControl(st, trials, t)
	switch {
	case t.State == TrialFailed:
		return fmt.Sprintf("trial %d @ rung %d failed: %s", t.Number, t.Rung, t.Reason)
	case !ok:
		return fmt.Sprintf("trial %d @ rung %d %s", t.Number, t.Rung, t.State)
	case !t.Eligible():
		return fmt.Sprintf("trial %d @ rung %d: score %s, %s", t.Number, t.Rung, v, GateReason(t))
	}
	return fmt.Sprintf("trial %d @ rung %d: score %s", t.Number, t.Rung, v)
}

// finalEval evaluates a trial of finalPlan on the session's final seeds, fresh ones that chose
// nothing (Session.FinalSeeds); its score is the mean over seeds and its spread the standard
// deviation of the per-seed scores.
func (e *Engine) finalEval(ctx context.Context, n snapshot, j *jobs, sl *slot, t Trial, log *slog.Logger) error {
	s := n.s
	if sl.gpus != nil {
		s.Settings.GPUs = sl.gpus
	}
	log = log.With("trial", t.Number, "rung", t.Rung)
	runDir := filepath.Join(e.SessionDir(s.ID), t.RunDir)
	var attach *Proc
	if p := t.RemoteJob(); p != nil && p.Job == "evaluate" {
		attach = p
	}
	if err := e.setPhase(ctx, s.ID, j, sl, "final evaluation"); err != nil {
		return err
	}
	ev, err := e.evaluate(ctx, s, &t, runDir, e.cfg.Trainer.EvaluationFile(true), s.FinalSeeds(), false, attach, log)
	t.State = TrialCompleted
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e.jobOutOfSpace(ctx, s.ID, err) {
			return fmt.Errorf("%w: %w", ErrDiskFull, err) // re-run after the resume
		}
		if clusterUnavailable(err) {
			// Re-run after the resume, afresh: the job the cluster lost is forgotten.
			t.Proc = nil
			if perr := e.cfg.Store.PutTrial(ctx, t); perr != nil {
				log.Error("forgetting the final evaluation's job", "err", perr)
			}
			return fmt.Errorf("%w: %w", ErrClusterUnavailable, err)
		}
		return e.finalEvalFailed(ctx, s, t, err, log)
	}
	final, err := finalOf(s.Settings, s.FinalSeeds(), n.trial(0, 0), ev)
	if err != nil {
		return e.trialDone(ctx, s, t, &JobError{Job: "evaluate", Reason: err.Error(), Err: err}, log)
	}
	sc, std := final.Score, final.ScoreStd
	t.Final = &final
	if t.Reason == "" || hasGateReason(t.Reason) {
		t.Reason = GateReason(t)
	}
	if trials, err := e.cfg.Store.Trials(ctx, s.ID); err == nil {
		// Against the control's final re-evaluation when it has one (judgeGates otherwise
		// judges it once the control's ends).
		t = Judge(s.Settings, ControlAt(withTrial(trials, t), t.Rung), t)
	}
	if err := e.cfg.Store.PutTrial(ctx, t); err != nil {
		return fmt.Errorf("saving trial: %w", err)
	}
	e.audit(ctx, s.ID, "final_evaluation", System, map[string]any{"trial": t.Number, "rung": t.Rung, "score": sc.Total, "std": std, "seeds": final.Seeds})
	return nil
}

// finalEvalFailed records that t's final evaluation failed (err): it keeps its rung result,
// and its gain is not measured on fresh seeds (FinalFailed; the verdict says so, and its
// reason why). Nothing stands in for the measurement: its rung result is what chose it.
func (e *Engine) finalEvalFailed(ctx context.Context, s Session, t Trial, err error, log *slog.Logger) error {
	log.Warn("final re-evaluation failed", "err", err)
	t.FinalFailed = true
	t.Reason = "final re-evaluation failed: " + err.Error()
	if perr := e.cfg.Store.PutTrial(ctx, t); perr != nil {
		return fmt.Errorf("saving trial: %w", perr)
	}
	return nil
}

// finalOf scores a final re-evaluation ev against baseline b's metrics: the score of the
// mean metrics, and the spread of the per-seed scores.
func finalOf(st Settings, seeds []int, b *Trial, ev Evaluation) (Final, error) {
	scorer := st.scorer(b.Metrics)
	sc, err := scorer.Score(ev.Metrics)
	if err != nil {
		return Final{}, err
	}
	_, per := seedScores(scorer, ev.PerSeed)
	_, std := MeanStd(per)
	return Final{Seeds: slices.Clone(seeds), Metrics: ev.Metrics, PerSeed: ev.PerSeed, Score: sc, ScoreStd: std}, nil
}

// finishUnimproved ends a session in which no tuned trial beat the baseline: base, the
// baseline's result at the rung that decided, ranked first there, or ranked below a tuned
// finalist that the fresh seeds put below it beyond the noise. It succeeded, with
// OutcomeNoImprovement and no preset, as the baseline's configuration is what the trainer
// already has (docs/design.md §1).
func (e *Engine) finishUnimproved(ctx context.Context, n snapshot, base Trial) error {
	s := n.s
	done := s
	done.State, done.BestTrial, done.BestRung, done.Outcome = StateSucceeded, base.Number, base.Rung, OutcomeNoImprovement
	result, _ := Compare(done, n.trials)
	msg := "done: " + done.OutcomeText()
	if result.Best.Trial != 0 || result.Dropped != "" {
		msg += " (" + result.Headline() + ")"
	}
	msg += "; no preset saved"
	if s.Stopped != nil {
		msg += "; " + s.Stopped.Text()
	}
	s2, err := e.cfg.Store.UpdateSession(ctx, s.ID, func(x *Session) error {
		x.State, x.Message, x.Reason, x.Outcome = StateSucceeded, msg, "", OutcomeNoImprovement
		x.BestTrial, x.BestRung, x.BestScore, x.Preset = base.Number, base.Rung, base.StandingScore(), ""
		x.Result = &result
		x.UpdatedAt, x.EndedAt = time.Now().UTC(), time.Now().UTC()
		return nil
	})
	if err != nil {
		return fmt.Errorf("finishing session: %w", err)
	}
	e.audit(ctx, s.ID, "session_succeeded", System, map[string]any{"outcome": OutcomeNoImprovement, "trial": base.Number, "rung": base.Rung, "score": base.StandingScore()})
	e.notify(Event{Kind: EventSessionFinished, Session: s2, Text: msg})
	return nil
}

// finish ends the session with the finalist the top rung chose (chosenFinalist), measured on
// fresh seeds by its final evaluation: its verdict (VerdictOf) is the outcome (OutcomeOf). A
// tuned trial the fresh seeds put below the baseline beyond the noise is no improvement; any
// other is saved as the session's preset, marked when its gain is within the noise.
func (e *Engine) finish(ctx context.Context, n snapshot) error {
	best, found := chosenFinalist(n)
	if !found {
		return errors.New("no trial passed the gates, not even the baseline")
	}
	if best.Number == 0 {
		return e.finishUnimproved(ctx, n, best)
	}
	control := ControlAt(n.trials, best.Rung)
	verdict := VerdictOf(n.s.Settings, control, best)
	outcome := OutcomeOf(verdict)
	if outcome == OutcomeNoImprovement {
		return e.finishUnimproved(ctx, n, *control) // measured, so the control is there
	}
	preset := e.presetOf(ctx, n, best, verdict)
	if err := e.savePresetOnce(ctx, preset); err != nil {
		return err
	}
	done := n.s
	done.State, done.BestTrial, done.BestRung, done.Preset, done.Outcome = StateSucceeded, best.Number, best.Rung, preset.Name, outcome
	result, _ := Compare(done, n.trials)
	msg := finishedText(done, result)
	s2, err := e.cfg.Store.UpdateSession(ctx, n.s.ID, func(x *Session) error {
		x.State, x.Message, x.Reason, x.Outcome = StateSucceeded, msg, "", outcome
		x.BestTrial, x.BestRung, x.BestScore, x.Preset = best.Number, best.Rung, preset.Score, preset.Name
		x.Result = &result
		x.UpdatedAt, x.EndedAt = time.Now().UTC(), time.Now().UTC()
		return nil
	})
	if err != nil {
		return fmt.Errorf("finishing session: %w", err)
	}
	e.audit(ctx, n.s.ID, "session_succeeded", System, map[string]any{"outcome": outcome, "preset": preset.Name, "trial": best.Number,
		"rung": best.Rung, "score": preset.Score, "std": preset.ScoreStd})
	e.notify(Event{Kind: EventSessionFinished, Session: s2, Text: msg})
	return nil
}

// finishedText is the last line of session s, which saved a preset: its headline, the
// preset, and what its outcome says when the gain is not one it can be held to.
func finishedText(s Session, result Comparison) string {
	msg := fmt.Sprintf("done: %s; saved as preset %s", result.Headline(), s.Preset)
	if Unconfirmed(s.Outcome) {
		msg = fmt.Sprintf("done: %s; %s; saved as preset %s, marked so", result.Headline(), s.OutcomeText(), s.Preset)
	}
	if s.Stopped != nil {
		msg += "; " + s.Stopped.Text()
	}
	return msg
}

// presetOf is the preset session n ships, best, with its verdict: its configuration, its
// score on the fresh final seeds when it was measured there, who approved it, its outcome, its
// gain against the baseline trained as long, and against the task's defaults.
func (e *Engine) presetOf(ctx context.Context, n snapshot, best Trial, verdict Verdict) Preset {
	s := n.s
	var approvers []string
	seen := map[string]bool{}
	for _, p := range n.proposals {
		if p.ID == best.ProposalID && p.Decision != nil && p.Decision.By.ID != System.ID && !seen[p.Decision.By.ID] {
			approvers = append(approvers, p.Decision.By.String())
			seen[p.Decision.By.ID] = true
		}
	}
	std, metrics := 0.0, best.Metrics
	if best.Final != nil {
		std, metrics = best.Final.ScoreStd, best.Final.Metrics
	}
	preset := Preset{Name: s.Settings.RunName + "-" + short(s.ID), SessionID: s.ID, Trial: best.Ref(), Config: best.RewardConfig.Clone(),
		Score: best.StandingScore(), ScoreStd: std, Metrics: metrics, Approvers: approvers, Task: s.Settings.Task,
		CreatedAt: time.Now().UTC(), Trainer: e.cfg.TrainerKind, Outcome: OutcomeOf(verdict), Verdict: &verdict}
	if v, ok := FinalVersusOf(s.Settings, ControlAt(n.trials, best.Rung), best); ok {
		preset.Versus = &v
	}
	g := e.gainOf(ctx, s, n.trials, best, verdict)
	preset.Gain, preset.BuiltOn = &g, StartedFrom(s)
	return preset
}

// savePresetOnce saves p; a preset of that name saved by the same session (a finish run
// again after a crash) is kept, one of another session's is refused.
func (e *Engine) savePresetOnce(ctx context.Context, p Preset) error {
	err := e.cfg.Store.SavePreset(ctx, p)
	if err == nil {
		return nil
	}
	if !errors.Is(err, ErrExists) {
		return fmt.Errorf("saving preset %s: %w", p.Name, err)
	}
	if old, gerr := e.cfg.Store.Preset(ctx, p.Name); gerr != nil || old.SessionID != p.SessionID {
		return fmt.Errorf("preset %s already exists for another session", p.Name)
	}
	return nil
}
