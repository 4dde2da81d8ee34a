package httpd

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"tunebot/session"
)

// Records is what StoreSource reads.
type Records interface {
	session.SessionStore
	session.TrialStore
	session.AuditLog
}

// Outbox reports the chat outbox's depth (store.DB has it).
type Outbox interface {
	OutboxDepth(ctx context.Context) (int, error)
}

// StoreSource computes a Snapshot from tunebot's store, at most once per TTL (scrapers poll
// every few seconds). A daemon lives for months, so it reads what can still change and keeps
// the rest: the audit log from where the last read ended, and the trials of sessions that
// ended once.
type StoreSource struct {
	rec    Records
	outbox Outbox
	ttl    time.Duration
	now    func() time.Time

	mu   sync.Mutex
	at   time.Time
	last Snapshot

	auditSeq      uint64               // the audit log has been folded up to this entry
	advisorCalls  map[string]int       // folded from the audit log so far
	advisorTokens map[string]int64     // folded from the audit log so far
	ended         map[string]trialFold // trials of sessions that can no longer change
}

// trialFold is what the metrics take from one session's trials.
type trialFold struct {
	states    map[session.TrialState]int
	durations map[int]Summary
}

// NewStoreSource reads rec and, when not nil, outbox; ttl <= 0 means 10 s.
func NewStoreSource(rec Records, outbox Outbox, ttl time.Duration) *StoreSource {
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	return &StoreSource{rec: rec, outbox: outbox, ttl: ttl, now: time.Now}
}

// Snapshot implements Source.
func (s *StoreSource) Snapshot(ctx context.Context) (Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && s.now().Sub(s.at) < s.ttl {
		return s.last, nil
	}
	snap, err := s.read(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	s.at, s.last = s.now(), snap
	return snap, nil
}

func (s *StoreSource) read(ctx context.Context) (Snapshot, error) {
	snap := Snapshot{
		Sessions: map[session.State]int{}, Trials: map[session.TrialState]int{}, TrialDurations: map[int]Summary{},
		AdvisorCalls: map[string]int{}, AdvisorTokens: map[string]int64{},
	}
	if s.ended == nil {
		s.ended = map[string]trialFold{}
		s.advisorCalls, s.advisorTokens = map[string]int{}, map[string]int64{}
	}
	sessions, err := s.rec.Sessions(ctx)
	if err != nil {
		return snap, fmt.Errorf("listing sessions: %w", err)
	}
	for _, se := range sessions {
		snap.Sessions[se.State]++
		snap.GPUSeconds += se.GPUSeconds
		f, ok := s.ended[se.ID]
		if !ok {
			trials, err := s.rec.Trials(ctx, se.ID)
			if err != nil {
				return snap, fmt.Errorf("listing trials of %s: %w", se.ID, err)
			}
			f = foldTrials(trials)
			if !se.State.Active() {
				s.ended[se.ID] = f
			}
		}
		for st, n := range f.states {
			snap.Trials[st] += n
		}
		for rung, d := range f.durations {
			sum := snap.TrialDurations[rung]
			sum.Count += d.Count
			sum.Sum += d.Sum
			snap.TrialDurations[rung] = sum
		}
	}
	entries, err := session.AuditAfter(ctx, s.rec, s.auditSeq)
	if err != nil {
		return snap, fmt.Errorf("reading the audit log: %w", err)
	}
	for _, e := range entries {
		s.auditSeq = max(s.auditSeq, e.Seq)
		if e.Kind != "advisor_call" {
			continue
		}
		s.advisorCalls[outcomeClass(e.Detail["outcome"])]++
		usage, _ := e.Detail["usage"].(map[string]any)
		for key, kind := range map[string]string{
			"prompt_tokens": "prompt", "completion_tokens": "completion",
			"prompt_cache_hit_tokens": "prompt_cache_hit", "prompt_cache_miss_tokens": "prompt_cache_miss",
		} {
			s.advisorTokens[kind] += toInt(usage[key])
		}
	}
	maps.Copy(snap.AdvisorCalls, s.advisorCalls)
	maps.Copy(snap.AdvisorTokens, s.advisorTokens)
	if s.outbox != nil {
		if snap.OutboxDepth, err = s.outbox.OutboxDepth(ctx); err != nil {
			return snap, fmt.Errorf("reading the outbox depth: %w", err)
		}
	}
	return snap, nil
}

func foldTrials(trials []session.Trial) trialFold {
	f := trialFold{states: map[session.TrialState]int{}, durations: map[int]Summary{}}
	for _, t := range trials {
		f.states[t.State]++
		if t.State.Terminal() && !t.StartedAt.IsZero() && t.EndedAt.After(t.StartedAt) {
			d := f.durations[t.Rung]
			d.Count++
			d.Sum += t.EndedAt.Sub(t.StartedAt).Seconds()
			f.durations[t.Rung] = d
		}
	}
	return f
}

// outcomeClass folds the advisor's free-text outcome into a few label values, so a label
// never carries an error message (unbounded cardinality, and possibly a detail).
func outcomeClass(v any) string {
	s, _ := v.(string)
	switch {
	case s == "ok":
		return "ok"
	case strings.HasPrefix(s, "invalid"):
		return "invalid"
	case s == "cancelled":
		return "cancelled"
	}
	return "error"
}

// toInt reads a JSON number as the audit holds it: an int when written in this process, a
// float64 after a round trip through the store.
func toInt(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return 0
}
