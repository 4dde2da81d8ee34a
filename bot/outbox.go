package bot

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync/atomic"
	"time"

	"tunebot/session"
)

// Message is what one outbox item carries: a card for one session thread, with the event
// that caused it.
type Message struct {
	Event   session.EventKind `json:"event"`
	Session string            `json:"session"`
	Text    string            `json:"text,omitempty"` // the event's plain-language line
	Card    Card              `json:"card"`
}

// EncodeMessage encodes m as an outbox body: the JSON of m, then the attachments' PNG
// bytes raw in order (their sizes are in the JSON), so charts are not inflated by base64.
func EncodeMessage(m Message) ([]byte, error) {
	var pngs [][]byte
	for i := range m.Card.Blocks {
		for j := range m.Card.Blocks[i].Attachments {
			a := &m.Card.Blocks[i].Attachments[j]
			a.Size = len(a.Data)
			pngs = append(pngs, a.Data)
		}
	}
	js, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding chat message: %w", err)
	}
	buf := binary.AppendUvarint(nil, uint64(len(js)))
	buf = append(buf, js...)
	for _, p := range pngs {
		buf = append(buf, p...)
	}
	return buf, nil
}

// DecodeMessage decodes an outbox body written by EncodeMessage.
func DecodeMessage(body []byte) (Message, error) {
	var m Message
	n, w := binary.Uvarint(body)
	if w <= 0 || n > uint64(len(body)-w) {
		return m, errors.New("decoding chat message: corrupt body")
	}
	if err := json.Unmarshal(body[w:w+int(n)], &m); err != nil {
		return m, fmt.Errorf("decoding chat message: %w", err)
	}
	rest := body[w+int(n):]
	for i := range m.Card.Blocks {
		for j := range m.Card.Blocks[i].Attachments {
			a := &m.Card.Blocks[i].Attachments[j]
			if a.Size < 0 || a.Size > len(rest) {
				return m, errors.New("decoding chat message: attachment sizes do not match the body")
			}
			a.Data, rest = rest[:a.Size:a.Size], rest[a.Size:]
		}
	}
	return m, nil
}

// Delivery is one outbox item handed to a sink.
type Delivery struct {
	ID       uint64
	Thread   string // the session id: a sink keeps one thread per session
	Key      string // the card's Ref when it is edited in place
	Attempts int    // failed deliveries so far
	Message  Message
}

// Sink delivers messages to one platform. Deliver returns nil when done; an error made by
// RetryAfter asks for a retry after a given time (HTTP 429); one made by Permanent drops
// the item (it can never succeed: a deleted channel, a bad request); any other error is
// retried with exponential backoff.
type Sink interface {
	Deliver(ctx context.Context, d Delivery) error
}

// RetryAfterError asks the dispatcher to retry no sooner than After.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("retry after %s: %v", e.After, e.Err)
}
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter wraps err to ask for a retry after d.
func RetryAfter(d time.Duration, err error) error { return &RetryAfterError{After: d, Err: err} }

// PermanentError is a delivery that can never succeed.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err to say retrying is pointless.
func Permanent(err error) error { return &PermanentError{Err: err} }

// OutboxItem is one chat delivery waiting to be made: a message, a card update or an upload.
// The store (store.DB) keeps it until it is delivered or expires, so a chat outage or a
// crash loses nothing.
type OutboxItem struct {
	ID        uint64    // assigned by Enqueue; delivery order within a thread
	Platform  string    // "slack", "discord", "console", ...
	Thread    string    // items of one thread are delivered in ID order
	Key       string    // when set, a later item with the same Platform and Key replaces this one
	Kind      string    // what Body is, for the sender (message, update, upload, ...)
	Body      []byte    // opaque to the store
	Attempts  int       // failed deliveries so far
	NotBefore time.Time // not offered by Due before this time
	Expires   time.Time // removed by Expire from this time on; zero never expires
	CreatedAt time.Time
	LastError string
}

// Outbox is the persisted queue the dispatcher drains; *store.DB implements it.
type Outbox interface {
	Due(ctx context.Context, platform string, now time.Time, limit int) ([]OutboxItem, error)
	Delivered(ctx context.Context, id uint64) error
	Retry(ctx context.Context, id uint64, notBefore time.Time, lastErr string) error
	Expire(ctx context.Context, now time.Time) ([]OutboxItem, error)
}

// Queue is where deliveries are enqueued; *store.DB implements it.
type Queue interface {
	Enqueue(ctx context.Context, item OutboxItem) (OutboxItem, error)
}

// DispatcherOptions tune a Dispatcher; the zero value is usable.
type DispatcherOptions struct {
	Poll       time.Duration // how often to look for due items when not woken (default 1 s)
	BaseDelay  time.Duration // first retry delay (default 2 s), doubled per attempt
	MaxDelay   time.Duration // cap of the retry delay (default 5 min)
	MaxRetryAt time.Duration // cap of a Retry-After a platform asks for (default 1 h)
	Batch      int           // items asked of Due at once (default 16)
	Timeout    time.Duration // bound of one Deliver call (default 30 s)
}

// Dispatcher delivers one platform's outbox items: each thread in order, retried with
// exponential backoff and jitter until delivered or expired.
type Dispatcher struct {
	outbox   Outbox
	platform string
	sink     Sink
	opt      DispatcherOptions
	log      *slog.Logger
	wake     chan struct{}

	delivered, retried, dropped, expired atomic.Int64
}

