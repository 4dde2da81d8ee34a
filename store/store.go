// Package store persists tunebot's records in one bbolt file: sessions, trials, proposals,
// the append-only audit log, presets, metric series and the chat outbox.
//
// Records are JSON values so a file stays readable with bbolt's own tools; metric series are
// packed binary because they are by far the largest thing stored. Every method runs in one
// bbolt transaction and copies what it read out of it, so no caller ever holds memory that
// bbolt may unmap.
package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"tunebot/secret"
	"tunebot/session"
)

// SchemaVersion is the layout of the data file this code reads and writes. A file with a
// higher version was written by a newer tunebot and is refused rather than misread.
//
// Version 2 added the session indexes (sessions by creation time, active sessions); a
// version 1 file gets them when it is first opened for writing. Version 3 added the running
// totals the metrics read (totals.go), added up from the records the same way. Version 4
// added each session's advisor tokens (advisor_tokens.go), which the budget check reads,
// counted from the audit the same way.
const SchemaVersion = 4

// Options tunes Open. The zero value is usable.
type Options struct {
	// Timeout bounds the wait for the file lock another process holds (default 1 s).
	Timeout time.Duration
	// MaxOutbox is how many undelivered chat items may wait before Enqueue refuses more
	// (default 10000), so a long chat outage cannot grow the file without bound.
	MaxOutbox int
	// OutboxLease is how long an item returned by Due stays claimed by its sender before
	// Due offers it again (default 2 minutes); Delivered and Retry end the claim earlier.
	OutboxLease time.Duration
	// ReadOnly opens an existing file for reading only (backup, doctor). bbolt then takes a
	// shared lock, which a running daemon's exclusive lock still refuses.
	ReadOnly bool
	// Redact masks secret values (the process's, secret.Process) in everything written to
	// the file: every record's encoding passes through it on its way to bbolt (putJSON,
	// the outbox, series names), whatever field holds the value, so a secret that reached
	// a reason, a log tail, a name or a detail is never in the file's bytes, its backups or
	// what the page reads. nil stores records as they are.
	Redact *secret.Redactor
	// NoSync skips the fsync of every commit: for tests that race thousands of writes,
	// never for a real data file, which a crash could then lose or damage.
	NoSync bool
	// OpenFile opens the data file (nil: os.OpenFile, never waiting on a FIFO and refusing
	// anything but a regular file). The daemon passes one that refuses a link, a FIFO, or a
	// file not its user's alone; Compact one that hands out the descriptor of its copy, so
	// the copy is never reopened by name.
	OpenFile func(name string, flag int, perm os.FileMode) (*os.File, error)
}

// DB is tunebot's store. It is safe for concurrent use.
type DB struct {
	bolt      *bolt.DB
	path      string
	opts      Options // as opened, for the file Compact puts in place
	maxOutbox int
	lease     time.Duration

	// writers orders write transactions with Compact, which must see no write between
	// its copy and the swap; swap guards bolt itself, which Compact replaces.
	writers sync.Mutex
	swap    sync.RWMutex

	// outMu orders outbox calls so that a claim taken by Due and a coalescing Enqueue never
	// interleave: an update must not replace an item a sender is delivering right now.
	outMu  sync.Mutex
	leased map[uint64]time.Time // item id → end of the claim
}

var _ session.Store = (*DB)(nil)

// Bucket names. Nested buckets keep per-session listings to one cursor walk.
var (
	bucketMeta        = []byte("meta")
	bucketSessions    = []byte("sessions")
	bucketByTime      = []byte("sessions_by_time") // created-at + id → nothing: the list views' index
	bucketActive      = []byte("sessions_active")  // id → its key in sessions_by_time
	bucketTrials      = []byte("trials")           // session id → trial key → Trial
	bucketProposals   = []byte("proposals")        // session id → seq+id → Proposal
	bucketProposalID  = []byte("proposal_ids")     // session id → proposal id → key in proposals
	bucketAudit       = []byte("audit")            // seq → AuditEntry
	bucketAuditBySes  = []byte("audit_by_session") // session id → seq → nothing
	bucketAuditCounts = []byte("audit_counts")     // window start + key → seq of the entry that counts it
	bucketAdvTokens   = []byte("advisor_tokens")   // session id → advisor tokens its audited calls used
	bucketPresets     = []byte("presets")
	bucketSeries      = []byte("series")      // session id → trial key → tag → packed points
	bucketOutbox      = []byte("outbox")      // id → item
	bucketOutboxKeys  = []byte("outbox_keys") // platform \x00 key → id
	bucketChatRefs    = []byte("chat_refs")   // platform \x00 key → value
	bucketSchedules   = []byte("schedules")   // id → Schedule

	keySchema      = []byte("schema")
	keyOutboxCount = []byte("outbox_count")
)

