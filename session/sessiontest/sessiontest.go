// Package sessiontest holds test doubles of the session ports that several packages'
// tests share. Like session, it uses the standard library only.
package sessiontest

import (
	"context"
	"sync"

	"tunebot/session"
)

// AuditLog is an in-memory session.AuditLog; the zero value is ready to use.
type AuditLog struct {
	mu      sync.Mutex
	entries []session.AuditEntry
}

var _ session.AuditLog = (*AuditLog)(nil)

// Append implements session.AuditLog: e gets the next sequence number.
func (l *AuditLog) Append(_ context.Context, e session.AuditEntry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.Seq = uint64(len(l.entries) + 1)
	l.entries = append(l.entries, e)
	return nil
}

// Audit implements session.AuditLog.
func (l *AuditLog) Audit(_ context.Context, id string) ([]session.AuditEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []session.AuditEntry
	for _, e := range l.entries {
		if id == "" || e.SessionID == id {
			out = append(out, e)
		}
	}
	return out, nil
}

// Entries returns every entry, oldest first.
func (l *AuditLog) Entries() []session.AuditEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]session.AuditEntry(nil), l.entries...)
}

// Kinds returns the kind of every entry, oldest first.
func (l *AuditLog) Kinds() []string {
	var out []string
	for _, e := range l.Entries() {
		out = append(out, e.Kind)
	}
	return out
}
