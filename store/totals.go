package store

import (
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"tunebot/session"
)

// The running totals (schema version 3) are the metrics' sums over everything stored,
// brought up to date in the transaction of every write that changes them: a session
// created or updated (sessionWritten), a trial stored or deleted, an advisor call audited. A
// scrape reads this one record instead of every session's trials.

var keyTotals = []byte("totals")

var _ session.TotalsStore = (*DB)(nil)

// Totals returns the running totals (session.TotalsStore). A file an older tunebot wrote,
// opened read-only, has none stored: they are added up from its records.
func (d *DB) Totals(ctx context.Context) (session.Totals, error) {
	var t session.Totals
	err := d.view(ctx, func(tx *bolt.Tx) error {
		var found bool
		var err error
		if t, found, err = readTotals(tx); err != nil || found {
			return err
		}
		t, err = sumTotals(tx)
		return err
	})
	return t, err
}

func readTotals(tx *bolt.Tx) (t session.Totals, found bool, err error) {
	v := tx.Bucket(bucketMeta).Get(keyTotals)
	if v == nil {
		return t, false, nil
	}
	if err := json.Unmarshal(v, &t); err != nil {
		return t, true, fmt.Errorf("decoding the running totals: %w", err)
	}
	return t, true, nil
}

// sessionWritten brings the indexes (indexSession) and the running totals up to date with
// s, which was was before this write (nil for a new session). The migration that builds the
// indexes calls indexSession alone: the totals are added up once, after it (storeTotals).
func sessionWritten(tx *bolt.Tx, was *session.Session, s session.Session) error {
	if err := indexSession(tx, was, s); err != nil {
		return err
	}
	return addTotals(tx, func(t *session.Totals) {
		if was != nil {
			t.AddSession(*was, -1)
		}
		t.AddSession(s, 1)
	})
}

// addTotals changes the stored totals by fn.
func addTotals(tx *bolt.Tx, fn func(*session.Totals)) error {
	t, _, err := readTotals(tx)
	if err != nil {
		return err
	}
	fn(&t)
	return putCounts(tx.Bucket(bucketMeta), keyTotals, t)
}

// sumTotals adds the totals up from the records: every session, trial and audit entry.
func sumTotals(tx *bolt.Tx) (session.Totals, error) {
	var t session.Totals
	err := tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
		var s session.Session
		if err := jsonUnmarshal(v, &s, "session", k); err != nil {
			return err
		}
		t.AddSession(s, 1)
		return nil
	})
	if err != nil {
		return t, err
	}
	err = tx.Bucket(bucketTrials).ForEach(func(id, _ []byte) error {
		b := tx.Bucket(bucketTrials).Bucket(id)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var o session.TrialOutline
			if err := jsonUnmarshal(v, &o, "trial", k); err != nil {
				return err
			}
			t.AddTrial(o, 1)
			return nil
		})
	})
	if err != nil {
		return t, err
	}
	err = tx.Bucket(bucketAudit).ForEach(func(k, v []byte) error {
		var e session.AuditEntry
		if err := jsonUnmarshal(v, &e, "audit entry", k); err != nil {
			return err
		}
		t.AddAudit(e)
		return nil
	})
	return t, err
}

// storeTotals writes the totals added up from the records: the migration of a file
// written before they existed.
func storeTotals(tx *bolt.Tx) error {
	t, err := sumTotals(tx)
	if err != nil {
		return err
	}
	return putCounts(tx.Bucket(bucketMeta), keyTotals, t)
}
