package bot_test

import (
	"context"
	"fmt"
	"testing"

	"tunebot/bot"
	"tunebot/session"
)

// A click on Approve while the session is paused records the approval and tells the person
// that nothing runs until the session is resumed; resume then runs the approved proposal.
func TestApprovalWhilePausedSaysHowToRunIt(t *testing.T) {
	f := newFixture(t, nil) // a paused session with a pending proposal
	r := f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: alice, Kind: bot.KindAction,
		ActionID: bot.ActionID(bot.ButtonApprove, f.sid, f.prop.ID)})
	want := fmt.Sprintf("proposal %d approved by alice; the session is paused: `resume` to run it", f.prop.Seq)
	if r.Text != want || r.Private {
		t.Fatalf("approval while paused: %+v, want public %q", r, want)
	}
	if p := f.proposalState(t); p.State != session.ProposalApproved {
		t.Fatalf("proposal %s after the approval, want approved", p.State)
	}
	// A second approval is not "paused" news: it names the first.
	if r := f.reply(bob, "approve"); r.Text == want {
		t.Fatalf("late approval: %+v", r)
	}
	if r := f.reply(alice, "resume"); r.Private {
		t.Fatalf("resume: %+v", r)
	}
	if _, err := f.eng.Wait(context.Background(), f.sid); err != nil {
		t.Fatal(err)
	}
	if p := f.proposalState(t); p.State != session.ProposalUsed {
		t.Fatalf("proposal %s after resume, want used (its trial created)", p.State)
	}
}
