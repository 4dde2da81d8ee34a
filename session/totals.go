package session

import (
	"context"
	"strings"
)

// Totals are running totals over everything stored: sessions by state, trials by state,
// finished trials' wall time by rung, GPU seconds and the advisor's calls and tokens. A store
// keeps them in the transaction of each write (TotalsStore), so /metrics reads one record,
// never every session's trials: its first scrape after a start costs what a later one does.
type Totals struct {
	Sessions map[State]int      `json:"sessions,omitempty"`
	Trials   map[TrialState]int `json:"trials,omitempty"`
	// TrialDurations by rung: wall time from start to end of finished trials.
	TrialDurations map[int]Durations `json:"trial_durations,omitempty"`
	GPUSeconds     float64           `json:"gpu_seconds,omitempty"`
	// AdvisorCalls by outcome: ok, invalid, cancelled, error.
	AdvisorCalls map[string]int `json:"advisor_calls,omitempty"`
	// AdvisorTokens by kind: prompt, completion, prompt_cache_hit, prompt_cache_miss.
	AdvisorTokens map[string]int64 `json:"advisor_tokens,omitempty"`
}

// Durations is how many durations and their sum, in seconds.
type Durations struct {
	Count int     `json:"count"`
	Sum   float64 `json:"sum"`
}

// TotalsStore is what a store may also offer: the running totals, read in one go.
type TotalsStore interface {
	Totals(ctx context.Context) (Totals, error)
}

// AddSession adds s to the totals (sign 1) or takes it away (sign -1).
func (t *Totals) AddSession(s Session, sign int) {
	t.Sessions = addCount(t.Sessions, s.State, sign)
	t.GPUSeconds += float64(sign) * s.GPUSeconds
}

// AddTrial adds a trial to the totals (sign 1) or takes it away (sign -1).
func (t *Totals) AddTrial(o TrialOutline, sign int) {
	t.Trials = addCount(t.Trials, o.State, sign)
	if !o.State.Terminal() || o.StartedAt.IsZero() || !o.EndedAt.After(o.StartedAt) {
		return
	}
	if t.TrialDurations == nil {
		t.TrialDurations = map[int]Durations{}
	}
	d := t.TrialDurations[o.Rung]
	d.Count += sign
	d.Sum += float64(sign) * o.EndedAt.Sub(o.StartedAt).Seconds()
	if d.Count == 0 {
		delete(t.TrialDurations, o.Rung)
		return
	}
	t.TrialDurations[o.Rung] = d
}

// AddAudit adds an audit entry: an advisor call counts by its outcome and its tokens.
func (t *Totals) AddAudit(e AuditEntry) {
	if e.Kind != "advisor_call" {
		return
	}
	t.AdvisorCalls = addCount(t.AdvisorCalls, outcomeClass(e.Detail["outcome"]), 1)
	usage, _ := e.Detail["usage"].(map[string]any)
	for key, kind := range map[string]string{
		"prompt_tokens": "prompt", "completion_tokens": "completion",
		"prompt_cache_hit_tokens": "prompt_cache_hit", "prompt_cache_miss_tokens": "prompt_cache_miss",
	} {
		if n := toInt(usage[key]); n != 0 {
			if t.AdvisorTokens == nil {
				t.AdvisorTokens = map[string]int64{}
			}
			t.AdvisorTokens[kind] += n
		}
	}
}

// addCount adds sign to m[k], dropping a count that falls to zero.
func addCount[K comparable](m map[K]int, k K, sign int) map[K]int {
	if m == nil {
		m = map[K]int{}
	}
	if m[k] += sign; m[k] == 0 {
		delete(m, k)
	}
	return m
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
