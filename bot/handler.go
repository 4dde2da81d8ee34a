package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"tunebot/preset"
	"tunebot/secret"
	"tunebot/session"
)

// Engine is what the handler asks the tuning engine to do; *session.Engine implements it.
type Engine interface {
	Start(ctx context.Context, st session.Settings, owner session.Actor) (session.Session, error)
	Pause(ctx context.Context, id string, by session.Actor) (session.Session, error)
	Resume(ctx context.Context, id string, by session.Actor) (session.Session, error)
	Cancel(ctx context.Context, id string, by session.Actor) (session.Session, error)
	Decide(ctx context.Context, d session.DecideRequest) (session.Proposal, error)
	Prefer(ctx context.Context, r session.PreferRequest) (session.Preference, error)
	Review(ctx context.Context, r session.ReviewRequest) (session.Review, string, error)
}

var _ Engine = (*session.Engine)(nil)

// ChartFunc renders the charts of trial t: the standard report when tags is empty, else
// one training curve per tag. It is CPU work; callers run it off the engine's path.
type ChartFunc func(ctx context.Context, s session.Session, t session.Trial, tags []string) ([]Attachment, error)

// InteractionKind says what a person did.
type InteractionKind string

// Interaction kinds.
const (
	KindCommand InteractionKind = "command" // /tune text
	KindReply   InteractionKind = "reply"   // a message in a session's thread
	KindAction  InteractionKind = "action"  // a button click: ActionID
	KindSubmit  InteractionKind = "submit"  // a form submission: ActionID and Values
)

// Form field IDs of the reject and edit forms.
const (
	FieldFeedback = "feedback"
	FieldPatch    = "patch"
)

// Interaction is one inbound event from a platform, already authenticated by the adapter.
type Interaction struct {
	Platform  string
	User      session.Actor // ID and Name; Platform and Where are filled in by the handler
	Roles     []string
	Channel   string
	Thread    string
	SessionID string // the session whose thread this is; "" outside a session thread
	Kind      InteractionKind
	Text      string
	ActionID  string
	Values    map[string]string
}

// printable is in with the text a person typed (the message, a form's values, the name the
// platform gives) passed through the one sanitizer, session.Printable, as it enters: every
// platform's text, feedback and notes are stored and shown without control characters or
// bidi and zero-width marks, and a secret split by invisible characters is seen whole.
func (in Interaction) printable() Interaction {
	in.Text, in.User.Name = session.Printable(in.Text), session.Printable(in.User.Name)
	if in.Values != nil {
		vs := make(map[string]string, len(in.Values))
		for k, v := range in.Values {
			vs[k] = session.Printable(v)
		}
		in.Values = vs
	}
	return in
}

// Reply is the answer to an interaction. Private replies are shown to the person only.
// An empty reply (no Text, Card or Form) means: say nothing (a comment in a thread).
type Reply struct {
	Private bool
	// Sensitive marks a private reply that carries a credential (a sign-in link): it reaches
	// the person alone or nobody. An adapter that can no longer answer privately (an expired
	// interaction) sends it by direct message, or says to ask again without it; never in a
	// channel, where a private answer may otherwise fall back with a mention.
	Sensitive bool
	Text      string
	Card      *Card
	Form      *Form // the platform opens this form (modal) instead of posting
	// Working marks the acknowledgement Handle returns when the work outlasts AckWithin:
	// the answer follows; an adapter must not read it as the answer (e.g. a form's verdict).
	Working bool
}

// Empty reports whether there is nothing to send.
func (r Reply) Empty() bool { return r.Text == "" && r.Card == nil && r.Form == nil }

// Form is a modal the platform opens; its submission comes back as KindSubmit with
// ActionID and Values keyed by Input.ID.
type Form struct {
	ActionID string
	Title    string
	Inputs   []Input
}

// Input is one text field of a form.
type Input struct {
	ID        string
	Label     string
	Value     string // pre-filled
	Hint      string
	Multiline bool
}