var topBuckets = [][]byte{
	bucketMeta, bucketSessions, bucketByTime, bucketActive, bucketTrials, bucketProposals, bucketProposalID, bucketAudit,
	bucketAuditBySes, bucketPresets, bucketSeries, bucketOutbox, bucketOutboxKeys, bucketChatRefs,
	bucketSchedules, bucketAuditCounts, bucketAdvTokens,
}

// Open opens or creates the data file at path, creating its directory when missing, and runs
// bbolt's consistency check on it. It fails with an error wrapping session.ErrLocked when
// another process holds the file, and with a DamagedError when the file is damaged.
func Open(path string, opts Options) (*DB, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.MaxOutbox <= 0 {
		opts.MaxOutbox = 10000
	}
	if opts.OutboxLease <= 0 {
		opts.OutboxLease = 2 * time.Minute
	}
	dir := filepath.Dir(path)
	if !opts.ReadOnly {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating data directory %s: %w", dir, err)
		}
	}
	bdb, file, err := openBolt(path, &bolt.Options{Timeout: opts.Timeout, FreelistType: bolt.FreelistMapType, ReadOnly: opts.ReadOnly}, opts.OpenFile)
	var damaged *DamagedError
	if errors.As(err, &damaged) {
		return nil, err
	}
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("data file %s is in use by another tunebot process (stop it or use another data_dir): %w",
			path, session.ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("opening data file %s: %w", path, err)
	}
	bdb.NoSync = opts.NoSync
	if err := check(bdb, file, path); err != nil {
		bdb.Close()
		return nil, err
	}
	d := &DB{bolt: bdb, path: path, opts: opts, maxOutbox: opts.MaxOutbox, lease: opts.OutboxLease, leased: map[uint64]time.Time{}}
	if opts.ReadOnly {
		err = d.bolt.View(d.checkSchema)
	} else {
		err = d.init()
	}
	if err != nil {
		bdb.Close()
		return nil, err
	}
	return d, nil
}

// schema returns the file's schema version, 0 for a new file.
func schema(tx *bolt.Tx) uint64 {
	if meta := tx.Bucket(bucketMeta); meta != nil {
		if v := meta.Get(keySchema); len(v) == 8 {
			return binary.BigEndian.Uint64(v)
		}
	}
	return 0
}

// checkSchema refuses a file written by a newer tunebot.
func (d *DB) checkSchema(tx *bolt.Tx) error {
	if have := schema(tx); have > SchemaVersion {
		return fmt.Errorf("data file %s has schema version %d but this tunebot knows only up to version %d: use a newer tunebot or another data_dir",
			d.path, have, SchemaVersion)
	}
	return nil
}

// init creates the buckets of a new file and checks the schema of an existing one,
// migrating an older one in the same transaction.
func (d *DB) init() error {
	err := d.bolt.Update(func(tx *bolt.Tx) error {
		if err := d.checkSchema(tx); err != nil {
			return err
		}
		have := schema(tx)
		for _, name := range topBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("creating bucket %s: %w", name, err)
			}
		}
		// Migrations, one step at a time.
		if have < 2 {
			if err := indexSessions(tx); err != nil {
				return fmt.Errorf("migrating to schema version 2: %w", err)
			}
		}
		if have < 3 {
			if err := storeTotals(tx); err != nil {
				return fmt.Errorf("migrating to schema version 3: %w", err)
			}
		}
		if have < 4 {
			if err := countAdvisorTokens(tx); err != nil {
				return fmt.Errorf("migrating to schema version 4: %w", err)
			}
		}
		return tx.Bucket(bucketMeta).Put(keySchema, u64Key(SchemaVersion))
	})
	if err != nil {
		return fmt.Errorf("preparing data file %s: %w", d.path, err)
	}
	return nil
}

