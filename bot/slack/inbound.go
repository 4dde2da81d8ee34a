package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"tunebot/bot"
)

// maxBody bounds an HTTP-mode request; Slack's payloads are far smaller.
const maxBody = 1 << 20

// target is where the answer to an interaction goes.
type target struct {
	Channel     string `json:"c,omitempty"`
	Thread      string `json:"t,omitempty"`
	User        string `json:"u,omitempty"`
	ResponseURL string `json:"r,omitempty"`
}

// Run connects (Socket Mode) or listens (HTTP mode) and serves interactions with h until
// ctx ends, then waits (bounded) for the follow-ups in flight.
func (a *Adapter) Run(ctx context.Context, h *bot.Handler) error {
	defer a.drain()
	if err := a.whoAmI(ctx); err != nil {
		return err
	}
	if a.cfg.Mode == ModeHTTP {
		return a.serveHTTP(ctx, h)
	}
	return a.runSocket(ctx, h)
}

func (a *Adapter) drain() {
	if !bot.Drain(&a.wg) {
		a.log.Warn("some Slack follow-ups were still running at shutdown")
	}
}

// whoAmI learns the bot's own user ID so its messages in a thread are never read as
// commands. A bad token is said plainly here, once, rather than on every delivery.
func (a *Adapter) whoAmI(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		res, err := a.api.AuthTestContext(ctx)
		if err == nil {
			a.mu.Lock()
			a.self, a.botID = res.UserID, res.BotID
			a.mu.Unlock()
			a.log.Info("connected to Slack", "team", res.Team, "bot_user", res.UserID)
			return nil
		}
		if isPermanent(a.classify(err, a.log)) {
			return fmt.Errorf("checking SLACK_BOT_TOKEN with auth.test: %w", err)
		}
		a.log.Warn("Slack is not reachable; retrying", "err", err)
		if !bot.Sleep(ctx, bot.Backoff(attempt, time.Minute)) {
			return nil
		}
	}
}

func isPermanent(err error) bool {
	var p *bot.PermanentError
	return errors.As(err, &p)
}

// runSocket keeps a Socket Mode connection up, reconnecting with backoff until ctx ends.
func (a *Adapter) runSocket(ctx context.Context, h *bot.Handler) error {
	opts := []socketmode.Option{socketmode.OptionLog(slog.NewLogLogger(a.log.Handler(), slog.LevelDebug))}
	if a.cfg.PingInterval > 0 {
		opts = append(opts, socketmode.OptionPingInterval(a.cfg.PingInterval))
	}
	client := socketmode.New(a.api, opts...)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-client.Events:
				a.socketEvent(ctx, client, h, ev)
			}
		}
	}()
	for attempt := 0; ; attempt++ {
		err := client.RunContext(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if isSlackError(err, "invalid_auth") || isSlackError(err, "not_authed") || strings.Contains(err.Error(), "invalid_auth") {
			return fmt.Errorf("opening the Socket Mode connection: %w (SLACK_APP_TOKEN must be an app-level token xapp-… with connections:write)", err)
		}
		d := bot.Backoff(attempt, time.Minute)
		a.log.Warn("Socket Mode connection ended; reconnecting", "err", err, "in", d)
		if !bot.Sleep(ctx, d) {
			return nil
		}
	}
}

// socketEvent acknowledges an envelope at once (block actions, commands, events) or after
// the handler's verdict (a modal submission, whose errors travel in the ack), and leaves
// the work to a goroutine so the next envelope is read meanwhile.
func (a *Adapter) socketEvent(ctx context.Context, client *socketmode.Client, h *bot.Handler, ev socketmode.Event) {
	switch ev.Type {
	case socketmode.EventTypeConnected:
		a.log.Info("Socket Mode connected")
		return
	case socketmode.EventTypeConnectionError, socketmode.EventTypeInvalidAuth:
		a.log.Warn("Socket Mode connection problem", "event", ev.Type)
		return
	case socketmode.EventTypeSlashCommand, socketmode.EventTypeInteractive, socketmode.EventTypeEventsAPI:
	default:
		return
	}
	if ev.Request == nil {
		return
	}
	req := *ev.Request
	ack := func(payload any) {
		if err := client.Ack(req, payload); err != nil {
			a.log.Error("acknowledging a Slack request", "type", ev.Type, "err", err)
		}
	}
	switch data := ev.Data.(type) {
	case slack.SlashCommand:
		ack(nil)
		a.slash(ctx, h, data)
	case slack.InteractionCallback:
		if data.Type == slack.InteractionTypeViewSubmission {
			a.goWork(func() { ack(a.submit(ctx, h, data)) })
			return
		}
		ack(nil)
		a.interaction(ctx, h, data)
	case slackevents.EventsAPIEvent:
		ack(nil)
		a.event(ctx, h, data)
	default:
		ack(nil)
	}
}

