package bot_test

import (
	"strings"
	"testing"

	"tunebot/bot"
	"tunebot/session"
)

// TestCardsNameMetricsAsThePageDoes: a trial's metrics beside its clip (the A/B card and
// the summary, in the terminal and in chat) carry session's display names, the ones the
// page and the charts show, and a param in a diff reads as the page and the commands
// write it (issue 28).
func TestCardsNameMetricsAsThePageDoes(t *testing.T) {
	m := session.Metrics{}
	for i, name := range session.MetricNames {
		m[name] = 0.1 * float64(i+1)
	}
	text := bot.RenderText(bot.Card{Blocks: bot.ClipBlocks(bot.ClipSide{Trial: session.Trial{Number: 3, Metrics: m}, Label: "A"})}, nil)
	for _, name := range session.MetricNames {
		if !strings.Contains(text, session.MetricLabel(name)+" ") {
			t.Errorf("the card does not name %s %q:\n%s", name, session.MetricLabel(name), text)
		}
	}
	diff := bot.RenderText(bot.Card{Blocks: []bot.Block{{Kind: bot.BlockTable, Table: bot.DiffTable("diff", []session.Change{{Kind: "param", Name: "pose.x", Old: 1, New: 2}})}}}, nil)
	if !strings.Contains(diff, session.ParamLabel("pose.x")) {
		t.Errorf("a param in a diff:\n%s", diff)
	}
}
