package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"tunebot/bot"
	"tunebot/disk"
	"tunebot/preset"
	"tunebot/secret"
	"tunebot/session"
)

// Applier applies presets to one trainer checkout. Its methods are serialized: two applies
// at once in one work tree could only corrupt each other.
type Applier struct {
	cfg   Config
	space *session.Space
	audit session.AuditLog
	log   *slog.Logger
	git   git
	mu    sync.Mutex
	now   func() time.Time
	hist  history // the audit log's applies and rollbacks, read on from where LastApply left off

	// redact hides tunebot's secrets in what the checkout's tests and hooks print: those
	// run the trainer's code, and their output goes to chat, the log and the audit.
	redact *secret.Redactor

	// FromSim lets Apply apply a preset the built-in sim trainer made (preset.CheckApplicable):
	// set before use, only by `tunebot apply --from-sim`; the daemon never sets it.
	FromSim bool

	// Unconfirmed lets Apply apply a preset whose gain was not shown to clear the noise
	// (preset.CheckConfirmed): set before use, only by `tunebot apply --unconfirmed`.
	Unconfirmed bool

	// Partial lets Apply commit a preset some of whose values it cannot write (Left of its
	// preview), leaving those out and saying so in the commit message: set before use, only
	// by `tunebot apply --partial`. Without it such an apply is refused before anything changes.
	Partial bool
}

// The handler applies and rolls back through this (docs/design.md §8).
var _ bot.Applier = (*Applier)(nil)