// HandlerConfig wires a Handler.
type HandlerConfig struct {
	Engine Engine
	Store  session.Store
	Space  *session.Space // what commands are parsed against: every task's names
	// SpaceOf is a task's own reward space when the daemon tunes several (nil: Space);
	// a session's edits and a preset's view use their task's.
	SpaceOf  func(task string) *session.Space
	Allow    AllowList
	Defaults session.Settings // what /tune start begins from
	Charts   ChartFunc        // nil: chart answers that charts are not available
	Clips    ClipFunc         // nil: clip answers that clips are not available
	// Agent tests the advisor's connection for /tune agent; nil means none is configured.
	Agent func(ctx context.Context) (string, error)
	// AckWithin bounds how long Handle waits before acknowledging (default 2 s, under the
	// 3 s platforms allow); the result then arrives through the follow-up callback.
	AckWithin time.Duration
	Logger    *slog.Logger

	// Applier applies presets to the trainer checkout for /tune apply and /tune rollback;
	// nil answers that apply is not configured.
	Applier Applier
	// Scheduler keeps the scheduled starts of /tune schedule; nil answers that schedules
	// are not configured.
	Scheduler Scheduler
	// SessionsDir is the engine's sessions directory, where /tune policy finds a preset's
	// policy.onnx; "" answers that policy download is not available.
	SessionsDir string
	// PolicyLimit caps the size of a policy.onnx uploaded to chat (default
	// DefaultPolicyLimit); a larger one is named by its path on the GPU machine instead.
	PolicyLimit int64
	// Gate keeps starts and applies apart; share it with whatever else starts sessions
	// (the scheduler). nil: the handler uses one of its own.
	Gate *CheckoutGate
	// Redact masks tunebot's secrets in every reply; nil masks nothing.
	Redact *secret.Redactor
	// ReadLimit bounds each person's read commands and agent calls (default
	// DefaultRateLimit).
	ReadLimit RateLimit
	// Dashboard issues a one-time sign-in link to the monitoring page for a person for /tune
	// dashboard (the page looks up their roles at each request); nil answers that the page
	// is off.
	Dashboard func(who session.Actor) (link string, expires time.Time, err error)
	// Foreground is the handler of one session in the foreground (tune): help lists no
	// daemon command, and start, schedule, apply, rollback and dashboard say they come with
	// the daemon.
	Foreground bool
}

// Handler turns interactions into engine calls and replies. It is platform-neutral and
// safe for concurrent use.
type Handler struct {
	cfg HandlerConfig
	log *slog.Logger
	wg  sync.WaitGroup

	limit *Limiter // each person's read commands

	// ops holds the apply and rollback confirmations shown and not yet answered (see
	// handler_ops.go).
	opsMu   sync.Mutex
	pending map[string]pendingOp
}

// NewHandler returns a handler; Engine, Store and Space are required.
func NewHandler(cfg HandlerConfig) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AckWithin <= 0 {
		cfg.AckWithin = 2 * time.Second
	}
	if cfg.Defaults.Mode == "" {
		cfg.Defaults = session.DefaultSettings()
	}
	if cfg.PolicyLimit <= 0 {
		cfg.PolicyLimit = DefaultPolicyLimit
	}
	if cfg.Gate == nil {
		cfg.Gate = &CheckoutGate{}
	}
	return &Handler{cfg: cfg, log: cfg.Logger, pending: map[string]pendingOp{}, limit: NewLimiter(cfg.ReadLimit)}
}

// Handle acknowledges within AckWithin: the reply returned is the result when the work
// finished in time, else a short "working on it" (Reply.Working); then followUp receives the
// result, from another goroutine. The caller calls sent once the first reply has gone out
// (or failed to): the follow-up waits for it, so on every platform a follow-up never
// overtakes the acknowledgement it follows. (A caller that never calls sent only delays the
// follow-up, by at most followUpHold.) Wait drains such work on shutdown.
func (h *Handler) Handle(ctx context.Context, in Interaction, followUp func(Reply)) (first Reply, sent func()) {
	done := make(chan Reply, 1)
	firstOut := make(chan struct{})
	var once sync.Once
	sent = func() { once.Do(func() { close(firstOut) }) }
	var mu sync.Mutex
	acked := false
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		r := h.Do(context.WithoutCancel(ctx), in)
		mu.Lock()
		if acked {
			mu.Unlock()
			if followUp != nil && !r.Empty() {
				hold := time.NewTimer(followUpHold)
				defer hold.Stop()
				select {
				case <-firstOut:
				case <-hold.C:
					h.log.Warn("sending a follow-up whose acknowledgement was never reported sent", "platform", in.Platform, "kind", in.Kind)
				}
				followUp(r)
			}
			return
		}
		done <- r
		mu.Unlock()
	}()
	t := time.NewTimer(h.cfg.AckWithin)
	defer t.Stop()
	select {
	case r := <-done:
		return r, sent
	case <-t.C:
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case r := <-done:
		return r, sent
	default:
		acked = true
		return Reply{Private: true, Text: "working on it…", Working: true}, sent
	}
}

// followUpHold bounds how long a follow-up waits for its acknowledgement to be reported sent.
const followUpHold = time.Minute

// Wait blocks until every interaction Handle started has finished.
func (h *Handler) Wait() { h.wg.Wait() }

