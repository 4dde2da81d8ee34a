package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// DiskUsage is what a filesystem has free (for an unprivileged writer) and in all.
type DiskUsage struct {
	Path        string
	Free, Total int64
}

// Disks measures the filesystems the engine writes to and keeps a small reserve on the
// data disk (docs/design.md §1, "A full disk"): Release frees it so that a pause can still
// be recorded when the disk is full, Restore takes it back once there is room again.
type Disks interface {
	Usage(path string) (DiskUsage, error)
	Release()
	Restore()
}

// ErrDiskFull marks a job or write that failed for lack of disk space.
var ErrDiskFull = errors.New("the data disk is full")

// DiskFullReason is how the reason of a session paused for lack of disk space begins.
const DiskFullReason = "the data disk is full"

// DiskLowReason is how the reason of a session paused below the free-space floor begins,
// when the disk is not full: freeing space is then not the only way on.
const DiskLowReason = "the data disk is below the free-space floor"

// MinFreeFloor is the least free space the default floor asks for (docs/design.md §1).
const MinFreeFloor = 1 << 30

// nearlyFull is the free space below which a filesystem is full whatever the floor: no
// checkpoint and hardly a store page fits, so lowering the floor would not help.
const nearlyFull = 1 << 20

// OutOfSpace reports whether err is a write that failed for lack of space (ENOSPC,
// EDQUOT), or a trainer job whose reason or log says so, or one tunebot put down to the
// disk (ErrDiskFull).
func OutOfSpace(err error) bool {
	return err != nil && (errors.Is(err, ErrDiskFull) || saysFull(err))
}

// saysFull reports whether err itself says a write found no space (ENOSPC, EDQUOT, a job's
// words), rather than tunebot putting a silent failure down to a disk below its floor.
func saysFull(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	var je *JobError
	return errors.As(err, &je) && (SaysOutOfSpace(je.Reason) || SaysOutOfSpace(je.LogTail))
}

// SaysOutOfSpace reports whether a job's words (its log, its exit) say a write failed for
// lack of space: the C library's messages for ENOSPC and EDQUOT, as Python and most
// programs print them, and Go's lower-case ones.
func SaysOutOfSpace(text string) bool {
	t := strings.ToLower(text)
	return strings.Contains(t, "no space left on device") || strings.Contains(t, "disk quota exceeded")
}

// IsDiskFullReason reports whether a session's reason is a pause for lack of disk space:
// a full disk, or one below the free-space floor.
func IsDiskFullReason(reason string) bool {
	return strings.HasPrefix(reason, DiskFullReason) || strings.HasPrefix(reason, DiskLowReason)
}

// diskFullText is the pause reason every surface shows.
func diskFullText(u *DiskUsage) string {
	if u == nil {
		return DiskFullReason + "; free space, then resume"
	}
	return fmt.Sprintf("%s (%s free of %s on %s); free space, then resume", DiskFullReason, Bytes(u.Free), Bytes(u.Total), u.Path)
}

// diskPauseText is the pause reason for filesystem u below floor: full, as diskFullText says
// it, when next to nothing is left (or u is unmeasured, or not below the floor after all);
// else below the floor, with the floor and the ways on that work for a disk with room left.
func diskPauseText(u *DiskUsage, floor int64) string {
	if u == nil || u.Free < nearlyFull || u.Free >= floor {
		return diskFullText(u)
	}
	return fmt.Sprintf("%s (%s, service.min_free): %s free of %s on %s; free space or lower service.min_free, or point data_dir at a larger disk, then resume",
		DiskLowReason, Bytes(floor), Bytes(u.Free), Bytes(u.Total), u.Path)
}

// diskReason is the pause reason for err, a job or write of session id that failed for lack
// of space: full when err says so (ENOSPC, EDQUOT, a job's words); a silent failure was put
// down to a disk below the floor, and is said so (diskPauseText).
func (e *Engine) diskReason(ctx context.Context, id string, err error) string {
	u := e.fullestDisk()
	if u == nil || saysFull(err) {
		return diskFullText(u)
	}
	trials, terr := e.cfg.Store.Trials(ctx, id)
	if terr != nil {
		return diskFullText(u)
	}
	return diskPauseText(u, e.MinFree(trials))
}

