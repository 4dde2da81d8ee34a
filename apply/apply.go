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
	"strconv"
	"strings"
	"sync"
	"time"

	"tunebot/bot"
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
// the current commit when no base is configured), without touching the checkout.
func (a *Applier) Diff(ctx context.Context, p session.Preset) ([]bot.ApplyChange, error) {
	if err := a.checkPreset(p); err != nil {
		return nil, err
	}
	ref := "HEAD"
	if a.cfg.Base != "" {
		ref = "refs/heads/" + a.cfg.Base
	}
	if _, err := a.git.run(ctx, "rev-parse", "--verify", "--quiet", ref+"^{commit}"); err != nil {
		return nil, session.Userf(session.ErrNotFound, "base %s does not exist in %s", a.baseName(), a.cfg.Repo)
	}
	_, changes, err := a.plan(p, func(rel string) ([]byte, error) {
		out, err := a.git.raw(ctx, "show", ref+":"+filepath.ToSlash(rel))
		if err != nil {
			return nil, session.Userf(session.ErrNotFound, "%s is not in the trainer checkout at %s", rel, a.baseName())
		}
		return out, nil
	})
	return changes, err
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

// plan computes every file's new content from read's contents. Each edit's pattern must
// match exactly once in the content as the edits before it left it.
func (a *Applier) plan(p session.Preset, read func(rel string) ([]byte, error)) (map[string][]byte, []bot.ApplyChange, error) {
	next := map[string][]byte{}
	var changes []bot.ApplyChange
	for i, e := range a.cfg.Edits {
		rel := filepath.Clean(e.File)
		cur, ok := next[rel]
		if !ok {
			b, err := read(rel)
			if err != nil {
				return nil, nil, err
			}
			cur = b
		}
		kind, _ := kindOf(a.space, e.Name)
		v, ok := lookup(p.Config, kind, e.Name)
		if !ok {
			return nil, nil, session.Userf(nil, "preset %s has no value for %s (edits[%d])", p.Name, e.Name, i)
		}
		re, group, err := compile(e)
		if err != nil {
			return nil, nil, fmt.Errorf("edits[%d]: %w", i, err)
		}
		ms := re.FindAllSubmatchIndex(cur, -1)
		if len(ms) != 1 {
			return nil, nil, session.Userf(nil, "edit %d (%s) in %s: the pattern matches %d times, it must match exactly once", i, e.Name, rel, len(ms))
		}
		lo, hi := ms[0][2*group], ms[0][2*group+1]
		if lo < 0 {
			return nil, nil, session.Userf(nil, "edit %d (%s) in %s: the pattern matched but its value group did not", i, e.Name, rel)
		}
		repl := strings.NewReplacer("{value}", formatValue(v), "{name}", e.Name).Replace(e.Replace)
		changes = append(changes, bot.ApplyChange{File: rel, Line: 1 + bytes.Count(cur[:lo], []byte("\n")), Name: e.Name, Old: string(cur[lo:hi]), New: repl})
		out := make([]byte, 0, len(cur)-(hi-lo)+len(repl))
		out = append(append(append(out, cur[:lo]...), repl...), cur[hi:]...)
		next[rel] = out
	}
	return next, changes, nil
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
	top, u, err := a.prepare(ctx, p, &res)
	if err != nil {
		return res, err
	}
	if reason, cause := a.applyOnBranch(ctx, p, by, top, u, &res); reason != "" {
		return a.revert(ctx, p, by, u, res, reason, cause)
	}
	a.log.Info("preset applied", "preset", p.Name, "branch", u.branch, "commit", res.Commit)
	a.record(ctx, "apply", p, by, res, nil)
	return res, nil
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
	next, changes, err := a.plan(p, func(rel string) ([]byte, error) {
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
	res.Changes = changes
	commit, reason, err := a.commitEdits(ctx, u.files, next, a.message(p, by, changes))
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

// newBranch names the branch a preset is applied on and the base it starts from (the
// configured base, or the branch checked out now), and refuses a base that does not exist,
// a name git would not take, and a branch that exists already.
func (a *Applier) newBranch(ctx context.Context, p session.Preset, orig string) (branch, base, baseSHA string, err error) {
	base = a.cfg.Base
	if base == "" {
		base = orig
	}
	baseSHA, err = a.git.run(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+base+"^{commit}")
	if err != nil {
		return "", "", "", session.Userf(session.ErrNotFound, "base branch %s does not exist in %s", base, a.cfg.Repo)
	}
	branch = a.cfg.BranchPrefix + p.Name
	if _, err := a.git.run(ctx, "check-ref-format", "--branch", branch); err != nil {
		return "", "", "", session.Userf(nil, "%s is not a valid git branch name", branch)
	}
	if _, err := a.git.run(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		return "", "", "", session.Userf(session.ErrExists, "branch %s already exists: preset %s was applied before (roll it back or delete the branch)", branch, p.Name)
	}
	return branch, base, baseSHA, nil
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
		if err := os.WriteFile(files[rel], next[rel], st.Mode().Perm()); err != nil {
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
	if _, err := a.git.run(ctx, "commit", "-q", "-m", msg); err != nil {
		return "", "git commit failed: " + lastLines(err.Error(), 1), err
	}
	commit, err = a.git.run(ctx, "rev-parse", "HEAD")
	if err != nil {
		return "", "could not read the new commit", err
	}
	return commit, "", nil
}

func (a *Applier) message(p session.Preset, by session.Actor, changes []bot.ApplyChange) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tunebot: apply preset %s\n\n", p.Name)
	if preset.Imported(p) {
		fmt.Fprintf(&b, "Preset %s was imported from a file (no session, no score).\n", p.Name)
	} else {
		fmt.Fprintf(&b, "Preset %s is the best of tunebot session %s (%s),\nscore %s ± %s against that session's baseline at rung 0.\n",
			p.Name, p.SessionID, p.Trial, session.SignedScore(p.Score), session.Spread(p.ScoreStd))
		if v := p.Versus; v != nil && v.Rung > 0 {
			fmt.Fprintf(&b, "Against the baseline trained as long: %s.\n", v)
		}
	}
	fmt.Fprintf(&b, "Applied by %s (%s).\n\n", by, by.Platform)
	for _, c := range changes {
		fmt.Fprintf(&b, "%s: %s -> %s (%s:%d)\n", c.Name, c.Old, c.New, filepath.ToSlash(c.File), c.Line)
	}
	return b.String()
}

func (a *Applier) record(ctx context.Context, kind string, p session.Preset, by session.Actor, res bot.ApplyResult, problems []string) {
	detail := map[string]any{
		"preset": p.Name, "branch": res.Branch, "base": res.Base, "commit": res.Commit,
		"reverted": res.Reverted, "reason": res.Reason,
	}
	if len(problems) > 0 {
		detail["undo_problems"] = problems
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
		if err := os.WriteFile(u.files[rel], c.data, c.mode); err != nil {
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
