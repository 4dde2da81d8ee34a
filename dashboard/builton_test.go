package dashboard_test

import (
	"context"
	"testing"

	"tunebot/session"
)

// TestSessionPageLinksTheSessionItBuiltOn: a session built on an earlier one says so on
// its page, with a link to the earlier session's page.
func TestSessionPageLinksTheSessionItBuiltOn(t *testing.T) {
	f := newFixture(t)
	const earlier = "9f8e7d6c5b4a39281706"
	if _, err := f.db.UpdateSession(context.Background(), sid, func(s *session.Session) error {
		s.BuiltOn = &session.BuiltOn{Session: earlier, Trials: 11, Weight: 0.5, Start: session.FromBest, Trial: 7}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c := f.signIn(t, alice)
	v := decode(t, c.get("/api/sessions/"+sid))
	if b, _ := v["session"].(map[string]any)["built_on"].(map[string]any); b["id"] != earlier {
		t.Fatalf("the session view's built_on is %v, want the earlier session %s", v["session"], earlier)
	}
	b := signedInBrowser(t, f, alice, "the session page")
	b.open("/sessions/" + sid)
	b.do("the built-on line", `!!document.querySelector("#built-on a")`)
	text, _ := b.String(`document.querySelector("#built-on").textContent`)
	href, _ := b.String(`document.querySelector("#built-on a").getAttribute("href")`)
	if want := "builds on session 9f8e7d6c: 11 trials, each weighted 0.5, starting from its best configuration (trial 7)"; text != want || href != "/sessions/"+earlier {
		t.Errorf("the page says %q linking %q; want %q linking /sessions/%s", text, href, want, earlier)
	}
}
