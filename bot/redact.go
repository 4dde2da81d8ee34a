package bot

import "tunebot/secret"

// redactReply masks secret values in every text of r: replies carry output of the
// trainer's code (apply's test tail, git hooks) and of people.
func redactReply(r Reply, x *secret.Redactor) Reply {
	if !x.Active() {
		return r
	}
	r.Text = x.String(r.Text)
	if r.Card != nil {
		c := redactCard(*r.Card, x)
		r.Card = &c
	}
	if r.Form != nil {
		f := *r.Form
		f.Title = x.String(f.Title)
		f.Inputs = append([]Input(nil), f.Inputs...)
		for i := range f.Inputs {
			in := &f.Inputs[i]
			in.Label, in.Value, in.Hint = x.String(in.Label), x.String(in.Value), x.String(in.Hint)
		}
		r.Form = &f
	}
	return r
}

// redactCard returns c with secret values masked in its title and every block's text. The
// bytes of attachments (charts, exported presets) are tunebot's own and left as they are.
func redactCard(c Card, x *secret.Redactor) Card {
	if !x.Active() {
		return c
	}
	c.Title = x.String(c.Title)
	blocks := make([]Block, len(c.Blocks))
	for i, b := range c.Blocks {
		b.Text = x.String(b.Text)
		if b.Fields != nil {
			fs := make([]Field, len(b.Fields))
			for j, f := range b.Fields {
				fs[j] = Field{Label: x.String(f.Label), Value: x.String(f.Value)}
			}
			b.Fields = fs
		}
		if b.Table != nil {
			t := *b.Table
			t.Caption = x.String(t.Caption)
			t.Columns = redactAll(t.Columns, x)
			t.Rows = make([][]string, len(b.Table.Rows))
			for j, row := range b.Table.Rows {
				t.Rows[j] = redactAll(row, x)
			}
			b.Table = &t
		}
		if b.Stamp != nil {
			st := *b.Stamp
			st.Feedback = x.String(st.Feedback)
			b.Stamp = &st
		}
		if b.Attachments != nil {
			as := append([]Attachment(nil), b.Attachments...)
			for j := range as {
				as[j].Title = x.String(as[j].Title)
			}
			b.Attachments = as
		}
		blocks[i] = b
	}
	c.Blocks = blocks
	return c
}

func redactAll(ss []string, x *secret.Redactor) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = x.String(s)
	}
	return out
}

// holdsSecret reports whether text holds the value of one of tunebot's secrets (x masks it).
func holdsSecret(text string, x *secret.Redactor) bool {
	return text != "" && x.String(text) != text
}

// secretRefusal answers a message that holds a secret's value: nothing of it is acted on,
// so a run name, preset name, schedule or feedback never carries the secret into the
// store, a job's command line, a card or the advisor's prompt (issue 27).
func secretRefusal() Reply {
	return Reply{Private: true, Text: "that message holds the value of one of tunebot's secrets, so nothing of it was done or stored; " +
		"send it again without the secret (and rotate the secret: the chat keeps the message)"}
}