// Do handles in synchronously. A panic becomes an error reply, never a crash.
func (h *Handler) Do(ctx context.Context, in Interaction) (r Reply) {
	in = in.printable()
	in.User.Platform = in.Platform
	if in.User.Name == "" {
		in.User.Name = in.User.ID
	}
	if in.User.Where == "" {
		in.User.Where = strings.Trim(in.Channel+"/"+in.Thread, "/")
	}
	log := h.log.With("platform", in.Platform, "user", in.User.ID, "kind", in.Kind)
	defer func() {
		if p := recover(); p != nil {
			log.Error("handler panicked", "panic", p, "stack", string(debug.Stack()))
			r = Reply{Private: true, Text: "internal error while handling that; nothing was changed by the failed step, and the details are in tunebot's log"}
		}
		r = redactReply(r, h.cfg.Redact)
	}()
	if holdsSecret(in.Text, h.cfg.Redact) {
		return secretRefusal()
	}
	switch in.Kind {
	case KindCommand:
		cmd, err := ParseCommand(in.Text, h.cfg.Space)
		if err != nil {
			return errorReply(err)
		}
		return h.run(ctx, in, cmd, in.SessionID, "", log)
	case KindReply:
		cmd, err := ParseReply(in.Text, h.cfg.Space)
		if err != nil {
			return errorReply(err)
		}
		if cmd.Verb == VerbComment {
			return Reply{}
		}
		if in.SessionID == "" {
			if in.Platform == PlatformConsole {
				return Reply{Private: true, Text: "no session is active: start one with start [mode=approval] [trials=N] …, or type help"}
			}
			return Reply{Private: true, Text: "reply in a session's thread, or use /tune"}
		}
		return h.run(ctx, in, cmd, in.SessionID, "", log)
	case KindAction, KindSubmit:
		if verb, target, nonce, err := ParseConfirmID(in.ActionID); err == nil {
			return h.confirm(ctx, in, verb, target, nonce, log)
		}
		verb, sid, pid, err := ParseActionID(in.ActionID)
		if err != nil {
			return errorReply(session.Userf(nil, "%s", err.Error()))
		}
		return h.action(ctx, in, verb, sid, pid, log)
	}
	return Reply{Private: true, Text: fmt.Sprintf("unsupported interaction %q", in.Kind)}
}

func (h *Handler) action(ctx context.Context, in Interaction, verb, sid, pid string, log *slog.Logger) Reply {
	switch {
	case verb == ButtonPreferA, verb == ButtonPreferB, verb == ButtonPreferTie, verb == ButtonPreferNote:
		return h.preferAction(ctx, in, verb, sid, pid, log)
	case verb == ButtonGo:
		rung, ok := numbered(pid, "rung")
		if !ok {
			return Reply{Private: true, Text: "unknown promotion plan"}
		}
		return h.run(ctx, in, Command{Verb: VerbGo, Rung: rung}, sid, "", log)
	case verb == ButtonApprove:
		return h.run(ctx, in, Command{Verb: VerbApprove}, sid, pid, log)
	case verb == ButtonPause:
		return h.run(ctx, in, Command{Verb: VerbPause}, sid, pid, log)
	case verb == ButtonReject && in.Kind == KindAction:
		if r, ok := h.refuse(ctx, in, VerbReject, sid); !ok {
			return r
		}
		return Reply{Form: &Form{ActionID: in.ActionID, Title: "Reject proposal", Inputs: []Input{{ID: FieldFeedback, Label: "What should the advisor do differently?", Multiline: true,
			Hint: RejectHint}}}}
	case verb == ButtonReject:
		cmd, err := ParseReply("reject "+in.Values[FieldFeedback], h.cfg.Space)
		if err != nil {
			return errorReply(err)
		}
		if cmd.Proposal > 0 {
			// the button names the proposal: a number the feedback starts with is feedback
			cmd.Proposal, cmd.Feedback = 0, strings.TrimSpace(in.Values[FieldFeedback])
		}
		return h.run(ctx, in, cmd, sid, pid, log)
	case verb == ButtonEdit && in.Kind == KindAction:
		if r, ok := h.refuse(ctx, in, VerbEdit, sid); !ok {
			return r
		}
		p, err := h.proposal(ctx, sid, pid)
		if err != nil {
			return errorReply(err)
		}
		return Reply{Form: &Form{ActionID: in.ActionID, Title: fmt.Sprintf("Edit proposal %d", p.Seq), Inputs: []Input{{ID: FieldPatch, Label: "Changed values, one term=value per line", Multiline: true,
			Value: PatchText(p.Patch, h.cfg.Space), Hint: fmt.Sprintf("saving approves it at once; at most %d lines; term=0 switches a term off", h.cfg.Space.MaxChanges)}}}}
	case verb == ButtonEdit:
		edits, err := ParseAssignments(in.Values[FieldPatch], h.cfg.Space, false)
		if err != nil {
			return errorReply(err)
		}
		if r, ok := h.refuse(ctx, in, VerbEdit, sid); !ok {
			return r
		}
		s, err := h.session(ctx, sid, false)
		if err != nil {
			return errorReply(err)
		}
		// The form holds the complete patch, so the edits apply to an empty one.
		return h.decide(ctx, s, pid, Command{Verb: VerbEdit, Edits: edits}, in.User, true, log)
	}
	return Reply{Private: true, Text: "unknown action"}
}

