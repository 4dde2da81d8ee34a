package bot

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// RateLimit bounds how often one person may send the commands anyone may send (status,
// best, presets, preset show, export, chart, policy, schedule list) and agent: Burst at
// once, then one every Every. Charts are rendered, policies uploaded (up to 8 MiB) and
// agent is a paid DeepSeek call, so an unbounded stream of them is a cheap attack.
type RateLimit struct {
	Burst int           `yaml:"burst"`
	Every time.Duration `yaml:"every"`
}

// DefaultRateLimit is 10 at once, then one every 6 s: ten a minute, more than a person
// reading a session needs.
var DefaultRateLimit = RateLimit{Burst: 10, Every: 6 * time.Second}

// Check names what is wrong with a configured limit; the zero value means the default.
func (l RateLimit) Check() error {
	if l == (RateLimit{}) {
		return nil
	}
	if l.Burst < 1 || l.Every <= 0 {
		return fmt.Errorf("burst (%d) must be at least 1 and every (%s) positive", l.Burst, l.Every)
	}
	return nil
}

// limited reports whether cmd counts against the RateLimit: the read commands, the sign-in
// link and agent.
func limited(cmd Command) bool {
	switch cmd.Verb {
	case VerbStatus, VerbBest, VerbPresets, VerbExport, VerbChart, VerbClip, VerbPolicy, VerbAgent, VerbPreset, VerbDashboard, VerbWhy:
		return true
	case VerbSchedule:
		return cmd.Sub == "list"
	}
	return false
}

// Limiter is a token bucket per key (a person): the chat's read commands and the monitoring
// page's reads each keep one. Safe for concurrent use.
type Limiter struct {
	l     RateLimit
	mu    sync.Mutex
	users map[string]bucket
}

// NewLimiter returns a limiter of l (DefaultRateLimit when l is zero or invalid).
func NewLimiter(l RateLimit) *Limiter {
	if l == (RateLimit{}) || l.Check() != nil {
		l = DefaultRateLimit
	}
	return &Limiter{l: l}
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxBuckets bounds the people remembered; past it, those whose bucket has refilled are
// forgotten (they are as if new).
const maxBuckets = 4096

// Take spends one of key's tokens at now; when there is none it returns how long until
// there is one.
func (r *Limiter) Take(key string, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bucket(key, now)
	if b.tokens < 1 {
		r.users[key] = b
		return time.Duration(math.Ceil((1 - b.tokens) * float64(r.l.Every)))
	}
	b.tokens--
	r.users[key] = b
	return 0
}

// Charge spends cost more of key's tokens for work whose size showed only once it was done
// (a large answer); the bucket may go below zero, and key then waits longer for its next.
func (r *Limiter) Charge(key string, now time.Time, cost float64) {
	if cost <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bucket(key, now)
	b.tokens -= cost
	r.users[key] = b
}

// bucket is key's bucket refilled to now; callers hold mu.
func (r *Limiter) bucket(key string, now time.Time) bucket {
	if r.users == nil {
		r.users = map[string]bucket{}
	}
	if len(r.users) >= maxBuckets {
		for k, b := range r.users {
			if r.refill(b, now).tokens >= float64(r.l.Burst) {
				delete(r.users, k)
			}
		}
	}
	b, ok := r.users[key]
	if !ok {
		b = bucket{tokens: float64(r.l.Burst), at: now}
	}
	return r.refill(b, now)
}

func (r *Limiter) refill(b bucket, now time.Time) bucket {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(float64(r.l.Burst), b.tokens+float64(d)/float64(r.l.Every))
		b.at = now
	}
	return b
}

// SlowDown says to a person over the limit what the limit is and when to try again, rounded
// up to a whole second; what names the things limited ("commands", "page reads").
func (r *Limiter) SlowDown(what string, wait time.Duration) string {
	return fmt.Sprintf("slow down: you may send %d of these %s at once, then one every %s; try again in %s",
		r.l.Burst, what, r.l.Every, (wait + time.Second - 1).Truncate(time.Second))
}
