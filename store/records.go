package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"tunebot/session"
)

// CreateSession stores a new session. It fails with session.ErrExists when the id is taken
// and session.ErrBusy when a stored session is still active, both checked in the write
// transaction so two starts at once cannot both succeed.
func (d *DB) CreateSession(ctx context.Context, s session.Session) error {
	if s.ID == "" {
		return fmt.Errorf("creating session: empty id")
	}
	return d.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		if b.Get([]byte(s.ID)) != nil {
			return fmt.Errorf("creating session %s: %w", s.ID, session.ErrExists)
		}
		active, err := activeSessions(tx)
		if err != nil {
			return err
		}
		if len(active) > 0 {
			other := active[0]
			return fmt.Errorf("creating session %s: session %s is still %s: %w",
				s.ID, other.ID, other.State, session.ErrBusy)
		}
		if err := d.putJSON(b, []byte(s.ID), s); err != nil {
			return err
		}
		return sessionWritten(tx, nil, s)
	})
}

// Session returns the session id, or an error wrapping session.ErrNotFound.
func (d *DB) Session(ctx context.Context, id string) (session.Session, error) {
	var s session.Session
	err := d.view(ctx, func(tx *bolt.Tx) error {
		found, err := getJSON(tx.Bucket(bucketSessions), []byte(id), &s)
		if err == nil && !found {
			err = fmt.Errorf("session %s: %w", id, session.ErrNotFound)
		}
		return err
	})
	return s, err
}

