// Package discordtest is a local stand-in for Discord in tests: an httptest REST server
// (commands, messages with multipart files, threads, direct message channels, interaction
// callbacks, webhooks for follow-ups, /gateway, and the files uploaded with slash commands,
// served as the CDN serves them) and a websocket gateway (hello, identify, ready,
// heartbeats, resume, dispatches). It never touches the network beyond 127.0.0.1.
package discordtest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Message is a message the fake holds: the latest version of what the bot posted.
type Message struct {
	ID         string
	ChannelID  string
	Content    string
	Embeds     []Embed
	Components []json.RawMessage
	Files      []File
	Allowed    *Allowed
	ReplyTo    string
	Edits      int
}

// Embed is the part of an embed tests look at.
type Embed struct {
	Title       string  `json:"title"`
	Description string  `json:"description"`
	Fields      []Field `json:"fields"`
	Image       *struct {
		URL string `json:"url"`
	} `json:"image"`
}

// Field is an embed field.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// File is an uploaded attachment.
type File struct {
	Name        string
	Size        int
	ContentType string // of its multipart part
	Data        []byte
}

// Allowed is a message's allowed_mentions.
type Allowed struct {
	Parse []string `json:"parse"`
	Users []string `json:"users"`
}

// Callback is one answer to an interaction (callback, original edit, follow-up or delete).
type Callback struct {
	Kind    string // "callback", "edit", "followup", "delete"
	Type    int    // callback type
	Content string
	Flags   int
	Embeds  []Embed
	Data    json.RawMessage // the callback's data (a modal's components)
	// Components are the message's rows of buttons; Files its attachments.
	Components []json.RawMessage
	Files      []File
}

// Fake is the stand-in Discord.
type Fake struct {
	APIURL string // what chat.discord.api_url should be
	Guild  string
	App    string

	t   testing.TB
	srv *httptest.Server
	up  websocket.Upgrader

	mu         sync.Mutex
	changed    chan struct{}
	next       int64
	messages   map[string]*Message
	order      []string
	threads    map[string]string // thread → parent channel
	commands   json.RawMessage
	callbacks  map[string][]Callback // interaction token → answers
	stale      map[string]bool
	intents    []int
	identify   int
	resumes    int
	beats      int
	conn       *websocket.Conn
	log        []frame // every dispatch, for RESUME replays
	seq        int64
	sessionID  string
	limitNext  int // this many message posts answer 429
	expireNext bool
	forbid     map[string]bool
	files      map[string]Attachment // URL path → uploaded attachment
	downloads  []Download
	dms        map[string]string // user → their direct message channel with the bot
	closedDMs  map[string]bool   // users who accept no direct message from the guild's members
	members    map[string]User   // the guild's members seen in events, with their roles now
	memberGets int
}

