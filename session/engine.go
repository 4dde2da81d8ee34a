package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// EngineConfig wires the engine to the outside world.
type EngineConfig struct {
	Store   Store
	Trainer Trainer
	// Advisor is the primary proposer (DeepSeek, or a hybrid of it and the sampler); nil
	// when none is configured.
	Advisor Advisor
	// Sampler is the numeric proposer, used only by sessions that enable fallback.
	Sampler  Advisor
	Notifier Notifier // may be nil
	// Space is the reward space of a one-task daemon, and of any task Spaces lacks.
	Space *Space
	// Spaces holds one reward space per task when several are configured; SpaceOf looks
	// a session's up by its task.
	Spaces map[string]*Space
	// SessionsDir holds one directory per session; trial run directories live inside.
	SessionsDir string
	Logger      *slog.Logger
	// NotifyTimeout bounds one Notify call (default 5 s).
	NotifyTimeout time.Duration

	// Parallel is how many trial jobs of a session may run at once (docs/design.md §4,
	// the executor); 0 means as many as the session's GPUs allow (len(gpus)/GPUsPerTrial)
	// when LeaseGPUs, else 1.
	Parallel int
	// GPUsPerTrial is how many GPUs each trial job holds (default 1).
	GPUsPerTrial int
	// LeaseGPUs: the engine hands each job its own GPUs from the session's list, never
	// shared (local backend). Off for a cluster scheduler, which assigns GPUs itself.
	LeaseGPUs bool
	// TrainerKind is the kind of trainer Trainer runs (TrainerSim, TrainerMjlab,
	// TrainerCommand), recorded on the presets it makes.
	TrainerKind string

	// Disks measures free space before each job (nil: never measured); DataDir, which
	// holds the store, is checked besides SessionsDir. MinFree is the floor below which
	// a session pauses rather than start a job (0: Engine.MinFree's default).
	Disks   Disks
	DataDir string
	MinFree int64
}

// Engine runs tuning sessions: one worker goroutine per session that needs the GPU, which
// exits whenever the session waits for a person, so that a restart and a live daemon take
// the same path: every step is planned from what the store holds.
type Engine struct {
	cfg    EngineConfig
	log    *slog.Logger
	events chan Event

	mu      sync.Mutex
	workers map[string]*worker
	jobs    int // trainer processes running now
	changed chan struct{}
	closed  bool

	notifyDone chan struct{}

	// beforeWorkerExit, set only by tests, runs when a worker has finished its steps and is
	// about to unregister: the window a decision must not get lost in.
	beforeWorkerExit func(id string)
	// afterJobLeaves, set only by tests, runs when a job has left the running set and told
	// the worker so: the window a worker must not take for "nothing runs, nothing ended".
	afterJobLeaves func(ref TrialRef)
}

type worker struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
	// stopState is the state a cancelled worker leaves behind: cancelled, or interrupted
	// when tunebot itself is shutting down.
	stopState State
	// again is set by every wake-up (a decision, a resume) that finds the worker already
	// registered. The worker clears it before each step's snapshot and checks it under
	// e.mu before it unregisters, so a wake-up that came after its last snapshot makes it
	// step again instead of being lost.
	again bool
	// wake tells a worker that waits for its running jobs to plan again now (buffered 1).
	wake chan struct{}
	// idle is set while the worker waits between steps with no job running and no wake-up
	// since its last step's snapshot: only people or a clock move the session (Settled).
	idle bool
}

