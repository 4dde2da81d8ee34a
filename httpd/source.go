package httpd

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"tunebot/session"
)

// Records is what StoreSource reads: the store's running totals (store.DB keeps them in
// the transaction of each write).
type Records interface {
	session.TotalsStore
}

// Outbox reports the chat outbox's depth (store.DB has it).
type Outbox interface {
	OutboxDepth(ctx context.Context) (int, error)
}

// StoreSource computes a Snapshot from tunebot's store, at most once per TTL (scrapers poll
// every few seconds). A daemon lives for months and a lab runs thousands of sessions, so it
// reads no session at all: the store keeps the sums the metrics need up to date as it
// writes, and a scrape reads them in one go, the first after a start as cheaply as any.
type StoreSource struct {
	rec    Records
	outbox Outbox
	ttl    time.Duration
	now    func() time.Time
	// Disks, when set, measures the filesystems of data_dir and the run directories for
	// each snapshot (a statfs each: no walk).
	Disks func() []session.DiskUsage

	mu   sync.Mutex
	at   time.Time
	last Snapshot
}

// NewStoreSource reads rec and, when not nil, outbox; ttl <= 0 means 10 s.
func NewStoreSource(rec Records, outbox Outbox, ttl time.Duration) *StoreSource {
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	return &StoreSource{rec: rec, outbox: outbox, ttl: ttl, now: time.Now}
}

// Snapshot implements Source.
func (s *StoreSource) Snapshot(ctx context.Context) (Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && s.now().Sub(s.at) < s.ttl {
		return s.last, nil
	}
	snap, err := s.read(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	s.at, s.last = s.now(), snap
	return snap, nil
}

func (s *StoreSource) read(ctx context.Context) (Snapshot, error) {
	snap := Snapshot{
		Sessions: map[session.State]int{}, Trials: map[session.TrialState]int{}, TrialDurations: map[int]Summary{},
		AdvisorCalls: map[string]int{}, AdvisorTokens: map[string]int64{},
	}
	if s.Disks != nil {
		snap.Disks = s.Disks()
	}
	t, err := s.rec.Totals(ctx)
	if err != nil {
		return snap, fmt.Errorf("reading the running totals: %w", err)
	}
	maps.Copy(snap.Sessions, t.Sessions)
	maps.Copy(snap.Trials, t.Trials)
	for rung, d := range t.TrialDurations {
		snap.TrialDurations[rung] = Summary{Count: d.Count, Sum: d.Sum}
	}
	maps.Copy(snap.AdvisorCalls, t.AdvisorCalls)
	maps.Copy(snap.AdvisorTokens, t.AdvisorTokens)
	snap.GPUSeconds = t.GPUSeconds
	if s.outbox != nil {
		if snap.OutboxDepth, err = s.outbox.OutboxDepth(ctx); err != nil {
			return snap, fmt.Errorf("reading the outbox depth: %w", err)
		}
	}
	return snap, nil
}
