package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/dashboard"
	"tunebot/session"
	"tunebot/store"
)

// refusals returns who's refused audit entries (all sessions) and the sum of their counts.
func refusals(t *testing.T, db *store.DB, who string) (entries int, count int64) {
	t.Helper()
	all, err := db.Audit(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.Kind == "refused" && e.Actor.ID == who {
			entries++
			n, _ := e.Detail[session.CountKey].(float64)
			count += int64(n)
		}
	}
	return entries, count
}

// TestActionFloodIsBounded: a signed-in person without the decide permission who sends
// approve after approve is refused (403) until the page's action budget is spent, then
// answered 429 without reaching the handler; the refusals are one audit line with their
// count, not one line each; other people act on.
func TestActionFloodIsBounded(t *testing.T) {
	f := newFixture(t, func(o *dashboard.Options) { o.ActionLimit = bot.RateLimit{Burst: 5, Every: time.Minute} })
	approve := "/api/sessions/" + sid + "/proposals/" + f.prop.ID + "/approve"
	e := f.signIn(t, eve)
	for i := range 5 {
		if code, v := e.act(approve, "{}"); code != http.StatusForbidden {
			t.Fatalf("approve %d within the budget: %d %v", i+1, code, v)
		}
	}
	for i := range 20 {
		resp := e.post(approve, "application/json", "{}")
		if v := decode(t, resp); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "60" || !strings.Contains(fmt.Sprint(v["error"]), "slow down") {
			t.Fatalf("approve %d past the budget: %d Retry-After %q %v", 6+i, resp.StatusCode, resp.Header.Get("Retry-After"), v)
		}
	}
	// The refusals are counted per minute: one entry, or two when the test straddles a minute.
	if entries, count := refusals(t, f.db, eve.ID); count != 5 || entries < 1 || entries > 2 {
		t.Errorf("eve's 5 refusals are %d audit entries counting %d; want one entry a minute counting 5", entries, count)
	}
	if code, v := f.signIn(t, alice).act("/api/sessions/"+sid+"/resume", "{}"); code != http.StatusOK {
		t.Errorf("another person is held back: %d %v", code, v)
	}
	// Reading has its own budget: eve still reads the page.
	if resp := e.get("/api/sessions/" + sid); resp.StatusCode != http.StatusOK {
		t.Errorf("eve reads after her actions are limited: %d", resp.StatusCode)
	}
	f.clock.add(time.Minute)
	if code, v := e.act(approve, "{}"); code != http.StatusForbidden {
		t.Errorf("a minute later: %d %v; want the refusal again", code, v)
	}
}

// TestPreferChecksPermissionFirst: someone who may not answer A/B cards learns nothing about
// which cards (or sessions) exist; someone who may is told the card does not exist.
func TestPreferChecksPermissionFirst(t *testing.T) {
	f := newFixture(t)
	e := f.signIn(t, eve)
	for _, path := range []string{"/api/sessions/" + sid + "/prefer", "/api/sessions/nope/prefer"} {
		code, v := e.act(path, `{"card":"7","answer":"a"}`)
		if text := fmt.Sprint(v["text"], v["error"]); code != http.StatusForbidden || !strings.Contains(text, "not allowed") || strings.Contains(text, "exist") {
			t.Errorf("eve answers card 7 at %s: %d %v; want a refusal that says nothing of the card", path, code, v)
		}
	}
	if entries, _ := refusals(t, f.db, eve.ID); entries == 0 {
		t.Error("eve's refusal is not audited")
	}
	code, v := f.signIn(t, alice).act("/api/sessions/"+sid+"/prefer", `{"card":"7","answer":"a"}`)
	if code != http.StatusConflict || !strings.Contains(fmt.Sprint(v["text"]), "does not exist") {
		t.Errorf("alice answers card 7: %d %v", code, v)
	}
}

