package slack_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"tunebot/bot"
	slackbot "tunebot/bot/slack"
)

// TestRenderRespectsBlockKitLimits: whatever a card holds, the blocks stay within Slack's
// limits, and what is cut says so.
func TestRenderRespectsBlockKitLimits(t *testing.T) {
	many := func(n int, b bot.Block) []bot.Block {
		out := make([]bot.Block, n)
		for i := range out {
			out[i] = b
		}
		return out
	}
	var fields []string
	for i := range 23 {
		fields = append(fields, fmt.Sprintf("label %d", i), "value")
	}
	for _, tc := range []struct {
		name  string
		card  bot.Card
		check func(t *testing.T, blocks []map[string]any, js string)
	}{
		{"60 blocks are cut to 50 with a note", bot.Card{Title: "t", Blocks: many(60, bot.Text("x"))}, func(t *testing.T, b []map[string]any, js string) {
			if len(b) != 50 || !strings.Contains(js, "more blocks left out") {
				t.Errorf("%d blocks", len(b))
			}
		}},
		{"23 fields become sections of at most 10", bot.Card{Title: "t", Blocks: []bot.Block{bot.Fields(fields...)}}, func(t *testing.T, b []map[string]any, js string) {
			if len(b) != 3 {
				t.Fatalf("%d sections", len(b))
			}
			for _, s := range b {
				if n := len(s["fields"].([]any)); n > 10 {
					t.Errorf("%d fields in a section", n)
				}
			}
		}},
		{"long text is cut to 3000", bot.Card{Title: "t", Blocks: []bot.Block{bot.Text(strings.Repeat("é", 5000)), {Kind: bot.BlockCode, Text: strings.Repeat("x", 5000)}}}, func(t *testing.T, b []map[string]any, js string) {
			for _, s := range b {
				txt := s["text"].(map[string]any)["text"].(string)
				if utf8.RuneCountInString(txt) > 3000 {
					t.Errorf("text of %d runes", utf8.RuneCountInString(txt))
				}
			}
			if !strings.Contains(js, "truncated") {
				t.Error("the cut code block does not say so")
			}
		}},
		{"untrusted text is plain_text; markup is escaped elsewhere", bot.Card{Title: "t", Blocks: []bot.Block{bot.UntrustedText("<!channel> *bold*", 100), bot.Text("a < b & c")}}, func(t *testing.T, b []map[string]any, js string) {
			if b[0]["text"].(map[string]any)["type"] != "plain_text" {
				t.Errorf("untrusted text rendered as %v", b[0]["text"])
			}
			if got := b[1]["text"].(map[string]any)["text"]; got != "a &lt; b &amp; c" {
				t.Errorf("escaped %q", got)
			}
		}},
		{"buttons carry the action ID and style", bot.Card{Title: "t", Blocks: []bot.Block{{Kind: bot.BlockActions, Actions: []bot.Action{
			{ID: bot.ActionID(bot.ButtonApprove, "s1", "p1"), Label: "Approve", Style: "primary"},
			{ID: bot.ActionID(bot.ButtonReject, "s1", "p1"), Label: "Reject", Style: "danger"}}}}}, func(t *testing.T, b []map[string]any, js string) {
			for _, want := range []string{`"action_id":"tune:approve:s1:p1"`, `"style":"primary"`, `"action_id":"tune:reject:s1:p1"`, `"style":"danger"`} {
				if !strings.Contains(js, want) {
					t.Errorf("lacks %s", want)
				}
			}
		}},
		{"mentions keep only Slack user IDs", bot.Card{Title: "t", Mentions: []string{"UALICE", "<!everyone>", "bob"}}, func(t *testing.T, b []map[string]any, js string) {
			if !strings.Contains(js, "<@UALICE>") || strings.Contains(js, "everyone") || strings.Contains(js, "bob") {
				t.Errorf("mentions rendered as %s", js)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, _ := slackbot.Render(tc.card)
			raw, err := json.Marshal(blocks)
			if err != nil {
				t.Fatal(err)
			}
			var generic []map[string]any
			if err := json.Unmarshal(raw, &generic); err != nil {
				t.Fatal(err)
			}
			js := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(raw))
			tc.check(t, generic, js)
		})
	}
}

// TestSlackMentionInForeignTextDoesNotPing: a notice's title quotes foreign text (a
// trainer's failure reason, an advisor's error); "<@U0ATTACK>" in it was escaped and then
// turned back into a mention with the card's own, pinging whoever it named (issue 44,
// table item 9). Only the mentions tunebot put on the card are live.
func TestSlackMentionInForeignTextDoesNotPing(t *testing.T) {
	title := "session ab12cd34 failed: exit status 1; train.log ends: <@U0ATTACK> <!channel> <!here> <@W0OTHER|x> & more"
	_, text := slackbot.Render(bot.Card{Kind: "notice", Title: title, Mentions: []string{"U0OWNER1"}})
	for _, live := range []string{"<@U0ATTACK>", "<!channel>", "<!here>", "<@W0OTHER"} {
		if strings.Contains(text, live) {
			t.Errorf("the message text keeps %s live: %q", live, text)
		}
	}
	if !strings.HasSuffix(text, " <@U0OWNER1>") || !strings.Contains(text, "&lt;@U0ATTACK&gt; &lt;!channel&gt;") || !strings.Contains(text, "&amp; more") {
		t.Errorf("text %q: want the title escaped and the owner's mention live", text)
	}
}
