package slack

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"tunebot/bot"
)

// Block Kit limits (https://api.slack.com/reference/block-kit/blocks). A card that would
// break one is truncated with a visible note rather than refused by Slack.
const (
	maxBlocks      = 50
	maxText        = 3000 // section text
	maxField       = 2000 // one section field
	maxFields      = 10   // fields per section
	maxHeader      = 150
	maxButtonLabel = 75
	maxFallback    = 4000 // the message's top-level text (notifications)
	maxContextElem = 10
)

var userID = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

// size is n bytes for people: "812 B", "3.4 KiB", "7.9 MiB".
func size(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// escape makes s inert as mrkdwn: Slack's three control characters.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func plain(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}

// codeBlock is s as a mrkdwn code block within the section limit.
func codeBlock(s string) string {
	s = strings.ReplaceAll(escape(s), "```", "'''")
	const fence, note = "```\n" + "\n```", "\n(truncated: Slack allows 3000 characters)"
	if utf8.RuneCountInString(s)+len(fence) > maxText {
		s = bot.Truncate(s, maxText-len(fence)-utf8.RuneCountInString(note)) + note
	}
	return "```\n" + s + "\n```"
}

// Mentions is the "<@U1> <@U2>" line of a card's mentions; IDs that are not Slack user
// IDs are left out, so configuration cannot inject markup.
func Mentions(ids []string) string {
	var out []string
	for _, id := range ids {
		if userID.MatchString(id) {
			out = append(out, "<@"+id+">")
		}
	}
	return strings.Join(out, " ")
}

// Render translates a card into Block Kit blocks and the message's fallback text (shown in
// notifications and where blocks cannot be). Slack's limits are respected: over-long text
// is cut, more than 10 fields are split across sections, more than 50 blocks are cut with
// a note saying so. Attachments (charts, and files such as a preset's JSON) are uploaded
// separately after the message; the card names them.
func Render(c bot.Card) ([]slack.Block, string) {
	var blocks []slack.Block
	for i, b := range c.Blocks {
		blocks = append(blocks, renderBlock(i, b)...)
	}
	m := Mentions(c.Mentions)
	if m != "" {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn("cc "+m)))
	}
	// The title is escaped whole and the mentions tunebot built are added after it: a
	// "<@U…>" or "<!channel>" in a title that quotes foreign text (a notice's reason) stays
	// text, never a ping (issue 44).
	text := bot.Truncate(escape(c.Title), maxFallback-len(m)-1)
	if m != "" {
		text += " " + m
	}
	return capBlocks(blocks), text
}

// renderBlock translates the card's i-th block into the Slack blocks that show it (none
// for an empty one).
func renderBlock(i int, b bot.Block) []slack.Block {
	switch b.Kind {
	case bot.BlockHeader:
		return []slack.Block{slack.NewHeaderBlock(plain(bot.Truncate(b.Text, maxHeader)))}
	case bot.BlockText:
		if b.Untrusted {
			// plain_text: no markup at all is interpreted in text from outside.
			return []slack.Block{slack.NewSectionBlock(plain(bot.Truncate(b.Text, maxText)), nil, nil)}
		}
		return []slack.Block{slack.NewSectionBlock(mrkdwn(bot.Truncate(escape(b.Text), maxText)), nil, nil)}
	case bot.BlockCode:
		return []slack.Block{slack.NewSectionBlock(mrkdwn(codeBlock(b.Text)), nil, nil)}
	case bot.BlockFields:
		return fieldSections(b.Fields)
	case bot.BlockTable:
		if b.Table == nil {
			return nil
		}
		return []slack.Block{tableSection(*b.Table)}
	case bot.BlockAttachments:
		return attachmentNotes(b.Attachments)
	case bot.BlockActions:
		return actionBlock(i, b.Actions)
	case bot.BlockStamp:
		if b.Stamp != nil {
			return []slack.Block{slack.NewSectionBlock(mrkdwn(bot.Truncate(":white_check_mark: "+escape(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(bot.StampLine(*b.Stamp)), "✔"))), maxText)), nil, nil)}
		}
	}
	return nil
}

