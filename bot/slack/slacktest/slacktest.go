// Package slacktest is a fake Slack for tests and benchmarks, on 127.0.0.1 only: the Web
// API methods tunebot calls (chat.*, views.open, the external file upload flow with the
// bytes kept, usergroups.list, auth.test, apps.connections.open, conversations.open) and a
// Socket Mode websocket that says hello, pings, sends envelopes and records their
// acknowledgements.
package slacktest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
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
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Tokens the fake expects.
const (
	BotToken = "xoxb-test-bot-token"
	AppToken = "xapp-test-app-token"
	BotUser  = "UTUNEBOT"
	BotID    = "BTUNEBOT"
)

// Message is a message as the fake holds it: posted, maybe edited since.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string
	Text     string
	Blocks   string // the JSON of the newest blocks
	Edits    int
	User     string // for ephemeral messages: who sees it
}

// Response is an answer posted to a response_url.
type Response struct {
	URL          string
	ResponseType string
	Text         string
	Blocks       string
}

// View is a modal opened with views.open.
type View struct {
	TriggerID string
	ID        string
	JSON      string // the whole view
	Callback  string
	Metadata  string
	BlockIDs  []string
}

// Upload is a file shared by files.completeUploadExternal.
type Upload struct {
	ID, Name, Title, Channel, ThreadTS string
	Size                               int    // the length files.getUploadURLExternal was told
	Data                               []byte // what was uploaded to the upload URL
}

// Ack is a Socket Mode acknowledgement.
type Ack struct {
	EnvelopeID string
	Payload    json.RawMessage
	At         time.Time // when the fake read it
}

// Group is a user group for usergroups.list.
type Group struct {
	ID    string
	Users []string
}

// Server is the fake. Zero-configuration: New starts it; Close stops it.
type Server struct {
	srv *httptest.Server
	// URL is the Web API base URL (ends with "/api/").
	URL string
	// PingEvery is how often the websocket pings (default 200 ms).
	PingEvery time.Duration

	down   atomic.Bool
	failed atomic.Int64 // API calls answered 503 while down
	seq    atomic.Int64

	mu         sync.Mutex
	cond       *sync.Cond
	messages   []*Message
	ephemerals []Message
	responses  []Response
	views      []View
	uploads    []Upload
	pending    map[string]string // file id → name
	lengths    map[string]int    // file id → announced length
	data       map[string][]byte // file id → uploaded bytes
	acks       map[string]Ack
	calls      map[string]int
	badTokens  []string
	refuse     map[string]string // method → the error it answers
	groups     []Group
	conn       *websocket.Conn
	connWrite  sync.Mutex
	connects   int
	origins    []string
	closed     bool
	stopPing   chan struct{}
}

// New starts a fake Slack.
func New() *Server {
	s := &Server{PingEvery: 200 * time.Millisecond, pending: map[string]string{}, lengths: map[string]int{}, data: map[string][]byte{},
		refuse: map[string]string{}, acks: map[string]Ack{}, calls: map[string]int{}}
	s.cond = sync.NewCond(&s.mu)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/api/"
	return s
}

// Close stops the fake and wakes every waiter.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	if s.conn != nil {
		_ = s.conn.Close()
	}
	if s.stopPing != nil {
		close(s.stopPing)
		s.stopPing = nil
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// SetDown makes every Web API call fail with 503 (true) or work again (false).
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// Failed counts the calls answered 503 while down.
func (s *Server) Failed() int64 { return s.failed.Load() }

// Refuse makes every call of the Web API method answer the Slack error code ("" undoes it),
// e.g. Refuse("files.completeUploadExternal", "not_in_channel").
func (s *Server) Refuse(method, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse[method] = code
}

// SetGroups sets what usergroups.list answers.
func (s *Server) SetGroups(gs ...Group) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups = gs
}

// ResponseURL is a response_url on the fake.
func (s *Server) ResponseURL() string {
	return fmt.Sprintf("%s/response/%d", s.srv.URL, s.seq.Add(1))
}

func (s *Server) next() int64 { return s.seq.Add(1) }