// goWork runs f as follow-up work Run waits for at shutdown; a panic is logged.
func (a *Adapter) goWork(f func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer func() {
			if p := recover(); p != nil {
				a.log.Error("Slack interaction panicked", "panic", p, "stack", string(debug.Stack()))
			}
		}()
		f()
	}()
}

// slash handles /tune: the answer (private for errors and help, public for starts) goes
// through the command's response_url.
func (a *Adapter) slash(ctx context.Context, h *bot.Handler, c slack.SlashCommand) {
	to := target{Channel: c.ChannelID, User: c.UserID, ResponseURL: c.ResponseURL}
	a.goWork(func() {
		in := a.interactionBase(ctx, c.UserID, c.UserName, c.ChannelID, "")
		in.Kind, in.Text = bot.KindCommand, c.Text
		a.handle(ctx, h, in, to, c.TriggerID)
	})
}

// interaction handles a button click: Approve and Pause act at once; Reject and Edit
// answer with a form, opened as a modal with the click's trigger_id.
func (a *Adapter) interaction(ctx context.Context, h *bot.Handler, cb slack.InteractionCallback) {
	if cb.Type != slack.InteractionTypeBlockActions {
		return
	}
	for _, act := range cb.ActionCallback.BlockActions {
		if act == nil || !strings.HasPrefix(act.ActionID, "tune:") {
			continue
		}
		channel := cb.Container.ChannelID
		if channel == "" {
			channel = cb.Channel.ID
		}
		thread := cb.Container.ThreadTs
		if thread == "" {
			thread = cb.Message.ThreadTimestamp
		}
		to := target{Channel: channel, Thread: thread, User: cb.User.ID, ResponseURL: cb.ResponseURL}
		actionID, trigger := act.ActionID, cb.TriggerID
		a.goWork(func() {
			in := a.interactionBase(ctx, cb.User.ID, cb.User.Name, channel, thread)
			in.Kind, in.ActionID = bot.KindAction, actionID
			a.handle(ctx, h, in, to, trigger)
		})
	}
}

// event handles a message in a session's thread as a reply (approve, reject …, edit …);
// anything else there is a comment and gets no answer. Bot messages, the bot's own
// included, and edits are ignored.
func (a *Adapter) event(ctx context.Context, h *bot.Handler, e slackevents.EventsAPIEvent) {
	if e.Type != slackevents.CallbackEvent {
		return
	}
	if cb, ok := e.Data.(*slackevents.EventsAPICallbackEvent); ok && !a.firstDelivery(cb.EventID) {
		a.log.Debug("ignoring a retried Slack event", "event_id", cb.EventID)
		return
	}
	m, ok := e.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok || m.SubType != "" || m.BotID != "" || m.User == "" || m.ThreadTimeStamp == "" || m.ThreadTimeStamp == m.TimeStamp {
		return
	}
	a.mu.Lock()
	self := a.self
	a.mu.Unlock()
	if m.User == self {
		return
	}
	a.goWork(func() {
		sid, ok, err := a.refs.Get(ctx, threadKey(m.Channel, m.ThreadTimeStamp))
		if err != nil {
			a.log.Error("looking up a thread's session", "err", err)
			return
		}
		if !ok {
			return // a thread tunebot did not start
		}
		in := a.interactionBase(ctx, m.User, "", m.Channel, m.ThreadTimeStamp)
		in.Kind, in.Text, in.SessionID = bot.KindReply, m.Text, sid
		a.handle(ctx, h, in, target{Channel: m.Channel, Thread: m.ThreadTimeStamp, User: m.User}, "")
	})
}

// eventMemory is how long an event ID is remembered: Slack retries an unacknowledged
// event three times within about five minutes, each with the same event_id.
const eventMemory = time.Hour