// Refuse checks in's user against the allow-list for cmd, as Handle does, for an adapter
// that must work on the user's behalf before it hands the command over (download a file
// for import). A refusal is audited, and its private answer comes back with ok false.
func (h *Handler) Refuse(ctx context.Context, in Interaction, cmd Command) (r Reply, ok bool) {
	if isOpsVerb(cmd.Verb) {
		return h.refuseAs(ctx, in, opsWhat(cmd), permissionOfCommand(cmd))
	}
	return h.refuse(ctx, in, cmd.Verb, in.SessionID)
}

// refuse checks the allow-list for v; a refusal is audited and answered privately.
func (h *Handler) refuse(ctx context.Context, in Interaction, v Verb, sid string) (Reply, bool) {
	p := permissionOf(v)
	if p == "" || h.cfg.Allow.Allows(in.Platform, in.User.ID, in.Roles, p) {
		return Reply{}, true
	}
	h.auditRefusal(ctx, session.AuditEntry{SessionID: sid, Kind: "refused", Actor: in.User,
		Detail: map[string]any{"command": string(v), "permission": string(p), "roles": in.Roles}})
	return Reply{Private: true, Text: fmt.Sprintf("you are not allowed to %s here (%s needs the %q permission on %s); ask a tunebot operator", verbPhrase(v), v, p, in.Platform)}, false
}

// throttle spends one of the person's read tokens for a limited command; over the limit
// it answers when they may try again.
func (h *Handler) throttle(in Interaction, cmd Command, log *slog.Logger) (Reply, bool) {
	if !limited(cmd) {
		return Reply{}, true
	}
	if wait := h.limit.Take(in.Platform+"/"+in.User.ID, time.Now()); wait > 0 {
		log.Info("read command over the rate limit", "command", string(cmd.Verb), "retry_in", wait)
		return Reply{Private: true, Text: h.limit.SlowDown("commands", wait)}, false
	}
	return Reply{}, true
}

func verbPhrase(v Verb) string {
	switch v {
	case VerbApprove, VerbReject, VerbEdit:
		return "decide proposals in sessions"
	case VerbPrefer:
		return "answer A/B cards in sessions"
	case VerbGo, VerbPromote, VerbDrop:
		return "change or start promotion plans in sessions"
	case VerbAgent:
		return "test the advisor (a paid DeepSeek call)"
	}
	if permissionOf(v) == PermRead {
		return "read tunebot's sessions, presets or monitoring page"
	}
	return string(v) + " sessions"
}

func (h *Handler) audit(ctx context.Context, e session.AuditEntry) {
	e.Time = time.Now().UTC()
	if err := h.cfg.Store.Append(ctx, e); err != nil {
		h.log.Error("writing audit entry", "kind", e.Kind, "err", err)
	}
}

// help lists the commands: the console's or chat's, and a foreground session's without the
// daemon's.
func (h *Handler) help(in Interaction) Reply {
	help := Help(in.Platform == PlatformConsole)
	if h.cfg.Foreground {
		help = ForegroundHelp()
	}
	return Reply{Private: true, Card: &Card{Kind: "notice", Title: "tunebot commands", Blocks: []Block{{Kind: BlockCode, Text: help}}}}
}

// run executes a parsed command for session sid ("" means the active or newest one) and
// proposal pid ("" means the pending one): refusals first, then the commands that need no
// session, then those that act on one.
func (h *Handler) run(ctx context.Context, in Interaction, cmd Command, sid, pid string, log *slog.Logger) Reply {
	if r, ok := foregroundRefusal(cmd.Verb); ok && h.cfg.Foreground {
		return r
	}
	if isOpsVerb(cmd.Verb) {
		return h.ops(ctx, in, cmd, log)
	}
	if r, ok := h.refuse(ctx, in, cmd.Verb, sid); !ok {
		return r
	}
	if r, ok := h.throttle(in, cmd, log); !ok {
		return r
	}
	if r, ok := h.runSessionless(ctx, in, cmd, log); ok {
		return r
	}
	s, err := h.session(ctx, sid, readsEndedSession(cmd.Verb))
	if err != nil {
		return errorReply(err)
	}
	return h.runOnSession(ctx, s, pid, cmd, in.User, log)
}

