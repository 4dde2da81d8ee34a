// Package schedule starts tuning sessions on cron schedules (the reminder and daily digest
// texts the daemon posts are bot's). A scheduled start that finds the GPU busy skips or
// waits, as its entry says, and says so.
package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"tunebot/bot"
	"tunebot/session"
)

// Starter starts a session from a scheduled entry. It fails with an error wrapping
// session.ErrBusy when another session holds the GPU.
type Starter interface {
	StartScheduled(ctx context.Context, e bot.ScheduleEntry) (sessionID string, err error)
}

// Config is the schedule section of tunebot's configuration.
type Config struct {
	// IfBusy is the policy of entries added without one: "skip" (default) or "wait".
	IfBusy string `yaml:"if_busy"`
	// WaitRetry is how often a waiting start asks again (default 1m).
	WaitRetry time.Duration `yaml:"wait_retry"`
	// WaitMax is how long a waiting start keeps asking before it gives up (default 1h).
	WaitMax time.Duration `yaml:"wait_max"`
	// Timezone of the cron specs, an IANA name (default: the machine's local time).
	Timezone string `yaml:"timezone"`
	// RemindAfter sends a reminder when a decision has waited this long (0: never).
	RemindAfter time.Duration `yaml:"remind_after"`
	// Digest is the cron spec of the daily digest of sessions ("" : none), e.g. "0 9 * * *".
	Digest string `yaml:"digest"`
	// MaxEntries bounds the number of schedules (default 20).
	MaxEntries int `yaml:"max_entries"`
}

