package dashboard_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"tunebot/dashboard"
	"tunebot/dashboard/browsertest"
	"tunebot/session"
)

// TestCurvesPageFollowsTagPages: the curves page lists every tag of a session whose tags
// fill more than one /tags page, following next (issue 27 made /tags paged).
func TestCurvesPageFollowsTagPages(t *testing.T) {
	chromium := browsertest.Find()
	if chromium == "" {
		t.Skip("chromium is not installed (apt-get install -y chromium; .ci/run installs it): the browser test of the curves page is skipped")
	}
	f := newFixture(t)
	series := map[string][]session.Point{}
	const many = dashboard.TagsPage*2 + 100
	for i := range many {
		series[fmt.Sprintf("Flood/tag_%04d", i)] = []session.Point{{Step: 1, Value: 1}}
	}
	if err := f.db.PutSeriesBatch(context.Background(), sid, session.TrialRef{Number: 0}, series); err != nil {
		t.Fatal(err)
	}
	b, err := browsertest.Start(chromium, 1200, 900)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	const wait = 60 * time.Second // a bound for a hang, not a measurement
	do := func(what, cond string) {
		t.Helper()
		if err := b.Wait(what, cond, wait); err != nil {
			t.Fatal(err)
		}
	}
	link, _, err := f.dash.Link(alice)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(link)
	if err := b.Navigate(f.srv.URL+u.Path+"?"+u.RawQuery, wait); err != nil {
		t.Fatal(err)
	}
	do("the sign-in button", `!!document.querySelector("#signin")`)
	if _, err := b.Eval(`setTimeout(() => document.querySelector("#signin").click(), 0)`); err != nil {
		t.Fatal(err)
	}
	do("the sessions page", `location.pathname === "/" && !!document.querySelector("#sessions tbody tr")`)
	if err := b.Navigate(f.srv.URL+"/sessions/"+sid+"/curves", wait); err != nil {
		t.Fatal(err)
	}
	do("the tag list", `document.querySelectorAll(".tag-pick").length > 0`)
	// The fixture's Train/mean_reward sorts after the flood, on the last page.
	want := fmt.Sprint(many + 1)
	do("every tag, "+want, `String(document.querySelectorAll(".tag-pick").length) === "`+want+`" && !!document.querySelector('.tag-pick[data-tag="Train/mean_reward"]')`)
	// Every tag of three trials is more curves than one request may ask for: the refusal is
	// said where the charts go, and the lists stay so a person can choose fewer.
	do("the refusal beside the lists", `!!document.querySelector("#curves-error") && document.querySelector("#curves-error").textContent.includes("more than 1000 curves at once") && document.querySelectorAll(".tag-pick").length === `+want)
}