// diskPaths are the filesystems checked: data_dir's (the store) and the run directories'.
func (e *Engine) diskPaths() []string {
	if e.cfg.DataDir == "" || e.cfg.DataDir == e.cfg.SessionsDir {
		return []string{e.cfg.SessionsDir}
	}
	return []string{e.cfg.DataDir, e.cfg.SessionsDir}
}

// Floor is the free space below which a session pauses rather than start a job
// (docs/design.md §1): configured (service.min_free) when set, else twice largest, the
// largest run directory so far, and at least MinFreeFloor.
func Floor(largest, configured int64) int64 {
	if configured > 0 {
		return configured
	}
	return max(2*largest, MinFreeFloor)
}

// MinFree is the free space a session with trials needs before a job starts: Floor of its
// largest run directory so far. It walks every run directory of trials.
func (e *Engine) MinFree(trials []Trial) int64 {
	return e.minFree(trials, nil, nil)
}

// minFree is MinFree for a step of worker j, which planned from a snapshot with running
// jobs: a run directory changes only while a job of its trial runs (launch forgets its
// size), so the size of one whose trial runs no job is measured once per worker and kept,
// and a step between two jobs walks only the running trials' directories rather than every
// checkpoint of the session (on a shared filesystem, a stat each). j nil walks every one.
func (e *Engine) minFree(trials []Trial, running map[TrialRef]bool, j *jobs) int64 {
	if e.cfg.MinFree > 0 { // set: no run directory need be measured
		return Floor(0, e.cfg.MinFree)
	}
	var largest int64
	for _, t := range trials {
		if t.RunDir == "" {
			continue
		}
		size, known := int64(0), false
		if j != nil {
			size, known = j.sizes[t.Ref()]
		}
		if !known {
			size = DirSize(filepath.Join(e.SessionDir(t.SessionID), t.RunDir))
			if j != nil && !running[t.Ref()] {
				j.sizes[t.Ref()] = size
			}
		}
		largest = max(largest, size)
	}
	return Floor(largest, 0)
}

// DirSize is the bytes of the regular files under dir (0 when it is missing).
func DirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, ierr := d.Info(); ierr == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// lowDisk returns the checked filesystem with the least free space when it is below the
// floor; nil when every one has room, or nothing measures the disks.
func (e *Engine) lowDisk(floor int64) *DiskUsage {
	u := e.fullestDisk()
	if u == nil || u.Free >= floor {
		return nil
	}
	return u
}

// fullestDisk is the checked filesystem with the least free space (nil when unmeasured).
func (e *Engine) fullestDisk() *DiskUsage {
	if e.cfg.Disks == nil {
		return nil
	}
	var low *DiskUsage
	for _, p := range e.diskPaths() {
		u, err := e.cfg.Disks.Usage(p)
		if err != nil {
			e.log.Warn("measuring free space", "path", p, "err", err)
			continue
		}
		if low == nil || u.Free < low.Free {
			low = &u
		}
	}
	return low
}

// checkDisk pauses the session, before it starts a job, when a checked filesystem has less
// free space than the floor; with jobs running nothing new starts, and the session pauses
// once they end (at the next step). It reports whether no job may start.
func (e *Engine) checkDisk(ctx context.Context, n snapshot, j *jobs) (bool, error) {
	if e.cfg.Disks == nil {
		return false, nil
	}
	floor := e.minFree(n.trials, n.running, j)
	low := e.lowDisk(floor)
	if low == nil {
		e.cfg.Disks.Restore()
		return false, nil
	}
	if len(n.running) > 0 {
		return true, nil
	}
	return true, e.pauseForDisk(ctx, n.s.ID, diskPauseText(low, floor), false)
}

