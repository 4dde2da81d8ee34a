// Package retention keeps a data directory that tunebot fills for years to a size
// (docs/design.md §7): the curves of old, finished sessions are thinned (LTTB) or dropped
// and their run directories deleted, while their sessions, trials, scores, proposals,
// presets and audit stay, as do the policy and checkpoint of every preset's trial; then the
// data file is compacted, through a checked copy renamed over it. `tunebot prune` runs it,
// and the daemon on a schedule (the retention section of the config).
package retention

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"tunebot/session"
)

// Store is what retention reads and changes; *store.DB implements it.
type Store interface {
	RecentSessions(ctx context.Context, cursor string, limit int) ([]session.Session, string, error)
	UpdateSession(ctx context.Context, id string, fn func(*session.Session) error) (session.Session, error)
	Trials(ctx context.Context, sessionID string) ([]session.Trial, error)
	Presets(ctx context.Context) ([]session.Preset, error)
	Append(ctx context.Context, e session.AuditEntry) error
	// PruneSeries thins a session's curves to points each (0 drops them) and returns their
	// bytes before and after; dryRun only measures.
	PruneSeries(ctx context.Context, sessionID string, points int, dryRun bool) (before, after int64, err error)
	// Compact rewrites the data file without its free space, through a checked copy.
	Compact(ctx context.Context) (before, after int64, err error)
	Size() (int64, error)
	// Free is how much of the data file holds no record.
	Free(ctx context.Context) (int64, error)
}

// Options is one run.
type Options struct {
	OlderThan time.Duration `json:"older_than"` // sessions that ended longer ago than this
	KeepLast  int           `json:"keep_last"`  // the newest KeepLast finished sessions are never touched
	Curves    string        `json:"curves"`     // session.CurvesDownsample, CurvesDrop or CurvesKeep
	Points    int           `json:"points"`     // per curve, for CurvesDownsample
	RunDirs   bool          `json:"run_dirs"`   // delete run directories (preset files kept)
	Compact   bool          `json:"compact"`    // compact the data file afterwards
	DryRun    bool          `json:"dry_run"`    // say what would go; change nothing
}

// Check names what is wrong with o, each value by its flag of `tunebot prune`.
func (o Options) Check() error {
	c := Config{OlderThan: Age(o.OlderThan), KeepLast: o.KeepLast, Curves: o.Curves, Points: o.Points}
	flag := func(key string) string { return "--" + strings.ReplaceAll(key, "_", "-") }
	if probs := c.problems(flag); len(probs) > 0 {
		return &session.InvalidError{What: "prune", Problems: probs}
	}
	return nil
}

// Report is what a run did, or would do with DryRun.
type Report struct {
	Options  Options         `json:"options"`
	Cutoff   time.Time       `json:"cutoff"` // sessions that ended before this were candidates
	Sessions []SessionReport `json:"sessions"`
	// CurvesBefore and CurvesAfter are the bytes the pruned sessions' curves take.
	CurvesBefore int64 `json:"curves_before"`
	CurvesAfter  int64 `json:"curves_after"`
	RunDirBytes  int64 `json:"run_dir_bytes"` // deleted from disk
	// FileBefore and FileAfter are the data file's size on disk before the prune and once it
	// is done; Free is what compaction could give back before it ran.
	FileBefore int64         `json:"file_before"`
	FileAfter  int64         `json:"file_after"`
	Free       int64         `json:"free"`
	Compacted  bool          `json:"compacted"`
	Took       time.Duration `json:"took"`
}

// SessionReport is one session pruned.
type SessionReport struct {
	ID           string        `json:"id"`
	RunName      string        `json:"run_name"`
	State        session.State `json:"state"`
	Ended        time.Time     `json:"ended"`
	CurvesBefore int64         `json:"curves_before"`
	CurvesAfter  int64         `json:"curves_after"`
	RunDirBytes  int64         `json:"run_dir_bytes"`
	// Kept are the files kept because a preset needs them, relative to the sessions
	// directory.
	Kept []string `json:"kept,omitempty"`
}

// Pruner runs retention over a store and the data directory's files, one run at a time.
type Pruner struct {
	Store Store
	// SessionsDir holds the run directories (data_dir/sessions); "" leaves files alone.
	SessionsDir string
	// ReportsDir holds the charts the terminal wrote per session (data_dir/reports).
	ReportsDir string
	Now        func() time.Time // nil: time.Now

	mu sync.Mutex
}

// compactShare is the share of the data file left free above which a run compacts even when
// it pruned nothing now (a previous run's compaction failed, or was off).
const compactShare = 4

// listPage is how many sessions Run reads at a time.
const listPage = 200

