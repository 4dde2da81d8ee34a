package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// State is a session's state (docs/design.md §1).
type State string

// Session states.
const (
	StateQueued           State = "queued"
	StateRunning          State = "running"
	StateEvaluating       State = "evaluating"
	StateAwaitingApproval State = "awaiting_approval"
	StatePaused           State = "paused"
	StateInterrupted      State = "interrupted"
	StateCancelled        State = "cancelled"
	StateFailed           State = "failed"
	StateSucceeded        State = "succeeded"
)

// Active reports whether a session in this state still holds the one active slot.
func (s State) Active() bool {
	switch s {
	case StateCancelled, StateFailed, StateSucceeded:
		return false
	}
	return true
}

// TrialState is a trial's state.
type TrialState string

// Trial states.
const (
	TrialQueued      TrialState = "queued"
	TrialTraining    TrialState = "training"
	TrialEvaluating  TrialState = "evaluating"
	TrialCompleted   TrialState = "completed"
	TrialFailed      TrialState = "failed"
	TrialInterrupted TrialState = "interrupted"
)

// Terminal reports whether the trial has a final result (completed or failed).
func (s TrialState) Terminal() bool { return s == TrialCompleted || s == TrialFailed }

// Where a trial's configuration came from.
const (
	SourceBaseline = "baseline"
	SourceAdvisor  = "advisor"
	SourceSampler  = "sampler"
	SourceEdit     = "edit"
	SourcePreset   = "preset"
)

// Actor is who did something: a person on a platform, or tunebot itself.
type Actor struct {
	Platform string `json:"platform"` // "console", "slack", "discord", "dashboard" (the page's operator), "cli", "tunebot"
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
	Where    string `json:"where,omitempty"` // channel or thread, for the audit
}

// System is tunebot acting on its own (automatic mode, recovery).
var System = Actor{Platform: "tunebot", ID: "tunebot", Name: "tunebot"}

func (a Actor) String() string {
	if a.Name != "" {
		return a.Name
	}
	return a.ID
}