// Close closes the data file, releasing its lock; it waits for a compaction to end.
func (d *DB) Close() error {
	d.writers.Lock()
	defer d.writers.Unlock()
	d.swap.Lock()
	defer d.swap.Unlock()
	if err := d.bolt.Close(); err != nil {
		return fmt.Errorf("closing data file %s: %w", d.path, err)
	}
	return nil
}

// Path returns the data file's path.
func (d *DB) Path() string { return d.path }

// view and update refuse work for a cancelled context; bbolt itself cannot be interrupted,
// but every transaction here is short. fn must not call back into d.
func (d *DB) view(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.swap.RLock()
	defer d.swap.RUnlock()
	return d.bolt.View(fn)
}

func (d *DB) update(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.writers.Lock()
	defer d.writers.Unlock()
	d.swap.RLock()
	defer d.swap.RUnlock()
	return d.bolt.Update(fn)
}

// u64Key is a big-endian key, so byte order is numeric order.
func u64Key(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}

// intKey encodes a signed int so that byte order is numeric order, negatives first.
func intKey(n int) []byte { return u64Key(uint64(int64(n)) ^ 1<<63) }

// trialKey orders a session's trials by number, then rung.
func trialKey(ref session.TrialRef) []byte {
	return append(intKey(ref.Number), intKey(ref.Rung)...)
}

// putJSON stores v as JSON under key, its encoding redacted (seal): the store's way out
// for every record that holds a string.
func (d *DB) putJSON(b *bolt.Bucket, key []byte, v any) error {
	buf, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %T: %w", v, err)
	}
	if buf, err = d.seal(buf); err != nil {
		return err
	}
	return b.Put(key, buf)
}

// seal masks the process's secrets in an encoded record on its way to the file, where
// strings leave the store (docs/design.md §4): one place, whatever wrote the record.
func (d *DB) seal(buf []byte) ([]byte, error) {
	return d.opts.Redact.JSON(buf)
}

// name is a key made of a foreign string (a preset's name, a metric's tag), masked as
// seal masks a record: a key is in the file's bytes too.
func (d *DB) name(s string) []byte { return []byte(d.opts.Redact.String(s)) }

// putCounts stores v, which holds numbers only (the running totals), as JSON under key:
// there is no string in it to redact.
func putCounts(b *bolt.Bucket, key []byte, v session.Totals) error {
	buf, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding the totals: %w", err)
	}
	return b.Put(key, buf)
}

// getJSON decodes the value under key into v; found is false when there is none.
func getJSON(b *bolt.Bucket, key []byte, v any) (found bool, err error) {
	if b == nil {
		return false, nil
	}
	buf := b.Get(key)
	if buf == nil {
		return false, nil
	}
	return true, jsonUnmarshal(buf, v, fmt.Sprintf("%T", v), key)
}

// jsonUnmarshal decodes a stored record, naming it when the file holds something unreadable.
func jsonUnmarshal(buf []byte, v any, what string, key []byte) error {
	if err := json.Unmarshal(buf, v); err != nil {
		return fmt.Errorf("decoding stored %s %x: %w", what, key, err)
	}
	return nil
}

// listJSON decodes every value of b (which may be nil) in key order.
func listJSON[T any](b *bolt.Bucket, what string) ([]T, error) {
	if b == nil {
		return nil, nil
	}
	var out []T
	err := b.ForEach(func(k, v []byte) error {
		var x T
		if err := jsonUnmarshal(v, &x, what, k); err != nil {
			return err
		}
		out = append(out, x)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sub returns the nested bucket name of parent, or nil.
func sub(tx *bolt.Tx, parent []byte, name string) *bolt.Bucket {
	p := tx.Bucket(parent)
	if p == nil {
		return nil
	}
	return p.Bucket([]byte(name))
}

// subCreate returns the nested bucket name of parent, creating it when missing.
func subCreate(tx *bolt.Tx, parent []byte, name string) (*bolt.Bucket, error) {
	b, err := tx.Bucket(parent).CreateBucketIfNotExists([]byte(name))
	if err != nil {
		return nil, fmt.Errorf("creating bucket %s/%s: %w", parent, name, err)
	}
	return b, nil
}
