package discord

import (
	"bytes"
	"context"
	"strconv"
	"strings"

	"github.com/bwmarrin/discordgo"

	"tunebot/bot"
	"tunebot/session"
)

// Chat-ref keys (platform "discord"):
//
//	root/<session>    channel/message of the session's root message
//	sthread/<session> the session's thread
//	thread/<thread>   the session a thread belongs to (thread replies, after a restart too)
//	card/<ref>        channel/message[,message…] of a card edited in place (proposals)
//	sent/<delivery>   parts of a multi-message card already posted, so a retry resumes
func rootKey(sid string) string          { return "root/" + sid }
func sthreadKey(sid string) string       { return "sthread/" + sid }
func threadKey(tid string) string        { return "thread/" + tid }
func cardKey(ref string) string          { return "card/" + ref }
func sentKey(id uint64) string           { return "sent/" + strconv.FormatUint(id, 10) }
func loc(ch string, ids []string) string { return ch + "/" + strings.Join(ids, ",") }

func parseLoc(v string) (string, []string, bool) {
	ch, ids, ok := strings.Cut(v, "/")
	if !ok || ch == "" || ids == "" {
		return "", nil, false
	}
	return ch, strings.Split(ids, ","), true
}

// Deliver posts or edits one outbox item: a session's root card in the configured channel
// (edited in place afterwards, with the session's thread started from it), every other
// card in that thread, a proposal card edited in place when its decision arrives.
func (a *Adapter) Deliver(ctx context.Context, d bot.Delivery) error {
	c, sid := d.Message.Card, d.Session()
	parts := Render(c, RenderOptions{MaxUpload: a.cfg.MaxUpload})
	if c.Kind == "root" {
		return a.deliverRoot(ctx, sid, c, parts)
	}
	thread, err := a.ensureThread(ctx, sid, nil)
	if err != nil {
		return err
	}
	if d.Key != "" {
		if v, ok, err := a.refs.Get(ctx, cardKey(d.Key)); err != nil {
			return err
		} else if ok {
			if ch, ids, ok := parseLoc(v); ok {
				return a.editParts(ctx, cardKey(d.Key), ch, ids, parts)
			}
		}
	}
	start := 0
	if len(parts) > 1 {
		if v, ok, err := a.refs.Get(ctx, sentKey(d.ID)); err != nil {
			return err
		} else if ok {
			start, _ = strconv.Atoi(v)
		}
	}
	var ids []string
	for i := start; i < len(parts); i++ {
		m, err := a.post(ctx, thread, parts[i], nil)
		if err != nil {
			return err
		}
		ids = append(ids, m.ID)
		if d.Key != "" && i == 0 {
			if err := a.refs.Put(ctx, cardKey(d.Key), loc(thread, ids)); err != nil {
				return err
			}
		}
		if len(parts) > 1 {
			if err := a.refs.Put(ctx, sentKey(d.ID), strconv.Itoa(i+1)); err != nil {
				return err
			}
		}
	}
	if d.Key != "" && len(ids) > 1 && start == 0 {
		return a.refs.Put(ctx, cardKey(d.Key), loc(thread, ids))
	}
	return nil
}

func (a *Adapter) deliverRoot(ctx context.Context, sid string, c bot.Card, parts []Part) error {
	if v, ok, err := a.refs.Get(ctx, rootKey(sid)); err != nil {
		return err
	} else if ok {
		if ch, ids, ok := parseLoc(v); ok {
			if err := a.editParts(ctx, rootKey(sid), ch, ids, parts); err != nil {
				return err
			}
			_, err := a.ensureThread(ctx, sid, &c)
			return err
		}
	}
	_, err := a.ensureThread(ctx, sid, &c)
	return err
}

