package bot

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// RenderText renders a card as plain text for a terminal or a push notification.
// Attachment lines show paths[i] when given (the console saves charts as files), else the
// file the attachment came from (a clip), else its name. Mentions are shown as @id.
func RenderText(c Card, paths map[string]string) string {
	var b strings.Builder
	for _, bl := range c.Blocks {
		switch bl.Kind {
		case BlockHeader:
			fmt.Fprintf(&b, "== %s ==\n", bl.Text)
		case BlockText:
			if bl.Untrusted {
				for _, line := range strings.Split(bl.Text, "\n") {
					fmt.Fprintf(&b, "  │ %s\n", line)
				}
			} else {
				fmt.Fprintf(&b, "%s\n", bl.Text)
			}
		case BlockCode:
			for _, line := range strings.Split(bl.Text, "\n") {
				fmt.Fprintf(&b, "    %s\n", line)
			}
		case BlockFields:
			w := 0
			for _, f := range bl.Fields {
				w = max(w, utf8.RuneCountInString(f.Label))
			}
			for _, f := range bl.Fields {
				fmt.Fprintf(&b, "  %s%s  %s\n", f.Label, strings.Repeat(" ", w-utf8.RuneCountInString(f.Label)), f.Value)
			}
		case BlockTable:
			writeTable(&b, bl.Table)
		case BlockAttachments:
			for _, a := range bl.Attachments {
				where := a.Name
				if a.Path != "" {
					where = a.Path
				}
				if p, ok := paths[a.Name]; ok {
					where = p
				}
				fmt.Fprintf(&b, "  [%s] %s: %s\n", a.Kind(), a.Title, where)
			}
		case BlockActions:
			labels := make([]string, len(bl.Actions))
			for i, a := range bl.Actions {
				labels[i] = "[" + a.Label + "]"
			}
			fmt.Fprintf(&b, "  %s\n", strings.Join(labels, " · "))
		case BlockStamp:
			b.WriteString(StampLine(*bl.Stamp) + "\n")
		}
	}
	if len(c.Mentions) > 0 {
		ms := make([]string, len(c.Mentions))
		for i, m := range c.Mentions {
			ms[i] = "@" + m
		}
		fmt.Fprintf(&b, "  cc %s\n", strings.Join(ms, " "))
	}
	return b.String()
}

// StampLine is a decision stamp as one line: "✔ approved by alice at 2026-01-02 15:04 UTC".
func StampLine(s Stamp) string {
	line := fmt.Sprintf("  ✔ %s by %s at %s", s.Action, s.By, s.At.UTC().Format("2006-01-02 15:04 UTC"))
	if s.Feedback != "" {
		line += ": “" + s.Feedback + "”"
	}
	return line
}

func writeTable(b *strings.Builder, t *Table) {
	if t == nil {
		return
	}
	if t.Caption != "" {
		fmt.Fprintf(b, "  %s:\n", t.Caption)
	}
	w := make([]int, len(t.Columns))
	for i, c := range t.Columns {
		w[i] = utf8.RuneCountInString(c)
	}
	for _, r := range t.Rows {
		for i := range min(len(r), len(w)) {
			w[i] = max(w[i], utf8.RuneCountInString(r[i]))
		}
	}
	row := func(cells []string) {
		parts := make([]string, len(w))
		for i := range w {
			cell := ""
			if i < len(cells) {
				cell = cells[i]
			}
			pad := strings.Repeat(" ", w[i]-utf8.RuneCountInString(cell))
			if i < len(t.Align) && t.Align[i] == "r" {
				parts[i] = pad + cell
			} else {
				parts[i] = cell + pad
			}
		}
		fmt.Fprintf(b, "    %s\n", strings.TrimRight(strings.Join(parts, "  "), " "))
	}
	row(t.Columns)
	seps := make([]string, len(w))
	for i := range w {
		seps[i] = strings.Repeat("─", w[i])
	}
	row(seps)
	for _, r := range t.Rows {
		row(r)
	}
}
