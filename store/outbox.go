package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"tunebot/bot"
	"tunebot/session"
)

// The outbox is bot's queue; the store keeps it.
var (
	_ bot.Outbox = (*DB)(nil)
	_ bot.Queue  = (*DB)(nil)
)

// outboxHeader is the stored form of an item without its body, which follows it raw so an
// uploaded PNG is not inflated by base64.
type outboxHeader struct {
	Platform  string    `json:"platform"`
	Thread    string    `json:"thread"`
	Key       string    `json:"key,omitempty"`
	Kind      string    `json:"kind"`
	Attempts  int       `json:"attempts,omitempty"`
	NotBefore time.Time `json:"not_before,omitzero"`
	Expires   time.Time `json:"expires,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	LastError string    `json:"last_error,omitempty"`
}

// encodeOutbox encodes an item, header and body redacted as every record is (seal): a
// body that is no JSON is opaque text to the store, masked as text.
func (d *DB) encodeOutbox(it bot.OutboxItem) ([]byte, error) {
	h, err := json.Marshal(outboxHeader{
		Platform: it.Platform, Thread: it.Thread, Key: it.Key, Kind: it.Kind, Attempts: it.Attempts,
		NotBefore: it.NotBefore, Expires: it.Expires, CreatedAt: it.CreatedAt, LastError: it.LastError,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding outbox item: %w", err)
	}
	if h, err = d.seal(h); err != nil {
		return nil, err
	}
	if it.Body, err = d.sealBody(it.Body); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, binary.MaxVarintLen64+len(h)+len(it.Body))
	buf = binary.AppendUvarint(buf, uint64(len(h)))
	buf = append(buf, h...)
	return append(buf, it.Body...), nil
}

// sealBody is an outbox body redacted as seal redacts a record, or as text when it is no
// JSON (opaque to the store). Whether it is JSON is asked only once a secret was found, so a
// body without one, every card but a leak, costs one pass of the redactor and no parse.
func (d *DB) sealBody(body []byte) ([]byte, error) {
	masked := d.opts.Redact.String(string(body))
	if masked == string(body) {
		return body, nil
	}
	if json.Valid(body) {
		return d.seal(body)
	}
	return []byte(masked), nil
}

// decodeOutbox decodes a stored item; the body is copied out only when withBody is set.
func decodeOutbox(key, buf []byte, withBody bool) (bot.OutboxItem, error) {
	n, w := binary.Uvarint(buf)
	if w <= 0 || n > uint64(len(buf)-w) {
		return bot.OutboxItem{}, fmt.Errorf("decoding stored outbox item %x: corrupt record", key)
	}
	var h outboxHeader
	if err := jsonUnmarshal(buf[w:w+int(n)], &h, "outbox item", key); err != nil {
		return bot.OutboxItem{}, err
	}
	it := bot.OutboxItem{
		ID: binary.BigEndian.Uint64(key), Platform: h.Platform, Thread: h.Thread, Key: h.Key, Kind: h.Kind,
		Attempts: h.Attempts, NotBefore: h.NotBefore, Expires: h.Expires, CreatedAt: h.CreatedAt, LastError: h.LastError,
	}
	if withBody {
		it.Body = append([]byte(nil), buf[w+int(n):]...)
	}
	return it, nil
}

func expired(it bot.OutboxItem, now time.Time) bool {
	return !it.Expires.IsZero() && !now.Before(it.Expires)
}

func outboxKeyIndex(platform, key string) []byte {
	return []byte(platform + "\x00" + key)
}

func outboxCount(tx *bolt.Tx) int {
	v := tx.Bucket(bucketMeta).Get(keyOutboxCount)
	if len(v) != 8 {
		return 0
	}
	return int(binary.BigEndian.Uint64(v))
}

func addOutboxCount(tx *bolt.Tx, delta int) error {
	return tx.Bucket(bucketMeta).Put(keyOutboxCount, u64Key(uint64(max(0, outboxCount(tx)+delta))))
}

// Enqueue stores item and returns it with its ID. When item.Key is set and an undelivered item
// with the same Platform and Key waits, that item is replaced in place: it keeps its ID (its
// place in the thread's order), CreatedAt, Attempts and LastError, and the later of the two
// NotBefore times, so updates to one card coalesce without resetting its backoff. An item a
// sender has claimed through Due is never replaced, since the sender could then report the
// new content delivered; the update is queued behind it instead.
//
// When MaxOutbox items wait, a new item is refused with an error wrapping session.ErrBusy;
// the caller logs it and carries on.
func (d *DB) Enqueue(ctx context.Context, item bot.OutboxItem) (bot.OutboxItem, error) {
	if item.Platform == "" {
		return bot.OutboxItem{}, fmt.Errorf("queueing a chat delivery: empty platform")
	}
	if item.CreatedAt.IsZero() {
		item.CreatedAt = time.Now().UTC()
	}
	d.outMu.Lock()
	defer d.outMu.Unlock()
	err := d.update(ctx, func(tx *bolt.Tx) error {
		if replaced, err := d.replaceQueued(tx, &item); replaced || err != nil {
			return err
		}
		return d.appendQueued(tx, &item)
	})
	if err != nil {
		return bot.OutboxItem{}, err
	}
	return item, nil
}

// replaceQueued replaces the undelivered item of the same key in place (a newer version of
// the same card), keeping its place, its attempts and the later of the two retry times; an
// item a sender has leased is not replaced, so its delivery cannot be lost mid-flight.
func (d *DB) replaceQueued(tx *bolt.Tx, item *bot.OutboxItem) (bool, error) {
	if item.Key == "" {
		return false, nil
	}
	b := tx.Bucket(bucketOutbox)
	id := tx.Bucket(bucketOutboxKeys).Get(outboxKeyIndex(item.Platform, item.Key))
	if id == nil {
		return false, nil
	}
	_, claimed := d.leased[binary.BigEndian.Uint64(id)]
	v := b.Get(id)
	if v == nil || claimed {
		return false, nil
	}
	old, err := decodeOutbox(id, v, false)
	if err != nil {
		return false, err
	}
	item.ID, item.CreatedAt = old.ID, old.CreatedAt
	item.Attempts, item.LastError = old.Attempts, old.LastError
	if old.NotBefore.After(item.NotBefore) {
		item.NotBefore = old.NotBefore
	}
	buf, err := d.encodeOutbox(*item)
	if err != nil {
		return false, err
	}
	return true, b.Put(id, buf)
}

// appendQueued adds item at the end of the outbox, refused with ErrBusy when the outbox
// holds maxOutbox undelivered items.
func (d *DB) appendQueued(tx *bolt.Tx, item *bot.OutboxItem) error {
	b := tx.Bucket(bucketOutbox)
	if n := outboxCount(tx); n >= d.maxOutbox {
		return fmt.Errorf("chat outbox is full (%d undelivered items): dropping a %s for %s thread %q: %w",
			n, item.Kind, item.Platform, item.Thread, session.ErrBusy)
	}
	seq, err := b.NextSequence()
	if err != nil {
		return fmt.Errorf("numbering outbox item: %w", err)
	}
	item.ID = seq
	buf, err := d.encodeOutbox(*item)
	if err != nil {
		return err
	}
	id := u64Key(seq)
	if err := b.Put(id, buf); err != nil {
		return fmt.Errorf("storing outbox item: %w", err)
	}
	if item.Key != "" {
		if err := tx.Bucket(bucketOutboxKeys).Put(outboxKeyIndex(item.Platform, item.Key), id); err != nil {
			return fmt.Errorf("indexing outbox item: %w", err)
		}
	}
	return addOutboxCount(tx, 1)
}

// Due returns up to limit (all when limit ≤ 0) items of platform ready to send at now, oldest
// first. Only the first undelivered item of each thread is offered, so a thread's order holds
// while its head waits for a retry; expired items are skipped. An item returned is claimed by
// the caller for OutboxLease: Due does not offer it again meanwhile, and it keeps blocking its
// thread until Delivered or Retry settles it.
func (d *DB) Due(ctx context.Context, platform string, now time.Time, limit int) ([]bot.OutboxItem, error) {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	var out []bot.OutboxItem
	err := d.view(ctx, func(tx *bolt.Tx) error {
		seen := map[string]bool{}
		c := tx.Bucket(bucketOutbox).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			it, err := decodeOutbox(k, v, false)
			if err != nil {
				return err
			}
			if it.Platform != platform || expired(it, now) || seen[it.Thread] {
				continue
			}
			seen[it.Thread] = true
			if it.NotBefore.After(now) {
				continue
			}
			if until, ok := d.leased[it.ID]; ok && now.Before(until) {
				continue
			}
			if it, err = decodeOutbox(k, v, true); err != nil {
				return err
			}
			out = append(out, it)
			if limit > 0 && len(out) == limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, it := range out {
		d.leased[it.ID] = now.Add(d.lease)
	}
	return out, nil
}

// Delivered removes item id: it reached its platform.
func (d *DB) Delivered(ctx context.Context, id uint64) error {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	defer delete(d.leased, id)
	return d.update(ctx, func(tx *bolt.Tx) error {
		it, err := getOutbox(tx, id)
		if err != nil {
			return fmt.Errorf("marking outbox item %d delivered: %w", id, err)
		}
		return removeOutbox(tx, it)
	})
}

// Retry records a failed delivery of item id and holds it back until notBefore.
func (d *DB) Retry(ctx context.Context, id uint64, notBefore time.Time, lastErr string) error {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	defer delete(d.leased, id)
	return d.update(ctx, func(tx *bolt.Tx) error {
		it, err := getOutbox(tx, id)
		if err != nil {
			return fmt.Errorf("rescheduling outbox item %d: %w", id, err)
		}
		it.Attempts++
		it.NotBefore = notBefore
		it.LastError = lastErr
		buf, err := d.encodeOutbox(it)
		if err != nil {
			return err
		}
		return tx.Bucket(bucketOutbox).Put(u64Key(id), buf)
	})
}

// Expire removes and returns the items whose Expires time has come, oldest first.
func (d *DB) Expire(ctx context.Context, now time.Time) ([]bot.OutboxItem, error) {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	var out []bot.OutboxItem
	err := d.update(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketOutbox).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			it, err := decodeOutbox(k, v, true)
			if err != nil {
				return err
			}
			if expired(it, now) {
				out = append(out, it)
			}
		}
		// Deleting after the walk: a bbolt cursor may skip keys when deleting while iterating.
		for _, it := range out {
			if err := removeOutbox(tx, it); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, it := range out {
		delete(d.leased, it.ID)
	}
	return out, nil
}

// OutboxDepth returns how many items wait, on all platforms.
func (d *DB) OutboxDepth(ctx context.Context) (int, error) {
	var n int
	err := d.view(ctx, func(tx *bolt.Tx) error {
		n = outboxCount(tx)
		return nil
	})
	return n, err
}

func getOutbox(tx *bolt.Tx, id uint64) (bot.OutboxItem, error) {
	key := u64Key(id)
	v := tx.Bucket(bucketOutbox).Get(key)
	if v == nil {
		return bot.OutboxItem{}, session.ErrNotFound
	}
	return decodeOutbox(key, v, true)
}

// removeOutbox deletes it and its key index entry, unless that entry already names a newer
// item with the same key.
func removeOutbox(tx *bolt.Tx, it bot.OutboxItem) error {
	key := u64Key(it.ID)
	if err := tx.Bucket(bucketOutbox).Delete(key); err != nil {
		return fmt.Errorf("removing outbox item %d: %w", it.ID, err)
	}
	if it.Key != "" {
		keys := tx.Bucket(bucketOutboxKeys)
		idx := outboxKeyIndex(it.Platform, it.Key)
		if id := keys.Get(idx); id != nil && binary.BigEndian.Uint64(id) == it.ID {
			if err := keys.Delete(idx); err != nil {
				return fmt.Errorf("removing outbox item %d: %w", it.ID, err)
			}
		}
	}
	return addOutboxCount(tx, -1)
}