// readsEndedSession says whether v, with no session named, may fall back to the newest
// session when none is active: the read commands may, the ones that change a session may not.
func readsEndedSession(v Verb) bool {
	switch v {
	case VerbStatus, VerbBest, VerbChart, VerbClip, VerbWhy:
		return true
	}
	return false
}

// runSessionless runs the commands that act on no one session (help, start, presets, the
// monitoring page link, the advisor test); ok is false for every other verb.
func (h *Handler) runSessionless(ctx context.Context, in Interaction, cmd Command, log *slog.Logger) (Reply, bool) {
	switch cmd.Verb {
	case VerbHelp:
		return h.help(in), true
	case VerbStart:
		return h.start(ctx, cmd, in.User, log), true
	case VerbPresets:
		return h.presets(ctx), true
	case VerbDashboard:
		return h.dashboardLink(in.User, log), true
	case VerbAgent:
		return h.agentTest(ctx), true
	}
	return Reply{}, false
}

// start begins a session with cmd's settings over the configured defaults.
func (h *Handler) start(ctx context.Context, cmd Command, by session.Actor, log *slog.Logger) Reply {
	st, err := cmd.Settings(h.cfg.Defaults)
	if err != nil {
		return errorReply(err)
	}
	s, err := h.cfg.Gate.Start(ctx, h.cfg.Engine, st, by)
	if errors.Is(err, session.ErrCheckoutBusy) {
		return Reply{Private: true, Text: err.Error()}
	}
	if err != nil {
		return h.engineError(err, log)
	}
	log.Info("session started from chat", "session", s.ID)
	text := fmt.Sprintf("session %s started by %s: %s mode, %d trials, rungs %v", session.Short(s.ID), by, st.Mode, st.TrialCount, st.Rungs)
	if line := session.StartLine(s); line != "" {
		text += "; it " + line
	}
	return Reply{Text: text}
}

// dashboardLink issues a one-time sign-in link to the monitoring page, privately: the link
// signs in as the person who asked.
func (h *Handler) dashboardLink(by session.Actor, log *slog.Logger) Reply {
	if h.cfg.Dashboard == nil {
		return Reply{Private: true, Text: "the monitoring page is off in this tunebot (service.addr: off)"}
	}
	link, exp, err := h.cfg.Dashboard(by)
	if err != nil {
		return h.engineError(err, log)
	}
	log.Info("monitoring page link issued")
	return Reply{Private: true, Sensitive: true, Text: fmt.Sprintf("your sign-in link to tunebot's monitoring page (works once, until %s UTC; it signs in as you, so do not share it): %s",
		exp.UTC().Format("15:04"), link)}
}

// agentTest makes one call to the advisor and says whether it answered.
func (h *Handler) agentTest(ctx context.Context) Reply {
	if h.cfg.Agent == nil {
		return Reply{Private: true, Text: "no advisor is configured (set DEEPSEEK_API_KEY); sessions can still run with fallback=true"}
	}
	msg, err := h.cfg.Agent(ctx)
	if err != nil {
		return Reply{Private: true, Text: "advisor connection test failed: " + userText(err)}
	}
	return Reply{Private: true, Text: "advisor connection works: " + msg}
}

// runOnSession runs a command that reads or changes session s.
func (h *Handler) runOnSession(ctx context.Context, s session.Session, pid string, cmd Command, by session.Actor, log *slog.Logger) Reply {
	switch cmd.Verb {
	case VerbStatus:
		return h.status(ctx, s, log)
	case VerbBest:
		return bestReply(s)
	case VerbChart:
		return h.chart(ctx, s, cmd, log)
	case VerbClip:
		return h.clip(ctx, s, cmd, log)
	case VerbWhy:
		return h.why(ctx, s, cmd, log)
	case VerbPause, VerbResume, VerbCancel:
		return h.control(ctx, s, cmd.Verb, by, log)
	case VerbApprove, VerbReject, VerbEdit:
		return h.decide(ctx, s, pid, cmd, by, false, log)
	case VerbPrefer:
		return h.preferCommand(ctx, s, cmd, by, log)
	case VerbGo, VerbPromote, VerbDrop:
		return h.reviewCommand(ctx, s, cmd, by, log)
	}
	return Reply{Private: true, Text: fmt.Sprintf("%s is not available here", cmd.Verb)}
}

// status answers with a fresh copy of s's root card.
func (h *Handler) status(ctx context.Context, s session.Session, log *slog.Logger) Reply {
	trials, err := h.cfg.Store.Trials(ctx, s.ID)
	if err != nil {
		return h.engineError(err, log)
	}
	props, err := h.cfg.Store.Proposals(ctx, s.ID)
	if err != nil {
		return h.engineError(err, log)
	}
	c := RootCard(RootInput{Session: s, Trials: trials, Proposals: props})
	c.Ref = "" // a fresh message, not the root one
	return Reply{Private: true, Card: &c}
}

