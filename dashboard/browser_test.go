package dashboard_test

import (
	"net/url"
	"testing"
	"time"

	"tunebot/dashboard"
	"tunebot/dashboard/browsertest"
)

// browserWait bounds a hang in the browser tests; it is not a measurement.
const browserWait = 60 * time.Second

// page is a headless Chromium signed in to a fixture's monitoring page.
type page struct {
	*browsertest.Browser
	t   *testing.T
	url string // the fixture's server
}

// signedInBrowser starts Chromium, follows who's sign-in link, presses the button and
// waits for the sessions page; where Chromium is not installed the test is skipped,
// saying that what (the page the test is about) is not tested.
func signedInBrowser(t *testing.T, f *fixture, who dashboard.Identity, what string) *page {
	t.Helper()
	chromium := browsertest.Find()
	if chromium == "" {
		t.Skip("chromium is not installed (apt-get install -y chromium; .ci/run installs it): the browser test of " + what + " is skipped")
	}
	b, err := browsertest.Start(chromium, 1200, 900)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	p := &page{Browser: b, t: t, url: f.srv.URL}
	link, _, err := f.dash.Link(who)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(link)
	p.open(u.Path + "?" + u.RawQuery)
	p.do("the sign-in button", `!!document.querySelector("#signin")`)
	if _, err := b.Eval(`setTimeout(() => document.querySelector("#signin").click(), 0)`); err != nil {
		t.Fatal(err)
	}
	p.do("the sessions page", `location.pathname === "/" && !!document.querySelector("#sessions tbody tr")`)
	return p
}

// open navigates to path on the fixture's server.
func (p *page) open(path string) {
	p.t.Helper()
	if err := p.Navigate(p.url+path, browserWait); err != nil {
		p.t.Fatal(err)
	}
}

// do waits until cond (JavaScript) holds, failing the test with what the page shows.
func (p *page) do(what, cond string) {
	p.t.Helper()
	if err := p.Wait(what, cond, browserWait); err != nil {
		p.t.Fatal(err)
	}
}
