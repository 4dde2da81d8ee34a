package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"tunebot/session"
)

// The audit timeline reads as a person reads it (issue 28, item 11): measured numbers
// with 4 significant digits, times to the second, no key=value dump of full precision.
func TestAuditTimelineReadsAsAPersonReadsIt(t *testing.T) {
	f := newFixture(t)
	at := time.Date(2026, 3, 14, 10, 26, 5, 123456789, time.UTC)
	if err := f.db.Append(context.Background(), session.AuditEntry{SessionID: sid, Time: at, Kind: "trial_scored", Actor: session.System,
		Detail: map[string]any{"score": -3.065342329708454e-05, "bytes": 12345, "until": at, "spread": map[string]any{"std": 0.0123456789}}}); err != nil {
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
	want := `bytes: 12345 · score: -3.065e-05 · spread: {"std":0.01235} · until: 2026-03-14 10:26:05Z`
	if text != want {
		t.Errorf("the timeline's line is %q, want %q", text, want)
	}
	if strings.Contains(text, "123456789") || strings.Contains(text, "=") {
		t.Errorf("the timeline's line dumps raw values: %q", text)
	}
}