// pauseForDisk pauses session id for lack of space (once its running jobs end, when some
// run), saying reason. When the store itself cannot take the pause, the reserve is released
// and the pause written again.
func (e *Engine) pauseForDisk(ctx context.Context, id, reason string, running bool) error {
	err := e.pauseFor(ctx, id, reason, running)
	if OutOfSpace(err) && e.cfg.Disks != nil {
		e.log.Warn("the store is out of space too; releasing the reserve to record the pause", "session", id)
		e.cfg.Disks.Release()
		err = e.pauseFor(ctx, id, reason, running)
	}
	if err != nil {
		return err
	}
	if !running {
		head := DiskFullReason
		if strings.HasPrefix(reason, DiskLowReason) {
			head = DiskLowReason
		}
		e.markUnfinished(ctx, id, head)
	}
	return nil
}

// trialOutOfSpace ends trial t, whose job failed for lack of space, as interrupted rather
// than failed: it is no failed proposal, and it runs again after the resume. The returned
// error pauses the session.
func (e *Engine) trialOutOfSpace(ctx context.Context, s Session, t Trial, jobErr error) error {
	e.log.Warn("a trial's job ran out of disk space; the session pauses", "session", s.ID, "trial", t.Number, "rung", t.Rung, "err", jobErr)
	return e.interruptForPause(ctx, s, t, jobErr, trialPause{sentinel: ErrDiskFull, reason: e.diskReason(ctx, s.ID, jobErr),
		trialReason: "its job ran out of disk space: it runs again on resume", audit: "trial_out_of_space"})
}

// trialPause is why a trial's job pauses its session: the sentinel the returned error
// wraps, the session's reason, the trial's, and the audit's kind.
type trialPause struct {
	sentinel                   error
	reason, trialReason, audit string
}

// interruptForPause ends trial t, whose job failed for what pauses its session (a full
// disk, an unavailable cluster), as interrupted rather than failed, with its job forgotten.
// A run directory without a finished training run is removed now (a resume discards it
// anyway), which gives the store room to record the pause. The pause is asked before the
// worker hears of it, so that no step in between takes the trial for one to start again;
// the returned error, wrapping p.sentinel, makes the worker pause and say so.
func (e *Engine) interruptForPause(ctx context.Context, s Session, t Trial, jobErr error, p trialPause) error {
	if !t.Trained && t.RunDir != "" {
		// Through the sessions directory's root, as every run directory is made and
		// discarded: a link planted on the way is refused, never followed.
		if err := e.removeDir(filepath.Join(s.ID, t.RunDir)); err != nil {
			e.log.Warn("discarding the run directory of an interrupted trial", "session", s.ID, "trial", t.Number, "err", err)
		}
	}
	if _, err := e.cfg.Store.UpdateSession(ctx, s.ID, func(x *Session) error {
		x.PauseAsked, x.Reason = true, CapText(p.reason, TextLimit)
		return nil
	}); err != nil {
		return fmt.Errorf("%w: asking the pause: %w", p.sentinel, err)
	}
	t.State, t.Reason, t.Proc, t.EndedAt = TrialInterrupted, p.trialReason, nil, time.Time{}
	if err := e.cfg.Store.PutTrial(ctx, t); err != nil {
		return fmt.Errorf("saving trial: %w", err) // out of space too: the pause marks it
	}
	e.audit(ctx, s.ID, p.audit, System, map[string]any{"trial": t.Number, "rung": t.Rung, "error": jobErr.Error()})
	return fmt.Errorf("%w: %w", p.sentinel, jobErr)
}

// jobOutOfSpace reports whether a failed job failed for lack of space: its words say so,
// or a checked filesystem is below the session's floor now (a trainer whose own log could
// not be written says nothing but "exit status 1").
func (e *Engine) jobOutOfSpace(ctx context.Context, id string, err error) bool {
	if OutOfSpace(err) {
		return true
	}
	var je *JobError
	if e.cfg.Disks == nil || !errors.As(err, &je) {
		return false
	}
	trials, terr := e.cfg.Store.Trials(ctx, id)
	if terr != nil {
		return false
	}
	return e.lowDisk(e.MinFree(trials)) != nil
}
