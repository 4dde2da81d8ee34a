package schedule

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"tunebot/bot"
	"tunebot/session"
)

// Store persists schedule entries; tunebot's bbolt store (store.DB) implements it, so
// schedules live in the data file with everything else.
type Store interface {
	// PutSchedule creates or replaces the entry with e.ID.
	PutSchedule(ctx context.Context, e bot.ScheduleEntry) error
	// Schedules lists every entry, oldest first.
	Schedules(ctx context.Context) ([]bot.ScheduleEntry, error)
	// DeleteSchedule removes an entry; a missing one is session.ErrNotFound.
	DeleteSchedule(ctx context.Context, id string) error
}

// MemStore keeps entries in memory, for tests and for a daemon that wants none kept.
type MemStore struct {
	mu      sync.Mutex
	entries map[string]bot.ScheduleEntry
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{entries: map[string]bot.ScheduleEntry{}} }

// PutSchedule implements Store.
func (m *MemStore) PutSchedule(_ context.Context, e bot.ScheduleEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries[e.ID] = e
	return nil
}

// Schedules implements Store.
func (m *MemStore) Schedules(context.Context) ([]bot.ScheduleEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]bot.ScheduleEntry, 0, len(m.entries))
	for _, e := range m.entries {
		out = append(out, e)
	}
	sortEntries(out)
	return out, nil
}

// DeleteSchedule implements Store.
func (m *MemStore) DeleteSchedule(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[id]; !ok {
		return fmt.Errorf("schedule %s: %w", id, session.ErrNotFound)
	}
	delete(m.entries, id)
	return nil
}

func sortEntries(es []bot.ScheduleEntry) {
	sort.Slice(es, func(i, j int) bool {
		if !es[i].CreatedAt.Equal(es[j].CreatedAt) {
			return es[i].CreatedAt.Before(es[j].CreatedAt)
		}
		return es[i].ID < es[j].ID
	})
}