// Sessions lists every session, newest first by CreatedAt (ties by id, descending). It reads
// them all, without the indexes (so also from a file an older tunebot wrote), for the daily
// digest, tools and tests; what people look at reads RecentSessions.
func (d *DB) Sessions(ctx context.Context) ([]session.Session, error) {
	var out []session.Session
	err := d.view(ctx, func(tx *bolt.Tx) (err error) {
		out, err = listJSON[session.Session](tx.Bucket(bucketSessions), "session")
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, newestFirst)
	return out, nil
}

// RecentSessions returns at most limit sessions, newest first, after the page that ended at
// cursor ("" for the newest), and the cursor of the next page ("" after the last). It reads
// the index of sessions by creation time, so a page costs the same with ten sessions stored
// or ten thousand.
func (d *DB) RecentSessions(ctx context.Context, cursor string, limit int) ([]session.Session, string, error) {
	if limit <= 0 {
		return nil, "", fmt.Errorf("listing sessions: a page of %d sessions", limit)
	}
	var from []byte
	if cursor != "" {
		var err error
		if from, err = parseCursor(cursor); err != nil {
			return nil, "", err
		}
	}
	var (
		out  []session.Session
		next []byte
	)
	err := d.view(ctx, func(tx *bolt.Tx) (err error) {
		out, next, err = recentSessions(tx, from, limit)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return out, formatCursor(next), nil
}

// ActiveSessions lists the sessions that have not finished, newest first, from their index.
func (d *DB) ActiveSessions(ctx context.Context) ([]session.Session, error) {
	var out []session.Session
	err := d.view(ctx, func(tx *bolt.Tx) (err error) {
		out, err = activeSessions(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SessionCount returns how many sessions are stored, counted on their index's pages
// without reading a session.
func (d *DB) SessionCount(ctx context.Context) (int, error) {
	var n int
	err := d.view(ctx, func(tx *bolt.Tx) error {
		idx := tx.Bucket(bucketByTime)
		if idx == nil {
			return errNoIndex
		}
		n = idx.Stats().KeyN
		return nil
	})
	return n, err
}

// UpdateSession runs fn on the stored session inside one write transaction and returns the
// session as written. An error from fn aborts the transaction and is returned unchanged.
func (d *DB) UpdateSession(ctx context.Context, id string, fn func(*session.Session) error) (session.Session, error) {
	var s session.Session
	err := d.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		found, err := getJSON(b, []byte(id), &s)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("updating session %s: %w", id, session.ErrNotFound)
		}
		was := s
		if err := fn(&s); err != nil {
			return err
		}
		if s.ID != id {
			return fmt.Errorf("updating session %s: id changed to %q: %w", id, s.ID, session.ErrConflict)
		}
		if err := d.putJSON(b, []byte(id), s); err != nil {
			return err
		}
		return sessionWritten(tx, &was, s)
	})
	if err != nil {
		return session.Session{}, err
	}
	return s, nil
}

// PutTrial stores t, replacing the trial with the same session, number and rung. The session
// must exist.
func (d *DB) PutTrial(ctx context.Context, t session.Trial) error {
	if t.SessionID == "" {
		return fmt.Errorf("storing %s: empty session id", t.Ref())
	}
	return d.update(ctx, func(tx *bolt.Tx) error { return d.putTrial(tx, t) })
}

// PutTrialAudited stores t and appends e in one transaction, so a trial's result and its
// audit line exist together or not at all, even when tunebot is killed between the two.
func (d *DB) PutTrialAudited(ctx context.Context, t session.Trial, e session.AuditEntry) error {
	if t.SessionID == "" {
		return fmt.Errorf("storing %s: empty session id", t.Ref())
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	return d.update(ctx, func(tx *bolt.Tx) error {
		if err := d.putTrial(tx, t); err != nil {
			return err
		}
		return d.appendAudit(tx, e)
	})
}

func (d *DB) putTrial(tx *bolt.Tx, t session.Trial) error {
	if tx.Bucket(bucketSessions).Get([]byte(t.SessionID)) == nil {
		return fmt.Errorf("storing %s: session %s: %w", t.Ref(), t.SessionID, session.ErrNotFound)
	}
	b, err := subCreate(tx, bucketTrials, t.SessionID)
	if err != nil {
		return err
	}
	key := trialKey(t.Ref())
	var was session.TrialOutline
	had, err := getJSON(b, key, &was)
	if err != nil {
		return err
	}
	if err := d.putJSON(b, key, t); err != nil {
		return err
	}
	return addTotals(tx, func(tot *session.Totals) {
		if had {
			tot.AddTrial(was, -1)
		}
		tot.AddTrial(t.Outline(), 1)
	})
}

// Trials lists a session's trials by number, then rung; an unknown session has none.
func (d *DB) Trials(ctx context.Context, sessionID string) ([]session.Trial, error) {
	var out []session.Trial
	err := d.view(ctx, func(tx *bolt.Tx) (err error) {
		out, err = listJSON[session.Trial](sub(tx, bucketTrials, sessionID), "trial")
		return err
	})
	return out, err
}

// TrialOutlines lists the outlines of a session's trials by number, then rung, decoding
// only their rung, state and times (session.TrialOutliner).
func (d *DB) TrialOutlines(ctx context.Context, sessionID string) ([]session.TrialOutline, error) {
	var out []session.TrialOutline
	err := d.view(ctx, func(tx *bolt.Tx) (err error) {
		out, err = listJSON[session.TrialOutline](sub(tx, bucketTrials, sessionID), "trial")
		return err
	})
	return out, err
}

// DeleteTrial removes a trial and its metric series.
func (d *DB) DeleteTrial(ctx context.Context, sessionID string, ref session.TrialRef) error {
	return d.update(ctx, func(tx *bolt.Tx) error {
		b := sub(tx, bucketTrials, sessionID)
		key := trialKey(ref)
		var was session.TrialOutline
		had, err := getJSON(b, key, &was)
		if err != nil {
			return err
		}
		if !had {
			return fmt.Errorf("deleting %s of session %s: %w", ref, sessionID, session.ErrNotFound)
		}
		if err := b.Delete(key); err != nil {
			return fmt.Errorf("deleting %s of session %s: %w", ref, sessionID, err)
		}
		if err := addTotals(tx, func(t *session.Totals) { t.AddTrial(was, -1) }); err != nil {
			return err
		}
		if s := sub(tx, bucketSeries, sessionID); s != nil && s.Bucket(key) != nil {
			if err := s.DeleteBucket(key); err != nil {
				return fmt.Errorf("deleting series of %s of session %s: %w", ref, sessionID, err)
			}
		}
		return nil
	})
}

// proposalKey orders a session's proposals by Seq; the id keeps two proposals that share a
// Seq apart.
func proposalKey(p session.Proposal) []byte {
	return append(intKey(p.Seq), p.ID...)
}

// putProposal stores p, moving it when its Seq changed.
func (d *DB) putProposal(tx *bolt.Tx, p session.Proposal) error {
	b, err := subCreate(tx, bucketProposals, p.SessionID)
	if err != nil {
		return err
	}
	idx, err := subCreate(tx, bucketProposalID, p.SessionID)
	if err != nil {
		return err
	}
	key := proposalKey(p)
	if old := idx.Get([]byte(p.ID)); old != nil && !bytes.Equal(old, key) {
		if err := b.Delete(old); err != nil {
			return fmt.Errorf("moving proposal %s: %w", p.ID, err)
		}
	}
	if err := idx.Put([]byte(p.ID), key); err != nil {
		return fmt.Errorf("indexing proposal %s: %w", p.ID, err)
	}
	return d.putJSON(b, key, p)
}

// PutProposal stores p, replacing the proposal with the same session and id. The session
// must exist.
func (d *DB) PutProposal(ctx context.Context, p session.Proposal) error {
	if p.SessionID == "" || p.ID == "" {
		return fmt.Errorf("storing proposal %q of session %q: empty id", p.ID, p.SessionID)
	}
	return d.update(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bucketSessions).Get([]byte(p.SessionID)) == nil {
			return fmt.Errorf("storing proposal %s: session %s: %w", p.ID, p.SessionID, session.ErrNotFound)
		}
		return d.putProposal(tx, p)
	})
}

// Proposals lists a session's proposals by Seq; an unknown session has none.
func (d *DB) Proposals(ctx context.Context, sessionID string) ([]session.Proposal, error) {
	var out []session.Proposal
	err := d.view(ctx, func(tx *bolt.Tx) (err error) {
		out, err = listJSON[session.Proposal](sub(tx, bucketProposals, sessionID), "proposal")
		return err
	})
	return out, err
}

// UpdateProposal runs fn on the stored proposal inside one write transaction, so of two
// people deciding at once the second fn sees the first one's decision. An error from fn
// aborts the transaction and is returned unchanged.
func (d *DB) UpdateProposal(ctx context.Context, sessionID, id string, fn func(*session.Proposal) error) (session.Proposal, error) {
	var p session.Proposal
	err := d.update(ctx, func(tx *bolt.Tx) error {
		idx := sub(tx, bucketProposalID, sessionID)
		var key []byte
		if idx != nil {
			key = idx.Get([]byte(id))
		}
		found := false
		if key != nil {
			var err error
			if found, err = getJSON(sub(tx, bucketProposals, sessionID), key, &p); err != nil {
				return err
			}
		}
		if !found {
			return fmt.Errorf("updating proposal %s of session %s: %w", id, sessionID, session.ErrNotFound)
		}
		if err := fn(&p); err != nil {
			return err
		}
		if p.ID != id || p.SessionID != sessionID {
			return fmt.Errorf("updating proposal %s of session %s: id changed to %s of %s: %w",
				id, sessionID, p.ID, p.SessionID, session.ErrConflict)
		}
		return d.putProposal(tx, p)
	})
	if err != nil {
		return session.Proposal{}, err
	}
	return p, nil
}

// Append stores e with the next sequence number of the log (e.Seq is ignored). A zero Time
// is set to now.
func (d *DB) Append(ctx context.Context, e session.AuditEntry) error {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	return d.update(ctx, func(tx *bolt.Tx) error { return d.appendAudit(tx, e) })
}

func (d *DB) appendAudit(tx *bolt.Tx, e session.AuditEntry) error {
	_, err := d.appendAuditSeq(tx, e)
	return err
}

// appendAuditSeq appends e, its encoding redacted (seal), and returns its sequence number.
func (d *DB) appendAuditSeq(tx *bolt.Tx, e session.AuditEntry) (uint64, error) {
	b := tx.Bucket(bucketAudit)
	seq, err := b.NextSequence()
	if err != nil {
		return 0, fmt.Errorf("appending to the audit log: %w", err)
	}
	e.Seq = seq
	key := u64Key(seq)
	buf, err := json.Marshal(e)
	if err != nil {
		return 0, fmt.Errorf("encoding an audit entry: %w", err)
	}
	if buf, err = d.seal(buf); err != nil {
		return 0, err
	}
	if buf, err = boundJSON(buf); err != nil {
		return 0, err
	}
	if err := b.Put(key, buf); err != nil {
		return 0, err
	}
	if e.Kind == session.AuditKindAdvisorCall {
		if err := addTotals(tx, func(t *session.Totals) { t.AddAudit(e) }); err != nil {
			return 0, err
		}
		if err := addAdvisorTokens(tx, buf); err != nil {
			return 0, err
		}
	}
	if e.SessionID == "" {
		return seq, nil
	}
	idx, err := subCreate(tx, bucketAuditBySes, e.SessionID)
	if err != nil {
		return 0, err
	}
	return seq, idx.Put(key, nil)
}

// boundJSON is an encoded audit entry with every string of its detail cut to
// session.TextLimit (AuditEntry.Bounded): a hostile text of megabytes is stored as a few
// kilobytes that say where they were cut. It runs after redaction, so a cut never splits a
// secret the redactor would have masked whole; an entry that fits is returned as it is.
func boundJSON(buf []byte) ([]byte, error) {
	if len(buf) <= session.TextLimit {
		return buf, nil
	}
	var e session.AuditEntry
	if err := json.Unmarshal(buf, &e); err != nil {
		return nil, fmt.Errorf("bounding an audit entry: %w", err)
	}
	out, err := json.Marshal(e.Bounded())
	if err != nil {
		return nil, fmt.Errorf("bounding an audit entry: %w", err)
	}
	return out, nil
}

// Audit lists the entries of one session, or of all when sessionID is "", oldest first.
func (d *DB) Audit(ctx context.Context, sessionID string) ([]session.AuditEntry, error) {
	var out []session.AuditEntry
	err := d.view(ctx, func(tx *bolt.Tx) error {
		all := tx.Bucket(bucketAudit)
		add := func(k, v []byte) error {
			var e session.AuditEntry
			if err := jsonUnmarshal(v, &e, "audit entry", k); err != nil {
				return err
			}
			out = append(out, e)
			return nil
		}
		if sessionID == "" {
			return all.ForEach(add)
		}
		idx := sub(tx, bucketAuditBySes, sessionID)
		if idx == nil {
			return nil
		}
		return idx.ForEach(func(k, _ []byte) error { return add(k, all.Get(k)) })
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AuditSince lists the entries of all sessions with a sequence number above after, oldest
// first (session.AuditTail).
func (d *DB) AuditSince(ctx context.Context, after uint64) ([]session.AuditEntry, error) {
	var out []session.AuditEntry
	err := d.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAudit).Cursor()
		for k, v := c.Seek(u64Key(after + 1)); k != nil; k, v = c.Next() {
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
	return out, nil
}

// SavePreset stores p. A preset is immutable: saving a taken name fails with
// session.ErrExists.
func (d *DB) SavePreset(ctx context.Context, p session.Preset) error {
	if p.Name == "" {
		return fmt.Errorf("saving preset: empty name")
	}
	return d.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPresets)
		if b.Get(d.name(p.Name)) != nil {
			return fmt.Errorf("saving preset %s: %w", p.Name, session.ErrExists)
		}
		return d.putJSON(b, d.name(p.Name), p)
	})
}

// Preset returns the preset name, or an error wrapping session.ErrNotFound.
func (d *DB) Preset(ctx context.Context, name string) (session.Preset, error) {
	var p session.Preset
	err := d.view(ctx, func(tx *bolt.Tx) error {
		found, err := getJSON(tx.Bucket(bucketPresets), []byte(name), &p)
		if err == nil && !found {
			err = fmt.Errorf("preset %s: %w", name, session.ErrNotFound)
		}
		return err
	})
	return p, err
}

// Presets lists every preset by name.
func (d *DB) Presets(ctx context.Context) ([]session.Preset, error) {
	var out []session.Preset
	err := d.view(ctx, func(tx *bolt.Tx) (err error) {
		out, err = listJSON[session.Preset](tx.Bucket(bucketPresets), "preset")
		return err
	})
	return out, err
}
