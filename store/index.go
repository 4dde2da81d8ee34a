package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"tunebot/session"
)

// The session indexes (schema version 2) keep the list views from reading every session
// a lab has run in a year (docs/design.md §7): sessions_by_time orders them by creation
// time, so a page of the newest is one short cursor walk, and sessions_active holds the
// few that have not finished, for start-up recovery, "busy" checks and /tune status. Both
// are written in the transaction that writes the session.

// timeKey orders sessions by creation time, then id: seconds (sign-flipped, so times before
// 1970 and the zero time sort first), nanoseconds, id.
func timeKey(s session.Session) []byte {
	k := make([]byte, 12, 12+len(s.ID))
	binary.BigEndian.PutUint64(k, uint64(s.CreatedAt.Unix())^1<<63)
	binary.BigEndian.PutUint32(k[8:], uint32(s.CreatedAt.Nanosecond()))
	return append(k, s.ID...)
}

// indexSession brings both indexes up to date with s, which was was before this write (nil
// for a new session); sessionWritten brings the running totals along too.
func indexSession(tx *bolt.Tx, was *session.Session, s session.Session) error {
	byTime, active := tx.Bucket(bucketByTime), tx.Bucket(bucketActive)
	key := timeKey(s)
	if was != nil {
		if old := timeKey(*was); !bytes.Equal(old, key) {
			if err := byTime.Delete(old); err != nil {
				return fmt.Errorf("indexing session %s: %w", s.ID, err)
			}
		}
	}
	if err := byTime.Put(key, nil); err != nil {
		return fmt.Errorf("indexing session %s: %w", s.ID, err)
	}
	var err error
	if s.State.Active() {
		err = active.Put([]byte(s.ID), key)
	} else {
		err = active.Delete([]byte(s.ID))
	}
	if err != nil {
		return fmt.Errorf("indexing session %s: %w", s.ID, err)
	}
	return nil
}

// indexSessions builds both indexes from the sessions themselves: the migration of a
// file written before they existed.
func indexSessions(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketByTime, bucketActive} {
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return fmt.Errorf("rebuilding %s: %w", name, err)
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("rebuilding %s: %w", name, err)
		}
	}
	return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
		var s session.Session
		if err := jsonUnmarshal(v, &s, "session", k); err != nil {
			return err
		}
		return indexSession(tx, nil, s)
	})
}

// errNoIndex is a file opened read-only that an older tunebot wrote: its indexes are built
// the first time it is opened for writing.
var errNoIndex = errors.New("the data file predates the session index: open it once with this tunebot, not read-only, to add it")

// recentSessions reads up to limit sessions newest first, starting below the
// index key from (nil: from the newest). next is the key of the last one returned when
// more follow, else nil.
func recentSessions(tx *bolt.Tx, from []byte, limit int) (out []session.Session, next []byte, err error) {
	idx := tx.Bucket(bucketByTime)
	if idx == nil {
		return nil, nil, errNoIndex
	}
	all := tx.Bucket(bucketSessions)
	c := idx.Cursor()
	var k []byte
	switch {
	case from == nil:
		k, _ = c.Last()
	default:
		// Seek lands on from or the first key above it, or past the end.
		if k, _ = c.Seek(from); k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
	}
	for ; k != nil; k, _ = c.Prev() {
		if len(out) == limit {
			return out, timeKey(out[len(out)-1]), nil // another page follows
		}
		var s session.Session
		found, err := getJSON(all, k[12:], &s)
		if err != nil {
			return nil, nil, err
		}
		if !found {
			return nil, nil, fmt.Errorf("the session index names session %s, which is not stored", k[12:])
		}
		out = append(out, s)
	}
	return out, nil, nil
}

// activeSessions reads the sessions of the active index, newest first.
func activeSessions(tx *bolt.Tx) ([]session.Session, error) {
	idx := tx.Bucket(bucketActive)
	if idx == nil {
		return nil, errNoIndex
	}
	var out []session.Session
	all := tx.Bucket(bucketSessions)
	err := idx.ForEach(func(id, _ []byte) error {
		var s session.Session
		found, err := getJSON(all, id, &s)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("the index of active sessions names session %s, which is not stored", id)
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, newestFirst)
	return out, nil
}

// newestFirst is the index's order: by creation time, then id, both descending.
func newestFirst(a, b session.Session) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

// A cursor is the index key of the last session of a page, in hex: opaque to its users,
// and safe in a URL.
func formatCursor(key []byte) string { return hex.EncodeToString(key) }

func parseCursor(c string) ([]byte, error) {
	key, err := hex.DecodeString(c)
	if err != nil || len(key) <= 12 {
		return nil, session.Userf(nil, "%q is not a page of the session list", clip(c, 40))
	}
	return key, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
