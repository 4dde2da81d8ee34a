package discordtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// BotUserID is the bot's own user id in READY.
const BotUserID = "4242"

func (f *Fake) gateway(w http.ResponseWriter, r *http.Request) {
	c, err := f.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	send := func(fr frame) error {
		b, _ := json.Marshal(fr)
		return c.WriteMessage(websocket.TextMessage, b)
	}
	if err := send(frame{Op: 10, D: json.RawMessage(`{"heartbeat_interval":1000}`)}); err != nil {
		return
	}
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			f.mu.Lock()
			if f.conn == c {
				f.conn = nil
			}
			f.notify()
			f.mu.Unlock()
			return
		}
		var in struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if json.Unmarshal(msg, &in) != nil {
			continue
		}
		f.mu.Lock()
		switch in.Op {
		case 1:
			f.beats++
			f.writeLocked(c, frame{Op: 11})
		case 2:
			var id struct {
				Token   string `json:"token"`
				Intents int    `json:"intents"`
			}
			_ = json.Unmarshal(in.D, &id)
			if id.Token != "Bot test-token" {
				_ = c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4004, "Authentication failed."))
				f.mu.Unlock()
				return
			}
			f.intents = append(f.intents, id.Intents)
			f.identify++
			f.sessionID = "fake-session-" + strconv.Itoa(f.identify)
			f.seq, f.log = 0, nil
			ready, _ := json.Marshal(map[string]any{"v": 9, "session_id": f.sessionID,
				"resume_gateway_url": "ws://" + r.Host + "/gateway",
				"user":               map[string]any{"id": BotUserID, "username": "tunebot", "bot": true},
				"application":        map[string]any{"id": f.App, "flags": 0}, "guilds": []any{map[string]any{"id": f.Guild, "unavailable": true}}})
			f.conn = c
			f.dispatchLocked("READY", ready)
		case 6:
			var rs struct {
				SessionID string `json:"session_id"`
				Seq       int64  `json:"seq"`
			}
			_ = json.Unmarshal(in.D, &rs)
			if rs.SessionID != f.sessionID {
				f.writeLocked(c, frame{Op: 9, D: json.RawMessage("false")})
				break
			}
			f.resumes++
			f.conn = c
			for _, fr := range f.log {
				if fr.S > rs.Seq {
					f.writeLocked(c, fr)
				}
			}
			f.dispatchLocked("RESUMED", json.RawMessage(`{}`))
		}
		f.notify()
		f.mu.Unlock()
	}
}

func (f *Fake) writeLocked(c *websocket.Conn, fr frame) {
	b, _ := json.Marshal(fr)
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := c.WriteMessage(websocket.TextMessage, b); err != nil && f.conn == c {
		f.conn = nil
	}
}

// dispatchLocked sends an event now when connected; it stays in the log either way, so a
// client that resumes gets what it missed.
func (f *Fake) dispatchLocked(t string, d json.RawMessage) {
	f.seq++
	fr := frame{Op: 0, T: t, S: f.seq, D: d}
	f.log = append(f.log, fr)
	if f.conn != nil {
		f.writeLocked(f.conn, fr)
	}
	f.notify()
}

// Dispatch sends a gateway event.
func (f *Fake) Dispatch(t string, d any) {
	b, err := json.Marshal(d)
	if err != nil {
		f.t.Fatalf("discordtest: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dispatchLocked(t, b)
}

// Drop closes the gateway connection abruptly, as a network failure would; the client
// reconnects and resumes, and events dispatched meanwhile are replayed.
func (f *Fake) Drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != nil {
		f.conn.Close()
		f.conn = nil
	}
	f.notify()
}

// User is who acts in an event.
type User struct {
	ID    string
	Name  string
	Roles []string
}

func (f *Fake) member(u User) map[string]any {
	roles := u.Roles
	if roles == nil {
		roles = []string{}
	}
	return map[string]any{"user": map[string]any{"id": u.ID, "username": u.Name}, "roles": roles, "nick": u.Name}
}

// interaction dispatches an INTERACTION_CREATE and returns its token.
func (f *Fake) interaction(typ int, u User, channel string, data any, message any) string {
	f.mu.Lock()
	f.members[u.ID] = u
	id := f.id()
	tok := "tok-" + id
	if f.expireNext {
		f.stale[tok], f.expireNext = true, false
	}
	f.mu.Unlock()
	ev := map[string]any{"id": id, "application_id": f.App, "type": typ, "data": data, "guild_id": f.Guild,
		"channel_id": channel, "member": f.member(u), "token": tok, "version": 1}
	if message != nil {
		ev["message"] = message
	}
	f.Dispatch("INTERACTION_CREATE", ev)
	return tok
}

// Option is a slash-command option.
type Option struct {
	Name  string
	Value any // string, float64 (integers), bool, Attachment (a file)
}

// Attachment is a file uploaded with a slash command (an option of type 11). Slash sends
// the option's value as the attachment's id and the attachment itself in the interaction's
// resolved.attachments, as Discord does; the fake serves Data at the attachment's URL on
// its own host, the way the CDN serves an upload.
type Attachment struct {
	Filename    string
	ContentType string // default application/json
	Data        []byte
	Size        int    // the size Discord declares; 0: len(Data)
	URL         string // where the attachment is said to be; "": served by the fake
	Status      int    // what the fake's URL answers; 0: 200 with Data
	// Redirect makes the fake's URL answer 302: to itself once ("self", as a CDN that
	// re-signs a link does), or to any other URL given.
	Redirect string
	// Unresolved leaves the attachment out of resolved.attachments: only its id arrives.
	Unresolved bool
}

// Download is a request for an attachment the fake served.
type Download struct {
	Path          string
	Authorization string // the request's Authorization header: a token must never be sent
}

// attachment registers a for download and returns its resolved form.
func (f *Fake) attachment(channel string, a Attachment) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.id()
	if a.Filename == "" {
		a.Filename = "upload.json"
	}
	if a.ContentType == "" {
		a.ContentType = "application/json"
	}
	if a.Size == 0 {
		a.Size = len(a.Data)
	}
	path := "/attachments/" + channel + "/" + id + "/" + a.Filename
	f.files[path] = a
	if a.URL == "" {
		a.URL = f.srv.URL + path + "?ex=1&is=2&hm=3"
	}
	return map[string]any{"id": id, "filename": a.Filename, "size": a.Size, "url": a.URL,
		"proxy_url": strings.Replace(a.URL, "/attachments/", "/proxy/attachments/", 1), "content_type": a.ContentType}
}

