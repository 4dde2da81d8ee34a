package dashboard_test

import (
	"context"
	"fmt"
	"testing"

	"tunebot/dashboard"
	"tunebot/session"
)

// TestCurvesPageFollowsTagPages: the curves page lists every tag of a session whose tags
// fill more than one /tags page, following next (issue 27 made /tags paged).
func TestCurvesPageFollowsTagPages(t *testing.T) {
	f := newFixture(t)
	series := map[string][]session.Point{}
	const many = dashboard.TagsPage*2 + 100
	for i := range many {
		series[fmt.Sprintf("Flood/tag_%04d", i)] = []session.Point{{Step: 1, Value: 1}}
	}
	if err := f.db.PutSeriesBatch(context.Background(), sid, session.TrialRef{Number: 0}, series); err != nil {
		t.Fatal(err)
	}
	b := signedInBrowser(t, f, alice, "the curves page")
	do := b.do
	b.open("/sessions/" + sid + "/curves")
	do("the tag list", `document.querySelectorAll(".tag-pick").length > 0`)
	// The fixture's Train/mean_reward sorts after the flood, on the last page.
	want := fmt.Sprint(many + 1)
	do("every tag, "+want, `String(document.querySelectorAll(".tag-pick").length) === "`+want+`" && !!document.querySelector('.tag-pick[data-tag="Train/mean_reward"]')`)
	// Every tag of three trials is more curves than one request may ask for: the refusal is
	// said where the charts go, and the lists stay so a person can choose fewer.
	do("the refusal beside the lists", `!!document.querySelector("#curves-error") && document.querySelector("#curves-error").textContent.includes("more than 1000 curves at once") && document.querySelectorAll(".tag-pick").length === `+want)
}
