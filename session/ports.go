package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// SessionStore persists sessions.
type SessionStore interface {
	// CreateSession stores a new session. It fails with ErrBusy when another session is
	// still active (checked in the same transaction) and ErrExists when the id is taken.
	CreateSession(ctx context.Context, s Session) error
	Session(ctx context.Context, id string) (Session, error)
	// RecentSessions returns one page of at most limit sessions, newest first (by
	// CreatedAt, ties by id), starting after the page that ended at cursor ("" for the
	// newest). next is the cursor of the following page, "" after the last one. A list
	// view reads a page from an index, never every session (docs/design.md §7).
	RecentSessions(ctx context.Context, cursor string, limit int) (page []Session, next string, err error)
	// ActiveSessions lists the sessions that are not finished (State.Active), newest
	// first, from an index of their own: at most one, as CreateSession keeps it.
	ActiveSessions(ctx context.Context) ([]Session, error)
	// UpdateSession runs fn on the stored session inside one write transaction; an error
	// from fn aborts it. It returns the session as written.
	UpdateSession(ctx context.Context, id string, fn func(*Session) error) (Session, error)
}

// TrialStore persists trials, keyed by session, number and rung.
type TrialStore interface {
	PutTrial(ctx context.Context, t Trial) error
	// Trials lists a session's trials ordered by number, then rung.
	Trials(ctx context.Context, sessionID string) ([]Trial, error)
	DeleteTrial(ctx context.Context, sessionID string, ref TrialRef) error
}

// TrialOutliner is what a TrialStore may also offer: the outlines of a session's trials, by
// number then rung, at a third of the cost of reading them whole (a list of thousands of
// sessions needs no more of them).
type TrialOutliner interface {
	TrialOutlines(ctx context.Context, sessionID string) ([]TrialOutline, error)
}

