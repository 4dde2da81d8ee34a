package bot_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"tunebot/bot"
	"tunebot/session"
)

// A trial report links to the trial on the monitoring page when the page has a public
// address, and says nothing of a page otherwise.
func TestTrialReportLinksToThePage(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	s := fixtureSession()
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	trial := fixtureTrials()[2]
	trial.SessionID = s.ID
	e := session.Event{Kind: session.EventTrialFinished, Session: s, Trial: &trial}
	text := func(r bot.Rendered) string {
		var b strings.Builder
		for _, c := range r.Thread {
			for _, bl := range c.Blocks {
				b.WriteString(bl.Text + "\n")
			}
		}
		return b.String()
	}
	plain := &bot.Renderer{Records: db, Space: session.DefaultSpace()}
	if got := text(plain.Render(ctx, e, "slack")); strings.Contains(got, "monitoring page") {
		t.Errorf("a link without a public address:\n%s", got)
	}
	linked := &bot.Renderer{Records: db, Space: session.DefaultSpace(), TrialURL: func(id string, n, r int) string {
		return fmt.Sprintf("https://tune.example.com/sessions/%s?trial=%d@%d", id, n, r)
	}}
	want := "https://tune.example.com/sessions/" + s.ID + "?trial=2@0"
	if got := text(linked.Render(ctx, e, "slack")); !strings.Contains(got, want) {
		t.Errorf("trial report without %s:\n%s", want, got)
	}
}