// Check validates the configuration, naming every problem.
func (c Config) Check() error {
	var probs []string
	if c.IfBusy != "" && checkIfBusy(c.IfBusy) != nil {
		probs = append(probs, fmt.Sprintf("if_busy %q must be skip or wait%s", c.IfBusy, session.DidYouMean(c.IfBusy, []string{"skip", "wait"})))
	}
	if c.WaitRetry < 0 || c.WaitMax < 0 || c.RemindAfter < 0 {
		probs = append(probs, "wait_retry, wait_max and remind_after may not be negative")
	}
	if c.Timezone != "" {
		if _, err := time.LoadLocation(c.Timezone); err != nil {
			probs = append(probs, fmt.Sprintf("timezone %q is not a known IANA time zone", c.Timezone))
		}
	}
	if c.Digest != "" {
		if _, err := Parse(c.Digest); err != nil {
			probs = append(probs, "digest: "+err.Error())
		}
	}
	if len(probs) > 0 {
		return &session.InvalidError{What: "schedule configuration", Problems: probs}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.IfBusy == "" {
		c.IfBusy = Skip
	}
	if c.WaitRetry <= 0 {
		c.WaitRetry = time.Minute
	}
	if c.WaitMax <= 0 {
		c.WaitMax = time.Hour
	}
	if c.MaxEntries <= 0 {
		c.MaxEntries = 20
	}
	return c
}

// Options are a Scheduler's collaborators.
type Options struct {
	Config  Config
	Store   Store
	Starter Starter
	// Notify posts a line to the channel (enqueue, not deliver). May be nil.
	Notify func(text string)
	// CheckArgs validates start arguments when an entry is added, so a typo is refused now
	// rather than at 3 a.m. May be nil.
	CheckArgs func(args string) error
	Logger    *slog.Logger
}

// MaxArgs bounds the stored start arguments (the command grammar's bound).
const MaxArgs = bot.MaxScheduleArgs

// Scheduler fires entries on their cron specs.
type Scheduler struct {
	cfg    Config
	opts   Options
	log    *slog.Logger
	cron   *cron.Cron
	loc    *time.Location
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	ids     map[string]cron.EntryID
	waiting map[string]context.CancelFunc
	started bool
}

// The chat handler adds, lists and removes schedules through this.
var _ bot.Scheduler = (*Scheduler)(nil)

// New checks the configuration and returns a Scheduler; Start loads the stored entries.
func New(opts Options) (*Scheduler, error) {
	if err := opts.Config.Check(); err != nil {
		return nil, err
	}
	if opts.Store == nil || opts.Starter == nil {
		return nil, errors.New("schedule needs a store and a starter")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Notify == nil {
		opts.Notify = func(string) {}
	}
	cfg := opts.Config.withDefaults()
	loc := time.Local
	if cfg.Timezone != "" {
		loc, _ = time.LoadLocation(cfg.Timezone) // checked above
	}
	return &Scheduler{cfg: cfg, opts: opts, log: opts.Logger, loc: loc,
		ids: map[string]cron.EntryID{}, waiting: map[string]context.CancelFunc{}}, nil
}

// Start loads the stored entries and starts the clock. Its goroutines run until Stop.
func (s *Scheduler) Start(ctx context.Context) error {
	entries, err := s.opts.Store.Schedules(ctx)
	if err != nil {
		return fmt.Errorf("loading schedules: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("scheduler already started")
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.cron = cron.New(cron.WithLocation(s.loc), cron.WithLogger(cronLogger{s.log}),
		cron.WithChain(cron.Recover(cronLogger{s.log})))
	for _, e := range entries {
		sched, err := Parse(e.Spec)
		if err != nil {
			// A stored entry that no longer parses is kept (it can be removed) but never fires.
			s.log.Error("a stored schedule does not parse", "schedule", e.ID, "spec", e.Spec, "error", err)
			continue
		}
		s.ids[e.ID] = s.cron.Schedule(sched, s.job(e.ID))
	}
	s.cron.Start()
	s.started = true
	return nil
}

// Every runs fn on spec (not stored, not listed): the daemon's digest and reminder checks.
// Call it after Start.
func (s *Scheduler) Every(spec string, fn func(ctx context.Context)) error {
	sched, err := Parse(spec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return errors.New("scheduler not started")
	}
	s.cron.Schedule(sched, cron.FuncJob(func() { fn(s.ctx) }))
	return nil
}

// Stop stops the clock, ends waiting starts and waits, up to ctx, for running ones.
func (s *Scheduler) Stop(ctx context.Context) {
	s.mu.Lock()
	if !s.started {
		s.mu.Unlock()
		return
	}
	s.started = false
	s.cancel()
	done := s.cron.Stop()
	s.mu.Unlock()
	select {
	case <-done.Done():
	case <-ctx.Done():
		s.log.Warn("scheduled starts still running at shutdown")
	}
}

// Add validates and stores a new entry and schedules it. ifBusy "" takes the configured
// default. Refusals are *session.UserError naming the problem.
func (s *Scheduler) Add(ctx context.Context, spec, args, ifBusy string, by session.Actor) (bot.ScheduleEntry, error) {
	sched, err := Parse(spec)
	if err != nil {
		return bot.ScheduleEntry{}, err
	}
	if ifBusy == "" {
		ifBusy = s.cfg.IfBusy
	}
	if err := checkIfBusy(ifBusy); err != nil {
		return bot.ScheduleEntry{}, err
	}
	if len(args) > MaxArgs {
		return bot.ScheduleEntry{}, session.Userf(nil, "start arguments are %d characters; at most %d", len(args), MaxArgs)
	}
	if s.opts.CheckArgs != nil {
		if err := s.opts.CheckArgs(args); err != nil {
			return bot.ScheduleEntry{}, err
		}
	}
	existing, err := s.opts.Store.Schedules(ctx)
	if err != nil {
		return bot.ScheduleEntry{}, fmt.Errorf("listing schedules: %w", err)
	}
	if len(existing) >= s.cfg.MaxEntries {
		return bot.ScheduleEntry{}, session.Userf(session.ErrConflict, "there are already %d schedules, the most allowed; remove one first", len(existing))
	}
	e := bot.ScheduleEntry{ID: newID(), Spec: spec, Args: args, IfBusy: ifBusy, CreatedBy: by, CreatedAt: time.Now().UTC()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.opts.Store.PutSchedule(ctx, e); err != nil {
		return bot.ScheduleEntry{}, fmt.Errorf("storing schedule: %w", err)
	}
	if s.started {
		s.ids[e.ID] = s.cron.Schedule(sched, s.job(e.ID))
		e.Next = s.cron.Entry(s.ids[e.ID]).Next
	} else {
		e.Next = sched.Next(time.Now().In(s.loc))
	}
	s.log.Info("schedule added", "schedule", e.ID, "spec", spec, "by", by.ID)
	return e, nil
}

// List returns every entry with its next firing time, oldest first.
func (s *Scheduler) List(ctx context.Context) ([]bot.ScheduleEntry, error) {
	entries, err := s.opts.Store.Schedules(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range entries {
		if id, ok := s.ids[e.ID]; ok && s.started {
			entries[i].Next = s.cron.Entry(id).Next
		} else if sched, err := Parse(e.Spec); err == nil {
			entries[i].Next = sched.Next(time.Now().In(s.loc))
		}
	}
	return entries, nil
}

// Remove deletes an entry; a start of it that is waiting for the GPU gives up.
func (s *Scheduler) Remove(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.opts.Store.DeleteSchedule(ctx, id); err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return session.Userf(session.ErrNotFound, "there is no schedule %q (`schedule list` shows them)", id)
		}
		return fmt.Errorf("removing schedule %s: %w", id, err)
	}
	if cid, ok := s.ids[id]; ok {
		s.cron.Remove(cid)
		delete(s.ids, id)
	}
	if cancel, ok := s.waiting[id]; ok {
		cancel()
	}
	s.log.Info("schedule removed", "schedule", id)
	return nil
}

func (s *Scheduler) job(id string) cron.Job {
	return cron.FuncJob(func() { s.fire(id) })
}

// fire runs one firing of entry id: start, or skip, or wait and retry while busy.
func (s *Scheduler) fire(id string) {
	s.mu.Lock()
	if _, ok := s.ids[id]; !ok || !s.started {
		s.mu.Unlock()
		return
	}
	if _, busy := s.waiting[id]; busy {
		s.mu.Unlock()
		s.finish(id, time.Now(), "skipped: the previous run is still waiting for the GPU", "")
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.waiting[id] = cancel
	s.mu.Unlock()
	defer func() {
		cancel()
		s.mu.Lock()
		delete(s.waiting, id)
		s.mu.Unlock()
	}()

	e, ok := s.entry(ctx, id)
	if !ok {
		return
	}
	s.startOrWait(ctx, id, e)
}

// startOrWait starts a scheduled session; when the GPU is busy it skips, or (if_busy: wait)
// tries again every wait_retry until wait_max has passed, saying so once in the channel.
func (s *Scheduler) startOrWait(ctx context.Context, id string, e bot.ScheduleEntry) {
	ran := time.Now()
	deadline := ran.Add(s.cfg.WaitMax)
	name := fmt.Sprintf("scheduled start %s (%s)", e.ID, e.Spec)
	for attempt := 1; ; attempt++ {
		sid, err := s.opts.Starter.StartScheduled(ctx, e)
		switch {
		case err == nil:
			s.finish(id, ran, "started session "+sid, fmt.Sprintf("%s: started session %s", name, sid))
			return
		case !errors.Is(err, session.ErrBusy):
			s.failed(id, ran, name, err)
			return
		case e.IfBusy != Wait:
			s.finish(id, ran, "skipped: busy", name+" skipped: "+busyWhy(err))
			return
		}
		if attempt == 1 {
			s.opts.Notify(fmt.Sprintf("%s is waiting: %s; trying every %s for up to %s",
				name, busyWhy(err), fmtWait(s.cfg.WaitRetry), fmtWait(s.cfg.WaitMax)))
		}
		if time.Now().Add(s.cfg.WaitRetry).After(deadline) {
			s.finish(id, ran, "skipped: still busy after "+fmtWait(s.cfg.WaitMax),
				fmt.Sprintf("%s skipped: the GPU was still busy after %s", name, fmtWait(s.cfg.WaitMax)))
			return
		}
		if !bot.Sleep(ctx, s.cfg.WaitRetry) {
			s.finish(id, ran, "cancelled while waiting for the GPU", "")
			return
		}
	}
}

// failed records a scheduled start that failed for another reason than a busy GPU: the
// channel gets the person-facing message, the log the whole error.
func (s *Scheduler) failed(id string, ran time.Time, name string, err error) {
	msg := "internal error (see the log)"
	var ue *session.UserError
	if errors.As(err, &ue) {
		msg = ue.Msg
	}
	s.log.Error("scheduled start failed", "schedule", id, "error", err)
	s.finish(id, ran, "failed: "+msg, fmt.Sprintf("%s failed: %s", name, msg))
}

// busyWhy says what kept a scheduled start from starting.
func busyWhy(err error) string {
	if errors.Is(err, session.ErrCheckoutBusy) {
		return "a preset is being applied to the trainer checkout"
	}
	return "another session is using the GPU"
}

func (s *Scheduler) entry(ctx context.Context, id string) (bot.ScheduleEntry, bool) {
	entries, err := s.opts.Store.Schedules(ctx)
	if err != nil {
		s.log.Error("loading a schedule to fire", "schedule", id, "error", err)
		return bot.ScheduleEntry{}, false
	}
	for _, e := range entries {
		if e.ID == id {
			return e, true
		}
	}
	return bot.ScheduleEntry{}, false
}

// finish records a firing's result on the entry (unless it was removed meanwhile) and
// tells the channel.
func (s *Scheduler) finish(id string, ran time.Time, result, text string) {
	if text != "" {
		s.opts.Notify(text)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; !ok {
		return // removed: storing would bring it back
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 10*time.Second)
	defer cancel()
	e, ok := s.entry(ctx, id)
	if !ok {
		return
	}
	e.LastRun, e.LastResult = ran.UTC(), result
	if err := s.opts.Store.PutSchedule(ctx, e); err != nil {
		s.log.Error("recording a scheduled start", "schedule", id, "error", err)
	}
}

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// cronLogger sends cron's own messages (a recovered panic) to slog.
type cronLogger struct{ log *slog.Logger }

func (l cronLogger) Info(msg string, kv ...any) { l.log.Debug("cron: "+msg, kv...) }
func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error("cron: "+msg, append(kv, "error", err)...)
}