func (s *Server) ts() string { return fmt.Sprintf("1700000000.%06d", s.next()) }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/ws":
		s.serveWS(w, r)
		return
	case strings.HasPrefix(r.URL.Path, "/response/"):
		s.serveResponse(w, r)
		return
	case strings.HasPrefix(r.URL.Path, "/upload/"):
		if s.down.Load() {
			s.failed.Add(1)
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		b, err := readUpload(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.data[strings.TrimPrefix(r.URL.Path, "/upload/")] = b
		s.mu.Unlock()
		_, _ = io.WriteString(w, "OK")
		return
	}
	method, ok := strings.CutPrefix(r.URL.Path, "/api/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if s.down.Load() {
		s.failed.Add(1)
		http.Error(w, "<html>service unavailable</html>", http.StatusServiceUnavailable)
		return
	}
	var body []byte
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		body, _ = io.ReadAll(r.Body)
	} else {
		_ = r.ParseForm()
	}
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if tok == "" {
		tok = r.Form.Get("token")
	}
	want := BotToken
	if method == "apps.connections.open" {
		want = AppToken
	}
	s.mu.Lock()
	s.calls[method]++
	if tok != want {
		s.badTokens = append(s.badTokens, method)
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	refused := s.refuse[method]
	s.mu.Unlock()
	if refused != "" {
		writeJSON(w, map[string]any{"ok": false, "error": refused})
		return
	}
	f := r.Form.Get
	switch method {
	case "auth.test":
		writeJSON(w, map[string]any{"ok": true, "user_id": BotUser, "bot_id": BotID, "team": "tunebot-test", "team_id": "T1"})
	case "apps.connections.open":
		writeJSON(w, map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/ws"})
	case "chat.postMessage":
		m := &Message{Channel: f("channel"), TS: s.ts(), ThreadTS: f("thread_ts"), Text: f("text"), Blocks: f("blocks")}
		s.mu.Lock()
		s.messages = append(s.messages, m)
		s.cond.Broadcast()
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS})
	case "chat.update":
		s.mu.Lock()
		var found *Message
		for _, m := range s.messages {
			if m.Channel == f("channel") && m.TS == f("ts") {
				found = m
			}
		}
		if found != nil {
			found.Text, found.Blocks = f("text"), f("blocks")
			found.Edits++
			s.cond.Broadcast()
		}
		s.mu.Unlock()
		if found == nil {
			writeJSON(w, map[string]any{"ok": false, "error": "message_not_found"})
			return
		}
		writeJSON(w, map[string]any{"ok": true, "channel": found.Channel, "ts": found.TS})
	case "chat.postEphemeral":
		m := Message{Channel: f("channel"), TS: s.ts(), ThreadTS: f("thread_ts"), Text: f("text"), Blocks: f("blocks"), User: f("user")}
		s.mu.Lock()
		s.ephemerals = append(s.ephemerals, m)
		s.cond.Broadcast()
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": true, "message_ts": m.TS})
	case "views.open":
		var req struct {
			TriggerID string          `json:"trigger_id"`
			View      json.RawMessage `json:"view"`
		}
		_ = json.Unmarshal(body, &req)
		var v struct {
			CallbackID      string `json:"callback_id"`
			PrivateMetadata string `json:"private_metadata"`
			Blocks          []struct {
				BlockID string `json:"block_id"`
			} `json:"blocks"`
		}
		_ = json.Unmarshal(req.View, &v)
		view := View{TriggerID: req.TriggerID, ID: fmt.Sprintf("V%d", s.next()), JSON: string(req.View), Callback: v.CallbackID, Metadata: v.PrivateMetadata}
		for _, b := range v.Blocks {
			view.BlockIDs = append(view.BlockIDs, b.BlockID)
		}
		if req.TriggerID == "" {
			writeJSON(w, map[string]any{"ok": false, "error": "invalid_trigger_id"})
			return
		}
		s.mu.Lock()
		s.views = append(s.views, view)
		s.cond.Broadcast()
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": true, "view": map[string]any{"id": view.ID}})
	case "files.getUploadURLExternal":
		id := fmt.Sprintf("F%d", s.next())
		n, _ := strconv.Atoi(f("length"))
		s.mu.Lock()
		s.pending[id], s.lengths[id] = f("filename"), n
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": true, "upload_url": s.srv.URL + "/upload/" + id, "file_id": id})
	case "files.completeUploadExternal":
		var files []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		}
		_ = json.Unmarshal([]byte(f("files")), &files)
		var out []map[string]string
		s.mu.Lock()
		for _, fl := range files {
			s.uploads = append(s.uploads, Upload{ID: fl.ID, Name: s.pending[fl.ID], Title: fl.Title, Channel: f("channel_id"), ThreadTS: f("thread_ts"),
				Size: s.lengths[fl.ID], Data: s.data[fl.ID]})
			out = append(out, map[string]string{"id": fl.ID, "title": fl.Title})
		}
		s.cond.Broadcast()
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": true, "files": out})
	case "conversations.open":
		user := f("users")
		if user == "" || strings.Contains(user, ",") {
			writeJSON(w, map[string]any{"ok": false, "error": "invalid_users"})
			return
		}
		// The DM channel's ID names its user, so a test sees whose DM a file went to.
		writeJSON(w, map[string]any{"ok": true, "channel": map[string]any{"id": "D" + user, "is_im": true, "user": user}})
	case "usergroups.list":
		s.mu.Lock()
		var gs []map[string]any
		for _, g := range s.groups {
			gs = append(gs, map[string]any{"id": g.ID, "users": g.Users, "handle": strings.ToLower(g.ID)})
		}
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": true, "usergroups": gs})
	default:
		writeJSON(w, map[string]any{"ok": false, "error": "unknown_method"})
	}
}

