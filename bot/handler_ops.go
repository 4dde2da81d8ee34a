package bot

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"tunebot/preset"
	"tunebot/session"
)

// PermApply lets a person apply presets to the trainer checkout and roll them back.
const PermApply Permission = "apply"

// DefaultPolicyLimit is the largest policy.onnx uploaded to chat unless configured: under
// Discord's default 10 MiB upload limit (Slack's is far larger).
const DefaultPolicyLimit = 8 << 20

// ConfirmTTL is how long an apply or rollback confirmation can be answered.
const ConfirmTTL = 15 * time.Minute

// maxPending bounds the confirmations kept; the oldest go first.
const maxPending = 64

// Content types of the non-image files the handler attaches.
const (
	ContentJSON   = "application/json"
	ContentBinary = "application/octet-stream"
)

// Button verbs of the apply and rollback confirmations. Their action IDs are
// "tune:<verb>:<target>:<nonce>" (see ConfirmID), where the target is the preset (apply) or
// the commit (rollback) and the nonce is one this handler issued for that person.
const (
	ButtonApplyConfirm    = "apply"
	ButtonRollbackConfirm = "rollback"
	ButtonDismiss         = "dismiss"
)

// ApplyChange is one edit as it would be or was written: the text the pattern's value group
// held and the text that replaces it.
type ApplyChange struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Name string `json:"name"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// LeftValue is one of a preset's values an apply would not write into the checkout, and why:
// no configured edit names it, or its edit's pattern does not match exactly once.
type LeftValue struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Why   string  `json:"why"`
}

func (l LeftValue) String() string {
	return fmt.Sprintf("%s = %s (%s)", l.Name, strconv.FormatFloat(l.Value, 'g', -1, 64), l.Why)
}

// ApplyPreview is what applying a preset would do: the edits that change a value (an edit
// whose value is already in the checkout is left out), and the preset's values it would not
// write. An apply with any Left is refused unless asked to be partial.
type ApplyPreview struct {
	Changes []ApplyChange
	Left    []LeftValue
}

// ApplyResult is what an apply did. When the apply did not land, Reverted is true, Reason says
// why, and the checkout is as it was before.
type ApplyResult struct {
	Preset  string
	Branch  string
	Base    string
	Commit  string // the commit on Branch; "" when none was kept
	Changes []ApplyChange
	// Left are the preset's values a partial apply left out of the commit.
	Left           []LeftValue
	TestOutputTail string
	Reverted       bool
	Reason         string
}

// ApplyRecord is an apply as the audit log holds it, enough to roll it back.
type ApplyRecord struct {
	Seq       uint64
	At        time.Time
	By        session.Actor
	Preset    string
	SessionID string
	Branch    string
	Base      string
	Commit    string
}

// RollbackResult is what a rollback did.
type RollbackResult struct {
	Preset string
	Branch string
	Commit string // the commit that was reverted
	Revert string // the new revert commit
}

// FormatChanges renders a diff for a confirm step: one line per edit, file:line, name,
// old text → new text.
func FormatChanges(changes []ApplyChange) string {
	var b strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&b, "%s:%d  %s: %s → %s\n", c.File, c.Line, c.Name, c.Old, c.New)
	}
	return b.String()
}

// FormatLeft renders the values an apply would not write, one a line, under a heading that
// says they are not in the commit.
func FormatLeft(left []LeftValue) string {
	if len(left) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "not written (%d of the preset's values):\n", len(left))
	for _, l := range left {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	return b.String()
}

// Applier applies presets to the trainer checkout; *apply.Applier implements it.
type Applier interface {
	Diff(ctx context.Context, p session.Preset) (ApplyPreview, error)
	Apply(ctx context.Context, p session.Preset, by session.Actor) (ApplyResult, error)
	LastApply(ctx context.Context) (ApplyRecord, error)
	Rollback(ctx context.Context, rec ApplyRecord, by session.Actor) (RollbackResult, error)
}

// ScheduleEntry is one scheduled start, as the Scheduler port exchanges it; schedule.Scheduler
// keeps and fires them.
type ScheduleEntry struct {
	ID   string `json:"id"`
	Spec string `json:"spec"`
	// Args are the /tune start arguments, kept as text and parsed when the entry fires, so
	// a config change between now and then applies.
	Args       string        `json:"args"`
	IfBusy     string        `json:"if_busy"` // ScheduleSkip or ScheduleWait
	CreatedBy  session.Actor `json:"created_by"`
	CreatedAt  time.Time     `json:"created_at"`
	LastRun    time.Time     `json:"last_run,omitzero"`
	LastResult string        `json:"last_result,omitempty"`
	// Next is the next firing time, filled in by List; never stored.
	Next time.Time `json:"-"`
}

// What a scheduled start does when another session holds the GPU.
const (
	ScheduleSkip = "skip"
	ScheduleWait = "wait"
)

// MaxScheduleArgs bounds a schedule's stored start arguments.
const MaxScheduleArgs = 1000

// Scheduler keeps scheduled starts; *schedule.Scheduler implements it.
type Scheduler interface {
	Add(ctx context.Context, spec, args, ifBusy string, by session.Actor) (ScheduleEntry, error)
	List(ctx context.Context) ([]ScheduleEntry, error)
	Remove(ctx context.Context, id string) error
}

// ConfirmID builds the action ID of a confirmation's button.
func ConfirmID(verb, target, nonce string) string {
	return strings.Join([]string{actionPrefix, verb, target, nonce}, ":")
}

// ParseConfirmID splits an action ID built by ConfirmID. Like ParseActionID it checks the
// shape only; whether the nonce was issued, to whom and for what is the handler's check.
func ParseConfirmID(id string) (verb, target, nonce string, err error) {
	parts := strings.Split(id, ":")
	if len(parts) != 4 || parts[0] != actionPrefix {
		return "", "", "", fmt.Errorf("unknown action %q", Truncate(id, 80))
	}
	switch parts[1] {
	case ButtonApplyConfirm, ButtonRollbackConfirm, ButtonDismiss:
	default:
		return "", "", "", fmt.Errorf("unknown action %q", Truncate(id, 80))
	}
	if !idRE.MatchString(parts[2]) || !nonceRE.MatchString(parts[3]) {
		return "", "", "", fmt.Errorf("malformed action %q", Truncate(id, 80))
	}
	return parts[1], parts[2], parts[3], nil
}

// nonceRE is the shape of the nonces issue makes.
var nonceRE = regexp.MustCompile(`^[0-9a-f]{16}$`)

// pendingOp is a confirmation shown and not yet answered.
type pendingOp struct {
	kind    string // ButtonApplyConfirm or ButtonRollbackConfirm
	target  string // the preset (apply) or the commit (rollback)
	who     string // platform/user of the person who asked: only they may answer
	digest  string // of what was shown, so a confirm applies exactly that
	expires time.Time
}

func opWho(in Interaction) string { return in.Platform + "/" + in.User.ID }

// permissionOfCommand is what cmd needs; "" means anyone may.
func permissionOfCommand(cmd Command) Permission {
	switch cmd.Verb {
	case VerbApply, VerbRollback:
		return PermApply
	case VerbImport:
		return PermStart // an imported preset exists to seed sessions
	case VerbSchedule:
		if cmd.Sub == "add" || cmd.Sub == "remove" {
			return PermStart // a schedule starts sessions
		}
		return PermRead
	}
	return permissionOf(cmd.Verb)
}

func isOpsVerb(v Verb) bool {
	switch v {
	case VerbPreset, VerbImport, VerbPolicy, VerbApply, VerbRollback, VerbSchedule, VerbExport:
		return true
	}
	return false
}

// opsWhat names what cmd does, for a refusal: "you are not allowed to <what> here".
func opsWhat(cmd Command) string {
	switch cmd.Verb {
	case VerbApply:
		return "apply presets to the trainer checkout"
	case VerbRollback:
		return "roll back an applied preset"
	}
	return cmd.describe()
}

// refuseAs checks the allow-list for p; a refusal is audited and answered privately.
func (h *Handler) refuseAs(ctx context.Context, in Interaction, what string, p Permission) (Reply, bool) {
	if p == "" || h.cfg.Allow.Allows(in.Platform, in.User.ID, in.Roles, p) {
		return Reply{}, true
	}
	h.auditRefusal(ctx, session.AuditEntry{Kind: "refused", Actor: in.User,
		Detail: map[string]any{"command": what, "permission": string(p), "roles": in.Roles}})
	return Reply{Private: true, Text: fmt.Sprintf("you are not allowed to %s here (it needs the %q permission on %s); ask a tunebot operator", what, p, in.Platform)}, false
}

// refuseConfirm audits a confirmation that is not honoured and says why, privately.
func (h *Handler) refuseConfirm(ctx context.Context, in Interaction, verb, target, why string) Reply {
	h.auditRefusal(ctx, session.AuditEntry{Kind: "refused", Actor: in.User,
		Detail: map[string]any{"command": "confirm " + verb, "target": target, "reason": why}})
	return Reply{Private: true, Text: why}
}

// ops runs the preset, apply and schedule commands.
func (h *Handler) ops(ctx context.Context, in Interaction, cmd Command, log *slog.Logger) Reply {
	if r, ok := h.refuseAs(ctx, in, opsWhat(cmd), permissionOfCommand(cmd)); !ok {
		return r
	}
	if r, ok := h.throttle(in, cmd, log); !ok {
		return r
	}
	switch cmd.Verb {
	case VerbExport:
		return h.export(ctx, cmd, log)
	case VerbPreset:
		p, err := h.getPreset(ctx, cmd.Preset)
		if err != nil {
			return h.engineError(err, log)
		}
		return Reply{Private: true, Card: &Card{Kind: "notice", Title: "preset " + p.Name, Blocks: []Block{{Kind: BlockCode, Text: preset.FormatShow(p, h.spaceOf(p.Task))}}}}
	case VerbImport:
		return h.importPreset(ctx, in, cmd, log)
	case VerbPolicy:
		return h.policy(ctx, cmd, log)
	case VerbApply:
		return h.applyPreview(ctx, in, cmd, log)
	case VerbRollback:
		return h.rollbackPreview(ctx, in, log)
	case VerbSchedule:
		return h.schedule(ctx, in, cmd, log)
	}
	return Reply{Private: true, Text: fmt.Sprintf("%s is not available here", cmd.Verb)}
}

// export answers with the preset as the file --reward-config takes, attached.
func (h *Handler) export(ctx context.Context, cmd Command, log *slog.Logger) Reply {
	p, err := h.cfg.Store.Preset(ctx, cmd.Preset)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return Reply{Private: true, Text: fmt.Sprintf("no preset named %q; /tune presets lists them", cmd.Preset)}
		}
		return h.engineError(err, log)
	}
	data := preset.Export(p)
	line := fmt.Sprintf("preset %s (trial %d @ rung %d of session %s, %s %s): %s.json is the file --reward-config takes",
		p.Name, p.Trial.Number, p.Trial.Rung, session.Short(p.SessionID), preset.GainHeading, preset.GainText(p), p.Name)
	if preset.Imported(p) {
		line = fmt.Sprintf("preset %s (imported): %s.json is the file --reward-config takes", p.Name, p.Name)
	}
	// Public: Slack uploads files into the channel either way, and presets are for
	// everyone in it to read.
	return Reply{Card: &Card{Kind: "notice", Title: "preset " + p.Name, Blocks: []Block{Text(line), {Kind: BlockAttachments, Attachments: []Attachment{{
		Name: p.Name + ".json", Title: "reward configuration of preset " + p.Name, Data: data, Size: len(data), ContentType: ContentJSON}}}}}}
}

func (h *Handler) importPreset(ctx context.Context, in Interaction, cmd Command, log *slog.Logger) Reply {
	task, space, err := h.importSpace()
	if err != nil {
		return errorReply(err)
	}
	p, err := preset.Import(ctx, h.cfg.Store, space, task, cmd.Preset, []byte(cmd.Data), in.User)
	if err != nil && p.Name == "" {
		return h.engineError(err, log)
	}
	if err != nil {
		log.Error("importing a preset", "preset", p.Name, "err", err) // saved; only its audit line failed
	}
	changed := len(space.Diff(space.Defaults(), p.Config))
	text := fmt.Sprintf("preset %s imported by %s (%d values differ from the defaults); start a session from it with /tune start preset=%s", p.Name, in.User, changed, p.Name)
	if note := preset.RoundedNote([]byte(cmd.Data), p.Config); note != "" {
		text += "\n" + note
	}
	return Reply{Text: text}
}

// policy uploads the policy.onnx of the preset's trial, or names where it is when it is
// too large for chat.
func (h *Handler) policy(ctx context.Context, cmd Command, log *slog.Logger) Reply {
	if h.cfg.SessionsDir == "" {
		return Reply{Private: true, Text: "policy download is not available in this tunebot"}
	}
	p, err := h.getPreset(ctx, cmd.Preset)
	if err != nil {
		return h.engineError(err, log)
	}
	var trial session.Trial
	if !preset.Imported(p) {
		trials, err := h.cfg.Store.Trials(ctx, p.SessionID)
		if err != nil {
			return h.engineError(err, log)
		}
		found := false
		for _, t := range trials {
			if t.Ref() == p.Trial {
				trial, found = t, true
			}
		}
		if !found {
			return Reply{Private: true, Text: fmt.Sprintf("the trial of preset %s (%s of session %s) is no longer recorded, so its policy cannot be found", p.Name, p.Trial, session.Short(p.SessionID))}
		}
	}
	f, err := preset.BestPolicy(h.cfg.SessionsDir, p, trial, h.cfg.PolicyLimit)
	if err != nil {
		return h.engineError(err, log)
	}
	defer f.Close()
	data, err := f.ReadAll()
	if err != nil {
		return h.engineError(err, log)
	}
	name := p.Name + "-policy.onnx"
	return Reply{Card: &Card{Kind: "notice", Title: "policy of preset " + p.Name, Blocks: []Block{
		Text(fmt.Sprintf("policy.onnx of preset %s (%s of session %s, %d bytes)", p.Name, p.Trial, session.Short(p.SessionID), len(data))),
		{Kind: BlockAttachments, Attachments: []Attachment{{Name: name, Title: "policy of preset " + p.Name, Data: data, Size: len(data), ContentType: ContentBinary}}}}}}
}

// busy says why the trainer checkout may not change now, or "" when it may.
func (h *Handler) busy(ctx context.Context) (string, error) {
	s, ok, err := session.ActiveSession(ctx, h.cfg.Store)
	if err != nil {
		return "", fmt.Errorf("reading the active session: %w", err)
	}
	if ok {
		return fmt.Sprintf("session %s is %s and uses the trainer checkout; apply or roll back after it ends (or cancel it)", session.Short(s.ID), s.State), nil
	}
	return "", nil
}

func (h *Handler) notConfigured() Reply {
	return Reply{Private: true, Text: "apply is not configured: set apply.repo (and its edits and test command) in tunebot's config"}
}

func (h *Handler) applyPreview(ctx context.Context, in Interaction, cmd Command, log *slog.Logger) Reply {
	if h.cfg.Applier == nil {
		return h.notConfigured()
	}
	if why, err := h.busy(ctx); err != nil || why != "" {
		return h.busyReply(why, err, log)
	}
	p, err := h.getPreset(ctx, cmd.Preset)
	if err != nil {
		return h.engineError(err, log)
	}
	if err := preset.CheckApplicable(p, false); err != nil {
		return h.engineError(err, log) // chat never applies a sim preset: the terminal's --from-sim does
	}
	if err := preset.CheckConfirmed(p, false); err != nil {
		return h.engineError(err, log) // nor one within the noise: the terminal's --unconfirmed does
	}
	pv, err := h.cfg.Applier.Diff(ctx, p)
	if err != nil {
		return h.engineError(err, log)
	}
	if len(pv.Left) > 0 {
		return Reply{Private: true, Text: fmt.Sprintf("preset %s cannot be applied whole: %d of its values would not be written, so the commit would not be the preset that was measured.\n%s"+
			"Add edits for them to apply.edits in tunebot's config, or at the terminal `tunebot apply %s --partial --yes` commits the others and says which were left out.",
			p.Name, len(pv.Left), FormatLeft(pv.Left), p.Name)}
	}
	changes := pv.Changes
	if len(changes) == 0 {
		return Reply{Private: true, Text: fmt.Sprintf("the trainer checkout already has every value of preset %s: nothing to apply", p.Name)}
	}
	nonce := h.issue(pendingOp{kind: ButtonApplyConfirm, target: p.Name, who: opWho(in), digest: digestChanges(changes)})
	return Reply{Private: true, Card: &Card{Kind: "notice", Title: "apply preset " + p.Name + "?", Blocks: []Block{
		Text(fmt.Sprintf("Applying preset %s commits these %d edits on a new branch named for it, then runs the trainer's tests; if they fail, everything is put back. Confirm within %d minutes.",
			p.Name, len(changes), int(ConfirmTTL/time.Minute))),
		{Kind: BlockCode, Text: FormatChanges(changes)},
		{Kind: BlockActions, Actions: []Action{
			{ID: ConfirmID(ButtonApplyConfirm, p.Name, nonce), Label: "Confirm apply", Style: "primary"},
			{ID: ConfirmID(ButtonDismiss, p.Name, nonce), Label: "Cancel"},
		}},
	}}}
}

func (h *Handler) rollbackPreview(ctx context.Context, in Interaction, log *slog.Logger) Reply {
	if h.cfg.Applier == nil {
		return h.notConfigured()
	}
	if why, err := h.busy(ctx); err != nil || why != "" {
		return h.busyReply(why, err, log)
	}
	rec, err := h.cfg.Applier.LastApply(ctx)
	if err != nil {
		return h.engineError(err, log)
	}
	nonce := h.issue(pendingOp{kind: ButtonRollbackConfirm, target: rec.Commit, who: opWho(in), digest: digestRecord(rec)})
	return Reply{Private: true, Card: &Card{Kind: "notice", Title: "roll back preset " + rec.Preset + "?", Blocks: []Block{
		Text(fmt.Sprintf("Rolling back adds a commit on branch %s that reverts %s (preset %s, applied by %s on %s). Nothing is deleted or force-pushed. Confirm within %d minutes.",
			rec.Branch, shortSHA(rec.Commit), rec.Preset, rec.By, rec.At.UTC().Format("2006-01-02 15:04Z"), int(ConfirmTTL/time.Minute))),
		{Kind: BlockActions, Actions: []Action{
			{ID: ConfirmID(ButtonRollbackConfirm, rec.Commit, nonce), Label: "Confirm rollback", Style: "danger"},
			{ID: ConfirmID(ButtonDismiss, rec.Commit, nonce), Label: "Cancel"},
		}},
	}}}
}

// getPreset is preset.Get, a missing preset answered with where chat lists them.
func (h *Handler) getPreset(ctx context.Context, name string) (session.Preset, error) {
	p, err := preset.Get(ctx, h.cfg.Store, name)
	return p, preset.WithListHint(err, "/tune presets")
}

func (h *Handler) busyReply(why string, err error, log *slog.Logger) Reply {
	if err != nil {
		return h.engineError(err, log)
	}
	return Reply{Private: true, Text: why}
}

// issue keeps op for ConfirmTTL and returns its nonce.
func (h *Handler) issue(op pendingOp) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	now := time.Now()
	op.expires = now.Add(ConfirmTTL)
	h.opsMu.Lock()
	defer h.opsMu.Unlock()
	var oldest string
	for k, p := range h.pending {
		if now.After(p.expires) {
			delete(h.pending, k)
		} else if oldest == "" || p.expires.Before(h.pending[oldest].expires) {
			oldest = k
		}
	}
	if len(h.pending) >= maxPending {
		delete(h.pending, oldest)
	}
	h.pending[nonce] = op
	return nonce
}

// take checks that nonce is a live confirmation of kind for target, issued to in's user,
// and consumes it; otherwise it says why not and leaves it.
func (h *Handler) take(in Interaction, kind, target, nonce string, consume bool) (pendingOp, string) {
	h.opsMu.Lock()
	defer h.opsMu.Unlock()
	op, ok := h.pending[nonce]
	switch {
	case !ok || time.Now().After(op.expires):
		delete(h.pending, nonce)
		return op, "this confirmation is unknown or has expired (they last " + fmt.Sprint(int(ConfirmTTL/time.Minute)) + " minutes and do not survive a restart of tunebot); ask again"
	case op.target != target || kind != ButtonDismiss && op.kind != kind:
		return op, "this button does not match the confirmation it claims to answer; nothing was done"
	case op.who != opWho(in):
		return op, "only the person who asked can answer this confirmation"
	}
	if consume {
		delete(h.pending, nonce)
	}
	return op, ""
}

// confirm answers an apply or rollback confirmation's button.
func (h *Handler) confirm(ctx context.Context, in Interaction, verb, target, nonce string, log *slog.Logger) Reply {
	if in.Kind != KindAction {
		return Reply{Private: true, Text: "unknown action"}
	}
	what := "apply presets to the trainer checkout"
	if verb == ButtonRollbackConfirm {
		what = "roll back an applied preset"
	}
	if r, ok := h.refuseAs(ctx, in, what, PermApply); !ok {
		return r
	}
	op, why := h.take(in, verb, target, nonce, true)
	if why != "" {
		return h.refuseConfirm(ctx, in, verb, target, why)
	}
	if verb == ButtonDismiss {
		return Reply{Private: true, Text: "cancelled; the trainer checkout was not touched"}
	}
	if h.cfg.Applier == nil {
		return h.notConfigured()
	}
	if !h.cfg.Gate.BeginApply() {
		return Reply{Private: true, Text: "an apply or rollback is already running; wait for its result"}
	}
	defer h.cfg.Gate.EndApply()
	if why, err := h.busy(ctx); err != nil || why != "" {
		return h.busyReply(why, err, log)
	}
	if op.kind == ButtonRollbackConfirm {
		return h.rollback(ctx, in, op, log)
	}
	return h.apply(ctx, in, op, log)
}

func (h *Handler) apply(ctx context.Context, in Interaction, op pendingOp, log *slog.Logger) Reply {
	p, err := h.getPreset(ctx, op.target)
	if err != nil {
		return h.engineError(err, log)
	}
	pv, err := h.cfg.Applier.Diff(ctx, p)
	if err != nil {
		return h.engineError(err, log)
	}
	if len(pv.Left) > 0 || digestChanges(pv.Changes) != op.digest {
		return h.refuseConfirm(ctx, in, op.kind, op.target, "the trainer checkout changed since the diff was shown, so that diff no longer holds; run /tune apply "+p.Name+" again to see the new one")
	}
	log.Info("applying a preset from chat", "preset", p.Name)
	res, err := h.cfg.Applier.Apply(ctx, p, in.User)
	if err != nil {
		if !res.Reverted {
			return h.engineError(err, log)
		}
		var ue *session.UserError
		if !errors.As(err, &ue) {
			// The undo did not finish: say so plainly, the checkout needs a person.
			log.Error("apply failed and its undo did not finish", "preset", p.Name, "err", err)
			return Reply{Text: fmt.Sprintf("apply of preset %s failed (%s) and putting the checkout back did not finish; it needs a look on the GPU machine (details in tunebot's log)", p.Name, res.Reason)}
		}
		blocks := []Block{Text(fmt.Sprintf("apply of preset %s by %s was reverted: %s. The checkout is as it was; no branch or commit was kept.", p.Name, in.User, res.Reason))}
		if res.TestOutputTail != "" {
			blocks = append(blocks, Block{Kind: BlockCode, Text: Neutralise(res.TestOutputTail, 3000), Untrusted: true})
		}
		return Reply{Card: &Card{Kind: "notice", Title: "apply of preset " + p.Name + " reverted", Blocks: blocks}}
	}
	blocks := []Block{
		Text(fmt.Sprintf("preset %s applied by %s: commit %s on branch %s (from %s); the tests passed. /tune rollback reverts it.", p.Name, in.User, shortSHA(res.Commit), res.Branch, res.Base)),
		{Kind: BlockCode, Text: FormatChanges(res.Changes)},
	}
	if res.TestOutputTail != "" {
		blocks = append(blocks, Block{Kind: BlockCode, Text: Neutralise(res.TestOutputTail, 1500), Untrusted: true})
	}
	return Reply{Card: &Card{Kind: "notice", Title: "preset " + p.Name + " applied", Blocks: blocks}}
}

func (h *Handler) rollback(ctx context.Context, in Interaction, op pendingOp, log *slog.Logger) Reply {
	rec, err := h.cfg.Applier.LastApply(ctx)
	if err != nil {
		return h.engineError(err, log)
	}
	if rec.Commit != op.target || digestRecord(rec) != op.digest {
		return h.refuseConfirm(ctx, in, op.kind, op.target, "the last apply is no longer the one shown (it was rolled back, or another apply landed); run /tune rollback again")
	}
	res, err := h.cfg.Applier.Rollback(ctx, rec, in.User)
	if err != nil {
		return h.engineError(err, log)
	}
	return Reply{Text: fmt.Sprintf("preset %s rolled back by %s: commit %s on branch %s reverts %s", res.Preset, in.User, shortSHA(res.Revert), res.Branch, shortSHA(res.Commit))}
}

func (h *Handler) schedule(ctx context.Context, in Interaction, cmd Command, log *slog.Logger) Reply {
	if h.cfg.Scheduler == nil {
		return Reply{Private: true, Text: "schedules are not configured in this tunebot"}
	}
	switch cmd.Sub {
	case "list":
		es, err := h.cfg.Scheduler.List(ctx)
		if err != nil {
			return h.engineError(err, log)
		}
		return Reply{Private: true, Card: &Card{Kind: "notice", Title: "schedules", Blocks: []Block{{Kind: BlockCode, Text: FormatList(es)}}}}
	case "add":
		// The arguments are checked against the defaults now, so a bad range is refused
		// here rather than at 3 a.m.
		if _, err := cmd.Settings(h.cfg.Defaults); err != nil {
			return errorReply(err)
		}
		e, err := h.cfg.Scheduler.Add(ctx, cmd.Spec, cmd.Args, cmd.IfBusy, in.User)
		if err != nil {
			return h.engineError(err, log)
		}
		h.audit(ctx, session.AuditEntry{Kind: "schedule_added", Actor: in.User, Detail: map[string]any{"schedule": e.ID, "spec": e.Spec, "args": e.Args, "if_busy": e.IfBusy}})
		next := ""
		if !e.Next.IsZero() {
			next = ", next " + e.Next.Format("2006-01-02 15:04 MST")
		}
		return Reply{Text: fmt.Sprintf("schedule %s added by %s: %q starts a session with %s; if the GPU is busy: %s%s", e.ID, in.User, e.Spec, orDefaults(e.Args), e.IfBusy, next)}
	case "remove":
		if err := h.cfg.Scheduler.Remove(ctx, cmd.ID); err != nil {
			return h.engineError(err, log)
		}
		h.audit(ctx, session.AuditEntry{Kind: "schedule_removed", Actor: in.User, Detail: map[string]any{"schedule": cmd.ID}})
		return Reply{Text: fmt.Sprintf("schedule %s removed by %s", cmd.ID, in.User)}
	}
	return Reply{Private: true, Text: "unknown schedule subcommand"}
}

func orDefaults(args string) string {
	if strings.TrimSpace(args) == "" {
		return "the default settings"
	}
	return args
}

func digestChanges(cs []ApplyChange) string {
	h := sha256.New()
	for _, c := range cs {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00%s\x00%s\x00", c.File, c.Line, c.Name, c.Old, c.New)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func digestRecord(r ApplyRecord) string {
	return fmt.Sprintf("%d/%s/%s", r.Seq, r.Branch, r.Commit)
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
