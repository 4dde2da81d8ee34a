package bot

import (
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
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

// Limiter keeps one x/time/rate limiter per key (a person): the chat's read commands and
// the monitoring page's reads each keep one. Safe for concurrent use.
type Limiter struct {
	l     RateLimit
	mu    sync.Mutex
	users map[string]*rate.Limiter
}

// NewLimiter returns a limiter of l (DefaultRateLimit when l is zero or invalid).
func NewLimiter(l RateLimit) *Limiter {
	if l == (RateLimit{}) || l.Check() != nil {
		l = DefaultRateLimit
	}
	return &Limiter{l: l, users: map[string]*rate.Limiter{}}
}

// maxPeople bounds the people remembered; past it, those whose limiter has refilled are
// forgotten (they are as if new).
const maxPeople = 4096

// Take spends one of key's tokens at now; when there is none it returns how long until
// there is one, and spends nothing.
func (r *Limiter) Take(key string, now time.Time) time.Duration {
	res := r.person(key, now).ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d
	}
	return 0
}

// Charge spends cost more of key's tokens (rounded up to whole ones) for work whose size
// showed only once it was done (a large answer); the limiter may go below zero, and key
// then waits longer for its next.
func (r *Limiter) Charge(key string, now time.Time, cost float64) {
	lim := r.person(key, now)
	// A reservation may not exceed the burst, so a large cost is reserved a burst at a time;
	// reservations are never cancelled, which is what takes the tokens below zero.
	for n := int(math.Ceil(cost)); n > 0; n -= r.l.Burst {
		lim.ReserveN(now, min(n, r.l.Burst))
	}
}

// person is key's limiter, made full on first use.
func (r *Limiter) person(key string, now time.Time) *rate.Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if lim, ok := r.users[key]; ok {
		return lim
	}
	if len(r.users) >= maxPeople {
		for k, lim := range r.users {
			if lim.TokensAt(now) >= float64(r.l.Burst) {
				delete(r.users, k)
			}
		}
	}
	lim := rate.NewLimiter(rate.Every(r.l.Every), r.l.Burst)
	r.users[key] = lim
	return lim
}

// SlowDown says to a person over the limit what the limit is and when to try again, rounded
// up to a whole second; what names the things limited ("commands", "page reads").
func (r *Limiter) SlowDown(what string, wait time.Duration) string {
	return fmt.Sprintf("slow down: you may send %d of these %s at once, then one every %s; try again in %s",
		r.l.Burst, what, r.l.Every, (wait + time.Second - 1).Truncate(time.Second))
}