// TestEveryActionChecksPermissionFirst: someone who may not act gets the same refusal for
// an existing session and a missing one, a valid body and a broken one, on every page
// action (pause answered 403 for one and 404 for the other; review checked the body first,
// 400 against 404; issue 36).
func TestEveryActionChecksPermissionFirst(t *testing.T) {
	f := newFixture(t, func(o *dashboard.Options) { o.ActionLimit = bot.RateLimit{Burst: 100, Every: time.Second} })
	e := f.signIn(t, eve)
	for _, tc := range []struct{ path, body string }{
		{"/api/sessions/%s/pause", "{}"},
		{"/api/sessions/%s/resume", "{}"},
		{"/api/sessions/%s/cancel", "{}"},
		{"/api/sessions/%s/review", `{"action":"go"}`},
		{"/api/sessions/%s/review", `{"action":"nonsense"}`},
		{"/api/sessions/%s/review", `{"action":"promote","trial":"x"}`},
		{"/api/sessions/%s/review", `not json`},
		{"/api/sessions/%s/prefer", `{"answer":"maybe"}`},
		{"/api/sessions/%s/proposals/p-none/approve", "{}"},
		{"/api/sessions/%s/proposals/p-none/reject", `{"feedback":""}`},
		{"/api/sessions/%s/proposals/p-none/edit", `[1]`},
	} {
		var answers []string
		for _, id := range []string{sid, sid[:4], "nope"} {
			code, v := e.act(fmt.Sprintf(tc.path, id), tc.body)
			text := fmt.Sprint(v["text"], v["error"])
			if code != http.StatusForbidden || !strings.Contains(text, "not allowed") {
				t.Errorf("eve posts %s to %s: %d %v; want a refusal", tc.body, fmt.Sprintf(tc.path, id), code, v)
			}
			answers = append(answers, fmt.Sprint(code, text))
		}
		if answers[0] != answers[1] || answers[0] != answers[2] {
			t.Errorf("%s %s: the answers tell the sessions apart: %q", tc.path, tc.body, answers)
		}
	}
	// The refusals are audited, under the session when the id names one, and under no
	// session for an id made up.
	if all, err := f.db.Audit(context.Background(), "nope"); err != nil || len(all) != 0 {
		t.Errorf("refusals audited under a made-up session: %v %v", all, err)
	}
	if all, _ := f.db.Audit(context.Background(), sid); !strings.Contains(fmt.Sprint(all), "refused") {
		t.Errorf("the refusals for session %s are not audited under it", sid)
	}
	for _, tc := range []struct{ path, body string }{{"/api/start", `{"args":"a\nb"}`}, {"/api/agent", "{}"}} {
		if code, v := e.act(tc.path, tc.body); code != http.StatusForbidden || !strings.Contains(fmt.Sprint(v["text"]), "not allowed") {
			t.Errorf("eve posts %s to %s: %d %v; want a refusal", tc.body, tc.path, code, v)
		}
	}
}

// wholeAudit is the fixture's store, counting reads of a whole audit log.
type wholeAudit struct {
	*store.DB
	reads atomic.Int32
}

func (w *wholeAudit) Audit(ctx context.Context, id string) ([]session.AuditEntry, error) {
	w.reads.Add(1)
	return w.DB.Audit(ctx, id)
}

// TestSessionViewReadsTheNewestAudit: the session view (polled every 3 s) reads only the
// newest entries of the audit log, never the whole log, and shows them newest first.
func TestSessionViewReadsTheNewestAudit(t *testing.T) {
	var st *wholeAudit
	f := newFixture(t, func(o *dashboard.Options) {
		st = &wholeAudit{DB: o.Store.(*store.DB)}
		o.Store = st
	})
	ctx := context.Background()
	for i := range 600 {
		if err := f.db.Append(ctx, session.AuditEntry{SessionID: sid, Kind: "note", Actor: session.System, Detail: map[string]any{"i": i}}); err != nil {
			t.Fatal(err)
		}
	}
	v := decode(t, f.signIn(t, alice).get("/api/sessions/"+sid))
	audit, _ := v["audit"].([]any)
	if len(audit) != 500 {
		t.Fatalf("%d audit entries shown, want the newest 500", len(audit))
	}
	first, last := audit[0].(map[string]any), audit[499].(map[string]any)
	if fmt.Sprint(first["detail"].(map[string]any)["i"]) != "599" || fmt.Sprint(last["detail"].(map[string]any)["i"]) != "100" {
		t.Errorf("shown from %v to %v; want entries 599 down to 100", first["detail"], last["detail"])
	}
	if n := st.reads.Load(); n != 0 {
		t.Errorf("the session view read the whole audit log %d times", n)
	}
}
