package dashboard_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"tunebot/dashboard/browsertest"
	"tunebot/session"
)

// TestSessionPageLinksTheSessionItBuiltOn: a session built on an earlier one says so on
// its page, with a link to the earlier session's page.
func TestSessionPageLinksTheSessionItBuiltOn(t *testing.T) {
	chromium := browsertest.Find()
	if chromium == "" {
		t.Skip("chromium is not installed (apt-get install -y chromium; .ci/run installs it): the browser test of the session page is skipped")
	}
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
	b, err := browsertest.Start(chromium, 1200, 900)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	const wait = 60 * time.Second // a bound for a hang, not a measurement
	link, _, err := f.dash.Link(alice)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(link)
	if err := b.Navigate(f.srv.URL+u.Path+"?"+u.RawQuery, wait); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait("the sign-in button", `!!document.querySelector("#signin")`, wait); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Eval(`setTimeout(() => document.querySelector("#signin").click(), 0)`); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait("the sessions page", `location.pathname === "/" && !!document.querySelector("#sessions tbody tr")`, wait); err != nil {
		t.Fatal(err)
	}
	if err := b.Navigate(f.srv.URL+"/sessions/"+sid, wait); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait("the built-on line", `!!document.querySelector("#built-on a")`, wait); err != nil {
		t.Fatal(err)
	}
	text, _ := b.String(`document.querySelector("#built-on").textContent`)
	href, _ := b.String(`document.querySelector("#built-on a").getAttribute("href")`)
	if want := "builds on session 9f8e7d6c: 11 trials, each weighted 0.5, starting from its best configuration (trial 7)"; text != want || href != "/sessions/"+earlier {
		t.Errorf("the page says %q linking %q; want %q linking /sessions/%s", text, href, want, earlier)
	}
}