// firstDelivery reports whether the event with this ID is new, and remembers it. Slack
// retries an event it thinks went unanswered (a slow ack, a reconnect in Socket Mode), and
// a thread reply "approve" handled twice would answer its own decision with "already
// approved". An event without an ID is always new.
func (a *Adapter) firstDelivery(id string) bool {
	if id == "" {
		return true
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.events == nil {
		a.events = map[string]time.Time{}
	}
	if _, seen := a.events[id]; seen {
		return false
	}
	if len(a.events) >= 1024 {
		for k, at := range a.events {
			if now.Sub(at) > eventMemory {
				delete(a.events, k)
			}
		}
	}
	a.events[id] = now
	return true
}

func (a *Adapter) interactionBase(ctx context.Context, user, name, channel, thread string) bot.Interaction {
	return bot.Interaction{Platform: Platform, User: actor(user, name), Roles: a.Roles(ctx, user), Channel: channel, Thread: thread}
}

// handle runs in through the handler and sends the answer (and any later follow-up).
func (a *Adapter) handle(ctx context.Context, h *bot.Handler, in bot.Interaction, to target, trigger string) {
	a.log.Debug("Slack interaction", "kind", in.Kind, "user", in.User.ID, "channel", in.Channel)
	r, sent := h.Handle(ctx, in, func(r bot.Reply) {
		a.goWork(func() { a.respond(context.WithoutCancel(ctx), to, r, "") })
	})
	defer sent()
	a.respond(ctx, to, r, trigger)
}

// Roles returns the user groups of user when allow-listing by group is configured. The
// membership of every group is read with usergroups.list (include_users) and cached for
// GroupsTTL; a failure means no roles (allow_users still works), logged.
func (a *Adapter) Roles(ctx context.Context, user string) []string {
	if len(a.cfg.AllowGroups) == 0 && len(a.cfg.ReadGroups) == 0 || user == "" {
		return nil
	}
	a.mu.Lock()
	fresh := a.groups != nil && time.Since(a.groupsAt) < a.cfg.GroupsTTL
	if fresh {
		defer a.mu.Unlock()
		return a.groups[user]
	}
	a.mu.Unlock()
	gs, err := a.api.GetUserGroupsContext(ctx, slack.GetUserGroupsOptionIncludeUsers(true))
	if err != nil {
		a.log.Error("reading Slack user groups (needs the usergroups:read scope); allow_groups cannot match", "err", err)
		return nil
	}
	m := map[string][]string{}
	for _, g := range gs {
		for _, u := range g.Users {
			m[u] = append(m[u], g.ID)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.groups, a.groupsAt = m, time.Now()
	return m[user]
}

// respond sends a reply: a form opens as a modal (with trigger); a private reply goes
// through the response_url when there is one, else chat.postEphemeral; a public one
// through the response_url (in_channel), else chat.postMessage in the thread. The files of
// a reply (charts, a preset's JSON, a policy) are uploaded after it, beside it; those of a
// private reply go to the person's direct messages, since Slack files cannot be private.
func (a *Adapter) respond(ctx context.Context, to target, r bot.Reply, trigger string) {
	if r.Empty() {
		return
	}
	log := a.log.With("user", to.User, "channel", to.Channel)
	if r.Form != nil {
		if trigger == "" {
			r = bot.Reply{Private: true, Text: "this needs a form; reply in the session's thread instead: reject N <feedback> or edit N term=value … (N: the proposal's number)"}
		} else {
			meta, _ := json.Marshal(target{Channel: to.Channel, Thread: to.Thread})
			if _, err := a.api.OpenViewContext(ctx, trigger, Modal(*r.Form, string(meta))); err != nil {
				log.Error("opening a Slack modal", "err", err)
				r = bot.Reply{Private: true, Text: "could not open the form (" + err.Error() + "); reply in the session's thread instead: reject N <feedback> or edit N term=value … (N: the proposal's number)"}
			} else {
				return
			}
		}
	}
	var blocks []slack.Block
	text := escape(r.Text)
	var files []bot.Attachment
	fileTo := to // where the reply's files go: beside the answer
	if r.Card != nil {
		c := *r.Card
		if r.Text != "" {
			c.Blocks = append([]bot.Block{bot.Text(r.Text)}, c.Blocks...)
		}
		files = attachments(c)
		if r.Private && len(files) > 0 {
			// Slack has no ephemeral files: whatever is shared in a channel, everyone in it
			// can open. A file meant for one person goes to their direct messages with
			// tunebot; the private answer says where it is.
			dm, err := a.openDM(ctx, to.User)
			if err != nil {
				log.Error("opening a direct message for a private file", "err", err)
				c.Blocks = append(c.Blocks, bot.Text("the file could not be sent to you: opening a direct message with you failed ("+slackProblem(err)+")"))
				files = nil
			} else {
				fileTo = target{Channel: dm, User: to.User}
				c.Blocks = append(c.Blocks, bot.Text("the file is in your direct messages with tunebot (Slack cannot share a file with one person in a channel)"))
			}
		}
		blocks, text = Render(c)
	} else {
		blocks = []slack.Block{slack.NewSectionBlock(mrkdwn(bot.Truncate(text, maxText)), nil, nil)}
	}
	a.send(ctx, to, r.Private, blocks, text, log)
	// The files follow the answer that names them.
	for _, at := range files {
		if _, err := a.uploadFile(ctx, fileTo.Channel, fileTo.Thread, at); err != nil {
			log.Error("uploading a reply's file", "file", at.Name, "err", err)
			a.send(ctx, target{Channel: to.Channel, Thread: to.Thread, User: to.User}, true,
				nil, escape(fmt.Sprintf("could not attach %s: %s", fileName(at), slackProblem(err))), log)
		}
	}
}

// send posts an answer: through the response_url when there is one, else with the Web API
// (chat.postEphemeral for a private one, chat.postMessage in the thread otherwise).
func (a *Adapter) send(ctx context.Context, to target, private bool, blocks []slack.Block, text string, log *slog.Logger) {
	if blocks == nil {
		blocks = []slack.Block{slack.NewSectionBlock(mrkdwn(bot.Truncate(text, maxText)), nil, nil)}
	}
	if to.ResponseURL != "" && a.mayPost(to.ResponseURL) {
		msg := &slack.WebhookMessage{Text: bot.Truncate(text, maxFallback), Blocks: &slack.Blocks{BlockSet: blocks}, ResponseType: slack.ResponseTypeEphemeral}
		if !private {
			msg.ResponseType = slack.ResponseTypeInChannel
		}
		err := slack.PostWebhookCustomHTTPContext(ctx, to.ResponseURL, a.http, msg)
		if err == nil {
			return
		}
		log.Warn("answering through the response_url failed; using the Web API", "err", err)
	}
	opts := []slack.MsgOption{slack.MsgOptionText(bot.Truncate(text, maxFallback), false), slack.MsgOptionBlocks(blocks...)}
	if to.Thread != "" {
		opts = append(opts, slack.MsgOptionTS(to.Thread))
	}
	var err error
	if private {
		_, err = a.api.PostEphemeralContext(ctx, to.Channel, to.User, opts...)
	} else {
		_, _, err = a.api.PostMessageContext(ctx, to.Channel, opts...)
	}
	if err != nil {
		log.Error("answering a Slack interaction", "private", private, "err", err)
	}
}

// openDM returns the ID of the direct message channel between the bot and user
// (conversations.open, which needs the im:write scope).
func (a *Adapter) openDM(ctx context.Context, user string) (string, error) {
	ch, _, _, err := a.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{user}})
	if err != nil {
		return "", fmt.Errorf("opening a direct message: %w", err)
	}
	return ch.ID, nil
}

// slackProblem says in a line what a Slack failure means for the person who asked: the
// error code and, for those an operator fixes, how.
func slackProblem(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		if se.Err == "missing_scope" && se.Needed != "" {
			return "missing_scope: the app lacks the " + se.Needed + " scope; add it as docs/slack.md says and reinstall"
		}
		if fix := fixes[se.Err]; fix != "" {
			return se.Err + ": " + fix
		}
		return se.Err
	}
	return "Slack could not be reached; try again"
}