// bestReply names s's best trial, and the preset it was saved as.
func bestReply(s session.Session) Reply {
	if s.BestTrial < 0 {
		return Reply{Private: true, Text: fmt.Sprintf("session %s has no eligible trial yet", session.Short(s.ID))}
	}
	line := fmt.Sprintf("session %s: best is %s (%s)", session.Short(s.ID), bestLine(s), ScoreNote)
	if s.Preset != "" {
		line += "; saved as preset " + s.Preset
	}
	return Reply{Private: true, Text: line}
}

// control pauses, resumes or cancels s and says what the engine made of it.
func (h *Handler) control(ctx context.Context, s session.Session, v Verb, by session.Actor, log *slog.Logger) Reply {
	var err error
	switch v {
	case VerbPause:
		s, err = h.cfg.Engine.Pause(ctx, s.ID, by)
	case VerbResume:
		s, err = h.cfg.Engine.Resume(ctx, s.ID, by)
	case VerbCancel:
		s, err = h.cfg.Engine.Cancel(ctx, s.ID, by)
	}
	if err != nil {
		return h.engineError(err, log)
	}
	return Reply{Text: fmt.Sprintf("session %s: %s", session.Short(s.ID), s.Message)}
}

// decide records a decision; for an edit, complete says the edits are the whole patch (the
// edit form) rather than changes to the proposal's patch (a thread reply).
func (h *Handler) decide(ctx context.Context, s session.Session, pid string, cmd Command, by session.Actor, complete bool, log *slog.Logger) Reply {
	req := session.DecideRequest{SessionID: s.ID, ProposalID: pid, Action: string(cmd.Verb), Feedback: cmd.Feedback, By: by}
	if pid == "" {
		target, r, ok := h.replyTarget(ctx, s, cmd, log)
		if !ok {
			return r
		}
		req.ProposalID, pid = target, target
	}
	if cmd.Verb == VerbEdit {
		p, err := h.proposal(ctx, s.ID, pid)
		if err != nil {
			return errorReply(err)
		}
		if p.State != session.ProposalPending {
			// Let the engine give the answer that names who decided first.
			req.ProposalID = p.ID
			req.Edit = &p.Patch
		} else {
			patch := ApplyEdits(p.Patch, cmd.Edits)
			if complete {
				patch = ApplyEdits(session.Patch{Weights: map[string]float64{}, Params: map[string]float64{}}, cmd.Edits)
			}
			trials, err := h.cfg.Store.Trials(ctx, s.ID)
			if err != nil {
				return h.engineError(err, log)
			}
			tried := session.TriedConfigs(trials)
			// Validated here first so a bad edit is refused with every problem before the
			// engine is asked; the engine checks again in its own transaction.
			if _, err := h.spaceOf(s.Settings.Task).Validate(p.Base, patch, tried); err != nil {
				return errorReply(err)
			}
			req.ProposalID, req.Edit = p.ID, &patch
		}
	}
	p, err := h.cfg.Engine.Decide(ctx, req)
	if err != nil {
		return h.engineError(err, log)
	}
	text := fmt.Sprintf("proposal %d %s by %s", p.Seq, session.DecidedWord(p), by)
	if line := EditedChange(p, h.spaceOf(s.Settings.Task)); line != "" && p.Decision.By == by {
		text += "; " + line // the patch that runs, not the one proposed
	}
	if p.Decision != nil && p.Decision.Note != "" && p.Decision.By == by {
		text += "\n" + p.Decision.Note // what became of the feedback, or what an edit overrode
	}
	if p.State == session.ProposalApproved {
		// Recorded, but a paused session runs nothing until someone resumes it.
		if now, err := h.cfg.Store.Session(ctx, s.ID); err == nil && now.State == session.StatePaused {
			text += "; " + session.PausedApprovalNote
		}
	}
	return Reply{Text: text}
}

