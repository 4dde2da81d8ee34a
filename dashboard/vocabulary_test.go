package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"tunebot/dashboard"
	"tunebot/session"
)

// TestShortIDsAndOneVocabulary: the session id every surface prints (8 characters) opens
// the session on the page; a prefix two sessions share is refused naming both; the page's
// data names metrics, states and owners from session's one table (issue 28).
func TestShortIDsAndOneVocabulary(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	user := f.signIn(t, dashboard.Identity{Platform: "slack", ID: "U2", Name: "bob"})

	v := decode(t, user.get("/api/sessions/"+session.Short(sid)))
	row := v["session"].(map[string]any)
	if row["id"] != sid {
		t.Fatalf("the short id %s opened %v", session.Short(sid), row["id"])
	}
	if row["state_label"] != session.StateLabel(session.StatePaused) || row["owner"] != "alice (slack)" {
		t.Errorf("state %q, owner %q", row["state_label"], row["owner"])
	}
	labels := v["labels"].(map[string]any)["metrics"].(map[string]any)
	for _, m := range session.MetricNames {
		if labels[m] != session.MetricLabel(m) {
			t.Errorf("the page names %s %q; the table says %q", m, labels[m], session.MetricLabel(m))
		}
	}
	var params []string
	for _, c := range v["proposals"].([]any)[0].(map[string]any)["diff"].([]any) {
		if c := c.(map[string]any); c["kind"] == "param" {
			params = append(params, c["label"].(string))
		}
	}
	if want := session.ParamLabel("foot_clearance.target_height"); len(params) != 1 || params[0] != want {
		t.Errorf("the proposal's params are shown as %q; want %q", params, want)
	}
	tags := decode(t, user.get("/api/sessions/"+session.Short(sid)+"/tags"))
	if got := tags["labels"].(map[string]any)["metrics"].(map[string]any)[session.MetricVelLinear]; got != session.MetricLabel(session.MetricVelLinear) {
		t.Errorf("the curves page names %s %v", session.MetricVelLinear, got)
	}

	// a second session sharing the first 8 characters: the prefix is ambiguous, a longer one is not
	other := sid[:8] + "00000000"
	if _, err := f.db.UpdateSession(ctx, sid, func(s *session.Session) error { s.State = session.StateSucceeded; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := f.db.CreateSession(ctx, session.Session{ID: other, State: session.StateSucceeded, Settings: session.DefaultSettings(), CreatedAt: t0, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	resp := user.get("/api/sessions/" + sid[:8])
	if body := readAll(t, resp); resp.StatusCode != http.StatusConflict || !strings.Contains(body, "ambiguous") || !strings.Contains(body, sid) || !strings.Contains(body, other) {
		t.Errorf("an ambiguous prefix: %d %s", resp.StatusCode, body)
	}
	if v := decode(t, user.get("/api/sessions/"+sid[:9])); v["session"].(map[string]any)["id"] != sid {
		t.Errorf("a unique longer prefix opened %v", v["session"])
	}
	if resp := user.get("/api/sessions/ffff"); resp.StatusCode != http.StatusNotFound || !strings.Contains(readAll(t, resp), "does not exist") {
		t.Errorf("no such session: %d", resp.StatusCode)
	}
}
