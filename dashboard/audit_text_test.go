package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"tunebot/dashboard"
	"tunebot/session"
)

// The audit timeline reads as a person reads it (issue 28, item 11): measured numbers
// with 4 significant digits, times to the second, no key=value dump of full precision.
func TestAuditTimelineReadsAsAPersonReadsIt(t *testing.T) {
	f := newFixture(t)
	at := time.Date(2026, 3, 14, 10, 26, 5, 123456789, time.UTC)
	if err := f.db.Append(context.Background(), session.AuditEntry{SessionID: sid, Time: at, Kind: "trial_scored", Actor: session.System,
		Detail: map[string]any{"score": -3.065342329708454e-05, "bytes": 12345, "until": at, "spread": map[string]any{"std": 0.0123456789}, "ok": true, "none": nil, "seeds": []int{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	c := f.signIn(t, eve)
	v := decode(t, c.get("/api/sessions/"+sid))
	var text string
	for _, a := range v["audit"].([]any) {
		if e := a.(map[string]any); e["kind"] == "trial_scored" {
			text, _ = e["text"].(string)
		}
	}
	want := `bytes: 12345 · none: none · ok: true · score: -3.065e-05 · seeds: [1,2] · spread: {"std":0.01235} · until: 2026-03-14 10:26:05Z`
	if text != want {
		t.Errorf("the timeline's line is %q, want %q", text, want)
	}
	if strings.Contains(text, "123456789") || strings.Contains(text, "=") {
		t.Errorf("the timeline's line dumps raw values: %q", text)
	}
}

// Every kind of value an audit detail holds, typed as the engine writes it or as the
// store reads it back, makes a line (a bool once sent the page's reader into a loop).
func TestAuditTextOfEveryKindOfValue(t *testing.T) {
	type settings struct {
		Mode   string  `json:"mode"`
		Rate   float64 `json:"rate"`
		Resume bool    `json:"resume"`
	}
	for _, v := range []any{true, false, nil, "x", 3, int64(4), 2.5, []string{"a"}, []any{true, nil}, map[string]any{"b": false},
		settings{"approval", 0.123456, true}, &settings{}, session.State("paused"), time.Time{}} {
		done := make(chan struct{})
		go func() { defer close(done); _ = dashboard.AuditText(map[string]any{"v": v}) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatalf("the line of %#v never ends", v)
		}
	}
	if got := dashboard.AuditText(map[string]any{"settings": settings{"approval", 0.123456, true}}); got != `settings: {"mode":"approval","rate":0.1235,"resume":true}` {
		t.Errorf("a typed detail reads %q", got)
	}
}