type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  int64           `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

// New starts a fake Discord for guild and application app; it stops with the test.
func New(t testing.TB, guild, app string) *Fake {
	f := &Fake{Guild: guild, App: app, t: t, changed: make(chan struct{}), next: 1000, messages: map[string]*Message{},
		threads: map[string]string{}, callbacks: map[string][]Callback{}, stale: map[string]bool{}, forbid: map[string]bool{},
		files: map[string]Attachment{}, sessionID: "fake-session", dms: map[string]string{}, closedDMs: map[string]bool{}, members: map[string]User{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	f.APIURL = f.srv.URL + "/api/v9"
	return f
}

// Close stops the server and the gateway.
func (f *Fake) Close() {
	f.mu.Lock()
	if f.conn != nil {
		f.conn.Close()
		f.conn = nil
	}
	f.mu.Unlock()
	f.srv.CloseClientConnections()
	f.srv.Close()
}

func (f *Fake) id() string {
	f.next++
	return strconv.FormatInt(f.next, 10)
}

// notify wakes Wait; callers hold mu.
func (f *Fake) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Wait blocks until cond (called with the fake's state locked) holds, failing the test
// with what after a generous bound: it waits for work, it does not time it.
func (f *Fake) Wait(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		f.mu.Lock()
		ok := cond()
		ch := f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			f.t.Fatalf("discordtest: gave up waiting for %s", what)
		}
	}
}

// Messages returns copies of the channel's messages in posting order ("" for all).
func (f *Fake) Messages(channel string) []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.messagesLocked(channel)
}

// MessagesLocked is Messages for use inside a Wait condition.
func (f *Fake) MessagesLocked(channel string) []Message { return f.messagesLocked(channel) }

func (f *Fake) messagesLocked(channel string) []Message {
	var out []Message
	for _, id := range f.order {
		if m := f.messages[id]; channel == "" || m.ChannelID == channel {
			out = append(out, *m)
		}
	}
	return out
}

// Threads returns thread → parent channel.
func (f *Fake) Threads() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, v := range f.threads {
		out[k] = v
	}
	return out
}

// ThreadsLocked is Threads for use inside a Wait condition.
func (f *Fake) ThreadsLocked() map[string]string { return f.threads }

// Callbacks returns the answers to the interaction with token.
func (f *Fake) Callbacks(token string) []Callback {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Callback(nil), f.callbacks[token]...)
}

// CallbacksLocked is Callbacks for use inside a Wait condition.
func (f *Fake) CallbacksLocked(token string) []Callback { return f.callbacks[token] }

// Commands returns the last bulk-overwritten command list.
func (f *Fake) Commands() json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commands
}

// Gateway reports the intents of each IDENTIFY, the RESUMEs and heartbeats seen.
func (f *Fake) Gateway() (intents []int, resumes, heartbeats int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.intents...), f.resumes, f.beats
}

// Connected reports whether a gateway connection is up (after READY or RESUMED).
func (f *Fake) ConnectedLocked() bool { return f.conn != nil }

// RateLimitNext makes the next n message posts answer 429.
func (f *Fake) RateLimitNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limitNext = n
}

// Forbid makes posts to channel answer 403 Missing Permissions.
func (f *Fake) Forbid(channel string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forbid[channel] = true
}

// ExpireNext makes the next interaction's token unknown to Discord from the start, as for
// an interaction answered too late: see Expire.
func (f *Fake) ExpireNext() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expireNext = true
}

// Expire makes Discord forget the interaction token: its callback answers 404 Unknown
// interaction (10062) and its webhooks 401 Invalid Webhook Token (50027).
func (f *Fake) Expire(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stale[token] = true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg})
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/gateway" || r.URL.Path == "/gateway/" {
		f.gateway(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/attachments/") {
		f.serveAttachment(w, r)
		return
	}
	path, ok := strings.CutPrefix(r.URL.Path, "/api/v9/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if !strings.HasPrefix(path, "interactions/") && !strings.HasPrefix(path, "webhooks/") && r.Header.Get("Authorization") != "Bot test-token" {
		apiError(w, 401, 0, "401: Unauthorized")
		return
	}
	p := strings.Split(path, "/")
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notify()
	switch {
	case r.Method == "GET" && (path == "gateway" || path == "gateway/bot"):
		writeJSON(w, 200, map[string]any{"url": "ws://" + r.Host + "/gateway", "shards": 1,
			"session_start_limit": map[string]int{"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}})
	case r.Method == "PUT" && len(p) == 5 && p[0] == "applications" && p[2] == "guilds" && p[4] == "commands":
		if p[1] != f.App || p[3] != f.Guild {
			apiError(w, 404, 10002, "Unknown Application")
			return
		}
		body, _ := io.ReadAll(r.Body)
		f.commands = body
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	case r.Method == "GET" && len(p) == 4 && p[0] == "guilds" && p[2] == "members":
		u, ok := f.members[p[3]]
		if p[1] != f.Guild || !ok {
			apiError(w, 404, 10007, "Unknown Member")
			return
		}
		f.memberGets++
		writeJSON(w, 200, f.member(u))
	case r.Method == "POST" && len(p) == 3 && p[0] == "users" && p[1] == "@me" && p[2] == "channels":
		var d struct {
			Recipient string `json:"recipient_id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&d); err != nil || d.Recipient == "" {
			apiError(w, 400, 50035, "Invalid Form Body")
			return
		}
		ch, ok := f.dms[d.Recipient]
		if !ok {
			ch = f.id()
			f.dms[d.Recipient] = ch
		}
		writeJSON(w, 200, map[string]any{"id": ch, "type": 1, "recipients": []any{map[string]any{"id": d.Recipient}}})
	case r.Method == "POST" && len(p) == 3 && p[0] == "channels" && p[2] == "messages":
		if f.forbid[p[1]] {
			apiError(w, 403, 50013, "Missing Permissions")
			return
		}
		if f.dmClosedLocked(p[1]) {
			apiError(w, 403, 50007, "Cannot send messages to this user")
			return
		}
		if f.limitNext > 0 {
			f.limitNext--
			w.Header().Set("X-RateLimit-Reset-After", "0.2")
			w.Header().Set("Retry-After", "1")
			writeJSON(w, 429, map[string]any{"message": "You are being rate limited.", "retry_after": 0.2, "global": false})
			return
		}
		if _, ok := f.threads[p[1]]; !ok && !f.channelKnown(p[1]) {
			apiError(w, 404, 10003, "Unknown Channel")
			return
		}
		m := &Message{ID: f.id(), ChannelID: p[1]}
		if err := f.readMessage(r, m); err != nil {
			apiError(w, 400, 50035, err.Error())
			return
		}
		f.messages[m.ID] = m
		f.order = append(f.order, m.ID)
		writeJSON(w, 200, map[string]any{"id": m.ID, "channel_id": m.ChannelID, "content": m.Content})
	case r.Method == "PATCH" && len(p) == 4 && p[0] == "channels" && p[2] == "messages":
		m, ok := f.messages[p[3]]
		if !ok || m.ChannelID != p[1] {
			apiError(w, 404, 10008, "Unknown Message")
			return
		}
		n := *m
		n.Files = nil
		if err := f.readMessage(r, &n); err != nil {
			apiError(w, 400, 50035, err.Error())
			return
		}
		n.Edits++
		*m = n
		writeJSON(w, 200, map[string]any{"id": m.ID, "channel_id": m.ChannelID})
	case r.Method == "POST" && len(p) == 5 && p[0] == "channels" && p[2] == "messages" && p[4] == "threads":
		if _, ok := f.messages[p[3]]; !ok {
			apiError(w, 404, 10008, "Unknown Message")
			return
		}
		if _, ok := f.threads[p[3]]; ok {
			apiError(w, 400, 160004, "A thread has already been created for this message")
			return
		}
		f.threads[p[3]] = p[1]
		writeJSON(w, 201, map[string]any{"id": p[3], "type": 11, "parent_id": p[1], "guild_id": f.Guild})
	case r.Method == "POST" && len(p) == 4 && p[0] == "interactions" && p[3] == "callback":
		if f.stale[p[2]] {
			apiError(w, 404, 10062, "Unknown interaction")
			return
		}
		var cb struct {
			Type int             `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		files, err := readBody(r, &cb)
		if err != nil {
			apiError(w, 400, 50035, err.Error())
			return
		}
		c := Callback{Kind: "callback", Type: cb.Type, Data: cb.Data, Files: files}
		var d struct {
			Content    string            `json:"content"`
			Flags      int               `json:"flags"`
			Embeds     []Embed           `json:"embeds"`
			Components []json.RawMessage `json:"components"`
		}
		_ = json.Unmarshal(cb.Data, &d)
		c.Content, c.Flags, c.Embeds, c.Components = d.Content, d.Flags, d.Embeds, d.Components
		f.callbacks[p[2]] = append(f.callbacks[p[2]], c)
		w.WriteHeader(204)
	case len(p) >= 3 && p[0] == "webhooks":
		tok := p[2]
		if f.stale[tok] {
			apiError(w, 401, 50027, "Invalid Webhook Token")
			return
		}
		var d struct {
			Content    string            `json:"content"`
			Flags      int               `json:"flags"`
			Embeds     []Embed           `json:"embeds"`
			Components []json.RawMessage `json:"components"`
		}
		kind := ""
		switch {
		case r.Method == "POST" && len(p) == 3:
			kind = "followup"
		case r.Method == "PATCH" && len(p) == 5 && p[4] == "@original":
			kind = "edit"
		case r.Method == "DELETE" && len(p) == 5 && p[4] == "@original":
			f.callbacks[tok] = append(f.callbacks[tok], Callback{Kind: "delete"})
			w.WriteHeader(204)
			return
		default:
			http.NotFound(w, r)
			return
		}
		files, err := readBody(r, &d)
		if err != nil {
			apiError(w, 400, 50035, err.Error())
			return
		}
		if len(files) > 10 {
			apiError(w, 400, 50035, "more than 10 files")
			return
		}
		f.callbacks[tok] = append(f.callbacks[tok], Callback{Kind: kind, Content: d.Content, Flags: d.Flags, Embeds: d.Embeds,
			Components: d.Components, Files: files})
		writeJSON(w, 200, map[string]any{"id": f.id(), "content": d.Content})
	default:
		f.t.Logf("discordtest: unhandled %s %s", r.Method, r.URL.Path)
		apiError(w, 404, 0, "404: Not Found")
	}
}

// SetRoles gives user these roles in the guild from now on (an admin's change), as
// GET /guilds/{guild}/members/{user} reports them; later events from a User with other
// Roles set them again.
func (f *Fake) SetRoles(user string, roles ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.members[user]
	u.ID, u.Roles = user, roles
	f.members[user] = u
}

// MemberReads is how many times the bot read a member (their roles) from the REST API.
func (f *Fake) MemberReads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.memberGets
}

// DM returns the direct message channel between the bot and user, "" when the bot opened none.
func (f *Fake) DM(user string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dms[user]
}

// CloseDMs makes user accept no direct message (Discord's privacy setting for a server's
// members): the bot may open the channel, but a message posted there answers 403 (50007).
func (f *Fake) CloseDMs(user string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closedDMs[user] = true
}

func (f *Fake) dmClosedLocked(ch string) bool {
	for u, dm := range f.dms {
		if dm == ch && f.closedDMs[u] {
			return true
		}
	}
	return false
}

// channelKnown: any channel that is not forbidden exists, except ids starting with 9.
func (f *Fake) channelKnown(ch string) bool { return !strings.HasPrefix(ch, "9") }

// readBody decodes a JSON body, or a multipart body's payload_json and returns its files.
func readBody(r *http.Request, v any) ([]File, error) {
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return nil, json.NewDecoder(r.Body).Decode(v)
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	var files []File
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(part)
		if err != nil {
			return nil, err
		}
		if part.FormName() == "payload_json" {
			if err := json.Unmarshal(b, v); err != nil {
				return nil, err
			}
			continue
		}
		if !strings.HasPrefix(part.FormName(), "files[") {
			return nil, fmt.Errorf("unexpected form part %q", part.FormName())
		}
		files = append(files, File{Name: part.FileName(), Size: len(b), ContentType: part.Header.Get("Content-Type"), Data: b})
	}
}

func (f *Fake) readMessage(r *http.Request, m *Message) error {
	var d struct {
		Content    *string            `json:"content"`
		Embeds     *[]Embed           `json:"embeds"`
		Components *[]json.RawMessage `json:"components"`
		Allowed    *Allowed           `json:"allowed_mentions"`
		Reference  *struct {
			MessageID string `json:"message_id"`
		} `json:"message_reference"`
	}
	files, err := readBody(r, &d)
	if err != nil {
		return err
	}
	if d.Content != nil {
		if len([]rune(*d.Content)) > 2000 {
			return fmt.Errorf("content longer than 2000")
		}
		m.Content = *d.Content
	}
	if d.Embeds != nil {
		if len(*d.Embeds) > 10 {
			return fmt.Errorf("more than 10 embeds")
		}
		total := 0
		for _, e := range *d.Embeds {
			if len([]rune(e.Title)) > 256 || len([]rune(e.Description)) > 4096 || len(e.Fields) > 25 {
				return fmt.Errorf("embed over its limits")
			}
			total += len([]rune(e.Title)) + len([]rune(e.Description))
			for _, fl := range e.Fields {
				if len([]rune(fl.Value)) > 1024 || len([]rune(fl.Name)) > 256 {
					return fmt.Errorf("embed field over its limits")
				}
				total += len([]rune(fl.Name)) + len([]rune(fl.Value))
			}
		}
		if total > 6000 {
			return fmt.Errorf("embeds total %d > 6000", total)
		}
		m.Embeds = *d.Embeds
	}
	if d.Components != nil {
		if len(*d.Components) > 5 {
			return fmt.Errorf("more than 5 rows")
		}
		m.Components = *d.Components
	}
	if len(files) > 10 {
		return fmt.Errorf("more than 10 files")
	}
	m.Files = append(m.Files, files...)
	m.Allowed = d.Allowed
	if d.Reference != nil {
		m.ReplyTo = d.Reference.MessageID
	}
	return nil
}