// mayPost reports whether a response_url is Slack's (https, slack.com) or on the API
// URL's host (tests, GovSlack): nothing else receives what tunebot answers.
func (a *Adapter) mayPost(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	api, err := url.Parse(a.cfg.APIURL)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if u.Scheme == "https" && (host == "slack.com" || strings.HasSuffix(host, ".slack.com") || strings.HasSuffix(host, ".slack-gov.com")) {
		return true
	}
	return u.Scheme == api.Scheme && strings.EqualFold(u.Host, api.Host)
}

// submit handles a modal submission through the handler and returns the acknowledgement
// payload: the per-field errors when the handler refused the input (the modal stays open
// and nothing changed), else nothing (the modal closes) with the answer sent afterwards.
func (a *Adapter) submit(ctx context.Context, h *bot.Handler, cb slack.InteractionCallback) any {
	var to target
	_ = json.Unmarshal([]byte(cb.View.PrivateMetadata), &to)
	to.User, to.ResponseURL = cb.User.ID, ""
	values := FormValues(cb.View)
	in := a.interactionBase(ctx, cb.User.ID, cb.User.Name, to.Channel, to.Thread)
	in.Kind, in.ActionID, in.Values = bot.KindSubmit, cb.View.CallbackID, values
	r, sent := h.Handle(ctx, in, func(r bot.Reply) {
		a.goWork(func() { a.respond(context.WithoutCancel(ctx), to, r, "") })
	})
	if r.Private && r.Text != "" && !r.Working && r.Card == nil && r.Form == nil {
		sent() // the errors are the answer; there is no follow-up
		return slack.NewErrorsViewSubmissionResponse(FieldErrors(cb.View, r.Text))
	}
	a.goWork(func() { defer sent(); a.respond(context.WithoutCancel(ctx), to, r, "") })
	return nil
}