// Session is one tuning run.
type Session struct {
	ID         string       `json:"id"`
	State      State        `json:"state"`
	Settings   Settings     `json:"settings"`
	Owner      Actor        `json:"owner"`
	Base       RewardConfig `json:"base"`              // the baseline's configuration (defaults or a preset)
	Message    string       `json:"message,omitempty"` // last plain-language status
	Reason     string       `json:"reason,omitempty"`  // why it failed, paused or was cancelled
	PauseAsked bool         `json:"pause_asked,omitempty"`
	BestTrial  int          `json:"best_trial"` // -1 until there is one
	BestRung   int          `json:"best_rung"`
	BestScore  float64      `json:"best_score"`
	NoImprove  int          `json:"no_improve"`
	Preset     string       `json:"preset,omitempty"`
	// Outcome is what a succeeded session came to (outcome.go): OutcomeImproved,
	// OutcomeWithinNoise or OutcomeUnmeasured (Preset names the result), or
	// OutcomeNoImprovement (no preset: the baseline stands); "" otherwise.
	Outcome string `json:"outcome,omitempty"`
	// Result is the headline comparison (Compare), kept current as trials finish.
	Result     *Comparison `json:"result,omitempty"`
	GPUSeconds float64     `json:"gpu_seconds"`
	// Trainer is the kind of trainer that ran it (TrainerSim, TrainerMjlab, TrainerCommand;
	// "" in records written before it): the built-in sim runs on the CPU (TimeLabel).
	Trainer string `json:"trainer,omitempty"`
	// BudgetWaived is set when a person resumes a session that a budget paused: it runs on
	// to its end without asking again.
	BudgetWaived bool      `json:"budget_waived,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	EndedAt      time.Time `json:"ended_at,omitzero"`
	// Pruned is what retention (tunebot prune) removed of this finished session; nil
	// when nothing was.
	Pruned *Pruned `json:"pruned,omitempty"`
	// Preferences are people's A/B judgements of two trials' gaits, in the order they were
	// asked or typed (docs/design.md §1, preferences); Reviews the promotion review of each
	// rung the ladder reached. Both are records of the session: written in its transaction,
	// so a decision is never lost and two clicks yield one.
	Preferences []Preference `json:"preferences,omitempty"`
	Reviews     []Review     `json:"reviews,omitempty"`
	// BuiltOn is the earlier session this one builds on (Settings.From), as resolved at
	// start; nil for a session that starts afresh.
	BuiltOn *BuiltOn `json:"built_on,omitempty"`
	// Stopped is set when rung 0's search ended early because the proposer's model
	// expected no candidate to beat the best by more than the noise (ModelSaysStop).
	Stopped *ModelStop `json:"model_stop,omitempty"`
}

// FinalSeeds are the seeds its final evaluation runs on: final_eval_seeds when the settings
// list them, else fresh seeds derived from its id (FreshSeeds), which Start writes into its
// settings.
func (s Session) FinalSeeds() []int {
	// A session stored before final seeds had to be fresh may list evaluation seeds: it
	// draws fresh ones too, rather than re-measure the luck that chose.
	if fs := s.Settings.FinalEvalSeeds; len(fs) > 0 && !overlaps(fs, s.Settings.EvalSeeds) {
		return fs
	}
	n := s.Settings.FinalEvalCount
	if n < MinFinalEvalCount || n > MaxFinalEvalCount {
		// none set, or one the settings refuse that only a damaged record holds (a count of
		// billions would allocate without bound)
		n = DefaultFinalEvalCount
	}
	return FreshSeeds(s.ID, n, s.Settings.EvalSeeds)
}

// IsBest reports whether t is the trial s names as its best (BestTrial @ BestRung): what it
// shipped once it succeeded, its best so far before. It only reads that choice; the engine
// makes it.
func (s Session) IsBest(t Trial) bool {
	return s.BestTrial >= 0 && t.Number == s.BestTrial && t.Rung == s.BestRung
}

// BestOf is the trial among trials that s names as its best (IsBest), nil when s names none
// yet or trials do not hold it.
func (s Session) BestOf(trials []Trial) *Trial {
	for i := range trials {
		if s.IsBest(trials[i]) {
			return &trials[i]
		}
	}
	return nil
}

// Pruned records what retention removed of a finished session: its curves thinned or
// dropped, its run directories deleted. Its trials, scores, proposals, presets and audit
// are never removed, nor the policy and checkpoint of a preset's trial.
type Pruned struct {
	At      time.Time `json:"at"`
	Curves  string    `json:"curves,omitempty"` // CurvesDownsample or CurvesDrop; "" when kept
	Points  int       `json:"points,omitempty"` // the most points a curve kept, after downsample
	RunDirs bool      `json:"run_dirs,omitempty"`
}

// What retention does with the curves of an old session.
const (
	CurvesKeep       = "keep"
	CurvesDownsample = "downsample"
	CurvesDrop       = "drop"
)

// Proc identifies a trainer process group, recorded at launch so that one left running by a
// crashed tunebot can be ended before its GPU is used again.
type Proc struct {
	PID       int       `json:"pid"`
	PGID      int       `json:"pgid"`
	StartTick uint64    `json:"start_tick"` // process start time in clock ticks since boot (/proc/PID/stat)
	GPUs      []int     `json:"gpus"`
	Started   time.Time `json:"started"`
	Job       string    `json:"job,omitempty"` // "train" or "evaluate"

	// A job on a cluster (executor backend slurm or ray) has no local process: it is known
	// by its job id (Slurm's job id, or the Ray job's submission id), outlives tunebot, and
	// is re-attached on start instead of ended.
	SlurmJob string `json:"slurm_job,omitempty"`
	RayJob   string `json:"ray_job,omitempty"`
	// JobState is the cluster's word for the job (PENDING, RUNNING, ... as squeue or the
	// Ray head says it), JobReason why a pending job waits (Slurm's Resources, Priority,
	// ...). The keys are Slurm's, as records stored before Ray was a backend have them.
	JobState  string `json:"slurm_state,omitempty"`
	JobReason string `json:"slurm_reason,omitempty"`
	Node      string `json:"node,omitempty"` // where it runs
}

// Remote reports whether p is a job of a cluster scheduler, which survives tunebot.
func (p Proc) Remote() bool { return p.SlurmJob != "" || p.RayJob != "" }

// Cluster names the engine and id of a remote job: "Slurm" and its job id, or "Ray" and
// the job's submission id; "" for a local process.
func (p Proc) Cluster() (engine, id string) {
	switch {
	case p.SlurmJob != "":
		return "Slurm", p.SlurmJob
	case p.RayJob != "":
		return "Ray", p.RayJob
	}
	return "", ""
}

// RemoteJob returns the cluster job recorded on t (its Proc, when Remote), or nil: a job
// that outlives tunebot, awaited again on resume instead of started again.
func (t Trial) RemoteJob() *Proc {
	if t.Proc != nil && t.Proc.Remote() {
		return t.Proc
	}
	return nil
}

// Final is a finalist's re-evaluation on the final evaluation seeds.
type Final struct {
	Seeds    []int         `json:"seeds"`
	Metrics  Metrics       `json:"metrics"`
	PerSeed  []SeedMetrics `json:"per_seed"`
	Score    Score         `json:"score"`
	ScoreStd float64       `json:"score_std"`
}

// Trial is one training run of a configuration at one rung.
type Trial struct {
	SessionID    string        `json:"session_id"`
	Number       int           `json:"number"`
	Rung         int           `json:"rung"`
	Iterations   int           `json:"iterations"`      // target iterations of this rung
	StartIter    int           `json:"start_iteration"` // iterations inherited from the parent checkpoint
	State        TrialState    `json:"state"`
	Source       string        `json:"source"`
	ProposalID   string        `json:"proposal_id,omitempty"`
	Parent       *TrialRef     `json:"parent,omitempty"` // the trial whose config (rung 0) or checkpoint (rung>0) it builds on
	RewardConfig RewardConfig  `json:"reward_config"`
	RunDir       string        `json:"run_dir"`              // relative to the session directory
	Checkpoint   string        `json:"checkpoint,omitempty"` // relative to the session directory
	Policy       string        `json:"policy,omitempty"`     // the exported policy.onnx, relative to the session directory
	Trained      bool          `json:"trained,omitempty"`    // training finished with a checkpoint and policy
	Progress     int           `json:"progress,omitempty"`   // newest iteration seen while training
	Metrics      Metrics       `json:"metrics,omitempty"`
	PerSeed      []SeedMetrics `json:"per_seed,omitempty"`
	Score        *Score        `json:"score,omitempty"`
	Final        *Final        `json:"final,omitempty"`
	// FinalFailed is set when its final evaluation failed (Reason says why): it keeps its
	// rung result, and its gain is not measured on fresh seeds (VerdictOf).
	FinalFailed FailedFlag `json:"final_failed,omitempty"`
	Reason      string     `json:"reason,omitempty"`
	LogTail     string     `json:"log_tail,omitempty"`
	Proc        *Proc      `json:"proc,omitempty"`
	StartedAt   time.Time  `json:"started_at,omitzero"`
	EndedAt     time.Time  `json:"ended_at,omitzero"`
	GPUSeconds  float64    `json:"gpu_seconds"`

	// Clip is the short video of the policy its rung's evaluation wrote (nil: none); ClipNote
	// says why there is none, or why the one written was refused.
	Clip     *Clip  `json:"clip,omitempty"`
	ClipNote string `json:"clip_note,omitempty"`
	// PromotedBy is set on a promoted trial that a person put into its rung's plan (promote
	// N, or drop of another trial that it replaced); nil when the plan was tunebot's.
	PromotedBy *Promotion `json:"promoted_by,omitempty"`
}

// FailedFlag is Trial.FinalFailed: written as a bool, and read from the failure's words too,
// which a trial stored before it was a flag holds ("final_failed": "exit status 1"; its
// reason says them as well), so such a record still reads rather than failing its session's
// every read of trials.
type FailedFlag bool

// UnmarshalJSON reads a bool, or a stored failure's words as set when there are any.
func (f *FailedFlag) UnmarshalJSON(data []byte) error {
	var words string
	if json.Unmarshal(data, &words) == nil {
		*f = words != ""
		return nil
	}
	var b bool
	if err := json.Unmarshal(data, &b); err != nil {
		return err
	}
	*f = FailedFlag(b)
	return nil
}

// TrialOutline is what a summary needs of a trial, where it stands and when it ran: a list
// row counts, the metrics fold. A store can read it without decoding the rest of the record.
type TrialOutline struct {
	Number    int        `json:"number"`
	Rung      int        `json:"rung"`
	State     TrialState `json:"state"`
	StartedAt time.Time  `json:"started_at,omitzero"`
	EndedAt   time.Time  `json:"ended_at,omitzero"`
}

// Outline returns the trial's outline.
func (t Trial) Outline() TrialOutline {
	return TrialOutline{Number: t.Number, Rung: t.Rung, State: t.State, StartedAt: t.StartedAt, EndedAt: t.EndedAt}
}

// TrialRef names a trial of a session.
type TrialRef struct {
	Number int `json:"number"`
	Rung   int `json:"rung"`
}

func (r TrialRef) String() string { return fmt.Sprintf("trial %d @ rung %d", r.Number, r.Rung) }

// Ref returns the trial's reference.
func (t Trial) Ref() TrialRef { return TrialRef{t.Number, t.Rung} }

// Eligible reports whether the trial completed and passed the gates, its final
// re-evaluation's too when it had one (a finalist that fails a gate on more seeds is never
// best).
func (t Trial) Eligible() bool {
	return t.State == TrialCompleted && t.PassesGates()
}

// PassesGates reports whether the trial's evaluations so far pass the gates, whatever its
// state (a finalist being re-evaluated has its rung result).
func (t Trial) PassesGates() bool {
	return t.Score != nil && t.Score.Eligible && (t.Final == nil || t.Final.Score.Eligible)
}

// StandingScore is the trial's score against the baseline's rung-0 evaluation as it stands:
// its final evaluation's when it had one, else its rung's. It ranks nothing (RankFigure does).
func (t Trial) StandingScore() float64 {
	if t.Final != nil {
		return t.Final.Score.Total
	}
	if t.Score != nil {
		return t.Score.Total
	}
	return -2
}

// ProposalState is a proposal's state.
type ProposalState string

// Proposal states.
const (
	ProposalPending  ProposalState = "pending"
	ProposalApproved ProposalState = "approved"
	ProposalRejected ProposalState = "rejected"
	ProposalUsed     ProposalState = "used" // its trial has been created
	ProposalVoid     ProposalState = "void" // the session ended before it was decided
)

// Decision is who decided a proposal, how and when.
type Decision struct {
	Action   string    `json:"action"` // approve, reject, edit
	By       Actor     `json:"by"`
	At       time.Time `json:"at"`
	Feedback string    `json:"feedback,omitempty"`
	Edited   *Patch    `json:"edited,omitempty"`
	// Read is what the engine read from a rejection's feedback: constraints that hold for
	// the rest of the session (SessionConstraints), stored here so they survive a restart.
	Read []Constraint `json:"read,omitempty"`
	// Note says in words what became of the feedback (FeedbackNote) or which constraints
	// an edit overrode (OverrideNote), as every surface shows it.
	Note string `json:"note,omitempty"`
}

// Proposal is a patch offered for the next rung-0 trial.
type Proposal struct {
	ID             string            `json:"id"`
	SessionID      string            `json:"session_id"`
	Seq            int               `json:"seq"`
	Number         int               `json:"number"` // the trial number it would become
	BaseTrial      int               `json:"base_trial"`
	Base           RewardConfig      `json:"base"`
	Patch          Patch             `json:"patch"`
	Rationale      string            `json:"rationale"`
	Summary        string            `json:"summary,omitempty"`  // Suggestion.Summary
	Evidence       []string          `json:"evidence,omitempty"` // Suggestion.Evidence, strongest first
	ExpectedImpact map[string]string `json:"expected_impact,omitempty"`
	Confidence     float64           `json:"confidence"`
	Source         string            `json:"source"`
	Model          string            `json:"model,omitempty"`
	State          ProposalState     `json:"state"`
	Decision       *Decision         `json:"decision,omitempty"`
	CreatedAt      time.Time         `json:"created_at"`

	// BeatBest is Suggestion.BeatBest: the model's chance of beating the best so far.
	BeatBest *float64 `json:"beat_best,omitempty"`
	// BuiltOn says, on a session's first proposal, which earlier session it builds on
	// (BuiltOn.Line), so its card says so; "" otherwise.
	BuiltOn string `json:"built_on,omitempty"`
	// Outlook is Suggestion.Outlook: what the model expected of its best candidates.
	Outlook *Outlook `json:"outlook,omitempty"`
}

// Effective is the patch that runs: the edited one when a person edited it.
func (p Proposal) Effective() Patch {
	if p.Decision != nil && p.Decision.Edited != nil {
		return *p.Decision.Edited
	}
	return p.Patch
}

// Preset is an immutable named configuration saved from a session's best trial.
type Preset struct {
	Name      string       `json:"name"`
	SessionID string       `json:"session_id"`
	Trial     TrialRef     `json:"trial"`
	Config    RewardConfig `json:"config"`
	Score     float64      `json:"score"`
	ScoreStd  float64      `json:"score_std"`
	Metrics   Metrics      `json:"metrics,omitempty"`
	Approvers []string     `json:"approvers,omitempty"`
	Task      string       `json:"task"`
	CreatedAt time.Time    `json:"created_at"`

	// Trainer is the kind of trainer the session trained it with (TrainerSim, TrainerMjlab,
	// TrainerCommand); "" for an imported preset or one saved before it was recorded.
	Trainer string `json:"trainer,omitempty"`
	// Versus is its trial's score against the baseline at the same rung (VersusControl), as
	// the session chose it; nil for an imported preset or one saved before it was recorded.
	Versus *Versus `json:"versus,omitempty"`
	// Gain is its one figure comparable across presets: its trial's gain over the task's
	// defaults at equal training (Engine.gainOf); nil for an imported preset or one saved
	// before it was recorded.
	Gain *Gain `json:"gain,omitempty"`
	// BuiltOn is what its session started from (StartedFrom): "preset NAME", an earlier
	// session's trial, or "" for the defaults.
	BuiltOn string `json:"built_on,omitempty"`
	// Outcome is its session's (OutcomeImproved, OutcomeWithinNoise, OutcomeUnmeasured);
	// Verdict what the fresh seeds said of Versus. Both are "" and nil for an imported preset
	// or one saved before they were recorded.
	Outcome string   `json:"outcome,omitempty"`
	Verdict *Verdict `json:"verdict,omitempty"`
}

// Unconfirmed reports whether p's gain was not shown to clear the noise (its session ended
// within the noise or unmeasured): apply asks for it to be acknowledged.
func (p Preset) Unconfirmed() bool { return Unconfirmed(p.Outcome) }

// AuditEntry is one line of the append-only audit log.
type AuditEntry struct {
	Seq       uint64         `json:"seq"`
	Time      time.Time      `json:"time"`
	SessionID string         `json:"session_id,omitempty"`
	Kind      string         `json:"kind"`
	Actor     Actor          `json:"actor"`
	Detail    map[string]any `json:"detail,omitempty"`
}

// Point is one scalar sample of a training or evaluation curve.
type Point struct {
	Step  int64   `json:"step"`
	Value float64 `json:"value"`
}

// SeriesKey names one curve of one trial.
type SeriesKey struct {
	SessionID string
	Number    int
	Rung      int
	Tag       string
}

// Sentinel errors; store and engine map their failures onto these.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	ErrBusy     = errors.New("busy")
	ErrConflict = errors.New("conflict")
	ErrLocked   = errors.New("locked by another process")
	// ErrDamaged marks a data file that fails its consistency check.
	ErrDamaged = errors.New("damaged")
	// ErrCheckoutBusy is ErrBusy because an apply or rollback holds the trainer checkout.
	ErrCheckoutBusy = fmt.Errorf("%w: the trainer checkout is being changed", ErrBusy)
)

// UserError carries the message a person in chat or at the terminal sees; the wrapped error
// keeps internal detail for the log.
type UserError struct {
	Msg string
	Err error
}

func (e *UserError) Error() string { return e.Msg }
func (e *UserError) Unwrap() error { return e.Err }

// UserMessage is the text a person sees for err, and whether err was meant for a person:
// the outermost UserError's message or InvalidError's problems (each on its own "• " line)
// in err's chain; otherwise err.Error() and false, which a chat surface replaces by a
// generic line and logs (STYLE.md rule 4). Every surface that shows an error calls this.
func UserMessage(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	if msg, ok := userFacing(err); ok {
		return msg, true
	}
	return err.Error(), false
}

func userFacing(err error) (string, bool) {
	switch e := err.(type) {
	case nil:
		return "", false
	case *UserError:
		return e.Msg, true
	case *InvalidError:
		return e.What + ":\n• " + strings.Join(e.Problems, "\n• "), true
	case interface{ Unwrap() error }:
		return userFacing(e.Unwrap())
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if msg, ok := userFacing(inner); ok {
				return msg, true
			}
		}
	}
	return "", false
}

// Userf returns a UserError with a formatted message wrapping sentinel (which may be nil).
func Userf(sentinel error, format string, args ...any) error {
	return &UserError{Msg: fmt.Sprintf(format, args...), Err: sentinel}
}
