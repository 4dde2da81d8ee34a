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
	Value any // string, float64 (integers), bool
}

// Slash runs /tune sub with options in channel; it returns the interaction token. A sub
// of two words ("schedule add") is a subcommand of a group.
func (f *Fake) Slash(u User, channel, sub string, opts ...Option) string {
	var os []map[string]any
	for _, o := range opts {
		typ := 3
		switch o.Value.(type) {
		case float64, int:
			typ = 4
		case bool:
			typ = 5
		}
		os = append(os, map[string]any{"name": o.Name, "type": typ, "value": o.Value})
	}
	opt := map[string]any{"name": sub, "type": 1, "options": os}
	if g, s, ok := strings.Cut(sub, " "); ok {
		opt = map[string]any{"name": g, "type": 2, "options": []any{map[string]any{"name": s, "type": 1, "options": os}}}
	}
	data := map[string]any{"id": "cmd-1", "name": "tune", "type": 1, "options": []any{opt}}
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
