package slack

import (
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"tunebot/bot"
)

// TestCapBlocks: a message keeps within Slack's 50 blocks, the last kept one saying how
// many were left out.
func TestCapBlocks(t *testing.T) {
	cases := []struct {
		in, wantLen int
		wantNote    string
	}{
		{0, 0, ""},
		{maxBlocks, maxBlocks, ""},
		{maxBlocks + 1, maxBlocks, "(2 more blocks left out: Slack shows at most 50;"},
		{80, maxBlocks, "(31 more blocks left out"},
	}
	for _, c := range cases {
		var in []slack.Block
		for range c.in {
			in = append(in, slack.NewDividerBlock())
		}
		got := capBlocks(in)
		if len(got) != c.wantLen {
			t.Fatalf("capBlocks(%d blocks) kept %d, want %d", c.in, len(got), c.wantLen)
		}
		if c.wantNote == "" {
			continue
		}
		ctx, ok := got[len(got)-1].(*slack.ContextBlock)
		if !ok || len(ctx.ContextElements.Elements) != 1 {
			t.Fatalf("capBlocks(%d blocks) ends with %T, want the note", c.in, got[len(got)-1])
		}
		if text := ctx.ContextElements.Elements[0].(*slack.TextBlockObject).Text; !strings.HasPrefix(text, c.wantNote) {
			t.Errorf("note = %q, want it to begin %q", text, c.wantNote)
		}
	}
}

// TestCardRef: a card's message is recorded under its own reference, else the delivery's
// key, else the delivery, so a retry edits rather than posts twice.
func TestCardRef(t *testing.T) {
	cases := []struct {
		name string
		d    bot.Delivery
		want string
	}{
		{"the card's reference", bot.Delivery{ID: 7, Key: "k", Message: bot.Message{Card: bot.Card{Ref: "s/1/proposal/2"}}}, "s/1/proposal/2"},
		{"the delivery's key", bot.Delivery{ID: 7, Key: "k"}, "k"},
		{"the delivery", bot.Delivery{ID: 7}, "outbox/7"},
	}
	for _, c := range cases {
		if got := cardRef(c.d); got != c.want {
			t.Errorf("%s: cardRef = %q, want %q", c.name, got, c.want)
		}
	}
}
