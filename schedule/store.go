package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"tunebot/session"
)

// Store persists schedule entries. tunebot's bbolt store will implement it; until then the
// daemon can use FileStore.
type Store interface {
	// PutSchedule creates or replaces the entry with e.ID.
	PutSchedule(ctx context.Context, e Entry) error
	// Schedules lists every entry, oldest first.
	Schedules(ctx context.Context) ([]Entry, error)
	// DeleteSchedule removes an entry; a missing one is session.ErrNotFound.
	DeleteSchedule(ctx context.Context, id string) error
}

// MemStore keeps entries in memory, for tests and for a daemon that wants none kept.
type MemStore struct {
	mu      sync.Mutex
	entries map[string]Entry
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{entries: map[string]Entry{}} }

// PutSchedule implements Store.
func (m *MemStore) PutSchedule(_ context.Context, e Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries[e.ID] = e
	return nil
}

// Schedules implements Store.
func (m *MemStore) Schedules(context.Context) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Entry, 0, len(m.entries))
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

func sortEntries(es []Entry) {
	sort.Slice(es, func(i, j int) bool {
		if !es[i].CreatedAt.Equal(es[j].CreatedAt) {
			return es[i].CreatedAt.Before(es[j].CreatedAt)
		}
		return es[i].ID < es[j].ID
	})
}

// FileStore keeps entries in one JSON file, replaced atomically (a temporary file in the
// same directory, synced, then renamed), so a crash mid-write leaves the old file whole.
type FileStore struct {
	path string
	mu   sync.Mutex
}

var _ Store = (*FileStore)(nil)

// NewFileStore returns a FileStore at path (e.g. <data_dir>/schedules.json); the file is
// created on the first write.
func NewFileStore(path string) *FileStore { return &FileStore{path: path} }

func (f *FileStore) load() (map[string]Entry, error) {
	out := map[string]Entry{}
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading schedules %s: %w", f.path, err)
	}
	var list []Entry
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("reading schedules %s: %w", f.path, err)
	}
	for _, e := range list {
		out[e.ID] = e
	}
	return out, nil
}

func (f *FileStore) save(m map[string]Entry) error {
	list := make([]Entry, 0, len(m))
	for _, e := range m {
		list = append(list, e)
	}
	sortEntries(list)
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding schedules: %w", err)
	}
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".schedules-*.tmp")
	if err != nil {
		return fmt.Errorf("writing schedules: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing schedules: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing schedules: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing schedules: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("replacing %s: %w", f.path, err)
	}
	return nil
}

// PutSchedule implements Store.
func (f *FileStore) PutSchedule(_ context.Context, e Entry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.load()
	if err != nil {
		return err
	}
	m[e.ID] = e
	return f.save(m)
}

// Schedules implements Store.
func (f *FileStore) Schedules(context.Context) ([]Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.load()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sortEntries(out)
	return out, nil
}

// DeleteSchedule implements Store.
func (f *FileStore) DeleteSchedule(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.load()
	if err != nil {
		return err
	}
	if _, ok := m[id]; !ok {
		return fmt.Errorf("schedule %s: %w", id, session.ErrNotFound)
	}
	delete(m, id)
	return f.save(m)
}