// replyTarget is the proposal a thread reply decides. "approve 4" names proposal 4 of the
// session. A bare "approve" means the one pending proposal, or with none pending the
// newest, so that a late "approve" hears who decided it first; while several wait (parallel
// trials, issue 14) it is not guessed: the answer lists them with the reply for each
// (docs/design.md §6).
func (h *Handler) replyTarget(ctx context.Context, s session.Session, cmd Command, log *slog.Logger) (string, Reply, bool) {
	ps, err := h.cfg.Store.Proposals(ctx, s.ID)
	if err != nil {
		return "", h.engineError(fmt.Errorf("listing proposals: %w", err), log), false
	}
	pending := Pending(ps)
	if cmd.Proposal > 0 {
		for _, p := range ps {
			if p.Seq == cmd.Proposal {
				return p.ID, Reply{}, true
			}
		}
		text := fmt.Sprintf("session %s has no proposal %d", session.Short(s.ID), cmd.Proposal)
		switch len(pending) {
		case 0:
			text += "; none waits for a decision"
		case 1:
			text += fmt.Sprintf("; proposal %d waits: %s", pending[0].Seq, DecisionReply(cmd.Verb, pending[0].Seq))
		default:
			text += "; " + WhichProposal(cmd.Verb, pending)
		}
		return "", Reply{Private: true, Text: text}, false
	}
	switch {
	case len(pending) > 1:
		return "", Reply{Private: true, Text: WhichProposal(cmd.Verb, pending)}, false
	case len(ps) == 0:
		return "", Reply{}, true // the engine says that nothing waits
	}
	return session.BareDecisionTarget(ps).ID, Reply{}, true
}

// session finds the session an interaction is about: the thread's, else the active one,
// else (for reading) the newest.
func (h *Handler) session(ctx context.Context, id string, newestOK bool) (session.Session, error) {
	if id != "" {
		s, err := h.cfg.Store.Session(ctx, id)
		if errors.Is(err, session.ErrNotFound) {
			return s, session.Userf(err, "session %s does not exist", Truncate(id, 20))
		}
		return s, err
	}
	// The indexes answer both: nothing here reads every session (docs/design.md §7).
	s, ok, err := session.ActiveSession(ctx, h.cfg.Store)
	if err != nil || ok {
		return s, err
	}
	if newestOK {
		newest, _, err := h.cfg.Store.RecentSessions(ctx, "", 1)
		if err != nil {
			return session.Session{}, fmt.Errorf("reading the newest session: %w", err)
		}
		if len(newest) > 0 {
			return newest[0], nil
		}
	}
	return session.Session{}, session.Userf(session.ErrNotFound, "no session is active; /tune start begins one")
}

// proposal returns proposal pid of session sid, or its newest pending one.
func (h *Handler) proposal(ctx context.Context, sid, pid string) (session.Proposal, error) {
	ps, err := h.cfg.Store.Proposals(ctx, sid)
	if err != nil {
		return session.Proposal{}, fmt.Errorf("listing proposals: %w", err)
	}
	var found *session.Proposal
	for i := range ps {
		if pid != "" && ps[i].ID == pid || pid == "" && ps[i].State == session.ProposalPending {
			found = &ps[i]
		}
	}
	if found == nil {
		if pid != "" {
			return session.Proposal{}, session.Userf(session.ErrNotFound, "proposal %s does not exist", Truncate(pid, 30))
		}
		return session.Proposal{}, session.Userf(session.ErrNotFound, "session %s has no proposal waiting for a decision", session.Short(sid))
	}
	return *found, nil
}

func (h *Handler) presets(ctx context.Context) Reply {
	ps, err := h.cfg.Store.Presets(ctx)
	if err != nil {
		return h.engineError(err, h.log)
	}
	if len(ps) == 0 {
		return Reply{Private: true, Text: "no presets yet: a session saves its best configuration as one when it succeeds"}
	}
	t := &Table{Caption: "presets", Columns: []string{"name", "task", "trainer", preset.GainHeading, "built on", "trial", "created"}, Align: []string{"", "", "", "r", "", "", ""}}
	for _, p := range preset.ByGain(ps) {
		trainer := p.Trainer // which trainer made it: a sim preset is no real result (issue 28)
		if trainer == "" {
			trainer = "—"
		}
		trial := "—"
		if !preset.Imported(p) {
			trial = p.Trial.String()
		}
		t.Rows = append(t.Rows, []string{p.Name, p.Task, trainer, preset.GainText(p), preset.BuiltOnText(p), trial, p.CreatedAt.UTC().Format("2006-01-02 15:04")})
	}
	return Reply{Private: true, Card: &Card{Kind: "notice", Title: "presets", Blocks: []Block{{Kind: BlockTable, Table: t}, Text(PresetGainNote + ".")}}}
}

func (h *Handler) chart(ctx context.Context, s session.Session, cmd Command, log *slog.Logger) Reply {
	if h.cfg.Charts == nil {
		return Reply{Private: true, Text: "charts are not available in this tunebot"}
	}
	t, no, ok := h.namedTrial(ctx, s, cmd, log)
	if !ok {
		return no
	}
	atts, err := h.cfg.Charts(ctx, s, t, cmd.Tags)
	if err != nil {
		return h.engineError(err, log)
	}
	c := Card{Kind: "notice", Session: s.ID, Title: fmt.Sprintf("charts of trial %d @ rung %d", t.Number, t.Rung),
		Blocks: []Block{{Kind: BlockAttachments, Attachments: atts}}}
	return Reply{Private: true, Card: &c}
}

