package session

import (
	"context"
	"time"
)

// AuditNewest is what an AuditLog may also offer: the newest n entries of one session ("" for
// all), read from the end of the log, so a view that shows the last few costs the same
// however long the log has grown.
type AuditNewest interface {
	// AuditNewest returns at most n entries, the newest, oldest first.
	AuditNewest(ctx context.Context, sessionID string, n int) ([]AuditEntry, error)
}

// NewestAudit returns the newest n entries of sessionID ("" for all), oldest first, through
// AuditNewest when log has it.
func NewestAudit(ctx context.Context, log AuditLog, sessionID string, n int) ([]AuditEntry, error) {
	if r, ok := log.(AuditNewest); ok {
		return r.AuditNewest(ctx, sessionID, n)
	}
	all, err := log.Audit(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return all[max(len(all)-n, 0):], nil
}

// CountKey is the detail field of a coalesced audit entry that says how many times the
// event happened in its window.
const CountKey = "count"

// AuditCounter is what an AuditLog may also offer: one entry for every repeat of the same
// event (the same key) within a window, its detail's "count" raised at each repeat, so a
// flood of refusals is one line a minute instead of thousands.
type AuditCounter interface {
	// AppendCounted appends e with count 1 unless an entry of the same key was appended in
	// the same window (e.Time truncated to window); then it raises that entry's count.
	AppendCounted(ctx context.Context, e AuditEntry, key string, window time.Duration) error
}

// AppendCounted appends e coalesced by key and window through AuditCounter when log has it,
// else as an entry of its own with count 1.
func AppendCounted(ctx context.Context, log AuditLog, e AuditEntry, key string, window time.Duration) error {
	if c, ok := log.(AuditCounter); ok {
		return c.AppendCounted(ctx, e, key, window)
	}
	detail := make(map[string]any, len(e.Detail)+1)
	for k, v := range e.Detail {
		detail[k] = v
	}
	detail[CountKey] = 1
	e.Detail = detail
	return log.Append(ctx, e)
}

// AdvisorTokenCounter is what an AuditLog may also offer: the advisor tokens one session's
// audited calls used, kept as they are audited, so the budget check (at every step of the
// loop) reads one number rather than the session's whole audit.
type AdvisorTokenCounter interface {
	AdvisorTokensUsed(ctx context.Context, sessionID string) (int, error)
}

// SessionAdvisorTokens returns AdvisorTokens of sessionID's audit, through
// AdvisorTokenCounter when log has it.
func SessionAdvisorTokens(ctx context.Context, log AuditLog, sessionID string) (int, error) {
	if c, ok := log.(AdvisorTokenCounter); ok {
		return c.AdvisorTokensUsed(ctx, sessionID)
	}
	entries, err := log.Audit(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	return AdvisorTokens(entries), nil
}

// Bounded is e with every string of its detail, in maps and lists too, cut to TextLimit
// (CapText): what the store writes and the page serves of an entry, so a hostile text (an
// advisor's answer of 100,000 problems, issue 44) costs kilobytes however long it was.
// Typed values (a Patch) are kept as they are: their strings are names already checked.
func (e AuditEntry) Bounded() AuditEntry {
	if e.Detail != nil {
		e.Detail = boundValue(e.Detail).(map[string]any)
	}
	return e
}

// boundValue is v with its strings cut to TextLimit; maps and lists are copied, never
// changed in place, as the caller's entry may be shared.
func boundValue(v any) any {
	switch x := v.(type) {
	case string:
		return CapText(x, TextLimit)
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = CapText(s, TextLimit)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = boundValue(y)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, y := range x {
			out[CapText(k, TextLimit)] = boundValue(y)
		}
		return out
	}
	return v
}
