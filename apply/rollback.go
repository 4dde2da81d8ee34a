package apply

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"tunebot/bot"
	"tunebot/session"
)

// LastApply returns the newest apply that landed and has not been rolled back, from the
// audit log, so /tune rollback needs no argument and survives a restart. The log is read
// from where the last call ended: a daemon's log grows for months.
func (a *Applier) LastApply(ctx context.Context) (bot.ApplyRecord, error) {
	a.hist.mu.Lock()
	defer a.hist.mu.Unlock()
	if err := a.readHistory(ctx); err != nil {
		return bot.ApplyRecord{}, err
	}
	if rec, ok := a.hist.newest(""); ok {
		return rec, nil
	}
	return bot.ApplyRecord{}, session.Userf(session.ErrNotFound, "there is no applied preset to roll back")
}

// branchHistory is what the audit log says of branch: the newest apply on it that landed
// and was not rolled back (standing), and whether any apply landed on it at all.
func (a *Applier) branchHistory(ctx context.Context, branch string) (standing bot.ApplyRecord, isStanding, applied bool, err error) {
	a.hist.mu.Lock()
	defer a.hist.mu.Unlock()
	if err := a.readHistory(ctx); err != nil {
		return bot.ApplyRecord{}, false, false, err
	}
	applied = slices.ContainsFunc(a.hist.applies, func(r bot.ApplyRecord) bool { return r.Branch == branch })
	standing, isStanding = a.hist.newest(branch)
	return standing, isStanding, applied, nil
}

// readHistory folds the audit log's applies and rollbacks after the last read into a.hist,
// whose lock the caller holds.
func (a *Applier) readHistory(ctx context.Context) error {
	h := &a.hist
	entries, err := session.AuditAfter(ctx, a.audit, h.seq)
	if err != nil {
		return fmt.Errorf("reading the audit log: %w", err)
	}
	if h.rolledBack == nil {
		h.rolledBack = map[string]bool{}
	}
	for _, e := range entries {
		h.seq = max(h.seq, e.Seq)
		commit, _ := e.Detail["commit"].(string)
		switch e.Kind {
		case "rollback":
			h.rolledBack[commit] = true
		case "apply":
			if reverted, _ := e.Detail["reverted"].(bool); reverted || commit == "" {
				continue
			}
			str := func(k string) string { s, _ := e.Detail[k].(string); return s }
			h.applies = append(h.applies, bot.ApplyRecord{Seq: e.Seq, At: e.Time, By: e.Actor, Preset: str("preset"), SessionID: e.SessionID,
				Branch: str("branch"), Base: str("base"), Commit: commit})
		}
	}
	return nil
}

// history is the applies and rollbacks of the audit log up to seq, folded.
type history struct {
	mu         sync.Mutex
	seq        uint64
	applies    []bot.ApplyRecord
	rolledBack map[string]bool
}

// newest is the newest apply that landed and was not rolled back, on branch ("" for any).
func (h *history) newest(branch string) (bot.ApplyRecord, bool) {
	for i := len(h.applies) - 1; i >= 0; i-- {
		r := h.applies[i]
		if !h.rolledBack[r.Commit] && (branch == "" || r.Branch == branch) {
			return r, true
		}
	}
	return bot.ApplyRecord{}, false
}

// Rollback undoes rec with `git revert --no-edit` on rec's branch: a new commit, never a
// reset or a force push, so the history keeps both. HEAD returns to the branch it was on.
// The tree must be clean, as for Apply.
func (a *Applier) Rollback(ctx context.Context, rec bot.ApplyRecord, by session.Actor) (bot.RollbackResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	res := bot.RollbackResult{Preset: rec.Preset, Branch: rec.Branch, Commit: rec.Commit}
	if _, err := a.toplevel(ctx); err != nil {
		return res, err
	}
	orig, err := a.currentBranch(ctx)
	if err != nil {
		return res, err
	}
	if err := a.clean(ctx); err != nil {
		return res, err
	}
	if _, err := a.git.run(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+rec.Branch); err != nil {
		return res, session.Userf(session.ErrNotFound, "branch %s of preset %s no longer exists; nothing to roll back", rec.Branch, rec.Preset)
	}
	if _, err := a.git.run(ctx, "merge-base", "--is-ancestor", rec.Commit, "refs/heads/"+rec.Branch); err != nil {
		return res, session.Userf(session.ErrConflict, "commit %s is not on branch %s any more", short(rec.Commit), rec.Branch)
	}
	switched := orig != rec.Branch
	back := func() {
		if !switched {
			return
		}
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, err := a.git.run(bctx, "checkout", "-q", orig); err != nil {
			a.log.Error("returning to the original branch after a rollback", "branch", orig, "error", err)
		}
	}
	if switched {
		if _, err := a.git.run(ctx, "checkout", "-q", rec.Branch); err != nil {
			return res, fmt.Errorf("checking out %s: %w", rec.Branch, err)
		}
	}
	if _, err := a.git.run(ctx, "revert", "--no-edit", rec.Commit); err != nil {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		_, _ = a.git.run(actx, "revert", "--abort")
		cancel()
		back()
		return res, &session.UserError{Msg: fmt.Sprintf("rolling back preset %s: git could not revert %s cleanly on %s (later commits touch the same lines); nothing was changed",
			rec.Preset, short(rec.Commit), rec.Branch), Err: err}
	}
	revert, err := a.git.run(ctx, "rev-parse", "HEAD")
	back()
	if err != nil {
		return res, fmt.Errorf("reading the revert commit: %w", err)
	}
	res.Revert = revert
	e := session.AuditEntry{Time: a.now(), SessionID: rec.SessionID, Kind: "rollback", Actor: by, Detail: map[string]any{
		"preset": rec.Preset, "branch": rec.Branch, "commit": rec.Commit, "revert_commit": revert, "apply_seq": rec.Seq,
	}}
	if err := a.audit.Append(context.WithoutCancel(ctx), e); err != nil {
		return res, fmt.Errorf("rollback of %s done as %s, but recording it failed: %w", short(rec.Commit), short(revert), err)
	}
	a.log.Info("preset rolled back", "preset", rec.Preset, "branch", rec.Branch, "revert", revert)
	return res, nil
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
