package discord

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"tunebot/bot"
)

// Discord's message limits (https://discord.com/developers/docs/resources/message and
// …/channel#embed-object-embed-limits). A card that does not fit is split across messages
// or shrunk with a visible mark; nothing is dropped without saying so in the message.
const (
	MaxContent          = 2000
	MaxEmbeds           = 10
	MaxEmbedTitle       = 256
	MaxEmbedDescription = 4096
	MaxEmbedFields      = 25
	MaxFieldName        = 256
	MaxFieldValue       = 1024
	MaxEmbedTotal       = 6000 // all embeds of one message together
	MaxRows             = 5
	MaxButtons          = 5 // per row
	MaxFiles            = 10
	// DefaultMaxUpload is the upload limit of a server without boosts: 10 MiB. It bounds
	// each file and, to be safe, the files of one message together.
	DefaultMaxUpload = 10 << 20

	// maxFieldShare is how much of an embed's 6000 its fields may take.
	maxFieldShare = 3000
)

// Part is one Discord message of a rendered card.
type Part struct {
	Content    string
	Embeds     []*discordgo.MessageEmbed
	Components []discordgo.MessageComponent
	Files      []bot.Attachment
	// Mentions are the user IDs the message may ping; nothing else in it can.
	Mentions []string
}

// RenderOptions tune Render; the zero value uses Discord's defaults.
type RenderOptions struct {
	MaxUpload int // bytes per file and per message (default DefaultMaxUpload)
}

// Render turns a card into one or more messages within Discord's limits: the title, the
// fields and the text in a rich embed, tables and code as monospace blocks, each chart as
// an embed showing its attached PNG, other files (Attachment.ContentType set: a preset's
// JSON, a policy) attached as files under their names, buttons in rows of five. Anything
// over the upload limit is left out with a note saying so. The first part carries the
// mentions and the buttons, so editing it in place updates what people act on.
func Render(c bot.Card, opt RenderOptions) []Part {
	if opt.MaxUpload <= 0 {
		opt.MaxUpload = DefaultMaxUpload
	}
	color := colorOf(c)
	b := readBlocks(c, opt.MaxUpload, color)
	parts := packParts(describe(b.main, b.sections, color), b.charts, b.docs, color, opt.MaxUpload)
	parts[0].Components = b.components
	mention(&parts[0], c.Mentions)
	if len(parts) > 1 {
		for i := range parts {
			if e := parts[i].Embeds; len(e) > 0 {
				e[len(e)-1].Footer = &discordgo.MessageEmbedFooter{Text: fmt.Sprintf("part %d of %d", i+1, len(parts))}
			}
		}
	}
	return parts
}

// body is a card read block by block: the main embed (title and fields), the text sections
// for the embeds' descriptions, the buttons, the charts and other files to attach.
type body struct {
	main       *discordgo.MessageEmbed
	sections   []string
	components []discordgo.MessageComponent
	charts     []bot.Attachment
	docs       []bot.Attachment
}

// readBlocks sorts a card's blocks into a body; what cannot be shown (an empty or too large
// file, buttons past Discord's rows) ends the sections as a "⚠" note.
func readBlocks(c bot.Card, maxUpload, color int) body {
	out := body{main: &discordgo.MessageEmbed{Title: bot.Truncate(c.Title, MaxEmbedTitle), Color: color}}
	main := out.main
	var notes []string
	titled := false
	for _, b := range c.Blocks {
		switch b.Kind {
		case bot.BlockHeader:
			if !titled && b.Text != "" {
				main.Title, titled = bot.Truncate(b.Text, MaxEmbedTitle), true
			} else {
				out.sections = append(out.sections, "**"+escape(b.Text)+"**")
			}
		case bot.BlockText:
			if b.Untrusted {
				out.sections = append(out.sections, quote(escape(b.Text)))
			} else {
				out.sections = append(out.sections, b.Text)
			}
		case bot.BlockCode:
			out.sections = append(out.sections, codeBlock(b.Text))
		case bot.BlockFields:
			out.addFields(b.Fields)
		case bot.BlockTable:
			if b.Table != nil {
				out.sections = append(out.sections, tableSection(*b.Table))
			}
		case bot.BlockAttachments:
			notes = append(notes, out.addAttachments(b.Attachments, maxUpload)...)
		case bot.BlockActions:
			out.components = append(out.components, buttons(b.Actions, false, &notes)...)
		case bot.BlockStamp:
			if b.Stamp != nil {
				line := strings.TrimSpace(bot.StampLine(bot.Stamp{By: b.Stamp.By, Action: b.Stamp.Action, At: b.Stamp.At}))
				if b.Stamp.Feedback != "" {
					line += "\n" + quote(escape(b.Stamp.Feedback))
				}
				out.sections = append(out.sections, "**"+strings.TrimPrefix(line, "✔ ")+"**")
				out.components = append(out.components, decidedButtons(c.Ref)...)
			}
		}
	}
	for _, n := range notes {
		out.sections = append(out.sections, "⚠ "+n)
	}
	if main.Title == "" && c.Title == "" && len(out.sections) == 0 && len(main.Fields) == 0 {
		main.Title = "(empty message)"
	}
	return out
}