// Outlines returns the outlines of a session's trials, through TrialOutliner when st has it.
func Outlines(ctx context.Context, st TrialStore, sessionID string) ([]TrialOutline, error) {
	if o, ok := st.(TrialOutliner); ok {
		return o.TrialOutlines(ctx, sessionID)
	}
	trials, err := st.Trials(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	out := make([]TrialOutline, len(trials))
	for i, t := range trials {
		out[i] = t.Outline()
	}
	return out, nil
}

// ProposalStore persists proposals.
type ProposalStore interface {
	PutProposal(ctx context.Context, p Proposal) error
	// Proposals lists a session's proposals ordered by Seq.
	Proposals(ctx context.Context, sessionID string) ([]Proposal, error)
	// UpdateProposal runs fn inside one write transaction, so two people deciding at once
	// yield one decision: the second fn sees the first's result.
	UpdateProposal(ctx context.Context, sessionID, id string, fn func(*Proposal) error) (Proposal, error)
}

// AuditLog is the append-only audit log.
type AuditLog interface {
	// Append stores e with the next sequence number.
	Append(ctx context.Context, e AuditEntry) error
	// Audit lists the entries of one session ("" for all), oldest first.
	Audit(ctx context.Context, sessionID string) ([]AuditEntry, error)
}

// AuditTail is what an AuditLog may also offer: the entries after sequence number after,
// oldest first, so a reader that keeps its place (metrics, the last apply) reads each entry
// once instead of the whole log every time.
type AuditTail interface {
	AuditSince(ctx context.Context, after uint64) ([]AuditEntry, error)
}

// AuditAfter returns the entries of log with Seq > after, oldest first, through
// AuditTail when log has it.
func AuditAfter(ctx context.Context, log AuditLog, after uint64) ([]AuditEntry, error) {
	if t, ok := log.(AuditTail); ok {
		return t.AuditSince(ctx, after)
	}
	all, err := log.Audit(ctx, "")
	if err != nil {
		return nil, err
	}
	i := 0
	for i < len(all) && all[i].Seq <= after {
		i++
	}
	return all[i:], nil
}

// PresetStore persists immutable presets.
type PresetStore interface {
	// SavePreset stores p; a preset of the same name is never overwritten (ErrExists).
	SavePreset(ctx context.Context, p Preset) error
	Preset(ctx context.Context, name string) (Preset, error)
	Presets(ctx context.Context) ([]Preset, error)
}

// SeriesStore persists metric series per trial and tag.
type SeriesStore interface {
	// PutSeries replaces the series of key.
	PutSeries(ctx context.Context, key SeriesKey, points []Point) error
	Series(ctx context.Context, key SeriesKey) ([]Point, error)
	SeriesTags(ctx context.Context, sessionID string, ref TrialRef) ([]string, error)
}

// Store is everything the engine persists.
type Store interface {
	SessionStore
	TrialStore
	ProposalStore
	AuditLog
	PresetStore
	SeriesStore
}

// TrainJob is one training subprocess: a fresh run, or a resume from the parent's checkpoint.
type TrainJob struct {
	SessionID  string
	Trial      TrialRef
	RunDir     string // absolute; created by the trainer
	Config     RewardConfig
	Settings   Settings
	Iterations int    // iterations this job adds
	Target     int    // total iterations it must reach
	StartIter  int    // iterations already in Checkpoint
	Checkpoint string // absolute path of the checkpoint to resume, "" for a fresh run
	// Attach, when set, is a remote job (Proc.Remote) an earlier tunebot started for this
	// very job: the trainer awaits and collects it instead of starting another.
	Attach *Proc
	// Space is the reward space of the session's task, for a trainer that is told it
	// ({reward_space}, docs/design.md §4).
	Space *Space
}

// TrainResult is what a finished training job left in its run directory.
type TrainResult struct {
	Checkpoint string // absolute path of the newest model_<N>.pt
	Iteration  int    // N of that checkpoint
	Policy     string // absolute path of policy.onnx
	Series     map[string][]Point
}

// EvalJob is one evaluation subprocess of a checkpoint on fixed seeds.
type EvalJob struct {
	SessionID  string
	Trial      TrialRef
	RunDir     string
	Checkpoint string
	Seeds      []int
	Output     string // absolute path of the evaluation.json to write
	Settings   Settings
	Attach     *Proc  // as TrainJob.Attach
	Space      *Space // as TrainJob.Space
	// Clip asks the job for a clip of the policy ({clip_output}): a rung's evaluation does,
	// a final re-evaluation (the same policy on more seeds) does not.
	Clip bool
}

// JobHooks lets the engine follow a job while it runs. Either may be nil.
type JobHooks struct {
	Started  func(Proc)          // the process group is running: persist it for crash recovery
	Progress func(iteration int) // the newest training step seen
	// Status reports a remote job's change of state (pending with its reason, running on
	// a node); the engine records it on the trial for status displays.
	Status func(Proc)
}

// ErrJobCancelled is the cause (context.Cause) of a job context cancelled because a person
// cancelled the session: a trainer cancels remote jobs (scancel) only for this cause. Any
// other end of the context (tunebot shutting down) leaves remote jobs running, to be
// re-attached on the next start.
var ErrJobCancelled = errors.New("the session was cancelled")

// Trainer runs training and evaluation jobs under the contract of docs/design.md §4.
type Trainer interface {
	Train(ctx context.Context, job TrainJob, hooks JobHooks) (TrainResult, error)
	Evaluate(ctx context.Context, job EvalJob, hooks JobHooks) (Evaluation, error)
	// RunDir names trial ref's run directory, relative to the session directory: the
	// layout of run directories belongs to the trainer, the core only joins paths.
	RunDir(ref TrialRef) string
	// EvaluationFile names the file an evaluation job writes in the run directory: the
	// rung's evaluation, or (final) the one on the final seeds.
	EvaluationFile(final bool) string
	// EndOrphan ends the process group p if it is still the same process (same start
	// time) left by a crashed tunebot, and waits until it is gone. For a remote job
	// (p.Remote) it stops the job (scancel, Ray's stop): the engine calls it so only when the
	// session was cancelled while no worker awaited the job; a restart re-attaches them.
	EndOrphan(ctx context.Context, p Proc) error
}

// JobError is a failed trainer job: a reason a person can read, and the log's tail.
type JobError struct {
	Job     string // "train" or "evaluate"
	Reason  string
	LogTail string
	Err     error
}

func (e *JobError) Error() string {
	return fmt.Sprintf("%s job failed: %s", e.Job, e.Reason)
}
func (e *JobError) Unwrap() error { return e.Err }

// TrialSummary is what a proposer sees of a finished trial.
type TrialSummary struct {
	Number   int          `json:"number"`
	Rung     int          `json:"rung"`
	Source   string       `json:"source"`
	State    TrialState   `json:"state"`
	Score    *float64     `json:"score"`
	Eligible bool         `json:"eligible"`
	Config   RewardConfig `json:"reward_config"`
	Metrics  Metrics      `json:"metrics,omitempty"`
	// PerSeed is each evaluation seed's metrics: their spread is the evaluation's noise.
	PerSeed []SeedMetrics      `json:"per_seed,omitempty"`
	Reason  string             `json:"reason,omitempty"`
	Curves  map[string][]Point `json:"curves,omitempty"` // at most 64 points per tag
}

// SummaryOf is t as a proposer sees it, without curves (the engine adds those for the
// advisor, from the store).
func SummaryOf(t Trial) TrialSummary {
	ts := TrialSummary{Number: t.Number, Rung: t.Rung, Source: t.Source, State: t.State, Eligible: t.Eligible(),
		Config: t.RewardConfig.Clone(), Metrics: t.Metrics, PerSeed: t.PerSeed, Reason: t.Reason}
	if t.Score != nil {
		v := t.Score.Total
		ts.Score = &v
	}
	return ts
}

// ProposalRequest is everything a proposer may use to suggest the next patch.
type ProposalRequest struct {
	SessionID string
	Task      string
	Objective ObjectiveWeights
	Floors    Metrics // the score's floors (docs/design.md §3), so a proposer scores as the session does
	Space     *Space
	Base      RewardConfig // the configuration to patch: the best rung-0 one so far
	BaseTrial int
	History   []TrialSummary // every finished rung-0 trial, oldest first
	Feedback  []string       // the last ≤4 rejection feedbacks, oldest first
	Rejected  []Rejected     // every rejected proposal of the session, oldest first
	Tried     []Tried
	// Constraints are what people's rejections asked of single scalars (keep, no higher,
	// no lower): every proposal honours them, and the engine refuses one that does not.
	Constraints []Constraint
	// Preferences are people's answers to "which walks better?" (the decided ones, oldest
	// first), with both trials' configurations: DeepSeek reads them with their notes, and a
	// numeric proposer adds PreferenceWeight × a "looks right" utility fitted to them to
	// what it ranks its candidates by (advisor.PreferenceUtility).
	Preferences      []Preference
	PreferenceWeight float64
	Seed             int64
	// Earlier are the finished rung-0 trials of the session this one builds on
	// (Settings.From), oldest first, its baseline first; a numeric proposer enters each as
	// EarlierWeight of an observation, relative to that session's own level (docs/design.md
	// §5). They are evidence only: History alone is this session's.
	Earlier       []TrialSummary
	EarlierWeight float64
	// TrialBudget is the session's trial_count, the rung-0 trials it runs at most (0: not
	// known): a numeric proposer spends a share of it on its screen (advisor/screen.go).
	TrialBudget int
}

// MayMove says whether the request's constraints let scalar name move up (a weight's
// magnitude, a param's value) or down: a numeric proposer asks it before it draws a move.
func (r ProposalRequest) MayMove(name string, up bool) bool {
	return AllowsMove(r.Constraints, name, up)
}

// Check validates a proposer's patch as the engine does: the rules of the space
// (Space.Validate against Base and Tried) and the session's constraints. The error is an
// *InvalidError naming every problem, which the advisor sends back to the model.
func (r ProposalRequest) Check(p Patch) (RewardConfig, error) {
	// The constraints judge the patch as it will run, rounded, as Validate judges the rules.
	p = r.Space.Round(r.Base, p)
	merged, err := r.Space.Validate(r.Base, p, r.Tried)
	broken := BrokenConstraints(r.Constraints, r.Base, p)
	if len(broken) == 0 {
		return merged, err
	}
	var probs []string
	var ie *InvalidError
	if errors.As(err, &ie) {
		probs = ie.Problems
	}
	for _, c := range broken {
		probs = append(probs, c.problem())
	}
	return RewardConfig{}, &InvalidError{What: "patch refused", Problems: probs}
}

// Rejected is a proposal a person rejected: what it patched and how, so that a proposer
// can keep away from the direction that was refused.
type Rejected struct {
	Seq      int
	Base     RewardConfig
	Patch    Patch
	Feedback string
	// Session is the earlier session that rejected it (Settings.From); "" for this one's.
	Session string
}

// Suggestion is a proposer's answer. Its patch is validated again by the engine.
type Suggestion struct {
	Patch Patch
	// Rationale is why, in the proposer's words: DeepSeek's free text (untrusted).
	Rationale string
	// Summary and Evidence are a numeric proposer's why: one sentence saying in words what
	// moves and why, and its evidence, one line per piece, strongest first. Cards and the
	// page lead with the sentence and the three strongest; the rest is shown on request.
	Summary        string
	Evidence       []string
	ExpectedImpact map[string]string
	// Confidence is, from the numeric sampler, the chance that every gate passes (its
	// model's, clipped by Credible); from DeepSeek, its own claim that the patch improves
	// the score. Surfaces label the two apart (GatesPassLabel).
	Confidence float64
	// BeatBest is the numeric sampler's chance that the trial scores above the best so far
	// with every gate passing (Credible); nil from a proposer without a model.
	BeatBest *float64
	Source   string // SourceAdvisor or SourceSampler
	Model    string
	// Outlook is what the numeric sampler's model expects of its most promising candidates
	// (the stop rule reads it, ModelSaysStop); nil from a proposer without a model.
	Outlook *Outlook
}

// Advisor proposes patches: the DeepSeek advisor, the TPE sampler, or both.
type Advisor interface {
	Propose(ctx context.Context, req ProposalRequest) (Suggestion, error)
}

// EventKind names what happened, for chat and notifications.
type EventKind string

// Event kinds.
const (
	EventSessionStarted  EventKind = "session_started"
	EventSessionUpdated  EventKind = "session_updated"
	EventTrialStarted    EventKind = "trial_started"
	EventTrialProgress   EventKind = "trial_progress"
	EventTrialFinished   EventKind = "trial_finished"
	EventProposalReady   EventKind = "proposal_ready"
	EventDecision        EventKind = "decision"
	EventSessionFinished EventKind = "session_finished"
	// EventPreferenceAsked posts an A/B card ("which walks better?"); EventPreference
	// updates it in place once answered or expired (quietly: no mention, no push).
	EventPreferenceAsked EventKind = "preference_asked"
	EventPreference      EventKind = "preference"
	// EventReview posts a rung's promotion plan, and updates it as people change it and
	// when the promotions start.
	EventReview EventKind = "promotion_review"
)

// Event is one thing that happened in a session, with copies of the records involved.
type Event struct {
	Kind       EventKind
	Time       time.Time
	Session    Session
	Trial      *Trial
	Proposal   *Proposal
	Preference *Preference
	Review     *Review
	Text       string // one plain-language line
}

// Notifier receives events. Notify must return quickly (enqueue, not deliver): the engine
// also calls it off the training path, and drops progress events rather than wait.
type Notifier interface {
	Notify(ctx context.Context, e Event)
}
