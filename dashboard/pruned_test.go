package dashboard_test

import (
	"context"
	"os"
	"testing"

	"tunebot/dashboard"
	"tunebot/session"
)

// TestPrunedClipsAreSaidRemoved: after a prune deleted the run directories, the session
// view offers no clip URL (which would show as a broken image) but says the clip was
// removed by prune, so the page's compare view has none to choose from (issue 28).
func TestPrunedClipsAreSaidRemoved(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, _, _, run := f.putClip(t)
	user := f.signIn(t, dashboard.Identity{Platform: "slack", ID: "U2", Name: "bob"})
	if tr := trialNumbered(t, decode(t, user.get("/api/sessions/"+sid)), 2); tr["clip"] == nil || tr["clip_removed"] != nil {
		t.Fatalf("before the prune: %v", tr)
	}

	if err := os.RemoveAll(run); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.UpdateSession(ctx, sid, func(s *session.Session) error {
		s.Pruned = &session.Pruned{At: s.UpdatedAt, RunDirs: true}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	tr := trialNumbered(t, decode(t, user.get("/api/sessions/"+sid)), 2)
	if tr["clip"] != nil || tr["clip_removed"] != true || tr["clip_note"] != "clip removed by prune" {
		t.Errorf("after the prune, trial 2 shows clip %v, removed %v, note %q", tr["clip"], tr["clip_removed"], tr["clip_note"])
	}
}

// trialNumbered is trial n of a session view (its trials come ranked, not by number).
func trialNumbered(t *testing.T, view map[string]any, n float64) map[string]any {
	t.Helper()
	for _, tr := range view["trials"].([]any) {
		if m := tr.(map[string]any); m["number"] == n {
			return m
		}
	}
	t.Fatalf("the session view has no trial %v", n)
	return nil
}