// Run prunes the sessions o selects: finished ones that ended before now − OlderThan and
// are not among the newest KeepLast finished ones. A session already pruned as much is passed over.
func (p *Pruner) Run(ctx context.Context, o Options, by session.Actor) (Report, error) {
	if err := o.Check(); err != nil {
		return Report{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	began := time.Now()
	now := began
	if p.Now != nil {
		now = p.Now()
	}
	rep := Report{Options: o, Cutoff: now.Add(-o.OlderThan).UTC()}
	var err error
	if rep.FileBefore, err = p.Store.Size(); err != nil {
		return rep, err
	}
	rep.FileAfter = rep.FileBefore
	picked, shorts, err := p.pick(ctx, o, rep.Cutoff)
	if err != nil {
		return rep, err
	}
	var presets []session.Preset
	if len(picked) > 0 && o.RunDirs {
		if presets, err = p.Store.Presets(ctx); err != nil {
			return rep, fmt.Errorf("listing presets: %w", err)
		}
	}
	for _, s := range picked {
		sr, err := p.prune(ctx, s, o, presets, shorts[session.Short(s.ID)] > 1, by)
		if err != nil {
			return rep, fmt.Errorf("pruning session %s: %w", session.Short(s.ID), err)
		}
		rep.Sessions = append(rep.Sessions, sr)
		rep.CurvesBefore += sr.CurvesBefore
		rep.CurvesAfter += sr.CurvesAfter
		rep.RunDirBytes += sr.RunDirBytes
	}
	if rep.Free, err = p.Store.Free(ctx); err != nil {
		return rep, err
	}
	if o.Compact && !o.DryRun && (rep.CurvesAfter < rep.CurvesBefore || rep.Free > rep.FileBefore/compactShare) {
		if rep.FileBefore, rep.FileAfter, err = p.Store.Compact(ctx); err != nil {
			return rep, err
		}
		rep.Compacted = true
	}
	rep.Took = time.Since(began)
	if !o.DryRun && (len(rep.Sessions) > 0 || rep.Compacted) {
		p.audit(ctx, "", "prune", by, map[string]any{"sessions": len(rep.Sessions), "older_than": Age(o.OlderThan).String(),
			"keep_last": o.KeepLast, "curves": o.Curves, "points": o.Points, "run_dirs": o.RunDirs,
			"curves_before": rep.CurvesBefore, "curves_after": rep.CurvesAfter, "run_dir_bytes": rep.RunDirBytes,
			"file_before": rep.FileBefore, "file_after": rep.FileAfter, "compacted": rep.Compacted})
	}
	// What the file holds on disk now: a write after compaction (the audit line above, the
	// curves when nothing was compacted) grows it, as bbolt grows a file ahead of need.
	if rep.FileAfter, err = p.Store.Size(); err != nil {
		return rep, err
	}
	return rep, nil
}

// pick walks every session newest first and returns those to prune, oldest last, and how
// many sessions share each short id (their chart directories are named by it).
func (p *Pruner) pick(ctx context.Context, o Options, cutoff time.Time) ([]session.Session, map[string]int, error) {
	var picked []session.Session
	shorts := map[string]int{}
	i := 0
	for cursor := ""; ; {
		page, next, err := p.Store.RecentSessions(ctx, cursor, listPage)
		if err != nil {
			return nil, nil, fmt.Errorf("listing sessions: %w", err)
		}
		for _, s := range page {
			shorts[session.Short(s.ID)]++
			// An unfinished session is never pruned, and is not one of the KeepLast kept:
			// they are the newest finished ones (issue 28).
			if s.State.Active() {
				continue
			}
			i++
			if i <= o.KeepLast || !ended(s).Before(cutoff) || done(s.Pruned, o) {
				continue
			}
			picked = append(picked, s)
		}
		if next == "" {
			return picked, shorts, nil
		}
		cursor = next
	}
}

// ended is when a finished session ended; records from before EndedAt was kept fall back
// to their last update.
func ended(s session.Session) time.Time {
	for _, t := range []time.Time{s.EndedAt, s.UpdatedAt} {
		if !t.IsZero() {
			return t
		}
	}
	return s.CreatedAt
}

// done reports whether an earlier run already pruned as much as o asks.
func done(was *session.Pruned, o Options) bool {
	return curvesDone(was, o) && (!o.RunDirs || was != nil && was.RunDirs)
}

func curvesDone(was *session.Pruned, o Options) bool {
	switch o.Curves {
	case session.CurvesKeep:
		return true
	case session.CurvesDrop:
		return was != nil && was.Curves == session.CurvesDrop
	}
	return was != nil && (was.Curves == session.CurvesDrop || was.Curves == session.CurvesDownsample && was.Points <= o.Points)
}

// prune does (or, with DryRun, measures) what o asks of one session.
func (p *Pruner) prune(ctx context.Context, s session.Session, o Options, presets []session.Preset, sharedShort bool, by session.Actor) (SessionReport, error) {
	sr := SessionReport{ID: s.ID, RunName: s.Settings.RunName, State: s.State, Ended: ended(s)}
	mark := session.Pruned{}
	if s.Pruned != nil {
		mark = *s.Pruned
	}
	var err error
	if !curvesDone(s.Pruned, o) {
		points := o.Points
		if o.Curves == session.CurvesDrop {
			points = 0
		}
		if sr.CurvesBefore, sr.CurvesAfter, err = p.Store.PruneSeries(ctx, s.ID, points, o.DryRun); err != nil {
			return sr, err
		}
		mark.Curves, mark.Points = o.Curves, points
	}
	if o.RunDirs && (s.Pruned == nil || !s.Pruned.RunDirs) && p.SessionsDir != "" {
		keep, err := p.presetFiles(ctx, s.ID, presets)
		if err != nil {
			return sr, err
		}
		if sr.RunDirBytes, sr.Kept, err = p.removeRunDirs(s.ID, keep, o.DryRun); err != nil {
			return sr, err
		}
		if !sharedShort {
			n, err := remove(p.ReportsDir, session.Short(s.ID), nil, o.DryRun)
			if err != nil {
				return sr, err
			}
			sr.RunDirBytes += n
		}
		mark.RunDirs = true
	}
	if o.DryRun {
		return sr, nil
	}
	mark.At = time.Now().UTC()
	if p.Now != nil {
		mark.At = p.Now().UTC() // the clock the cutoff was taken from
	}
	_, err = p.Store.UpdateSession(ctx, s.ID, func(x *session.Session) error {
		if x.State.Active() {
			return fmt.Errorf("session %s is %s again: %w", session.Short(x.ID), x.State, session.ErrConflict)
		}
		x.Pruned = &mark
		return nil
	})
	if err != nil {
		return sr, err
	}
	p.audit(ctx, s.ID, "pruned", by, map[string]any{"curves": mark.Curves, "points": mark.Points, "run_dirs": mark.RunDirs,
		"curves_before": sr.CurvesBefore, "curves_after": sr.CurvesAfter, "run_dir_bytes": sr.RunDirBytes, "kept": sr.Kept})
	return sr, nil
}

func (p *Pruner) audit(ctx context.Context, sessionID, kind string, by session.Actor, detail map[string]any) {
	// The prune is done; a lost audit line must not undo or fail it.
	_ = p.Store.Append(ctx, session.AuditEntry{SessionID: sessionID, Kind: kind, Actor: by, Detail: detail})
}

// Session ids are hex (session.newID); anything else never becomes a path.
var sessionIDRE = regexp.MustCompile(`^[0-9a-f]{1,64}$`)

// presetFiles are the files of session id that its presets need, relative to the session
// directory: the policy.onnx `/tune policy` and the page serve, and the checkpoint it came
// from.
func (p *Pruner) presetFiles(ctx context.Context, id string, presets []session.Preset) ([]string, error) {
	var want []session.TrialRef
	for _, pr := range presets {
		if pr.SessionID == id {
			want = append(want, pr.Trial)
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	trials, err := p.Store.Trials(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("listing trials: %w", err)
	}
	var keep []string
	for _, t := range trials {
		if !slices.Contains(want, t.Ref()) {
			continue
		}
		for _, f := range []string{t.Policy, t.Checkpoint} {
			if f != "" && filepath.IsLocal(f) {
				keep = append(keep, filepath.Clean(f))
			}
		}
	}
	return keep, nil
}

// removeRunDirs deletes session id's directory but the files in keep (relative to it),
// and returns the bytes it freed and the kept files that exist, relative to the sessions
// directory.
func (p *Pruner) removeRunDirs(id string, keep []string, dryRun bool) (int64, []string, error) {
	if !sessionIDRE.MatchString(id) {
		return 0, nil, nil // not an id tunebot made: no directory of its own
	}
	dir := filepath.Join(p.SessionsDir, id)
	n, err := remove(p.SessionsDir, id, keep, dryRun)
	if err != nil {
		return n, nil, err
	}
	var kept []string
	for _, k := range keep {
		if _, err := os.Lstat(filepath.Join(dir, k)); err == nil {
			kept = append(kept, filepath.Join(id, k))
		}
	}
	return n, kept, nil
}
