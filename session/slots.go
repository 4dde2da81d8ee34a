package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// A session's worker schedules; its trial jobs run in goroutines of their own, up to the
// engine's parallelism (docs/design.md §1, §4). Everything the scheduler decides is still
// planned from the store: the in-memory part below only says which trials this worker is
// running right now and which GPUs they hold.

// errShutdown is the cause of a worker context ended because tunebot is stopping: remote
// jobs are left to run and re-attached on the next start.
var errShutdown = errors.New("tunebot is shutting down")

// slot is one trial job running in its own goroutine.
type slot struct {
	ref   TrialRef
	gpus  []int  // leased from the session's GPUs (LeaseGPUs); nil otherwise
	phase string // "training", "evaluating", "final evaluation"
}

// jobs is a worker's running trials, guarded by Engine.mu.
type jobs struct {
	running map[TrialRef]*slot
	free    []int // GPUs of the session not leased to a running job (LeaseGPUs)
	wg      sync.WaitGroup
	ended   chan struct{} // a job ended (buffered 1: the scheduler re-reads everything)
	// launched is the jobs started since the current step read its snapshot (beginStep).
	launched map[TrialRef]bool
	err      error // the first error a job returned that is not its trial's failure
	// wakeAt, set by a step, is when the worker plans again though nothing ended: a
	// promotion review's wait (zero: only a job's end or a wake-up).
	wakeAt time.Time
	// sizes are the run directories' sizes measured for the free-space floor (minFree)
	// of trials that ran no job since; launch forgets a trial's as its job starts. Only
	// the worker's goroutine, which steps and launches, reads and writes it.
	sizes map[TrialRef]int64
}

func newJobs(e *Engine, s Session) *jobs {
	j := &jobs{running: map[TrialRef]*slot{}, ended: make(chan struct{}, 1), launched: map[TrialRef]bool{}, sizes: map[TrialRef]int64{}}
	if e.cfg.LeaseGPUs {
		j.free = slices.Clone(s.Settings.GPUs)
	}
	return j
}

// perTrial is how many GPUs each trial job holds.
func (e *Engine) perTrial() int { return max(e.cfg.GPUsPerTrial, 1) }

// parallel is how many trial jobs session s may run at once.
func (e *Engine) parallel(s Session) int {
	p := e.cfg.Parallel
	if e.cfg.LeaseGPUs {
		fit := len(s.Settings.GPUs) / e.perTrial()
		if p <= 0 || p > fit {
			p = fit
		}
	}
	return max(p, 1)
}

// jobGPUs is how many GPUs one job of s holds, for GPU-hour accounting: its own lease
// (s carries it), or what a cluster gives each job, or with one job at a time and nothing
// leased all of the session's GPUs.
func (e *Engine) jobGPUs(s Session) int {
	switch {
	case e.cfg.LeaseGPUs && len(s.Settings.GPUs) > 0:
		return len(s.Settings.GPUs)
	case e.cfg.LeaseGPUs || e.cfg.Parallel > 1 || e.cfg.GPUsPerTrial > 0:
		return e.perTrial()
	}
	return max(len(s.Settings.GPUs), 1)
}

// checkGPUs refuses a session whose GPUs cannot hold one trial job.
func (e *Engine) checkGPUs(st Settings) error {
	if per := e.perTrial(); e.cfg.LeaseGPUs && len(st.GPUs) < per {
		return Userf(ErrConflict, "the session has %d GPU(s) but every trial needs %d (executor.gpus_per_trial): list more in gpus", len(st.GPUs), per)
	}
	return nil
}

// runningRefs returns the refs this worker runs now.
func (e *Engine) runningRefs(j *jobs) map[TrialRef]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return runningLocked(j)
}

// runningLocked is runningRefs with e.mu held.
func runningLocked(j *jobs) map[TrialRef]bool {
	out := make(map[TrialRef]bool, len(j.running))
	for r := range j.running {
		out[r] = true
	}
	return out
}

// busy is how many jobs a step planning from snapshot n counts as running: those that ran
// when n was read, and those the step started since. A job that ended after the snapshot
// still counts, and its slot is free only for the next step, whose snapshot holds its
// result (the worker plans again at once when a job ended): a proposal must see every trial
// that ended before it was asked for, or the search depends on which goroutine ran first.
func (e *Engine) busy(n snapshot, j *jobs) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.busyLocked(n, j)
}

func (e *Engine) busyLocked(n snapshot, j *jobs) int {
	busy := len(n.running)
	for r := range j.launched {
		if !n.running[r] {
			busy++
		}
	}
	return busy
}

// beginStep returns the jobs running now, for a step about to read its snapshot, and
// starts counting the jobs the step launches (busy).
func (e *Engine) beginStep(j *jobs) map[TrialRef]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	clear(j.launched)
	return runningLocked(j)
}