// Downloads returns the attachment requests the fake served, in order.
func (f *Fake) Downloads() []Download {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Download(nil), f.downloads...)
}

// serveAttachment answers a GET of an uploaded attachment, as the CDN does (no token needed).
func (f *Fake) serveAttachment(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	a, ok := f.files[r.URL.Path]
	f.downloads = append(f.downloads, Download{Path: r.URL.Path, Authorization: r.Header.Get("Authorization")})
	f.notify()
	f.mu.Unlock()
	switch {
	case !ok || r.Method != http.MethodGet:
		http.NotFound(w, r)
	case a.Redirect == "self" && r.URL.Query().Get("moved") == "":
		http.Redirect(w, r, r.URL.Path+"?moved=1", http.StatusFound)
	case a.Redirect != "" && a.Redirect != "self":
		http.Redirect(w, r, a.Redirect, http.StatusFound)
	case a.Status != 0 && a.Status != http.StatusOK:
		http.Error(w, http.StatusText(a.Status), a.Status)
	default:
		w.Header().Set("Content-Type", a.ContentType)
		_, _ = w.Write(a.Data)
	}
}

// Slash runs /tune sub with options in channel; it returns the interaction token. A sub
// of two words ("schedule add") is a subcommand of a group.
func (f *Fake) Slash(u User, channel, sub string, opts ...Option) string {
	var os []map[string]any
	resolved := map[string]any{}
	for _, o := range opts {
		typ, v := 3, o.Value
		switch x := o.Value.(type) {
		case float64, int:
			typ = 4
		case bool:
			typ = 5
		case Attachment:
			att := f.attachment(channel, x)
			typ, v = 11, att["id"]
			if !x.Unresolved {
				resolved[att["id"].(string)] = att
			}
		}
		os = append(os, map[string]any{"name": o.Name, "type": typ, "value": v})
	}
	opt := map[string]any{"name": sub, "type": 1, "options": os}
	if g, s, ok := strings.Cut(sub, " "); ok {
		opt = map[string]any{"name": g, "type": 2, "options": []any{map[string]any{"name": s, "type": 1, "options": os}}}
	}
	data := map[string]any{"id": "cmd-1", "name": "tune", "type": 1, "options": []any{opt}}
	if len(resolved) > 0 {
		data["resolved"] = map[string]any{"attachments": resolved}
	}
	return f.interaction(2, u, channel, data, nil)
}

// Autocomplete asks for choices of the focused option of /tune sub (two words: a group's
// subcommand).
func (f *Fake) Autocomplete(u User, channel, sub, option, typed string) string {
	opt := map[string]any{"name": sub, "type": 1, "options": []any{map[string]any{"name": option, "type": 3, "value": typed, "focused": true}}}
	if g, s, ok := strings.Cut(sub, " "); ok {
		opt["name"] = s
		opt = map[string]any{"name": g, "type": 2, "options": []any{opt}}
	}
	data := map[string]any{"id": "cmd-1", "name": "tune", "type": 1, "options": []any{opt}}
	return f.interaction(4, u, channel, data, nil)
}

// Click presses the button customID on message in channel.
func (f *Fake) Click(u User, channel, messageID, customID string) string {
	return f.interaction(3, u, channel, map[string]any{"custom_id": customID, "component_type": 2},
		map[string]any{"id": messageID, "channel_id": channel})
}

// Submit submits the modal customID with values (input custom_id → value).
func (f *Fake) Submit(u User, channel, customID string, values map[string]string) string {
	var rows []any
	for k, v := range values {
		rows = append(rows, map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": k, "value": v}}})
	}
	return f.interaction(5, u, channel, map[string]any{"custom_id": customID, "components": rows}, nil)
}

// Say posts content in channel as u (a MESSAGE_CREATE); it returns the message id.
func (f *Fake) Say(u User, channel, content string, bot bool) string {
	f.mu.Lock()
	f.members[u.ID] = u
	id := f.id()
	f.mu.Unlock()
	m := f.member(u)
	delete(m, "user")
	f.Dispatch("MESSAGE_CREATE", map[string]any{"id": id, "channel_id": channel, "guild_id": f.Guild, "content": content,
		"author": map[string]any{"id": u.ID, "username": u.Name, "bot": bot}, "member": m, "type": 0,
		"timestamp": time.Now().UTC().Format(time.RFC3339)})
	return id
}

// String describes the fake for failure messages.
func (f *Fake) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := fmt.Sprintf("fake discord: %d messages, %d threads\n", len(f.messages), len(f.threads))
	for _, m := range f.messagesLocked("") {
		title := ""
		if len(m.Embeds) > 0 {
			title = m.Embeds[0].Title
		}
		s += fmt.Sprintf("  %s in %s: %q %q (%d edits, %d files)\n", m.ID, m.ChannelID, m.Content, title, m.Edits, len(m.Files))
	}
	return s
}