// NewDispatcher returns a dispatcher of platform's items to sink.
func NewDispatcher(o Outbox, platform string, sink Sink, opt DispatcherOptions, logger *slog.Logger) *Dispatcher {
	if opt.Poll <= 0 {
		opt.Poll = time.Second
	}
	if opt.BaseDelay <= 0 {
		opt.BaseDelay = 2 * time.Second
	}
	if opt.MaxDelay <= 0 {
		opt.MaxDelay = 5 * time.Minute
	}
	if opt.MaxRetryAt <= 0 {
		opt.MaxRetryAt = time.Hour
	}
	if opt.Batch <= 0 {
		opt.Batch = 16
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 30 * time.Second
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{outbox: o, platform: platform, sink: sink, opt: opt, log: logger.With("platform", platform), wake: make(chan struct{}, 1)}
}

// Platform is the platform this dispatcher serves.
func (d *Dispatcher) Platform() string { return d.platform }

// Wake makes the dispatcher look for due items now; it never blocks.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// DispatchStats counts what a dispatcher did.
type DispatchStats struct{ Delivered, Retried, Dropped, Expired int64 }

// Stats returns the counters so far.
func (d *Dispatcher) Stats() DispatchStats {
	return DispatchStats{d.delivered.Load(), d.retried.Load(), d.dropped.Load(), d.expired.Load()}
}

// Run delivers until ctx is done. Store errors are logged and retried at the next poll:
// a broken disk must not spin, and an outage of the platform only delays delivery.
func (d *Dispatcher) Run(ctx context.Context) error {
	lastExpire := time.Time{}
	for {
		now := time.Now()
		if now.Sub(lastExpire) >= time.Minute {
			lastExpire = now
			if gone, err := d.outbox.Expire(ctx, now); err != nil {
				d.log.Error("expiring chat deliveries", "err", err)
			} else {
				for _, it := range gone {
					d.log.Warn("chat delivery expired undelivered", "thread", it.Thread, "kind", it.Kind, "attempts", it.Attempts, "last_error", it.LastError)
				}
				d.expired.Add(int64(len(gone)))
			}
		}
		items, err := d.outbox.Due(ctx, d.platform, now, d.opt.Batch)
		if err != nil && ctx.Err() == nil {
			d.log.Error("reading the chat outbox", "err", err)
		}
		for _, it := range items {
			d.deliver(ctx, it)
		}
		if len(items) > 0 && ctx.Err() == nil {
			continue // the next item of each thread may be due now
		}
		t := time.NewTimer(d.opt.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-d.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

func (d *Dispatcher) deliver(ctx context.Context, it OutboxItem) {
	log := d.log.With("id", it.ID, "thread", it.Thread, "attempt", it.Attempts+1)
	// A context that outlives ctx: a delivery in flight at shutdown settles its item.
	settle := context.WithoutCancel(ctx)
	m, err := DecodeMessage(it.Body)
	if err != nil {
		log.Error("dropping an undecodable chat delivery", "err", err)
		d.dropped.Add(1)
		_ = d.outbox.Delivered(settle, it.ID)
		return
	}
	err = d.call(ctx, Delivery{ID: it.ID, Thread: it.Thread, Key: it.Key, Attempts: it.Attempts, Message: m})
	var perm *PermanentError
	var ra *RetryAfterError
	switch {
	case err == nil:
		d.delivered.Add(1)
		if err := d.outbox.Delivered(settle, it.ID); err != nil {
			log.Error("marking chat delivery done", "err", err)
		}
		return
	case errors.As(err, &perm):
		log.Error("dropping a chat delivery that cannot succeed", "err", err)
		d.dropped.Add(1)
		if err := d.outbox.Delivered(settle, it.ID); err != nil {
			log.Error("dropping chat delivery", "err", err)
		}
		return
	}
	delay := d.backoff(it.Attempts)
	if errors.As(err, &ra) {
		delay = min(max(ra.After, 0), d.opt.MaxRetryAt)
	}
	d.retried.Add(1)
	log.Warn("chat delivery failed; retrying", "err", err, "in", delay)
	if err := d.outbox.Retry(settle, it.ID, time.Now().Add(delay), err.Error()); err != nil {
		log.Error("rescheduling chat delivery", "err", err)
	}
}

// call runs the sink with a bound; a panicking sink is a failed delivery, not a crash.
func (d *Dispatcher) call(ctx context.Context, dv Delivery) (err error) {
	defer func() {
		if p := recover(); p != nil {
			d.log.Error("chat sink panicked", "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("sink panicked: %v", p)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, d.opt.Timeout)
	defer cancel()
	return d.sink.Deliver(ctx, dv)
}

// backoff is BaseDelay·2^attempts capped at MaxDelay, with "equal jitter": between half
// and all of it, so many items failing together do not retry in lockstep.
func (d *Dispatcher) backoff(attempts int) time.Duration {
	exp := d.opt.MaxDelay
	if attempts < 30 {
		exp = min(d.opt.BaseDelay<<attempts, d.opt.MaxDelay)
	}
	half := exp / 2
	return half + rand.N(half+1)
}
