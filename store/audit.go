package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"tunebot/session"
)

var (
	_ session.AuditNewest  = (*DB)(nil)
	_ session.AuditCounter = (*DB)(nil)
)

// AuditNewest returns at most n of the newest entries of one session, or of all when
// sessionID is "", oldest first (session.AuditNewest). It walks the log backwards from its
// end and stops at n, so it decodes n entries however long the log is.
func (d *DB) AuditNewest(ctx context.Context, sessionID string, n int) ([]session.AuditEntry, error) {
	var out []session.AuditEntry
	if n <= 0 {
		return out, nil
	}
	err := d.view(ctx, func(tx *bolt.Tx) error {
		all := tx.Bucket(bucketAudit)
		c := all.Cursor()
		if sessionID != "" {
			idx := sub(tx, bucketAuditBySes, sessionID)
			if idx == nil {
				return nil
			}
			c = idx.Cursor()
		}
		for k, v := c.Last(); k != nil && len(out) < n; k, v = c.Prev() {
			if sessionID != "" {
				v = all.Get(k)
			}
			var e session.AuditEntry
			if err := jsonUnmarshal(v, &e, "audit entry", k); err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

// AppendCounted appends e with a count of 1, or, when an entry of the same key was appended
// in the same window, raises that entry's count instead (session.AuditCounter). The
// audit_counts bucket maps window start and key to the entry's sequence number; windows
// that have ended are dropped in the same transaction, so it holds one window's keys.
func (d *DB) AppendCounted(ctx context.Context, e session.AuditEntry, key string, window time.Duration) error {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	if window <= 0 {
		return fmt.Errorf("appending to the audit log: a count window of %s", window)
	}
	start := u64Key(uint64(e.Time.Truncate(window).UnixNano()))
	ck := append(slices.Clip(start), key...)
	return d.update(ctx, func(tx *bolt.Tx) error {
		counts := tx.Bucket(bucketAuditCounts)
		if err := dropEndedWindows(counts, start); err != nil {
			return err
		}
		if seq := counts.Get(ck); len(seq) == 8 {
			return d.raiseCount(tx.Bucket(bucketAudit), seq)
		}
		detail := make(map[string]any, len(e.Detail)+1)
		for k, v := range e.Detail {
			detail[k] = v
		}
		detail[session.CountKey] = 1
		e.Detail = detail
		seq, err := d.appendAuditSeq(tx, e)
		if err != nil {
			return err
		}
		return counts.Put(ck, u64Key(seq))
	})
}

// dropEndedWindows deletes the keys of windows that started before start.
func dropEndedWindows(counts *bolt.Bucket, start []byte) error {
	var ended [][]byte
	c := counts.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k[:min(8, len(k))], start) < 0; k, _ = c.Next() {
		ended = append(ended, slices.Clone(k))
	}
	for _, k := range ended {
		if err := counts.Delete(k); err != nil {
			return fmt.Errorf("dropping an ended audit count: %w", err)
		}
	}
	return nil
}

// raiseCount adds one to the count of the entry at seq.
func (d *DB) raiseCount(all *bolt.Bucket, seq []byte) error {
	var e session.AuditEntry
	found, err := getJSON(all, seq, &e)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("the audit count names entry %d, which is not stored", binary.BigEndian.Uint64(seq))
	}
	if e.Detail == nil {
		e.Detail = map[string]any{}
	}
	n, _ := e.Detail[session.CountKey].(float64) // a JSON number after the round trip
	e.Detail[session.CountKey] = int64(n) + 1
	return d.putJSON(all, seq, e)
}