// freeFor is how many more jobs a step planning from snapshot n may start (see busy).
func (e *Engine) freeFor(n snapshot, j *jobs) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	free := e.parallel(n.s) - e.busyLocked(n, j)
	if e.cfg.LeaseGPUs {
		free = min(free, len(j.free)/e.perTrial())
	}
	return max(free, 0)
}

// freeLocked is how many jobs may start now, with e.mu held: the slots parallel leaves, and with leased GPUs
// no more than the free GPUs can hold.
func (e *Engine) freeLocked(s Session, j *jobs) int {
	n := e.parallel(s) - len(j.running)
	if e.cfg.LeaseGPUs {
		n = min(n, len(j.free)/e.perTrial())
	}
	return max(n, 0)
}

// launch starts run for trial ref in a goroutine of its own, with its GPUs leased. It
// returns false when no slot or GPU is free (the caller plans again after a job ends).
func (e *Engine) launch(ctx context.Context, s Session, j *jobs, ref TrialRef, phase string, run func(ctx context.Context, sl *slot) error) bool {
	e.mu.Lock()
	if _, dup := j.running[ref]; dup || e.freeLocked(s, j) == 0 {
		e.mu.Unlock()
		return false
	}
	sl := &slot{ref: ref, phase: phase}
	if e.cfg.LeaseGPUs {
		per := e.perTrial()
		sl.gpus, j.free = slices.Clone(j.free[:per]), j.free[per:]
	}
	j.running[ref] = sl
	j.launched[ref] = true
	delete(j.sizes, ref) // its job writes in its run directory
	j.wg.Add(1)
	e.mu.Unlock()
	go func() {
		defer j.wg.Done()
		err := run(ctx, sl)
		e.mu.Lock()
		delete(j.running, ref)
		if e.cfg.LeaseGPUs {
			j.free = append(j.free, sl.gpus...)
			slices.Sort(j.free)
		}
		if err != nil && ctx.Err() == nil && j.err == nil {
			j.err = fmt.Errorf("trial %d @ rung %d: %w", ref.Number, ref.Rung, err)
		}
		// The job leaves the running set and says so under one lock: a worker that finds
		// nothing running also finds the word that a job ended (afterStep), or it would end
		// with the session active and nobody left to take it further.
		select {
		case j.ended <- struct{}{}:
		default:
		}
		e.mu.Unlock()
		if e.afterJobLeaves != nil {
			e.afterJobLeaves(ref)
		}
		e.bump()
	}()
	return true
}

// setPhase records what a running job does now and updates the session's live state.
func (e *Engine) setPhase(ctx context.Context, id string, j *jobs, sl *slot, phase string) error {
	e.mu.Lock()
	sl.phase = phase
	e.mu.Unlock()
	return e.live(ctx, id, j)
}

// live sets the session running (or evaluating, when every job evaluates) with a message
// naming its running trials.
func (e *Engine) live(ctx context.Context, id string, j *jobs) error {
	e.mu.Lock()
	slots := make([]slot, 0, len(j.running))
	for _, sl := range j.running {
		slots = append(slots, *sl)
	}
	e.mu.Unlock()
	if len(slots) == 0 {
		return nil
	}
	slices.SortFunc(slots, func(a, b slot) int {
		if a.ref.Rung != b.ref.Rung {
			return a.ref.Rung - b.ref.Rung
		}
		return a.ref.Number - b.ref.Number
	})
	state := StateEvaluating
	var parts []string
	for i, sl := range slots {
		if sl.phase == "training" {
			state = StateRunning
		}
		if i == 4 {
			parts = append(parts, fmt.Sprintf("%d more", len(slots)-4))
			break
		}
		parts = append(parts, fmt.Sprintf("trial %d @ rung %d %s", sl.ref.Number, sl.ref.Rung, sl.phase))
	}
	msg := strings.Join(parts, ", ")
	if len(slots) == 1 && slots[0].phase == "training" {
		msg = fmt.Sprintf("trial %d @ rung %d running", slots[0].ref.Number, slots[0].ref.Rung)
	}
	_, err := e.cfg.Store.UpdateSession(ctx, id, func(x *Session) error {
		if !x.State.Active() {
			return Userf(ErrConflict, "session %s is %s", short(id), x.State)
		}
		if x.PauseAsked {
			// The message says the session is pausing, and why: it stays until paused.
			x.State = state
			return nil
		}
		if x.State == state && x.Message == msg && x.Reason == "" {
			return nil
		}
		x.State, x.Message, x.Reason, x.UpdatedAt = state, msg, "", time.Now().UTC()
		return nil
	})
	return err
}

// settle waits for every job of j to return (after its context ended).
func (e *Engine) settle(j *jobs, log *slog.Logger) {
	done := make(chan struct{})
	go func() { j.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		log.Warn("trial jobs are slow to stop; still waiting")
		<-done
	}
}

// jobErr returns the first error a job of j hit that is not a failure of its trial.
func (e *Engine) jobErr(j *jobs) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return j.err
}