// ensureThread returns the session's thread, posting its root message (root, or a stub
// when the root card never arrived) and starting the thread from it when missing. Each
// step is recorded as soon as it is done, so a retry continues where a failure stopped.
func (a *Adapter) ensureThread(ctx context.Context, sid string, root *bot.Card) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if tid, ok, err := a.refs.Get(ctx, sthreadKey(sid)); err != nil || ok {
		return tid, err
	}
	ch, msg := "", ""
	if v, ok, err := a.refs.Get(ctx, rootKey(sid)); err != nil {
		return "", err
	} else if c, ids, ok2 := parseLoc(v); ok && ok2 {
		ch, msg = c, ids[0]
	}
	if msg == "" {
		card := bot.Card{Kind: "root", Session: sid, Title: "tunebot session " + session.Short(sid)}
		if root != nil {
			card = *root
		}
		parts := Render(card, RenderOptions{MaxUpload: a.cfg.MaxUpload})
		m, err := a.post(ctx, a.cfg.ChannelID, parts[0], nil)
		if err != nil {
			return "", err
		}
		ch, msg = a.cfg.ChannelID, m.ID
		if err := a.refs.Put(ctx, rootKey(sid), loc(ch, []string{msg})); err != nil {
			return "", err
		}
	}
	name := bot.Truncate("tunebot session "+session.Short(sid), 100)
	th, p, err := call(ctx, func(o ...discordgo.RequestOption) (*discordgo.Channel, error) {
		return a.dg.MessageThreadStartComplex(ch, msg, &discordgo.ThreadStart{Name: name, AutoArchiveDuration: 10080}, o...)
	})
	tid := ""
	switch _, code := restCode(err); {
	case err == nil:
		tid = th.ID
	case code == codeThreadExists:
		tid = msg // a thread started from a message has the message's ID
	default:
		return "", a.classify(err, p, "starting the session thread")
	}
	if err := a.refs.Put(ctx, threadKey(tid), sid); err != nil {
		return "", err
	}
	if err := a.refs.Put(ctx, sthreadKey(sid), tid); err != nil {
		return "", err
	}
	a.log.Info("session thread started", "session", sid, "thread", tid)
	return tid, nil
}

// editParts edits a card's messages in place; a message someone deleted is posted again.
// Parts beyond the old messages are posted; old messages beyond the new parts are blanked.
func (a *Adapter) editParts(ctx context.Context, key, ch string, ids []string, parts []Part) error {
	changed := false
	for i, part := range parts {
		if i >= len(ids) {
			m, err := a.post(ctx, ch, part, nil)
			if err != nil {
				return err
			}
			ids, changed = append(ids, m.ID), true
			continue
		}
		err := a.edit(ctx, ch, ids[i], part)
		if _, code := restCode(err); code == codeUnknownMessage {
			a.log.Warn("a message to edit was deleted; posting it again", "channel", ch, "message", ids[i])
			m, err := a.post(ctx, ch, part, nil)
			if err != nil {
				return err
			}
			ids[i], changed = m.ID, true
			continue
		}
		if err != nil {
			return err
		}
	}
	for i := len(parts); i < len(ids); i++ {
		empty := Part{Embeds: []*discordgo.MessageEmbed{{Description: "(superseded by the message above)"}}}
		if err := a.edit(ctx, ch, ids[i], empty); err != nil {
			if _, code := restCode(err); code != codeUnknownMessage {
				return err
			}
		}
	}
	if changed {
		return a.refs.Put(ctx, key, loc(ch, ids))
	}
	return nil
}

func allowed(mentions []string) *discordgo.MessageAllowedMentions {
	// Parse is empty: nothing in the text pings, only the listed users.
	return &discordgo.MessageAllowedMentions{Users: mentions}
}

func files(atts []bot.Attachment) []*discordgo.File {
	var out []*discordgo.File
	for _, a := range atts {
		ct := a.ContentType
		if ct == "" {
			ct = "image/png" // a chart
		}
		out = append(out, &discordgo.File{Name: a.Name, ContentType: ct, Reader: bytes.NewReader(a.Data)})
	}
	return out
}

// post sends part to channel ch (as a reply to ref when given).
func (a *Adapter) post(ctx context.Context, ch string, part Part, ref *discordgo.MessageReference) (*discordgo.Message, error) {
	m, p, err := call(ctx, func(o ...discordgo.RequestOption) (*discordgo.Message, error) {
		return a.dg.ChannelMessageSendComplex(ch, &discordgo.MessageSend{
			Content: part.Content, Embeds: part.Embeds, Components: part.Components, Files: files(part.Files),
			AllowedMentions: allowed(part.Mentions), Reference: ref}, o...)
	})
	if err != nil {
		return nil, a.classify(err, p, "posting a message")
	}
	return m, nil
}

// edit replaces message id with part; the attachments are replaced by part's files.
func (a *Adapter) edit(ctx context.Context, ch, id string, part Part) error {
	content := part.Content
	embeds := part.Embeds
	comps := part.Components
	if comps == nil {
		comps = []discordgo.MessageComponent{} // clears old buttons
	}
	atts := []*discordgo.MessageAttachment{}
	_, p, err := call(ctx, func(o ...discordgo.RequestOption) (*discordgo.Message, error) {
		return a.dg.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: id, Channel: ch, Content: &content, Embeds: &embeds,
			Components: &comps, Files: files(part.Files), Attachments: &atts, AllowedMentions: allowed(part.Mentions)}, o...)
	})
	if err != nil {
		if _, code := restCode(err); code == codeUnknownMessage {
			return err // the caller posts it again
		}
		return a.classify(err, p, "editing a message")
	}
	return nil
}