// addFields puts fields in the main embed; as fields count towards the 6000 characters of
// the message, past MaxEmbedFields or a share of it they become lines of the text, which
// can go on in further embeds.
func (out *body) addFields(fields []bot.Field) {
	main := out.main
	for _, f := range fields {
		if len(main.Fields) == MaxEmbedFields || embedSize(main)+utf8.RuneCountInString(f.Label)+min(utf8.RuneCountInString(f.Value), MaxFieldValue) > maxFieldShare {
			out.sections = append(out.sections, "**"+escape(f.Label)+"**: "+f.Value)
			continue
		}
		main.Fields = append(main.Fields, &discordgo.MessageEmbedField{
			Name: bot.Truncate(orDash(f.Label), MaxFieldName), Value: bot.Truncate(orDash(f.Value), MaxFieldValue),
			Inline: utf8.RuneCountInString(f.Value) <= 40})
	}
}

// addAttachments attaches the charts and files it can and returns a note for each it
// cannot: an empty one, or one over maxUpload bytes (Discord's upload limit), which the
// note links to on the monitoring page when it can.
func (out *body) addAttachments(as []bot.Attachment, maxUpload int) (notes []string) {
	for _, a := range as {
		what := a.Kind()
		switch {
		case len(a.Data) == 0:
			notes = append(notes, fmt.Sprintf("%s %s is missing its content", what, a.Name))
		case len(a.Data) > maxUpload:
			note := fmt.Sprintf("%s %s left out: %.1f MiB is over Discord's %.0f MiB upload limit", what, a.Name, float64(len(a.Data))/(1<<20), float64(maxUpload)/(1<<20))
			if a.Link != "" {
				note += "; see it on the monitoring page: " + a.Link
			}
			notes = append(notes, note)
		case a.ContentType != "":
			// A file (a preset's JSON, a policy, a clip) is attached as it is, under
			// its own name: Discord plays a video and animates a GIF inline.
			a.Name = docName(a.Name, out.docs)
			out.docs = append(out.docs, a)
		default:
			a.Name = fileName(a.Name, len(out.charts))
			out.charts = append(out.charts, a)
		}
	}
	return notes
}

// tableSection is a table as a monospace block under its caption in bold.
func tableSection(t bot.Table) string {
	caption := t.Caption
	t.Caption = ""
	text := bot.RenderText(bot.Card{Blocks: []bot.Block{{Kind: bot.BlockTable, Table: &t}}}, nil)
	s := codeBlock(bot.Dedent(text))
	if caption != "" {
		s = "**" + escape(caption) + "**\n" + s
	}
	return s
}

// describe writes the sections into the main embed's description and, once it is full,
// into further embeds of the same colour.
func describe(main *discordgo.MessageEmbed, sections []string, color int) []*discordgo.MessageEmbed {
	embeds := []*discordgo.MessageEmbed{main}
	for _, s := range splitSections(sections, MaxEmbedDescription) {
		last := embeds[len(embeds)-1]
		n := utf8.RuneCountInString(s)
		if last.Description != "" {
			n += 2
		}
		if utf8.RuneCountInString(last.Description)+n <= MaxEmbedDescription && embedSize(last)+n <= MaxEmbedTotal {
			if last.Description != "" {
				last.Description += "\n\n"
			}
			last.Description += s
			continue
		}
		embeds = append(embeds, &discordgo.MessageEmbed{Description: s, Color: color})
	}
	shrinkEmbed(main)
	return embeds
}