// New checks cfg against space and returns an Applier that records to audit.
func New(cfg Config, space *session.Space, audit session.AuditLog, logger *slog.Logger) (*Applier, error) {
	if err := cfg.Check(space); err != nil {
		return nil, err
	}
	if audit == nil {
		return nil, errors.New("apply needs an audit log: applies and rollbacks are always recorded")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	redact := secret.Process()
	return &Applier{cfg: cfg, space: space, audit: audit, log: logger, redact: redact,
		git: newGit(cfg.Repo, cfg.AuthorName, cfg.AuthorEmail, redact), now: func() time.Time { return time.Now().UTC() }}, nil
}

// Diff previews what applying p would change, file by file, against the base branch (or
// the current commit when no base is configured), without touching the checkout: the edits
// that change a value, and every value of p an apply would not write (no edit names it, or
// its edit's pattern does not match exactly once).
func (a *Applier) Diff(ctx context.Context, p session.Preset) (bot.ApplyPreview, error) {
	if err := a.checkPreset(p); err != nil {
		return bot.ApplyPreview{}, err
	}
	return a.preview(ctx, p)
}

func (a *Applier) preview(ctx context.Context, p session.Preset) (bot.ApplyPreview, error) {
	ref := "HEAD"
	if a.cfg.Base != "" {
		ref = "refs/heads/" + a.cfg.Base
	}
	if _, err := a.git.run(ctx, "rev-parse", "--verify", "--quiet", ref+"^{commit}"); err != nil {
		return bot.ApplyPreview{}, session.Userf(session.ErrNotFound, "base %s does not exist in %s", a.baseName(), a.cfg.Repo)
	}
	pl, err := a.plan(p, func(rel string) ([]byte, error) {
		out, err := a.git.raw(ctx, "show", ref+":"+filepath.ToSlash(rel))
		if err != nil {
			return nil, session.Userf(session.ErrNotFound, "%s is not in the trainer checkout at %s", rel, a.baseName())
		}
		return out, nil
	})
	return bot.ApplyPreview{Changes: pl.changes, Left: pl.left}, err
}

func (a *Applier) baseName() string {
	if a.cfg.Base == "" {
		return "the current branch"
	}
	return "branch " + a.cfg.Base
}

func (a *Applier) checkPreset(p session.Preset) error {
	if err := preset.CheckName(p.Name); err != nil {
		return err
	}
	if err := session.CheckPresetTask(p, a.cfg.Task); err != nil {
		return err
	}
	if err := a.space.CheckConfig(p.Config); err != nil {
		return &session.UserError{Msg: fmt.Sprintf("preset %s does not fit the reward space: %v", p.Name, err), Err: err}
	}
	return nil
}

// planned is what an apply would write: every edited file's new content, the edits that
// change a value, and the preset's values it would leave out.
type planned struct {
	next    map[string][]byte
	changes []bot.ApplyChange
	left    []bot.LeftValue
}

// plan computes every file's new content from read's contents. An edit's pattern must match
// exactly once in the content as the edits before it left it, else its value is left out; so
// is every value p changes from the space's defaults that no edit names. An edit whose value
// the file holds already is not written.
func (a *Applier) plan(p session.Preset, read func(rel string) ([]byte, error)) (planned, error) {
	pl := planned{next: map[string][]byte{}, left: a.uncovered(p)}
	for i, e := range a.cfg.Edits {
		rel := filepath.Clean(e.File)
		cur, ok := pl.next[rel]
		if !ok {
			b, err := read(rel)
			if err != nil {
				return planned{}, err
			}
			cur = b
		}
		kind, _ := kindOf(a.space, e.Name)
		v, ok := lookup(p.Config, kind, e.Name)
		if !ok {
			return planned{}, session.Userf(nil, "preset %s has no value for %s (edits[%d])", p.Name, e.Name, i)
		}
		re, group, err := compile(e)
		if err != nil {
			return planned{}, fmt.Errorf("edits[%d]: %w", i, err)
		}
		ms := re.FindAllSubmatchIndex(cur, -1)
		if len(ms) != 1 || ms[0][2*group] < 0 {
			why := fmt.Sprintf("its edit, edits[%d], matches %d times in %s, not once", i, len(ms), rel)
			if len(ms) == 1 {
				why = fmt.Sprintf("its edit, edits[%d], matches in %s but its value group does not", i, rel)
			}
			pl.left = append(pl.left, bot.LeftValue{Name: e.Name, Value: v, Why: why})
			pl.next[rel] = cur
			continue
		}
		lo, hi := ms[0][2*group], ms[0][2*group+1]
		repl := strings.NewReplacer("{value}", formatValue(v), "{name}", e.Name).Replace(e.Replace)
		pl.next[rel] = cur
		if old := string(cur[lo:hi]); old == repl || holds(old, v) {
			continue // the checkout has this value already: nothing to write or show
		}
		pl.changes = append(pl.changes, bot.ApplyChange{File: rel, Line: 1 + bytes.Count(cur[:lo], []byte("\n")), Name: e.Name, Old: string(cur[lo:hi]), New: repl})
		out := make([]byte, 0, len(cur)-(hi-lo)+len(repl))
		pl.next[rel] = append(append(append(out, cur[:lo]...), repl...), cur[hi:]...)
	}
	return pl, nil
}

// holds reports whether text is a number equal to v (-200 holds -200.0): the checkout has
// the value, whatever the edit's template would add around it.
func holds(text string, v float64) bool {
	f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	return err == nil && f == v
}

// uncovered lists p's values that differ from the space's defaults and that no edit names:
// an apply cannot write them, so the checkout would not hold the preset that was measured.
func (a *Applier) uncovered(p session.Preset) []bot.LeftValue {
	var left []bot.LeftValue
	for _, c := range a.space.Diff(a.space.Defaults(), p.Config) {
		if !slices.ContainsFunc(a.cfg.Edits, func(e Edit) bool { return e.Name == c.Name }) {
			left = append(left, bot.LeftValue{Name: c.Name, Value: c.New, Why: "no edit in apply.edits names it"})
		}
	}
	return left
}

// formatValue writes v as a float literal Python, YAML, JSON and TOML all read back
// exactly: the shortest round-tripping form, with ".0" added to a whole number so a
// weight stays a float in the trainer's source.
func formatValue(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// Apply writes p into the checkout as one commit on a new branch <prefix><preset> from the
// base branch and runs the test command. When anything fails (a dirty tree, a pattern that
// does not match exactly once, a path outside the checkout, the tests) the checkout is
// left exactly as it was: touched files restored, the branch deleted, HEAD on the branch
// it was on, no commit anywhere. The error is nil only when the apply landed.
func (a *Applier) Apply(ctx context.Context, p session.Preset, by session.Actor) (bot.ApplyResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	res := bot.ApplyResult{Preset: p.Name}
	if err := a.checkPreset(p); err != nil {
		return res, err
	}
	if err := preset.CheckApplicable(p, a.FromSim); err != nil {
		return res, err
	}
	if err := preset.CheckConfirmed(p, a.Unconfirmed); err != nil {
		return res, err
	}
	// The base is read once, before the checkout is looked at (prepare reads, never moves it).
	pv, pvErr := a.preview(ctx, p)
	if err := a.checkSomethingToApply(p, pv, pvErr); err != nil {
		return res, err
	}
	top, u, err := a.prepare(ctx, p, &res)
	if err != nil {
		return res, err
	}
	if pvErr != nil {
		return res, pvErr
	}
	if err := a.checkWhole(p, pv.Left); err != nil {
		return res, err // nothing has changed yet
	}
	if reason, cause := a.applyOnBranch(ctx, p, by, top, u, &res); reason != "" {
		return a.revert(ctx, p, by, u, res, reason, cause)
	}
	a.log.Info("preset applied", "preset", p.Name, "branch", u.branch, "commit", res.Commit)
	a.record(ctx, "apply", p, by, res, nil)
	return res, nil
}

// checkSomethingToApply refuses, as ErrNothingToApply, a preset the base already holds
// whole (pv, its preview, or err reading it): checked before the checkout is looked at, so
// that it is said so even where an earlier apply left its branch. Anything else is left to
// the checks after prepare.
func (a *Applier) checkSomethingToApply(p session.Preset, pv bot.ApplyPreview, err error) error {
	if err != nil || len(pv.Changes) > 0 || len(pv.Left) > 0 && !a.Partial {
		return nil // a preset not applied whole is refused after prepare, naming what is left
	}
	return &session.UserError{Msg: fmt.Sprintf("%s already holds every value of preset %s that apply.edits writes: there is nothing to commit", a.baseName(), p.Name), Err: ErrNothingToApply}
}

// prepare checks the checkout (the top of a git work tree, on a branch, with no changes to
// tracked files), names the new branch and its base into res, and keeps every edited
// file's bytes: the undo that puts the checkout back if the apply fails. Nothing has
// changed yet when it returns.
func (a *Applier) prepare(ctx context.Context, p session.Preset, res *bot.ApplyResult) (top string, u *undo, err error) {
	if top, err = a.toplevel(ctx); err != nil {
		return "", nil, err
	}
	orig, err := a.currentBranch(ctx)
	if err != nil {
		return "", nil, err
	}
	if err := a.clean(ctx); err != nil {
		return "", nil, err
	}
	branch, base, baseSHA, err := a.newBranch(ctx, p, orig)
	if err != nil {
		return "", nil, err
	}
	res.Branch, res.Base = branch, base
	files, before, err := a.snapshot(top)
	if err != nil {
		return "", nil, err
	}
	return top, &undo{a: a, orig: orig, branch: branch, base: base, baseSHA: baseSHA, before: before, files: files}, nil
}

// applyOnBranch creates the branch from its base, writes the preset's values into files
// tracked there, commits them and runs the tests, filling in res as it goes. A non-empty
// reason says why it failed, for the person in chat, and the checkout must be reverted;
// cause is the error behind it.
func (a *Applier) applyOnBranch(ctx context.Context, p session.Preset, by session.Actor, top string, u *undo, res *bot.ApplyResult) (reason string, cause error) {
	u.created = true // from here on a branch may exist and must go on failure
	if _, err := a.git.run(ctx, "checkout", "-q", "-b", u.branch, "refs/heads/"+u.base); err != nil {
		return "could not create the branch", err
	}
	for rel := range u.files {
		if _, err := a.git.run(ctx, "ls-files", "--error-unmatch", "--", rel); err != nil {
			return fmt.Sprintf("%s is not a tracked file of branch %s", rel, u.base), err
		}
	}
	pl, err := a.plan(p, func(rel string) ([]byte, error) {
		// A checkout of another base may have replaced the file: resolve it again.
		abs, err := resolveInside(top, rel)
		if err != nil {
			return nil, err
		}
		u.files[rel] = abs
		return os.ReadFile(abs)
	})
	if err != nil {
		return failReason(err), err
	}
	if err := a.checkWhole(p, pl.left); err != nil {
		return failReason(err), err // the base moved since the preview
	}
	res.Changes, res.Left = pl.changes, pl.left
	commit, reason, err := a.commitEdits(ctx, u.files, pl.next, a.message(p, by, pl))
	if reason != "" {
		return reason, err
	}
	res.Commit = commit
	tail, err := runTest(ctx, top, a.cfg.Test, a.cfg.TestTimeout, a.redact)
	res.TestOutputTail = tail
	if err != nil {
		return err.Error(), err
	}
	return "", nil
}

// ErrNothingToApply is Apply's error when the base already holds every value of the
// preset that apply.edits writes: there is nothing to commit, which is not a failure.
var ErrNothingToApply = errors.New("nothing to apply")

// checkWhole refuses, unless the applier is Partial, a preset some of whose values an apply
// would leave out: committed under the preset's name and score, the checkout would hold a
// configuration nobody measured. It names every value left out and why.
func (a *Applier) checkWhole(p session.Preset, left []bot.LeftValue) error {
	if len(left) == 0 || a.Partial {
		return nil
	}
	names := make([]string, len(left))
	for i, l := range left {
		names[i] = l.String()
	}
	return session.Userf(session.ErrConflict, "preset %s cannot be applied whole: %d of its values would not be written, so the commit would not be the preset that was measured: %s; "+
		"add edits for them to apply.edits, or apply the others with `tunebot apply %s --partial --yes` (its commit says which were left out)",
		p.Name, len(left), strings.Join(names, "; "), p.Name)
}

// failReason is what a person is told of a failed edit: a user error's own message, else
// the error's text.
func failReason(err error) string {
	var ue *session.UserError
	if errors.As(err, &ue) {
		return ue.Msg
	}
	return err.Error()
}

// revert undoes a failed apply, records it, and says how it ended.
func (a *Applier) revert(ctx context.Context, p session.Preset, by session.Actor, u *undo, res bot.ApplyResult, reason string, cause error) (bot.ApplyResult, error) {
	res.Commit, res.Reverted, res.Reason = "", true, reason
	problems := u.run(ctx)
	a.record(ctx, "apply", p, by, res, problems)
	if len(problems) > 0 {
		a.log.Error("undoing a failed apply left the checkout changed", "preset", p.Name, "branch", u.branch, "problems", problems)
	}
	return res, revertError(p.Name, a.cfg.Repo, reason, cause, problems)
}

// revertError is a reverted apply's error: the person's to read (a user error) when the
// undo put everything back, else an internal error saying the checkout needs a look.
func revertError(presetName, repo, reason string, cause error, problems []string) error {
	if len(problems) > 0 {
		return fmt.Errorf("apply of preset %s failed (%s) and the undo did not finish, the checkout %s needs a look: %s",
			presetName, reason, repo, strings.Join(problems, "; "))
	}
	return &session.UserError{Msg: fmt.Sprintf("apply of preset %s reverted: %s", presetName, reason), Err: cause}
}

// newBranch names the branch a preset is applied on (freeBranch) and the base it starts
// from (the configured base, or the branch checked out now), and refuses a base that does
// not exist.
func (a *Applier) newBranch(ctx context.Context, p session.Preset, orig string) (branch, base, baseSHA string, err error) {
	base = a.cfg.Base
	if base == "" {
		base = orig
	}
	baseSHA, err = a.git.run(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+base+"^{commit}")
	if err != nil {
		return "", "", "", session.Userf(session.ErrNotFound, "base branch %s does not exist in %s", base, a.cfg.Repo)
	}
	branch, err = a.freeBranch(ctx, p)
	return branch, base, baseSHA, err
}

// maxBranches bounds the branches one preset is applied on, <prefix><preset> and its
// suffixed ones after rollbacks: past it the old ones should be cleared away.
const maxBranches = 20

// freeBranch is the branch p is applied on: <prefix><preset>, or when an apply there was
// rolled back, <prefix><preset>-2 (then -3, …). A rolled-back branch is kept as it is, its
// apply and revert commits being the record of what happened; the new apply starts afresh
// from its base. A branch that holds an apply still standing, or that no recorded apply
// made, refuses the apply and names what clears it.
func (a *Applier) freeBranch(ctx context.Context, p session.Preset) (string, error) {
	name := func(n int) string {
		if n == 1 {
			return a.cfg.BranchPrefix + p.Name
		}
		return fmt.Sprintf("%s%s-%d", a.cfg.BranchPrefix, p.Name, n)
	}
	if a.redact.String(name(1)) != name(1) {
		// git would get it masked (g.raw), as a name no one chose: refuse it first.
		return "", session.Userf(nil, "the branch for preset %s would hold the value of one of tunebot's secrets (in the preset's name or apply.branch_prefix), which would leave for the checkout's history and every remote it is pushed to; rename the preset (tunebot preset export, then import under another name)", a.redact.String(p.Name))
	}
	for n := 1; n <= maxBranches; n++ {
		branch := name(n)
		if _, err := a.git.run(ctx, "check-ref-format", "--branch", branch); err != nil {
			return "", session.Userf(nil, "%s is not a valid git branch name", branch)
		}
		if _, err := a.git.run(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err != nil {
			return branch, nil
		}
		standing, isStanding, applied, err := a.branchHistory(ctx, branch)
		if err != nil {
			return "", err
		}
		if isStanding {
			return "", a.standingErr(ctx, p, standing)
		}
		if !applied {
			return "", session.Userf(session.ErrExists, "branch %s exists but no apply tunebot recorded is on it; to apply preset %s, delete it: git -C %s branch -D %s (from another branch: git keeps the branch it is on)",
				branch, p.Name, a.cfg.Repo, branch)
		}
	}
	return "", session.Userf(session.ErrExists, "preset %s was applied and rolled back on %d branches (%s to %s); delete the old ones (git -C %s branch -D BRANCH) to apply it again",
		p.Name, maxBranches, name(1), name(maxBranches), a.cfg.Repo)
}

// standingErr refuses to apply p while rec, an apply on p's branch, stands there: it
// says how to roll rec back when rec is the newest apply (the one rollback reverts), and
// the git command that deletes its branch.
func (a *Applier) standingErr(ctx context.Context, p session.Preset, rec bot.ApplyRecord) error {
	undo := "delete its branch"
	if last, err := a.LastApply(ctx); err == nil && last.Commit == rec.Commit {
		undo = "roll it back (`tunebot apply rollback --yes`, or `/tune rollback` in chat), then apply again; or delete its branch"
	}
	return session.Userf(session.ErrExists, "preset %s is applied on branch %s (commit %s) and not rolled back; to apply preset %s again, %s: git -C %s branch -D %s (from another branch: git keeps the branch it is on)",
		rec.Preset, rec.Branch, short(rec.Commit), p.Name, undo, a.cfg.Repo, rec.Branch)
}

// snapshot resolves every edited file inside top before anything changes, and keeps its
// bytes as HEAD has them now: that is what an undo must put back.
func (a *Applier) snapshot(top string) (files map[string]string, before map[string]fileCopy, err error) {
	files = map[string]string{} // rel → absolute path inside top
	before = map[string]fileCopy{}
	for _, rel := range a.cfg.editedFiles() {
		abs, err := resolveInside(top, rel)
		if err != nil {
			return nil, nil, err
		}
		files[rel] = abs
		if c, err := readCopy(abs); err == nil {
			before[rel] = c
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("reading %s: %w", rel, err)
		}
	}
	return files, before, nil
}

// commitEdits writes the planned contents, keeping each file's mode, and commits them
// with msg. A non-empty reason says why it failed, for the person in chat; err is the
// cause, nil when the edits change nothing.
func (a *Applier) commitEdits(ctx context.Context, files map[string]string, next map[string][]byte, msg string) (commit, reason string, err error) {
	var rels []string
	for _, rel := range a.cfg.editedFiles() {
		st, err := os.Stat(files[rel])
		if err != nil {
			return "", "could not read " + rel, err
		}
		if err := disk.WriteFile(files[rel], next[rel], st.Mode().Perm()); err != nil {
			return "", "could not write " + rel, err
		}
		rels = append(rels, rel)
	}
	if _, err := a.git.run(ctx, append([]string{"add", "--"}, rels...)...); err != nil {
		return "", "git add failed", err
	}
	if _, err := a.git.run(ctx, "diff", "--cached", "--quiet"); err == nil {
		return "", "the preset's values are already in the checkout: there is nothing to commit", nil
	}
	// The message leaves for the trainer's history through git, which redacts what it quotes.
	if _, err := a.git.run(ctx, "commit", "-q", "-m", msg); err != nil {
		return "", "git commit failed: " + lastLines(err.Error(), 1), err
	}
	commit, err = a.git.run(ctx, "rev-parse", "HEAD")
	if err != nil {
		return "", "could not read the new commit", err
	}
	return commit, "", nil
}

// message is the apply commit's message: what was applied (all of p, or part of it and what
// was left out), where p came from and its scores (the sim's, said so, for a sim preset),
// who applied it, and each change.
func (a *Applier) message(p session.Preset, by session.Actor, pl planned) string {
	var b strings.Builder
	sim := ""
	if p.Trainer == session.TrainerSim {
		sim = preset.SimSubject
	}
	if len(pl.left) > 0 {
		fmt.Fprintf(&b, "tunebot: apply part of preset %s%s\n\n", p.Name, sim)
		are := "are"
		if len(pl.left) == 1 {
			are = "is"
		}
		fmt.Fprintf(&b, "A partial apply: %d of the preset's values %s not in this commit, so the\ncheckout does not hold preset %s and its score below is not this commit's:\n", len(pl.left), are, p.Name)
		for _, l := range pl.left {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		b.WriteString("\n")
	} else {
		fmt.Fprintf(&b, "tunebot: apply preset %s%s\n\n", p.Name, sim)
	}
	if sim != "" {
		fmt.Fprintf(&b, "Preset %s was %s.\nNo robot learned it; it was applied with --from-sim.\n\n", p.Name, preset.SimMade)
	}
	if preset.Imported(p) {
		fmt.Fprintf(&b, "Preset %s was imported from a file (no session, no score).\n", p.Name)
	} else {
		fmt.Fprintf(&b, "Preset %s is the best of tunebot session %s (%s),\nscore %s ± %s against that session's baseline at rung 0.\n",
			p.Name, p.SessionID, p.Trial, session.SignedScore(p.Score), session.Spread(p.ScoreStd))
		if v := p.Versus; v != nil && v.Rung > 0 {
			fmt.Fprintf(&b, "Against the baseline trained as long: %s.\n", v)
		}
		if d := p.Verdict; d != nil {
			fmt.Fprintf(&b, "Its final evaluation: %s.\n", d.Text())
		}
		if p.Unconfirmed() {
			fmt.Fprintf(&b, "Not an improvement anyone has shown (%s); applied knowingly (--unconfirmed).\n", p.Outcome)
		}
		fmt.Fprintf(&b, "Gain over the task's defaults at equal training: %s (built on %s).\n", preset.GainText(p), preset.BuiltOnText(p))
	}
	fmt.Fprintf(&b, "Applied %s.\n\n", appliedBy(by))
	for _, c := range pl.changes {
		fmt.Fprintf(&b, "%s: %s -> %s (%s:%d)\n", c.Name, c.Old, c.New, filepath.ToSlash(c.File), c.Line)
	}
	return b.String()
}

// appliedBy says who applied as the commit message puts it: "at the terminal", "by bob at
// the command line", "by ann (slack)" (session.ActorLabel). A label that is the one of nobody
// on its platform names a place, not a person: a name that starts "the " is still a person.
func appliedBy(by session.Actor) string {
	label := session.ActorLabel(by)
	if label != "" && label == session.ActorLabel(session.Actor{Platform: by.Platform}) {
		return "at " + label
	}
	return "by " + label
}

func (a *Applier) record(ctx context.Context, kind string, p session.Preset, by session.Actor, res bot.ApplyResult, problems []string) {
	detail := map[string]any{
		"preset": p.Name, "branch": res.Branch, "base": res.Base, "commit": res.Commit,
		"reverted": res.Reverted, "reason": res.Reason,
	}
	if len(problems) > 0 {
		detail["undo_problems"] = problems
	}
	if len(res.Left) > 0 {
		left := make([]string, len(res.Left))
		for i, l := range res.Left {
			left[i] = l.Name
		}
		detail["left_out"] = left // a partial apply: the commit is not the whole preset
	}
	e := session.AuditEntry{Time: a.now(), SessionID: p.SessionID, Kind: kind, Actor: by, Detail: detail}
	// The record must be written even when the request's context ended mid-apply.
	if err := a.audit.Append(context.WithoutCancel(ctx), e); err != nil {
		a.log.Error("auditing an apply", "preset", p.Name, "error", err)
	}
}

// toplevel checks that Repo is the top of a git work tree and returns it resolved.
func (a *Applier) toplevel(ctx context.Context) (string, error) {
	want, err := filepath.EvalSymlinks(a.cfg.Repo)
	if err != nil {
		return "", session.Userf(session.ErrNotFound, "the trainer checkout %s does not exist", a.cfg.Repo)
	}
	got, err := a.git.run(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", session.Userf(nil, "%s is not a git checkout", a.cfg.Repo)
	}
	if got, err = filepath.EvalSymlinks(got); err != nil || got != want {
		return "", session.Userf(nil, "%s is not the top directory of its git checkout (that is %s)", a.cfg.Repo, got)
	}
	return want, nil
}

func (a *Applier) currentBranch(ctx context.Context) (string, error) {
	b, err := a.git.run(ctx, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return "", session.Userf(nil, "the trainer checkout %s is not on a branch (detached HEAD); check out a branch first", a.cfg.Repo)
	}
	return b, nil
}

// clean refuses a work tree with changes to tracked files: tunebot never overwrites work.
// Untracked files (logs, outputs) are left alone and do not count.
func (a *Applier) clean(ctx context.Context) error {
	// raw: porcelain lines start with a status column that may be a space.
	out, err := a.git.raw(ctx, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return fmt.Errorf("reading the checkout's status: %w", err)
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil
	}
	var names []string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if len(l) > 3 {
			names = append(names, l[3:])
		}
	}
	if len(names) > 5 {
		names = append(names[:5], fmt.Sprintf("and %d more", len(names)-5))
	}
	return session.Userf(session.ErrConflict, "the trainer checkout %s has uncommitted changes (%s); commit or stash them first",
		a.cfg.Repo, strings.Join(names, ", "))
}

// resolveInside joins rel to top and refuses anything that is not a regular file inside
// top after every symlink is followed.
func resolveInside(top, rel string) (string, error) {
	if err := checkRel(rel); err != nil {
		return "", session.Userf(nil, "edit file %v", err)
	}
	p := filepath.Join(top, rel)
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", session.Userf(session.ErrNotFound, "edit file %s does not exist in the checkout", rel)
		}
		return "", fmt.Errorf("resolving %s: %w", rel, err)
	}
	if r, err := filepath.Rel(top, real); err != nil || !filepath.IsLocal(r) {
		return "", session.Userf(nil, "edit file %s resolves outside the checkout", rel)
	} else if strings.Split(filepath.ToSlash(r), "/")[0] == ".git" {
		return "", session.Userf(nil, "edit file %s resolves inside .git", rel)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", rel, err)
	}
	if !st.Mode().IsRegular() {
		return "", session.Userf(nil, "edit file %s is not a regular file", rel)
	}
	return real, nil
}

type fileCopy struct {
	data []byte
	mode fs.FileMode
}

func readCopy(p string) (fileCopy, error) {
	st, err := os.Stat(p)
	if err != nil {
		return fileCopy{}, err
	}
	b, err := os.ReadFile(p)
	return fileCopy{data: b, mode: st.Mode().Perm()}, err
}

// undo puts the checkout back as Apply found it.
type undo struct {
	a       *Applier
	orig    string
	branch  string
	base    string
	baseSHA string
	created bool
	before  map[string]fileCopy
	files   map[string]string
}

// run undoes, even when ctx has ended (a cancelled apply must still be undone), and
// returns what it could not put back.
func (u *undo) run(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	g := u.a.git
	var probs []string
	if u.created {
		// -f: the tree was clean when Apply began, so the only changes it discards are ours.
		if _, err := g.run(ctx, "checkout", "-q", "-f", u.orig); err != nil {
			probs = append(probs, "returning to branch "+u.orig+": "+err.Error())
		}
	}
	for rel, c := range u.before {
		cur, err := os.ReadFile(u.files[rel])
		if err == nil && bytes.Equal(cur, c.data) {
			continue
		}
		if err := disk.WriteFile(u.files[rel], c.data, c.mode); err != nil {
			probs = append(probs, "restoring "+rel+": "+err.Error())
		}
	}
	if u.created {
		if _, err := g.run(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+u.branch); err == nil {
			if _, err := g.run(ctx, "branch", "-D", u.branch); err != nil {
				probs = append(probs, "deleting branch "+u.branch+": "+err.Error())
			}
		}
	}
	if sha, err := g.run(ctx, "rev-parse", "refs/heads/"+u.base); err != nil || sha != u.baseSHA {
		probs = append(probs, fmt.Sprintf("branch %s moved from %s to %s", u.base, u.baseSHA, sha))
	}
	if cur, err := g.run(ctx, "symbolic-ref", "--quiet", "--short", "HEAD"); err != nil || cur != u.orig {
		probs = append(probs, fmt.Sprintf("HEAD is on %q, not %s", cur, u.orig))
	}
	return probs
}