// why answers with a proposal's whole evidence (its card shows the three strongest pieces),
// in the thread: proposal cmd.Proposal, or with none named the newest.
func (h *Handler) why(ctx context.Context, s session.Session, cmd Command, log *slog.Logger) Reply {
	ps, err := h.cfg.Store.Proposals(ctx, s.ID)
	if err != nil {
		return h.engineError(err, log)
	}
	if len(ps) == 0 {
		return Reply{Private: true, Text: fmt.Sprintf("session %s has no proposal yet", session.Short(s.ID))}
	}
	p := ps[len(ps)-1]
	if cmd.Proposal > 0 {
		i := slices.IndexFunc(ps, func(p session.Proposal) bool { return p.Seq == cmd.Proposal })
		if i < 0 {
			return Reply{Private: true, Text: fmt.Sprintf("session %s has no proposal %d (it has 1 to %d)", session.Short(s.ID), cmd.Proposal, len(ps))}
		}
		p = ps[i]
	}
	c := withEdit(WhyCard(p), p, h.spaceOf(s.Settings.Task))
	return Reply{Card: &c}
}

// namedTrial is the trial a chart or clip command names: its rung, or without one its
// highest. ok is false when there is none, with the answer that says so.
func (h *Handler) namedTrial(ctx context.Context, s session.Session, cmd Command, log *slog.Logger) (session.Trial, Reply, bool) {
	trials, err := h.cfg.Store.Trials(ctx, s.ID)
	if err != nil {
		return session.Trial{}, h.engineError(err, log), false
	}
	var t *session.Trial
	for i := range trials {
		if trials[i].Number == cmd.Trial && (cmd.Rung < 0 || trials[i].Rung == cmd.Rung) {
			t = &trials[i] // ordered by number then rung: the last match is the highest rung
		}
	}
	if t == nil {
		return session.Trial{}, Reply{Private: true, Text: fmt.Sprintf("session %s has no trial %d%s", session.Short(s.ID), cmd.Trial, rungSuffix(cmd.Rung))}, false
	}
	return *t, Reply{}, true
}

func rungSuffix(r int) string {
	if r < 0 {
		return ""
	}
	return fmt.Sprintf(" @ rung %d", r)
}

// engineError turns an error into a reply: user errors verbatim, anything else a generic
// line (the detail goes to the log, not to chat).
func (h *Handler) engineError(err error, log *slog.Logger) Reply {
	if msg, ok := session.UserMessage(err); ok {
		return Reply{Private: true, Text: msg}
	}
	log.Error("handling interaction", "err", err)
	return Reply{Private: true, Text: "that failed inside tunebot; the details are in its log"}
}

func errorReply(err error) Reply {
	return Reply{Private: true, Text: userText(err)}
}

// userText is the message a person sees for err (session.UserMessage).
func userText(err error) string {
	msg, _ := session.UserMessage(err)
	return msg
}

// FieldErrors spreads a refusal of a form (the handler's reply text: a head line and one
// "• problem" per line) over the form's inputs, given in order by their values: each problem
// goes to the "term=value" input whose term it names (the longest name mentioned wins), the
// rest to the first input, prefixed by the head. It returns the messages by input index;
// with no inputs, everything is at index 0. The chat modals and the monitoring page share it.
func FieldErrors(text string, values []string) map[int]string {
	head, list, _ := strings.Cut(text, "\n")
	var problems []string
	for _, p := range strings.Split(list, "\n") {
		if p = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(p), "•")); p != "" {
			problems = append(problems, p)
		}
	}
	if len(problems) == 0 {
		problems, head = []string{head}, ""
	}
	terms := map[string]int{} // term → input index
	for i, val := range values {
		if name, _, ok := strings.Cut(val, "="); ok {
			name = strings.ToLower(strings.TrimSpace(name))
			name = strings.TrimPrefix(strings.TrimPrefix(name, "weights."), "params.")
			if name != "" {
				terms[name] = i
			}
		}
	}
	byInput := map[int][]string{}
	for _, p := range problems {
		at, best := 0, 0
		for name, i := range terms {
			if len(name) > best && strings.Contains(strings.ToLower(p), name) {
				at, best = i, len(name)
			}
		}
		byInput[at] = append(byInput[at], p)
	}
	out := map[int]string{}
	for i, ps := range byInput {
		msg := strings.Join(ps, "; ")
		if i == 0 && head != "" && !strings.HasSuffix(head, ":") {
			msg = head + ": " + msg
		}
		out[i] = msg
	}
	return out
}