// packParts fills messages in order with the embeds, then each chart as an embed showing
// its file, starting a new message when one is full; other files follow.
func packParts(embeds []*discordgo.MessageEmbed, charts, docs []bot.Attachment, color, maxUpload int) []Part {
	parts := []Part{{}}
	size := 0
	bytes := 0
	add := func(e *discordgo.MessageEmbed, file *bot.Attachment) {
		p := &parts[len(parts)-1]
		n := embedSize(e)
		full := len(p.Embeds) == MaxEmbeds || size+n > MaxEmbedTotal && len(p.Embeds) > 0
		if file != nil {
			full = full || len(p.Files) == MaxFiles || bytes+len(file.Data) > maxUpload && len(p.Files) > 0
		}
		if full {
			parts = append(parts, Part{})
			p, size, bytes = &parts[len(parts)-1], 0, 0
		}
		p.Embeds = append(p.Embeds, e)
		size += n
		if file != nil {
			p.Files = append(p.Files, *file)
			bytes += len(file.Data)
		}
	}
	for _, e := range embeds {
		add(e, nil)
	}
	for i := range charts {
		a := charts[i]
		add(&discordgo.MessageEmbed{Title: bot.Truncate(a.Title, MaxEmbedTitle), Color: color,
			Image: &discordgo.MessageEmbedImage{URL: "attachment://" + a.Name}}, &a)
	}
	return attachDocs(parts, docs, color, maxUpload)
}

// attachDocs puts files on the first message with room for them; one that fits nowhere
// gets a message of its own, titled by the file.
func attachDocs(parts []Part, docs []bot.Attachment, color, maxUpload int) []Part {
	for _, d := range docs {
		placed := false
		for i := range parts {
			if len(parts[i].Files) < MaxFiles && partBytes(parts[i])+len(d.Data) <= maxUpload {
				parts[i].Files = append(parts[i].Files, d)
				placed = true
				break
			}
		}
		if !placed {
			title := d.Title
			if title == "" {
				title = d.Name
			}
			parts = append(parts, Part{Embeds: []*discordgo.MessageEmbed{{Title: bot.Truncate(title, MaxEmbedTitle), Color: color}}, Files: []bot.Attachment{d}})
		}
	}
	return parts
}