// NewEngine checks cfg and starts the notification dispatcher.
func NewEngine(cfg EngineConfig) (*Engine, error) {
	if cfg.Store == nil || cfg.Trainer == nil || (cfg.Space == nil && len(cfg.Spaces) == 0) || cfg.SessionsDir == "" {
		return nil, errors.New("engine needs a store, a trainer, a reward space and a sessions directory")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NotifyTimeout <= 0 {
		cfg.NotifyTimeout = 5 * time.Second
	}
	e := &Engine{
		cfg: cfg, log: cfg.Logger, events: make(chan Event, 512),
		workers: map[string]*worker{}, changed: make(chan struct{}), notifyDone: make(chan struct{}),
	}
	go e.dispatch()
	return e, nil
}

// Space returns the reward space of a one-task engine (SpaceOf a session's task otherwise).
func (e *Engine) Space() *Space { return e.cfg.Space }

// Advised reports whether the engine has an advisor (DeepSeek) besides the numeric
// sampler: what a person's feedback and notes can reach.
func (e *Engine) Advised() bool { return e.cfg.Advisor != nil }

// Store returns the engine's store, for readers (chat status, reports).
func (e *Engine) Store() Store { return e.cfg.Store }

// SessionDir is the directory of session id.
func (e *Engine) SessionDir(id string) string { return filepath.Join(e.cfg.SessionsDir, id) }

// makeDir creates rel, a session's directory or a trial's run directory in it, under
// SessionsDir through an os.Root: a link on the way that leads out of SessionsDir (one
// planted there) is refused, never followed, so no checkpoint or evaluation.json lands in a
// directory someone else chose (issue 36).
func (e *Engine) makeDir(rel string) error {
	if err := os.MkdirAll(e.cfg.SessionsDir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(e.cfg.SessionsDir)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.MkdirAll(rel, 0o755)
}

// removeDir removes rel under SessionsDir, whole, through an os.Root (see makeDir).
func (e *Engine) removeDir(rel string) error {
	root, err := os.OpenRoot(e.cfg.SessionsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	return root.RemoveAll(rel)
}

// Changed returns a channel that is closed at the next change of any session.
func (e *Engine) Changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

func (e *Engine) bump() {
	e.mu.Lock()
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
}

// jobStarted and jobEnded count running trainer processes, for WaitForTrainer.
func (e *Engine) jobStarted() {
	e.mu.Lock()
	e.jobs++
	e.mu.Unlock()
	e.bump()
}

func (e *Engine) jobEnded() {
	e.mu.Lock()
	e.jobs--
	e.mu.Unlock()
	e.bump()
}

// WaitForTrainer blocks until a trainer process is running, no session has work to do,
// or max has passed. Heavy work for people (rendering charts) waits on it, so that it
// runs while the GPU trains instead of between two jobs.
func (e *Engine) WaitForTrainer(ctx context.Context, max time.Duration) {
	timer := time.NewTimer(max)
	defer timer.Stop()
	for {
		ch := e.Changed()
		e.mu.Lock()
		done := e.jobs > 0 || len(e.workers) == 0
		e.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Running reports whether a worker of session id is running.
func (e *Engine) Running(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.workers[id]
	return ok
}

// Settled reports whether session id's worker has taken in every decision and wake-up so
// far and waits for nothing but people or a clock: there is no worker, or it waits with no
// job running (a promotion review's clock). Until then the stored state may not show a
// decision yet: it says awaiting_approval while the worker is about to start the proposal
// just approved. So whoever acts on a session that waits for people reads this first.
func (e *Engine) Settled(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	w, ok := e.workers[id]
	return !ok || w.idle && !w.again
}

// Wait blocks until session id has no running worker and returns it as stored: finished,
// or waiting for a person (awaiting_approval, paused, interrupted).
func (e *Engine) Wait(ctx context.Context, id string) (Session, error) {
	for {
		ch := e.Changed()
		if !e.Running(id) {
			return e.cfg.Store.Session(ctx, id)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Session{}, ctx.Err()
		}
	}
}

// Active returns the one active session, if any.
func (e *Engine) Active(ctx context.Context) (Session, bool, error) {
	return ActiveSession(ctx, e.cfg.Store)
}

// ActiveSession returns the active session of st, if any: at most one is active at a time,
// and it is read from the store's index of active sessions, not found among all.
func ActiveSession(ctx context.Context, st SessionStore) (Session, bool, error) {
	active, err := st.ActiveSessions(ctx)
	if err != nil || len(active) == 0 {
		return Session{}, false, err
	}
	return active[0], true, nil
}

// Start validates settings, creates a session and starts its baseline.
func (e *Engine) Start(ctx context.Context, st Settings, owner Actor) (Session, error) {
	st.Normalize()
	space, err := e.checkStart(st)
	if err != nil {
		return Session{}, err
	}
	base, err := e.startingPoint(ctx, st, space)
	if err != nil {
		return Session{}, err
	}
	built, st, base, err := e.buildOn(ctx, st, base)
	if err != nil {
		return Session{}, err
	}
	now := time.Now().UTC()
	s := Session{
		ID: newID(), State: StateQueued, Settings: st, Owner: owner, Base: base,
		BestTrial: -1, CreatedAt: now, UpdatedAt: now, Message: "queued: the baseline trial starts now", BuiltOn: built,
		Trainer: e.cfg.TrainerKind,
	}
	// Its final seeds are drawn now and kept with its settings, so every surface names them
	// and a resumed session measures on the same ones.
	s.Settings.FinalEvalSeeds = s.FinalSeeds()
	if err := e.cfg.Store.CreateSession(ctx, s); err != nil {
		if errors.Is(err, ErrBusy) {
			return Session{}, e.busyErr(ctx, err)
		}
		return Session{}, fmt.Errorf("creating session: %w", err)
	}
	if err := e.makeDir(s.ID); err != nil {
		_, _ = e.cfg.Store.UpdateSession(ctx, s.ID, func(x *Session) error {
			x.State, x.Reason, x.EndedAt = StateFailed, "cannot create the session directory: "+err.Error(), time.Now().UTC()
			return nil
		})
		return Session{}, fmt.Errorf("creating session directory: %w", err)
	}
	e.audit(ctx, s.ID, "session_started", owner, map[string]any{"settings": st, "preset": st.Preset})
	text := fmt.Sprintf("session %s started by %s (task %s, %s mode, %d trials)", short(s.ID), owner, st.Task, st.Mode, st.TrialCount)
	if line := StartLine(s); line != "" {
		text += "; it " + line
	}
	e.notify(Event{Kind: EventSessionStarted, Session: s, Text: text})
	e.ensureWorker(s.ID)
	return s, nil
}

// checkStart refuses settings st cannot start a session with here, and returns the reward
// space of its task.
func (e *Engine) checkStart(st Settings) (*Space, error) {
	if err := st.Validate(); err != nil {
		return nil, err
	}
	if err := e.checkGPUs(st); err != nil {
		return nil, err
	}
	if e.cfg.Advisor == nil && !st.Fallback {
		return nil, Userf(ErrConflict, "no advisor is configured (set DEEPSEEK_API_KEY) and fallback is off: enable fallback to let the numeric sampler propose")
	}
	if st.Fallback && e.cfg.Sampler == nil {
		return nil, Userf(ErrConflict, "fallback is on but no numeric sampler is configured")
	}
	space := e.SpaceOf(st.Task)
	if space == nil {
		return nil, Userf(ErrConflict, "task %s has no reward space here (configured: %s)", st.Task, strings.Join(e.Tasks(), ", "))
	}
	return space, nil
}

// startingPoint is the configuration a session of st starts from before any --from: the
// space's defaults, or the preset st names once it is found to be of the task and to fit.
func (e *Engine) startingPoint(ctx context.Context, st Settings, space *Space) (RewardConfig, error) {
	if st.Preset == "" {
		return space.Defaults(), nil
	}
	p, err := e.cfg.Store.Preset(ctx, st.Preset)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return RewardConfig{}, Userf(ErrNotFound, "preset %q does not exist", st.Preset)
		}
		return RewardConfig{}, fmt.Errorf("loading preset %s: %w", st.Preset, err)
	}
	if err := CheckPresetTask(p, st.Task); err != nil {
		return RewardConfig{}, err
	}
	if err := space.CheckConfig(p.Config); err != nil {
		return RewardConfig{}, fmt.Errorf("preset %s no longer fits the reward space: %w", st.Preset, err)
	}
	return p.Config.Clone(), nil
}

// Announce tells the notifier again where session id stands, and shows its pending
// proposal again: a terminal reattached after a restart has not seen either.
func (e *Engine) Announce(ctx context.Context, id string) error {
	s, err := e.cfg.Store.Session(ctx, id)
	if err != nil {
		return e.lookupErr(id, err)
	}
	e.notify(Event{Kind: EventSessionUpdated, Session: s, Text: fmt.Sprintf("session %s is %s: %s", short(id), s.State, s.Message)})
	// What waits for people is shown again: the A/B card and the promotion plan (which
	// never needs the session to wait), and the proposals of a session that does.
	if p, ok := s.OpenCard(); ok {
		e.notify(Event{Kind: EventPreferenceAsked, Session: s, Preference: &p, Text: p.Verdict()})
	}
	if r, ok := s.OpenReview(); ok {
		e.notify(Event{Kind: EventReview, Session: s, Review: &r, Text: ReviewLine(s, r)})
	}
	if s.State != StateAwaitingApproval {
		return nil
	}
	ps, err := e.cfg.Store.Proposals(ctx, id)
	if err != nil {
		return fmt.Errorf("listing proposals: %w", err)
	}
	for i := range ps {
		if ps[i].State == ProposalPending {
			p := ps[i]
			e.notify(Event{Kind: EventProposalReady, Session: s, Proposal: &p, Text: fmt.Sprintf("proposal %d for trial %d waits for a decision", p.Seq, p.Number)})
		}
	}
	return nil
}

// Pause stops scheduling after the current subprocess; a session waiting for approval
// pauses at once.
func (e *Engine) Pause(ctx context.Context, id string, by Actor) (Session, error) {
	return e.PauseBecause(ctx, id, by, "")
}

// PauseBecause is Pause saying why instead of who asked ("paused because input ended"),
// for a pause nobody typed; by is who is audited. why "" is Pause.
func (e *Engine) PauseBecause(ctx context.Context, id string, by Actor, why string) (Session, error) {
	cause, asked := "by "+by.String(), "asked by "+by.String()
	if why != "" {
		cause, asked = "because "+why, "because "+why
	}
	s, err := e.cfg.Store.UpdateSession(ctx, id, func(s *Session) error {
		switch s.State {
		case StateAwaitingApproval:
			s.State, s.Message = StatePaused, "paused "+cause
		case StateQueued, StateRunning, StateEvaluating:
			if s.PauseAsked {
				return Userf(ErrConflict, "session %s is already pausing after its current job", short(s.ID))
			}
			s.PauseAsked = true
			s.Message = "pausing after the current job (" + asked + ")"
		case StatePaused:
			return Userf(ErrConflict, "session %s is already paused", short(s.ID))
		default:
			return Userf(ErrConflict, "session %s is %s and cannot be paused", short(s.ID), s.State)
		}
		s.UpdatedAt = time.Now().UTC()
		return nil
	})
	if err != nil {
		return s, e.lookupErr(id, err)
	}
	var detail map[string]any
	if why != "" {
		detail = map[string]any{"why": why}
	}
	e.audit(ctx, id, "pause", by, detail)
	e.notify(Event{Kind: EventSessionUpdated, Session: s, Text: s.Message})
	// A worker that waits on a promotion review's clock takes the pause in now and leaves,
	// instead of when the clock runs out.
	e.mu.Lock()
	if w, ok := e.workers[id]; ok {
		wakeLocked(w)
	}
	e.mu.Unlock()
	e.bump()
	return s, nil
}

// Resume continues a paused or interrupted session from its last complete result.
func (e *Engine) Resume(ctx context.Context, id string, by Actor) (Session, error) {
	var from State
	s, err := e.cfg.Store.UpdateSession(ctx, id, func(s *Session) error {
		from = s.State
		switch {
		case s.State == StatePaused, s.State == StateInterrupted:
			if strings.HasPrefix(s.Reason, budgetReason) {
				s.BudgetWaived = true
			}
			s.State, s.Reason = StateRunning, ""
			s.Message = "resumed by " + by.String()
		case s.PauseAsked:
			s.Message = "pause withdrawn by " + by.String()
		case s.State == StateAwaitingApproval:
			if _, ok := s.OpenReview(); ok {
				return Userf(ErrConflict, "session %s is waiting for its promotion review: %s", short(s.ID), ReviewReplies)
			}
			return Userf(ErrConflict, "session %s is waiting for a decision on its proposal: approve, reject or edit it", short(s.ID))
		default:
			return Userf(ErrConflict, "session %s is %s and cannot be resumed", short(s.ID), s.State)
		}
		s.PauseAsked = false
		s.UpdatedAt = time.Now().UTC()
		return nil
	})
	if err != nil {
		return s, e.lookupErr(id, err)
	}
	e.audit(ctx, id, "resume", by, map[string]any{"from": string(from)})
	e.notify(Event{Kind: EventSessionUpdated, Session: s, Text: s.Message})
	e.ensureWorker(id)
	return s, nil
}

// Cancel ends the session: the running job's whole process group is terminated and any
// pending proposal is voided.
func (e *Engine) Cancel(ctx context.Context, id string, by Actor) (Session, error) {
	s, err := e.cfg.Store.UpdateSession(ctx, id, func(s *Session) error {
		if !s.State.Active() {
			return Userf(ErrConflict, "session %s is already %s", short(s.ID), s.State)
		}
		s.State, s.Reason, s.PauseAsked = StateCancelled, "cancelled by "+by.String(), false
		s.Message = s.Reason
		s.UpdatedAt, s.EndedAt = time.Now().UTC(), time.Now().UTC()
		return nil
	})
	if err != nil {
		return s, e.lookupErr(id, err)
	}
	e.stopWorker(id, StateCancelled)
	e.endRemote(ctx, id)
	e.voidPending(ctx, id)
	e.markUnfinished(ctx, id, "cancelled by "+by.String())
	e.audit(ctx, id, "cancel", by, nil)
	e.notify(Event{Kind: EventSessionFinished, Session: s, Text: fmt.Sprintf("session %s cancelled by %s", short(id), by)})
	e.bump()
	return s, nil
}

// DecideRequest is a person's decision on a proposal.
type DecideRequest struct {
	SessionID  string
	ProposalID string // "" means the session's pending proposal
	Action     string // approve, reject or edit
	Feedback   string // reject: why; names in it become constraints (ReadConstraints), and it reaches the advisor's next prompt
	Edit       *Patch // edit: the complete patch that will run instead
	By         Actor
}

// Decision actions.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
	ActionEdit    = "edit"
)

// PausedApprovalNote follows an approval recorded while its session is paused: the
// proposal waits, approved, and runs once someone resumes the session.
const PausedApprovalNote = "the session is paused: `resume` to run it"

// MaxFeedback caps rejection feedback, which goes verbatim into the advisor's prompt.
const MaxFeedback = 2000

// Decide records a decision. Two decisions on one proposal yield one: the second gets a
// clear answer saying who decided first. An invalid edit is refused and the proposal
// stays pending.
func (e *Engine) Decide(ctx context.Context, d DecideRequest) (Proposal, error) {
	if err := checkDecideRequest(d); err != nil {
		return Proposal{}, err
	}
	s, err := e.cfg.Store.Session(ctx, d.SessionID)
	if err != nil {
		return Proposal{}, e.lookupErr(d.SessionID, err)
	}
	if !s.State.Active() {
		return Proposal{}, Userf(ErrConflict, "session %s is %s: its proposals can no longer be decided", short(s.ID), s.State)
	}
	id, err := e.decisionTarget(ctx, s.ID, d.ProposalID)
	if err != nil {
		return Proposal{}, err
	}
	space := e.SpaceOf(s.Settings.Task)
	tried, constraints, err := e.decisionContext(ctx, s.ID, d.Action)
	if err != nil {
		return Proposal{}, err
	}
	p, err := e.recordDecision(ctx, s.ID, id, d, space, tried, constraints)
	if err != nil {
		return p, err
	}
	e.announceDecision(ctx, s, p, d)
	return p, nil
}

// checkDecideRequest refuses a decision that cannot be one: an unknown action, an edit
// without terms, feedback over MaxFeedback characters.
func checkDecideRequest(d DecideRequest) error {
	switch d.Action {
	case ActionApprove, ActionReject, ActionEdit:
	default:
		return Userf(ErrConflict, "unknown decision %q (approve, reject or edit)", d.Action)
	}
	if d.Action == ActionEdit && (d.Edit == nil || d.Edit.Len() == 0) {
		return Userf(ErrConflict, "an edit needs at least one term=value")
	}
	if len([]rune(d.Feedback)) > MaxFeedback {
		return Userf(ErrConflict, "feedback is %d characters; at most %d", len([]rune(d.Feedback)), MaxFeedback)
	}
	return nil
}

// decisionTarget is the proposal a decision names, or, when it names none, the one a bare
// decision targets (BareDecisionTarget).
func (e *Engine) decisionTarget(ctx context.Context, sid, id string) (string, error) {
	if id != "" {
		return id, nil
	}
	ps, err := e.cfg.Store.Proposals(ctx, sid)
	if err != nil {
		return "", fmt.Errorf("listing proposals: %w", err)
	}
	if len(ps) == 0 {
		return "", Userf(ErrNotFound, "session %s has no proposal waiting for a decision", short(sid))
	}
	return BareDecisionTarget(ps).ID, nil
}

// recordDecision writes d onto proposal id in one update, so that of two decisions on one
// proposal only the first is recorded; the second is refused naming the first.
func (e *Engine) recordDecision(ctx context.Context, sid, id string, d DecideRequest, space *Space, tried []Tried, constraints []Constraint) (Proposal, error) {
	now := time.Now().UTC()
	p, err := e.cfg.Store.UpdateProposal(ctx, sid, id, func(p *Proposal) error {
		if err := alreadyDecided(*p); err != nil {
			return err
		}
		dec, err := e.decision(p, d, space, now, tried, constraints)
		if err != nil {
			return err
		}
		p.Decision = dec
		return nil
	})
	if err != nil {
		var ue *UserError
		var ie *InvalidError
		if errors.As(err, &ue) || errors.As(err, &ie) {
			return p, err
		}
		return p, e.lookupErr(id, err)
	}
	return p, nil
}

// alreadyDecided refuses a decision on a proposal that is no longer pending, saying who
// decided it and when.
func alreadyDecided(p Proposal) error {
	if p.State == ProposalPending {
		return nil
	}
	who := ""
	if p.Decision != nil {
		who = fmt.Sprintf(" by %s at %s", p.Decision.By, p.Decision.At.Format("15:04:05 UTC"))
	}
	return Userf(ErrConflict, "proposal %d was already %s%s", p.Seq, DecidedWord(p), who)
}

// decision moves pending proposal p to the state d's action gives it and returns the
// decision to record: a rejection's feedback is read into constraints over space; an edit
// must be a valid patch of space over p's base that was not tried before, and is rounded.
func (e *Engine) decision(p *Proposal, d DecideRequest, space *Space, now time.Time, tried []Tried, constraints []Constraint) (*Decision, error) {
	dec := &Decision{Action: d.Action, By: d.By, At: now, Feedback: d.Feedback}
	switch d.Action {
	case ActionApprove:
		p.State = ProposalApproved
	case ActionReject:
		p.State = ProposalRejected
		dec.Read = ReadConstraints(d.Feedback, space, p.Seq)
		dec.Note = FeedbackNote(dec.Read, e.cfg.Advisor != nil)
		if n := ReplacedNote(constraints, dec.Read); n != "" {
			dec.Note += " " + n
		}
	case ActionEdit:
		if _, err := space.Validate(p.Base, *d.Edit, tried); err != nil {
			return nil, err
		}
		edited, same := space.WithoutUnchanged(p.Base, *d.Edit)
		dec.Edited = &edited
		// A person's edit may break what earlier feedback asked: it is theirs to write,
		// and the note says so; proposers keep to the constraints still.
		dec.Note = strings.TrimSpace(UnchangedNote(same) + " " + OverrideNote(BrokenConstraints(constraints, p.Base, edited)))
		p.State = ProposalApproved
	}
	return dec, nil
}

// announceDecision audits and announces a recorded decision and wakes the session's worker
// unless the session is paused (then the announcement says how to resume it).
func (e *Engine) announceDecision(ctx context.Context, s Session, p Proposal, d DecideRequest) {
	detail := map[string]any{"proposal": p.ID, "seq": p.Seq, "action": d.Action, "feedback": d.Feedback, "edited": p.Decision.Edited}
	if len(p.Decision.Read) > 0 {
		detail["constraints"] = ConstraintList(p.Decision.Read)
	}
	e.audit(ctx, s.ID, "decision", d.By, detail)
	if now, err := e.cfg.Store.Session(ctx, s.ID); err == nil {
		s = now // a pause may have come in since the first read
	}
	text := fmt.Sprintf("proposal %d %s by %s", p.Seq, DecidedWord(p), d.By)
	if s.State == StatePaused && p.State == ProposalApproved {
		text += "; " + PausedApprovalNote
	}
	e.notify(Event{Kind: EventDecision, Session: s, Proposal: &p, Text: text})
	if s.State != StatePaused {
		e.ensureWorker(s.ID)
	}
	e.bump()
}

// decisionContext is what a decision of action in session sid is checked against: for an
// edit, the configurations already tried; for an edit or a reject, the constraints in force
// before it (an edit's override, a reject's contradiction).
func (e *Engine) decisionContext(ctx context.Context, sid, action string) (tried []Tried, constraints []Constraint, err error) {
	if action != ActionEdit && action != ActionReject {
		return nil, nil, nil
	}
	if action == ActionEdit {
		trials, err := e.cfg.Store.Trials(ctx, sid)
		if err != nil {
			return nil, nil, fmt.Errorf("listing trials: %w", err)
		}
		tried = TriedConfigs(trials)
	}
	ps, err := e.cfg.Store.Proposals(ctx, sid)
	if err != nil {
		return nil, nil, fmt.Errorf("listing proposals: %w", err)
	}
	return tried, SessionConstraints(ps), nil
}

// BareDecisionTarget is the proposal a decision that names none ("approve" in a thread)
// is about: the pending one, or with none pending the newest, so that whoever decided it a
// moment ago (two people clicking at once) is named instead of "nothing waiting". ps is a
// session's proposals, oldest first, and not empty.
func BareDecisionTarget(ps []Proposal) Proposal {
	target := ps[len(ps)-1]
	for _, p := range ps {
		if p.State == ProposalPending {
			target = p
		}
	}
	return target
}

// DecidedWord says how a proposal was decided, in the words every surface uses
// ("approved", "edited and approved", "rejected", "voided (…)").
func DecidedWord(p Proposal) string {
	switch {
	case p.State == ProposalVoid && p.Decision != nil:
		return "voided (approved, but the session moved on before it ran)"
	case p.State == ProposalVoid:
		return "voided (the session moved on before it was decided)"
	case p.Decision != nil && p.Decision.Action == ActionEdit:
		return "edited and approved"
	case p.Decision != nil && p.Decision.Action == ActionReject, p.State == ProposalRejected:
		return "rejected"
	case p.Decision != nil, p.State == ProposalApproved, p.State == ProposalUsed:
		return "approved"
	}
	return string(p.State)
}

// Recover runs once at start-up: sessions left running become interrupted, and trainer
// process groups a crashed tunebot left behind are ended before their GPU is used again.
func (e *Engine) Recover(ctx context.Context) error {
	active, err := e.cfg.Store.ActiveSessions(ctx)
	if err != nil {
		return fmt.Errorf("listing active sessions: %w", err)
	}
	for _, s := range active {
		trials, err := e.cfg.Store.Trials(ctx, s.ID)
		if err != nil {
			return fmt.Errorf("listing trials of %s: %w", s.ID, err)
		}
		for _, t := range trials {
			if t.RemoteJob() != nil && !t.State.Terminal() {
				// A cluster job outlives tunebot: it is re-attached on resume, never
				// started again and never cancelled here.
				engine, job := t.Proc.Cluster()
				e.log.Info("a remote job of an interrupted trial will be re-attached on resume", "session", s.ID, "trial", t.Number, "rung", t.Rung, "cluster", engine, "cluster_job", job)
				continue
			}
			if t.Proc != nil && !t.State.Terminal() {
				if err := e.cfg.Trainer.EndOrphan(ctx, *t.Proc); err != nil {
					return fmt.Errorf("ending the trainer left running by trial %d @ rung %d (pid %d): %w", t.Number, t.Rung, t.Proc.PID, err)
				}
				e.log.Info("ended orphaned trainer", "session", s.ID, "trial", t.Number, "rung", t.Rung, "pid", t.Proc.PID)
				t.Proc = nil
				if err := e.cfg.Store.PutTrial(ctx, t); err != nil {
					return fmt.Errorf("saving trial: %w", err)
				}
			}
		}
		switch s.State {
		case StateQueued, StateRunning, StateEvaluating:
			s2, err := e.cfg.Store.UpdateSession(ctx, s.ID, func(x *Session) error {
				x.State, x.PauseAsked = StateInterrupted, false
				x.Reason = "tunebot stopped while the session was " + string(s.State)
				x.Message = x.Reason + "; resume to continue from the last complete result"
				x.UpdatedAt = time.Now().UTC()
				return nil
			})
			if err != nil {
				return fmt.Errorf("marking %s interrupted: %w", s.ID, err)
			}
			e.markUnfinished(ctx, s.ID, "tunebot stopped")
			e.audit(ctx, s.ID, "interrupted", System, map[string]any{"was": string(s.State)})
			e.notify(Event{Kind: EventSessionUpdated, Session: s2, Text: s2.Message})
		default:
			// Paused or waiting for a decision: nothing of it runs after a start, so a trial
			// an earlier tunebot left marked training or evaluating is unfinished, not
			// running (status would say it runs).
			e.markUnfinished(ctx, s.ID, "tunebot stopped")
			if _, ok := s.OpenReview(); ok && s.State == StateAwaitingApproval {
				// A promotion review's clock runs on across a restart: it goes ahead when
				// its wait ends even if nobody comes back to say go.
				e.ensureWorker(s.ID)
			}
		}
	}
	return nil
}

// Shutdown stops every worker, leaving their sessions interrupted so a restart resumes
// them, and drains queued notifications within ctx.
func (e *Engine) Shutdown(ctx context.Context) {
	e.mu.Lock()
	ids := make([]string, 0, len(e.workers))
	for id := range e.workers {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	for _, id := range ids {
		e.stopWorker(id, StateInterrupted)
	}
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.events)
	}
	e.mu.Unlock()
	select {
	case <-e.notifyDone:
	case <-ctx.Done():
	}
}

func (e *Engine) lookupErr(id string, err error) error {
	var ue *UserError
	if errors.As(err, &ue) {
		return err
	}
	if errors.Is(err, ErrNotFound) {
		return Userf(ErrNotFound, "no session or proposal %q", id)
	}
	return err
}

// ensureWorker starts the session's worker unless one runs; a running one is told to step
// again before it leaves (docs/design.md §1: a decision is never lost).
func (e *Engine) ensureWorker(id string) {
	e.mu.Lock()
	if w, ok := e.workers[id]; ok || e.closed {
		if ok {
			wakeLocked(w)
		}
		e.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	w := &worker{cancel: cancel, done: make(chan struct{}), stopState: StateCancelled, wake: make(chan struct{}, 1)}
	e.workers[id] = w
	e.mu.Unlock()
	e.bump()
	go func() {
		defer func() {
			close(w.done)
			e.bump()
		}()
		for {
			e.work(ctx, id, w)
			if e.beforeWorkerExit != nil {
				e.beforeWorkerExit(id)
			}
			e.mu.Lock()
			if w.again && ctx.Err() == nil && !e.closed {
				e.mu.Unlock()
				continue
			}
			delete(e.workers, id)
			e.mu.Unlock()
			return
		}
	}()
}

// wakeLocked tells worker w to step again: at once when it waits, else before it leaves.
// e.mu is held.
func wakeLocked(w *worker) {
	w.again = true
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// stopWorker cancels the worker of id (its trainer job ends) and waits for it.
func (e *Engine) stopWorker(id string, state State) {
	e.mu.Lock()
	w, ok := e.workers[id]
	if ok {
		w.stopState = state
	}
	e.mu.Unlock()
	if !ok {
		return
	}
	cause := errShutdown
	if state == StateCancelled {
		cause = ErrJobCancelled // remote jobs are cancelled too (scancel)
	}
	w.cancel(cause)
	<-w.done
}

// work runs steps until the session needs nobody's GPU: finished or waiting for a person,
// with none of its trial jobs running. Between steps it waits for a job to end or for a
// wake-up (a decision, a resume, a pause).
func (e *Engine) work(ctx context.Context, id string, w *worker) {
	log := e.log.With("session", id)
	var j *jobs
	defer e.recoverWorker(id, w, &j, log)
	s, err := e.cfg.Store.Session(ctx, id)
	if err != nil {
		log.Error("loading session", "err", err)
		return
	}
	if e.SpaceOf(s.Settings.Task) == nil {
		// A session of a task the configuration no longer holds has no space to go on in.
		e.fail(context.Background(), id, fmt.Sprintf("task %s has no reward space in this configuration (configured: %s)", s.Settings.Task, strings.Join(e.Tasks(), ", ")))
		return
	}
	j = newJobs(e, s)
	// jobCtx ends the jobs when the session fails, without ending the worker's context.
	jobCtx, stopJobs := context.WithCancelCause(ctx)
	defer stopJobs(nil)
	for {
		e.mu.Lock()
		w.again = false
		e.mu.Unlock()
		// A job that failed is heard before the next step plans: its trial must not be
		// taken for one to start again (a full disk pauses the session instead).
		more, err := false, e.jobErr(j)
		if err == nil {
			more, err = e.step(jobCtx, id, j, log)
		}
		if err == nil {
			err = e.jobErr(j)
		}
		if ctx.Err() != nil {
			e.settleStopped(id, w, j, log)
			return
		}
		paused, err := e.stepPauses(jobCtx, id, j, err, log)
		if paused {
			continue // the next step finds it paused, or pausing once its jobs end
		}
		if err != nil {
			log.Error("session step failed", "err", err)
			stopJobs(ErrJobCancelled)
			e.settle(j, log)
			e.fail(context.Background(), id, err.Error())
			return
		}
		switch e.afterStep(more, j) {
		case stepAgain:
			continue
		case workDone:
			return
		}
		e.waitForWork(ctx, w, j)
	}
}

// stepPauses takes a step's error that pauses the session rather than fail it (a full
// disk, an unavailable cluster) as that pause, reporting true: the session pauses once its
// other running jobs end (they meet the same disk or cluster). Any other error, or a pause
// that could not be recorded, comes back to fail the session.
func (e *Engine) stepPauses(ctx context.Context, id string, j *jobs, err error, log *slog.Logger) (bool, error) {
	var reason string
	var pause func(ctx context.Context, id, reason string, running bool) error
	switch {
	case err != nil && OutOfSpace(err):
		log.Warn("out of disk space; the session pauses", "err", err)
		reason, pause = e.diskReason(ctx, id, err), e.pauseForDisk
	case clusterUnavailable(err):
		log.Warn("the cluster is unavailable; the session pauses", "err", err)
		reason, pause = clusterReason(err), e.pauseForCluster
	default:
		return false, err
	}
	e.mu.Lock()
	j.err = nil
	e.mu.Unlock()
	if s, serr := e.cfg.Store.Session(ctx, id); serr == nil && s.State == StatePaused {
		return true, nil // a step in between took the pause in already
	}
	if err := pause(ctx, id, reason, len(e.runningRefs(j)) > 0); err != nil {
		return false, err
	}
	return true, nil
}

// recoverWorker turns a panic in session id's worker into the session's failure, after its
// jobs are cancelled and have ended. It is deferred by work; *j is nil before the jobs exist.
func (e *Engine) recoverWorker(id string, w *worker, j **jobs, log *slog.Logger) {
	if r := recover(); r != nil {
		log.Error("session worker panicked", "panic", r, "stack", string(debug.Stack()))
		if *j != nil {
			w.cancel(ErrJobCancelled)
			e.settle(*j, log)
		}
		e.fail(context.Background(), id, fmt.Sprintf("internal error: %v", r))
	}
}

// settleStopped ends a worker whose context ended: its jobs settle, and the session is marked
// interrupted when tunebot is shutting down (a pause or a cancellation set its own state).
func (e *Engine) settleStopped(id string, w *worker, j *jobs, log *slog.Logger) {
	e.settle(j, log)
	e.mu.Lock()
	state := w.stopState
	e.mu.Unlock()
	if state == StateInterrupted {
		e.interrupt(context.Background(), id, "tunebot is shutting down")
	}
}

// workNext is what a session's worker does after a step.
type workNext int

const (
	waitThenStep workNext = iota // wait for a job to end, a wake-up or a review's due time
	stepAgain                    // plan again at once
	workDone                     // the worker ends: nothing runs and nothing is due
)

// afterStep decides what follows a step that asked for more (or not): another at once when
// it asked, or when no job runs and one ended after the step's snapshot (its result is
// stored and must be planned from); the worker's end when no job runs and no review waits
// (finished, or waiting for a person, who wakes it); else a wait.
func (e *Engine) afterStep(more bool, j *jobs) workNext {
	if more {
		return stepAgain
	}
	if len(e.runningRefs(j)) == 0 {
		select {
		case <-j.ended:
			// A job ended after this step's snapshot (a fast one can end before the
			// step returns): its result is stored, so plan again rather than leave
			// the session with nobody to take it further.
			return stepAgain
		default:
		}
		if j.wakeAt.IsZero() {
			return workDone
		}
	}
	return waitThenStep
}

// waitForWork waits for a job to end, a wake-up (a decision, a resume, a pause), a
// promotion review's due time or the worker's end; while nothing runs and no wake-up is
// pending, the worker counts as idle (Settled).
func (e *Engine) waitForWork(ctx context.Context, w *worker, j *jobs) {
	var timer *time.Timer
	var due <-chan time.Time
	if !j.wakeAt.IsZero() {
		// A promotion review waits for people until then, with or without jobs.
		timer = time.NewTimer(time.Until(j.wakeAt))
		due = timer.C
	}
	e.mu.Lock()
	w.idle = len(j.running) == 0 && !w.again
	idle := w.idle
	e.mu.Unlock()
	if idle {
		e.bump() // Settled now holds
	}
	select {
	case <-j.ended:
	case <-w.wake:
	case <-due:
	case <-ctx.Done():
	}
	e.mu.Lock()
	w.idle = false
	e.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
}

// interrupt marks session id interrupted (why) when tunebot stops while it is active; a
// session that ended meanwhile is left as it is, and nothing is said of it.
func (e *Engine) interrupt(ctx context.Context, id, why string) {
	waits, ended := false, false
	s, err := e.cfg.Store.UpdateSession(ctx, id, func(s *Session) error {
		if !s.State.Active() {
			ended = true
			return nil
		}
		if _, ok := s.OpenReview(); ok && s.State == StateAwaitingApproval {
			// Its worker only waited for people (a promotion review): the session still
			// waits for them after a restart, as one waiting for a decision does.
			waits = true
			return nil
		}
		s.State, s.Reason, s.PauseAsked = StateInterrupted, why, false
		s.Message = why + "; resume to continue from the last complete result"
		s.UpdatedAt = time.Now().UTC()
		return nil
	})
	if err != nil {
		e.log.Error("marking session interrupted", "session", id, "err", err)
		return
	}
	if ended {
		return
	}
	e.markUnfinished(ctx, id, why)
	if waits {
		return
	}
	e.audit(ctx, id, "interrupted", System, map[string]any{"reason": why})
	e.notify(Event{Kind: EventSessionUpdated, Session: s, Text: s.Message})
}

func (e *Engine) fail(ctx context.Context, id, reason string) {
	reason = CapText(reason, TextLimit) // it may quote a proposer's or a trainer's words
	s, err := e.cfg.Store.UpdateSession(ctx, id, func(s *Session) error {
		if !s.State.Active() {
			return nil
		}
		s.State, s.Reason, s.Message = StateFailed, reason, "failed: "+reason
		s.UpdatedAt, s.EndedAt = time.Now().UTC(), time.Now().UTC()
		return nil
	})
	if err != nil {
		e.log.Error("marking session failed", "session", id, "err", err)
		return
	}
	e.voidPending(ctx, id)
	e.failUnfinished(ctx, id, reason)
	e.audit(ctx, id, "session_failed", System, map[string]any{"reason": reason})
	e.notify(Event{Kind: EventSessionFinished, Session: s, Text: fmt.Sprintf("session %s failed: %s", short(id), reason)})
}

// markUnfinished marks trials that were mid-job as interrupted (their half-done work is
// discarded on resume, except a finished training run, which is only re-evaluated).
func (e *Engine) markUnfinished(ctx context.Context, id, why string) {
	trials, err := e.cfg.Store.Trials(ctx, id)
	if err != nil {
		e.log.Error("listing trials", "session", id, "err", err)
		return
	}
	for _, t := range trials {
		if t.State == TrialTraining || t.State == TrialEvaluating || t.State == TrialQueued {
			t.State, t.Reason = TrialInterrupted, why
			if t.RemoteJob() == nil {
				t.Proc = nil // a remote job's record stays: it is re-attached on resume
			}
			if err := e.putTrialOnFullDisk(ctx, t); err != nil {
				e.log.Error("saving trial", "session", id, "trial", t.Number, "err", err)
			}
		}
	}
}

// putTrialOnFullDisk saves t; when the store is out of space it releases the disk reserve
// and saves again, so that a pause on a full disk never leaves a trial looking running.
func (e *Engine) putTrialOnFullDisk(ctx context.Context, t Trial) error {
	err := e.cfg.Store.PutTrial(ctx, t)
	if err != nil && OutOfSpace(err) && e.cfg.Disks != nil {
		e.log.Warn("the store is out of space; releasing the reserve to record the trial", "session", t.SessionID, "trial", t.Number)
		e.cfg.Disks.Release()
		err = e.cfg.Store.PutTrial(ctx, t)
	}
	return err
}

// endRemote ends the remote jobs (scancel) of a cancelled session that no worker awaited,
// as left by an earlier tunebot, and forgets them.
func (e *Engine) endRemote(ctx context.Context, id string) {
	trials, err := e.cfg.Store.Trials(ctx, id)
	if err != nil {
		e.log.Error("listing trials", "session", id, "err", err)
		return
	}
	for _, t := range trials {
		if t.RemoteJob() == nil {
			continue
		}
		if err := e.cfg.Trainer.EndOrphan(ctx, *t.Proc); err != nil {
			engine, job := t.Proc.Cluster()
			e.log.Error("cancelling the remote job of a cancelled session", "session", id, "trial", t.Number, "cluster", engine, "cluster_job", job, "err", err)
			continue
		}
		t.Proc = nil
		if err := e.cfg.Store.PutTrial(ctx, t); err != nil {
			e.log.Error("saving trial", "session", id, "trial", t.Number, "err", err)
		}
	}
}

// failUnfinished fails the trial a failing session was running, so no trial of a finished
// session is left looking as if it still trained.
func (e *Engine) failUnfinished(ctx context.Context, id, reason string) {
	trials, err := e.cfg.Store.Trials(ctx, id)
	if err != nil {
		e.log.Error("listing trials", "session", id, "err", err)
		return
	}
	for _, t := range trials {
		if !t.State.Terminal() {
			t.State, t.Reason, t.Proc, t.EndedAt = TrialFailed, reason, nil, time.Now().UTC()
			if err := e.cfg.Store.PutTrial(ctx, t); err != nil {
				e.log.Error("saving trial", "session", id, "trial", t.Number, "err", err)
			}
		}
	}
}

func (e *Engine) voidPending(ctx context.Context, id string) {
	e.expireCards(ctx, id)
	ps, err := e.cfg.Store.Proposals(ctx, id)
	if err != nil {
		return
	}
	for _, p := range ps {
		if p.State == ProposalPending || p.State == ProposalApproved {
			_, _ = e.cfg.Store.UpdateProposal(ctx, id, p.ID, func(p *Proposal) error {
				if p.State == ProposalPending || p.State == ProposalApproved {
					p.State = ProposalVoid
				}
				return nil
			})
		}
	}
}

func (e *Engine) audit(ctx context.Context, sessionID, kind string, by Actor, detail map[string]any) {
	if err := e.cfg.Store.Append(ctx, AuditEntry{Time: time.Now().UTC(), SessionID: sessionID, Kind: kind, Actor: by, Detail: detail}); err != nil {
		e.log.Error("writing audit entry", "session", sessionID, "kind", kind, "err", err)
	}
}

// notify hands an event to the dispatcher without ever blocking the training path: when
// the queue is full, the event is dropped and logged.
func (e *Engine) notify(ev Event) {
	if e.cfg.Notifier == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	select {
	case e.events <- ev:
	default:
		if ev.Kind != EventTrialProgress {
			e.log.Warn("notification queue full; event dropped", "kind", ev.Kind, "session", ev.Session.ID)
		}
	}
}

func (e *Engine) dispatch() {
	defer close(e.notifyDone)
	for ev := range e.events {
		func() {
			defer func() {
				if r := recover(); r != nil {
					e.log.Error("notifier panicked", "panic", r, "kind", ev.Kind)
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), e.cfg.NotifyTimeout)
			defer cancel()
			e.cfg.Notifier.Notify(ctx, ev)
		}()
	}
}

func newID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// Short is the 8-character form of a session id used in names and messages.
func Short(id string) string { return short(id) }

// Bytes says a size in a person's units: 512 bytes, 3.4 KiB, 247.0 MiB, 1.2 GiB.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// TriedConfigs lists the configurations a session has trained (its rung-0 trials): a
// proposal or an edit that merges to one of them is a duplicate (docs/design.md §5).
func TriedConfigs(trials []Trial) []Tried {
	var out []Tried
	for _, t := range trials {
		if t.Rung == 0 {
			out = append(out, Tried{Label: fmt.Sprintf("trial %d", t.Number), Config: t.RewardConfig})
		}
	}
	return out
}

func joinLines(s []string) string { return strings.Join(s, "; ") }

// AuditKindAdvisorCall is the audit kind of one call to the advisor's API; its detail has
// "usage" with "total_tokens".
const AuditKindAdvisorCall = "advisor_call"

// AdvisorTokens sums the tokens of the advisor calls among entries.
func AdvisorTokens(entries []AuditEntry) int {
	total := 0
	for _, e := range entries {
		if e.Kind != AuditKindAdvisorCall {
			continue
		}
		if u, ok := e.Detail["usage"].(map[string]any); ok {
			switch v := u["total_tokens"].(type) {
			case float64:
				total += int(v)
			case int:
				total += v
			}
		}
	}
	return total
}