// HTTPHandler serves Slack's HTTP requests (slash commands, interactivity and the Events
// API, on any path) for h. Every request must carry a valid signature made with the
// signing secret within 5 minutes; anything else gets 401 and changes nothing. A request
// whose signature was already seen in that window is a replay: acknowledged, not run.
func (a *Adapter) HTTPHandler(ctx context.Context, h *bot.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		// The headers are checked before the body is read: a request without a fresh
		// signature is refused unread.
		sv, err := slack.NewSecretsVerifier(r.Header, a.cfg.SigningSecret)
		if err != nil {
			a.log.Warn("refused an unsigned, stale or forged Slack request", "remote", r.RemoteAddr, "err", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
			return
		}
		_, _ = sv.Write(body)
		if err := sv.Ensure(); err != nil {
			a.log.Warn("refused an unsigned, stale or forged Slack request", "remote", r.RemoteAddr, "err", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		// The signature holds for 5 minutes: the same request sent again in that time is a
		// replay (Slack's own retries are signed anew), acknowledged and dropped like a
		// retried event.
		ts, _ := strconv.ParseInt(r.Header.Get("X-Slack-Request-Timestamp"), 10, 64)
		switch ok, full := a.sigs.admit(signatureKey(r.Header.Get("X-Slack-Signature")), time.Unix(ts, 0), time.Now()); {
		case full:
			a.log.Warn("refused a Slack request: too many signed requests in the last 5 minutes to check it is not a replay", "remote", r.RemoteAddr)
			http.Error(w, "too many requests", http.StatusServiceUnavailable)
			return
		case !ok:
			a.log.Warn("dropped a replayed Slack request (its signature was seen in the last 5 minutes)", "remote", r.RemoteAddr)
			w.WriteHeader(http.StatusOK)
			return
		}
		a.serveVerified(ctx, h, w, r.Header.Get("Content-Type"), body)
	})
}

func (a *Adapter) serveVerified(ctx context.Context, h *bot.Handler, w http.ResponseWriter, ctype string, body []byte) {
	if strings.HasPrefix(ctype, "application/json") {
		e, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
		if err != nil {
			http.Error(w, "bad event", http.StatusBadRequest)
			return
		}
		if e.Type == slackevents.URLVerification {
			if v, ok := e.Data.(*slackevents.EventsAPIURLVerificationEvent); ok {
				w.Header().Set("Content-Type", "text/plain")
				_, _ = io.WriteString(w, v.Challenge)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
		a.event(ctx, h, e)
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if p := form.Get("payload"); p != "" {
		var cb slack.InteractionCallback
		if err := json.Unmarshal([]byte(p), &cb); err != nil {
			http.Error(w, "bad payload", http.StatusBadRequest)
			return
		}
		if cb.Type == slack.InteractionTypeViewSubmission {
			if out := a.submit(ctx, h, cb); out != nil {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(out)
				return
			}
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusOK)
		a.interaction(ctx, h, cb)
		return
	}
	if form.Get("command") != "" {
		w.WriteHeader(http.StatusOK)
		a.slash(ctx, h, slack.SlashCommand{ChannelID: form.Get("channel_id"), UserID: form.Get("user_id"), UserName: form.Get("user_name"),
			Command: form.Get("command"), Text: form.Get("text"), ResponseURL: form.Get("response_url"), TriggerID: form.Get("trigger_id")})
		return
	}
	http.Error(w, "unknown request", http.StatusBadRequest)
}

func (a *Adapter) serveHTTP(ctx context.Context, h *bot.Handler) error {
	srv := &http.Server{Addr: a.cfg.HTTPListen, Handler: a.HTTPHandler(ctx, h), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	a.log.Info("serving Slack requests", "listen", a.cfg.HTTPListen)
	select {
	case err := <-errc:
		return fmt.Errorf("serving Slack requests on %s: %w", a.cfg.HTTPListen, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// Wait blocks until the follow-ups of interactions served so far are done.
func (a *Adapter) Wait() { a.wg.Wait() }