// mention puts the card's mentions in the part's content as <@id> pings, as many as fit;
// an ID that is not a snowflake is left out.
func mention(p *Part, mentions []string) {
	if len(mentions) == 0 {
		return
	}
	var b strings.Builder
	for _, m := range mentions {
		if !snowflake.MatchString(m) {
			continue // a mention is <@digits>; anything else would be text, not a ping
		}
		tok := "<@" + m + ">"
		if b.Len()+len(tok)+1 > MaxContent {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(tok)
		p.Mentions = append(p.Mentions, m)
	}
	p.Content = b.String()
}

var snowflake = regexp.MustCompile(`^[0-9]{1,20}$`)

func colorOf(c bot.Card) int {
	switch {
	case c.Urgent:
		return 0xE67E22 // orange: someone should act
	case c.Kind == "root":
		return 0x3498DB
	case c.Kind == "trial":
		if strings.Contains(c.Title, "failed") {
			return 0xE74C3C
		}
		return 0x2ECC71
	case c.Kind == "summary":
		return 0x9B59B6
	case c.Kind == "proposal":
		return 0x95A5A6
	}
	return 0x7F8C8D
}

// buttons lays actions out in rows of five; what does not fit in five rows is named in
// notes (the thread-reply verbs still work).
func buttons(actions []bot.Action, disabled bool, notes *[]string) []discordgo.MessageComponent {
	var rows []discordgo.MessageComponent
	var row []discordgo.MessageComponent
	for i, a := range actions {
		if i >= MaxRows*MaxButtons {
			*notes = append(*notes, fmt.Sprintf("%d buttons left out (Discord shows at most %d)", len(actions)-i, MaxRows*MaxButtons))
			break
		}
		style := discordgo.SecondaryButton
		switch a.Style {
		case "primary":
			style = discordgo.PrimaryButton
		case "danger":
			style = discordgo.DangerButton
		}
		row = append(row, discordgo.Button{Label: bot.Truncate(a.Label, 80), Style: style, CustomID: a.ID, Disabled: disabled})
		if len(row) == MaxButtons {
			rows = append(rows, discordgo.ActionsRow{Components: row})
			row = nil
		}
	}
	if len(row) > 0 {
		rows = append(rows, discordgo.ActionsRow{Components: row})
	}
	return rows
}

// decidedButtons are a decided proposal's buttons, disabled: people see the same card
// with the stamp, and nothing left to click. The IDs come from the card's Ref
// ("s/<session>/proposal/<id>"), the only place a stamped card names its proposal.
func decidedButtons(ref string) []discordgo.MessageComponent {
	p := strings.Split(ref, "/")
	if len(p) != 4 || p[0] != "s" || p[2] != "proposal" {
		return nil
	}
	var acts []bot.Action
	for _, v := range []struct{ verb, label string }{{bot.ButtonApprove, "Approve"}, {bot.ButtonReject, "Reject"}, {bot.ButtonEdit, "Edit"}, {bot.ButtonPause, "Pause"}} {
		acts = append(acts, bot.Action{ID: bot.ActionID(v.verb, p[1], p[3]), Label: v.label})
	}
	var notes []string
	return buttons(acts, true, &notes)
}

// splitSections packs sections into chunks of at most n runes, splitting a section that
// alone is longer at line ends (code blocks are closed and reopened at the cut).
func splitSections(sections []string, n int) []string {
	var out []string
	for _, s := range sections {
		if utf8.RuneCountInString(s) <= n {
			out = append(out, s)
			continue
		}
		code := strings.HasPrefix(s, "```\n") && strings.HasSuffix(s, "\n```")
		body := s
		if code {
			body = strings.TrimSuffix(strings.TrimPrefix(s, "```\n"), "\n```")
		}
		wrap := func(x string) string {
			if code {
				return "```\n" + x + "\n```"
			}
			return x
		}
		budget := n - 8 // room for the fences
		var cur strings.Builder
		for _, line := range strings.Split(body, "\n") {
			for utf8.RuneCountInString(line) > budget {
				r := []rune(line)
				if cur.Len() > 0 {
					out = append(out, wrap(cur.String()))
					cur.Reset()
				}
				out = append(out, wrap(string(r[:budget])))
				line = string(r[budget:])
			}
			if cur.Len() > 0 && utf8.RuneCountInString(cur.String())+1+utf8.RuneCountInString(line) > budget {
				out = append(out, wrap(cur.String()))
				cur.Reset()
			}
			if cur.Len() > 0 {
				cur.WriteByte('\n')
			}
			cur.WriteString(line)
		}
		if cur.Len() > 0 {
			out = append(out, wrap(cur.String()))
		}
	}
	return out
}

// shrinkEmbed keeps one embed under the total limit by cutting its description, marked.
func shrinkEmbed(e *discordgo.MessageEmbed) {
	if over := embedSize(e) - MaxEmbedTotal; over > 0 {
		d := []rune(e.Description)
		keep := max(0, len(d)-over-40)
		e.Description = string(d[:keep]) + "\n… (shortened to fit Discord's limits)"
	}
}

func embedSize(e *discordgo.MessageEmbed) int {
	n := utf8.RuneCountInString(e.Title) + utf8.RuneCountInString(e.Description)
	for _, f := range e.Fields {
		n += utf8.RuneCountInString(f.Name) + utf8.RuneCountInString(f.Value)
	}
	if e.Footer != nil {
		n += utf8.RuneCountInString(e.Footer.Text)
	}
	return n + 30 // room for a "part i of n" footer added later
}

var markdown = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "|", `\|`, ">", `\>`)

// escape makes text from outside literal in Discord markdown; bot.Neutralise has already
// broken mentions and links.
func escape(s string) string { return markdown.Replace(s) }

func quote(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

func codeBlock(s string) string {
	return "```\n" + strings.ReplaceAll(strings.TrimRight(s, "\n"), "```", "'''") + "\n```"
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func partBytes(p Part) int {
	n := 0
	for _, f := range p.Files {
		n += len(f.Data)
	}
	return n
}

// docName is a file's name made safe for a multipart upload, kept as given otherwise (a
// person saves it under that name), and made unique among the card's files.
func docName(name string, taken []bot.Attachment) string {
	n := strings.Trim(unsafeName.ReplaceAllString(name, "_"), "._")
	if n == "" {
		n = "file"
	}
	n = bot.Truncate(n, 100)
	for i, unique := 1, n; ; i++ {
		clash := false
		for _, t := range taken {
			clash = clash || t.Name == unique
		}
		if !clash {
			return unique
		}
		unique = fmt.Sprintf("%d-%s", i+1, n)
	}
}

// fileName is a safe, unique attachment name: Discord refers to it from the embed as
// attachment://name, which only works for plain names.
func fileName(name string, i int) string {
	n := strings.Trim(unsafeName.ReplaceAllString(name, "_"), "._")
	if n == "" {
		n = "chart"
	}
	if !strings.HasSuffix(strings.ToLower(n), ".png") {
		n += ".png"
	}
	return fmt.Sprintf("%02d-%s", i+1, bot.Truncate(n, 80))
}
