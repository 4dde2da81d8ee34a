package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"tunebot/session"
)

var _ session.AdvisorTokenCounter = (*DB)(nil)

// AdvisorTokensUsed returns the advisor tokens the audited calls of one session used
// (session.AdvisorTokenCounter): a number kept as each call is audited, so the budget
// check, which runs at every step of the loop, reads one key rather than the session's
// whole audit. A file written before schema version 4 and opened read-only, which has no
// counts, adds up the session's audit instead.
func (d *DB) AdvisorTokensUsed(ctx context.Context, sessionID string) (int, error) {
	var n int
	err := d.view(ctx, func(tx *bolt.Tx) error {
		counts := tx.Bucket(bucketAdvTokens)
		if counts == nil {
			var err error
			n, err = sumSessionTokens(tx, sessionID)
			return err
		}
		if v := counts.Get([]byte(sessionID)); len(v) == 8 {
			n = int(binary.BigEndian.Uint64(v))
		}
		return nil
	})
	return n, err
}

// addAdvisorTokens adds the tokens of one advisor call, as stored (buf, its encoding), to
// its session's count. The count reads the entry as the audit gives it back, so it equals
// session.AdvisorTokens of the session's audit.
func addAdvisorTokens(tx *bolt.Tx, buf []byte) error {
	var e session.AuditEntry
	if err := json.Unmarshal(buf, &e); err != nil {
		return fmt.Errorf("counting advisor tokens: %w", err)
	}
	return addSessionTokens(tx.Bucket(bucketAdvTokens), e)
}

func addSessionTokens(counts *bolt.Bucket, e session.AuditEntry) error {
	n := session.AdvisorTokens([]session.AuditEntry{e})
	if e.SessionID == "" || n == 0 {
		return nil
	}
	var have uint64
	if v := counts.Get([]byte(e.SessionID)); len(v) == 8 {
		have = binary.BigEndian.Uint64(v)
	}
	if err := counts.Put([]byte(e.SessionID), u64Key(have+uint64(n))); err != nil {
		return fmt.Errorf("counting advisor tokens: %w", err)
	}
	return nil
}

// countAdvisorTokens counts every session's advisor tokens from the whole audit: a file
// written before schema version 4 gets its counts once, when first opened for writing.
func countAdvisorTokens(tx *bolt.Tx) error {
	counts := tx.Bucket(bucketAdvTokens)
	return tx.Bucket(bucketAudit).ForEach(func(k, v []byte) error {
		var e session.AuditEntry
		if err := jsonUnmarshal(v, &e, "audit entry", k); err != nil {
			return err
		}
		if e.Kind != session.AuditKindAdvisorCall {
			return nil
		}
		return addSessionTokens(counts, e)
	})
}

// sumSessionTokens adds up the advisor tokens of one session's audit.
func sumSessionTokens(tx *bolt.Tx, sessionID string) (int, error) {
	idx := sub(tx, bucketAuditBySes, sessionID)
	if idx == nil {
		return 0, nil
	}
	all := tx.Bucket(bucketAudit)
	var entries []session.AuditEntry
	err := idx.ForEach(func(k, _ []byte) error {
		var e session.AuditEntry
		if err := jsonUnmarshal(all.Get(k), &e, "audit entry", k); err != nil {
			return err
		}
		if e.Kind == session.AuditKindAdvisorCall {
			entries = append(entries, e)
		}
		return nil
	})
	return session.AdvisorTokens(entries), err
}