// readUpload reads what was sent to an upload URL: the "file" part of a multipart form, or
// the raw body (Slack takes both).
func readUpload(r *http.Request) ([]byte, error) {
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return io.ReadAll(r.Body)
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err != nil {
			return nil, fmt.Errorf("no file part in the upload: %w", err)
		}
		if part.FormName() == "file" {
			return io.ReadAll(part)
		}
	}
}

func (s *Server) serveResponse(w http.ResponseWriter, r *http.Request) {
	var m struct {
		ResponseType string          `json:"response_type"`
		Text         string          `json:"text"`
		Blocks       json.RawMessage `json:"blocks"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&m); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.responses = append(s.responses, Response{URL: r.URL.Path, ResponseType: m.ResponseType, Text: m.Text, Blocks: string(m.Blocks)})
	s.cond.Broadcast()
	s.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

var upgrader = websocket.Upgrader{CheckOrigin: func(r *http.Request) bool {
	// Slack's client sends this Origin; a fake that refused it would not be Slack.
	return r.Header.Get("Origin") == "https://api.slack.com"
}}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.origins = append(s.origins, r.Header.Get("Origin"))
	s.mu.Unlock()
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	stop := make(chan struct{})
	s.mu.Lock()
	if s.conn != nil {
		_ = s.conn.Close()
	}
	if s.stopPing != nil {
		close(s.stopPing)
	}
	s.conn, s.stopPing = conn, stop
	s.connects++
	s.cond.Broadcast()
	s.mu.Unlock()
	s.write(conn, map[string]any{"type": "hello", "num_connections": 1, "connection_info": map[string]any{"app_id": "A1"}})
	go func() {
		t := time.NewTicker(s.PingEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s.connWrite.Lock()
				err := conn.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second))
				s.connWrite.Unlock()
				if err != nil {
					return
				}
			}
		}
	}()
	for {
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if err := conn.ReadJSON(&ack); err != nil {
			s.mu.Lock()
			s.cond.Broadcast()
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.acks[ack.EnvelopeID] = Ack{EnvelopeID: ack.EnvelopeID, Payload: ack.Payload, At: time.Now()}
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

func (s *Server) write(conn *websocket.Conn, v any) error {
	s.connWrite.Lock()
	defer s.connWrite.Unlock()
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return conn.WriteJSON(v)
}

// Send sends an envelope of typ ("slash_commands", "interactive", "events_api") over the
// Socket Mode connection and returns its envelope ID.
func (s *Server) Send(typ string, payload any) (string, error) {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		return "", fmt.Errorf("no Socket Mode connection")
	}
	id := fmt.Sprintf("env-%d", s.next())
	raw, err := json.Marshal(payload)
	if err != nil {
		return "", err
	}
	return id, s.write(conn, map[string]any{"envelope_id": id, "type": typ, "payload": json.RawMessage(raw), "accepts_response_payload": typ != "events_api"})
}

// WaitConnected waits until a Socket Mode client is connected.
func (s *Server) WaitConnected(ctx context.Context) error {
	return s.Wait(ctx, func(st *State) bool { return st.Connects > 0 })
}

// WaitAck waits for the acknowledgement of envelope id.
func (s *Server) WaitAck(ctx context.Context, id string) (Ack, error) {
	var a Ack
	err := s.Wait(ctx, func(st *State) bool {
		var ok bool
		a, ok = st.Acks[id]
		return ok
	})
	return a, err
}

// State is a snapshot view of what the fake holds, for Wait's condition.
type State struct {
	Messages   []*Message
	Ephemerals []Message
	Responses  []Response
	Views      []View
	Uploads    []Upload
	Acks       map[string]Ack
	Calls      map[string]int
	BadTokens  []string
	Connects   int
	Origins    []string
}

// Wait blocks until cond holds (checked under the fake's lock on every change) or ctx
// ends. cond must not keep references to the State's slices after returning.
func (s *Server) Wait(ctx context.Context, cond func(*State) bool) error {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if cond(s.state()) {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if s.closed {
			return fmt.Errorf("fake Slack closed")
		}
		s.cond.Wait()
	}
}

// Snapshot returns a copy of the fake's state.
func (s *Server) Snapshot() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state()
	msgs := make([]*Message, len(st.Messages))
	for i, m := range st.Messages {
		c := *m
		msgs[i] = &c
	}
	st.Messages = msgs
	st.Ephemerals = append([]Message(nil), st.Ephemerals...)
	st.Responses = append([]Response(nil), st.Responses...)
	st.Views = append([]View(nil), st.Views...)
	st.Uploads = append([]Upload(nil), st.Uploads...)
	acks := map[string]Ack{}
	for k, v := range st.Acks {
		acks[k] = v
	}
	st.Acks = acks
	calls := map[string]int{}
	for k, v := range st.Calls {
		calls[k] = v
	}
	st.Calls = calls
	st.BadTokens = append([]string(nil), st.BadTokens...)
	st.Origins = append([]string(nil), st.Origins...)
	return *st
}

func (s *Server) state() *State {
	return &State{Messages: s.messages, Ephemerals: s.ephemerals, Responses: s.responses, Views: s.views, Uploads: s.uploads,
		Acks: s.acks, Calls: s.calls, BadTokens: s.badTokens, Connects: s.connects, Origins: s.origins}
}

// Slash is the payload of a /tune command.
func (s *Server) Slash(user, channel, text string) map[string]any {
	return map[string]any{"command": "/tune", "text": text, "user_id": user, "user_name": strings.ToLower(user), "channel_id": channel,
		"response_url": s.ResponseURL(), "trigger_id": fmt.Sprintf("trig-%d", s.next()), "team_id": "T1"}
}

// Click is the payload of a button click on message m.
func (s *Server) Click(user string, m *Message, actionID string) map[string]any {
	return map[string]any{"type": "block_actions", "user": map[string]any{"id": user, "name": strings.ToLower(user)},
		"trigger_id": fmt.Sprintf("trig-%d", s.next()), "response_url": s.ResponseURL(), "api_app_id": "A1",
		"container": map[string]any{"type": "message", "channel_id": m.Channel, "message_ts": m.TS, "thread_ts": m.ThreadTS},
		"channel":   map[string]any{"id": m.Channel}, "message": map[string]any{"ts": m.TS, "thread_ts": m.ThreadTS},
		"actions": []any{map[string]any{"type": "button", "action_id": actionID, "block_id": "actions", "value": actionID, "action_ts": "1"}}}
}

// Submit is the payload of a modal submission of v with values by block ID.
func (s *Server) Submit(user string, v View, values map[string]string) map[string]any {
	state := map[string]any{}
	for _, id := range v.BlockIDs {
		state[id] = map[string]any{"value": map[string]any{"type": "plain_text_input", "value": values[id]}}
	}
	return map[string]any{"type": "view_submission", "user": map[string]any{"id": user, "name": strings.ToLower(user)},
		"view": map[string]any{"id": v.ID, "type": "modal", "callback_id": v.Callback, "private_metadata": v.Metadata,
			"state": map[string]any{"values": state}}}
}

// Reply is an events_api payload of a message by user in a thread.
func (s *Server) Reply(user, channel, threadTS, text string) map[string]any {
	return map[string]any{"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": fmt.Sprintf("Ev%d", s.next()),
		"event": map[string]any{"type": "message", "user": user, "text": text, "channel": channel, "channel_type": "channel",
			"ts": s.ts(), "thread_ts": threadTS, "event_ts": "1"}}
}

// Sign returns the headers of a Slack request signed with secret at time at.
func Sign(secret string, body []byte, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", ts, body)
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return h
}

// Client returns an HTTP client that calls the fake in-process, without a socket: for
// tests on testing/synctest's clock, where network waits would stall fake time. (Socket
// Mode needs the real server.)
func (s *Server) Client() *http.Client {
	return &http.Client{Transport: inProcess{s}}
}

type inProcess struct{ s *Server }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.s.serve(rec, r)
	res := rec.Result()
	res.Request = r
	return res, nil
}
