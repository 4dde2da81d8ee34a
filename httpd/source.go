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
	// SessionCount is how many sessions are stored, so a scrape knows when it has seen
	// them all without reading them all.
	SessionCount(ctx context.Context) (int, error)
}

// Outbox reports the chat outbox's depth (store.DB has it).
type Outbox interface {
	OutboxDepth(ctx context.Context) (int, error)
}

// StoreSource computes a Snapshot from tunebot's store, at most once per TTL (scrapers poll
// every few seconds). A daemon lives for months and a lab runs thousands of sessions, so it
// reads what can still change and keeps the rest: the audit log from where the last read
// ended, the active sessions, the sessions new since the last read (newest first, until
// every stored session is accounted for), and each ended session once.
type StoreSource struct {
	rec    Records
	outbox Outbox
	ttl    time.Duration
	now    func() time.Time

	mu   sync.Mutex
	at   time.Time
	last Snapshot

	auditSeq      uint64           // the audit log has been folded up to this entry
	advisorCalls  map[string]int   // folded from the audit log so far
	advisorTokens map[string]int64 // folded from the audit log so far
	ended         map[string]bool  // sessions that can no longer change, folded into endedSum
	endedSum      Snapshot         // their sessions and trials, added up
	open          map[string]bool  // the sessions active at the last read
}

// maxSessionPage bounds a page of sessions a read asks for while it looks for new ones.
const maxSessionPage = 500

// sessionFold is what the metrics take from one session.
type sessionFold struct {
	state  session.State
	gpu    float64
	trials trialFold
}

// addTo adds f to the totals of snap.
func (f sessionFold) addTo(snap *Snapshot) {
	snap.Sessions[f.state]++
	snap.GPUSeconds += f.gpu
	for st, n := range f.trials.states {
		snap.Trials[st] += n
	}
	for rung, d := range f.trials.durations {
		sum := snap.TrialDurations[rung]
		sum.Count += d.Count
		sum.Sum += d.Sum
		snap.TrialDurations[rung] = sum
	}
}

// addEnded folds a session that can no longer change into the totals, once.
func (s *StoreSource) addEnded(id string, f sessionFold) {
	if !s.ended[id] {
		s.ended[id] = true
		f.addTo(&s.endedSum)
	}
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
		s.ended, s.open = map[string]bool{}, map[string]bool{}
		s.endedSum = Snapshot{Sessions: map[session.State]int{}, Trials: map[session.TrialState]int{}, TrialDurations: map[int]Summary{}}
		s.advisorCalls, s.advisorTokens = map[string]int{}, map[string]int64{}
	}
	active, err := s.sessions(ctx)
	if err != nil {
		return snap, err
	}
	maps.Copy(snap.Sessions, s.endedSum.Sessions)
	maps.Copy(snap.Trials, s.endedSum.Trials)
	maps.Copy(snap.TrialDurations, s.endedSum.TrialDurations)
	snap.GPUSeconds = s.endedSum.GPUSeconds
	for _, f := range active {
		f.addTo(&snap)
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

// sessions brings s.ended up to date and returns the folds of the active sessions: those
// active at the last read are read again, and new ones are looked for newest first until
// every stored session is accounted for, which in a daemon's steady state reads nothing
// but the active session.
func (s *StoreSource) sessions(ctx context.Context) (map[string]sessionFold, error) {
	fold := func(se session.Session) (sessionFold, error) {
		trials, err := session.Outlines(ctx, s.rec, se.ID)
		if err != nil {
			return sessionFold{}, fmt.Errorf("listing trials of %s: %w", se.ID, err)
		}
		return sessionFold{state: se.State, gpu: se.GPUSeconds, trials: foldTrials(trials)}, nil
	}
	active := map[string]sessionFold{}
	list, err := s.rec.ActiveSessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing active sessions: %w", err)
	}
	for _, se := range list {
		if active[se.ID], err = fold(se); err != nil {
			return nil, err
		}
	}
	for id := range s.open {
		if _, ok := active[id]; ok {
			continue
		}
		se, err := s.rec.Session(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("reading session %s: %w", id, err)
		}
		f, err := fold(se)
		if err != nil {
			return nil, err
		}
		s.addEnded(id, f)
	}
	total, err := s.rec.SessionCount(ctx)
	if err != nil {
		return nil, fmt.Errorf("counting sessions: %w", err)
	}
	for cursor := ""; len(s.ended)+len(active) < total; {
		// The sessions not yet known are the newest, unless a clock went back.
		page, next, err := s.rec.RecentSessions(ctx, cursor, min(max(total-len(s.ended), 1), maxSessionPage))
		if err != nil {
			return nil, fmt.Errorf("listing sessions: %w", err)
		}
		for _, se := range page {
			if _, ok := active[se.ID]; s.ended[se.ID] || ok || se.State.Active() {
				continue // known, counted as active above, or it will be next time
			}
			f, err := fold(se)
			if err != nil {
				return nil, err
			}
			s.addEnded(se.ID, f)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	s.open = map[string]bool{}
	for id := range active {
		s.open[id] = true
	}
	return active, nil
}

func foldTrials(trials []session.TrialOutline) trialFold {
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