// fieldSections shows fields in sections of at most maxFields, Slack's limit per section.
func fieldSections(fields []bot.Field) []slack.Block {
	var out []slack.Block
	for start := 0; start < len(fields); start += maxFields {
		var fs []*slack.TextBlockObject
		for _, f := range fields[start:min(start+maxFields, len(fields))] {
			fs = append(fs, mrkdwn(bot.Truncate("*"+escape(f.Label)+"*\n"+escape(f.Value), maxField)))
		}
		out = append(out, slack.NewSectionBlock(nil, fs, nil))
	}
	return out
}

// tableSection shows a table as monospaced text under its caption in bold.
func tableSection(t bot.Table) slack.Block {
	caption := t.Caption
	t.Caption = ""
	text := strings.TrimRight(bot.RenderText(bot.Card{Blocks: []bot.Block{{Kind: bot.BlockTable, Table: &t}}}, nil), "\n")
	head := ""
	if caption != "" {
		head = "*" + escape(caption) + "*\n"
	}
	return slack.NewSectionBlock(mrkdwn(head+codeBlock(bot.Dedent(text))), nil, nil)
}

// attachmentNotes names the clips, charts and files uploaded after the message, a line
// each.
func attachmentNotes(as []bot.Attachment) []slack.Block {
	var charts, files, clips []string
	for _, a := range as {
		switch {
		case a.ContentType == "":
			charts = append(charts, escape(a.Title))
		case bot.IsClip(a):
			clips = append(clips, escape(a.Title))
		default:
			files = append(files, fmt.Sprintf("%s (%s)", escape(fileName(a)), size(len(a.Data))))
		}
	}
	var out []slack.Block
	if len(clips) > 0 {
		out = append(out, slack.NewContextBlock("", mrkdwn(bot.Truncate(":film_frames: clip below in this thread: "+strings.Join(clips, " · "), maxText))))
	}
	if len(charts) > 0 {
		out = append(out, slack.NewContextBlock("", mrkdwn(bot.Truncate(":bar_chart: charts below in this thread: "+strings.Join(charts, " · "), maxText))))
	}
	if len(files) > 0 {
		out = append(out, slack.NewContextBlock("", mrkdwn(bot.Truncate(":page_facing_up: file below: "+strings.Join(files, " · "), maxText))))
	}
	return out
}

// actionBlock shows the card's i-th block's actions as buttons (none when it has none).
func actionBlock(i int, actions []bot.Action) []slack.Block {
	var els []slack.BlockElement
	for _, a := range actions {
		btn := slack.NewButtonBlockElement(a.ID, a.ID, plain(bot.Truncate(a.Label, maxButtonLabel)))
		switch a.Style {
		case "primary":
			btn = btn.WithStyle(slack.StylePrimary)
		case "danger":
			btn = btn.WithStyle(slack.StyleDanger)
		}
		els = append(els, btn)
	}
	if len(els) == 0 {
		return nil
	}
	return []slack.Block{slack.NewActionBlock(fmt.Sprintf("actions_%d", i), els...)}
}

// capBlocks keeps a message within maxBlocks, Slack's limit: past it, the last kept block
// is a note saying how many were left out.
func capBlocks(blocks []slack.Block) []slack.Block {
	if len(blocks) <= maxBlocks {
		return blocks
	}
	kept := blocks[:maxBlocks-1]
	return append(kept, slack.NewContextBlock("", mrkdwn(fmt.Sprintf("(%d more blocks left out: Slack shows at most %d; /tune status has the rest)", len(blocks)-len(kept), maxBlocks))))
}

// FallbackBlocks is the card as one preformatted section: what is sent when Slack refuses
// the rich blocks (invalid_blocks), so a card is never lost to a rendering problem.
// The buttons are kept: a proposal must stay decidable.
func FallbackBlocks(c bot.Card) []slack.Block {
	c.Mentions = nil
	out := []slack.Block{slack.NewSectionBlock(mrkdwn(codeBlock(bot.RenderText(c, nil))), nil, nil)}
	for _, b := range c.Blocks {
		if b.Kind == bot.BlockActions {
			acts, _ := Render(bot.Card{Blocks: []bot.Block{b}})
			out = append(out, acts...)
		}
	}
	return out
}
