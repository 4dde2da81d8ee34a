// Package slack is tunebot's Slack adapter: it renders the chat core's cards as Block Kit
// in a channel (a root message per session, edited in place, and everything else in its
// thread, charts uploaded into the thread), and turns /tune, button clicks, modal
// submissions and thread replies into bot.Interactions. It connects through Socket Mode
// (no inbound port) or serves Slack's HTTP requests with signature verification.
package slack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"tunebot/bot"
	"tunebot/session"
)

// Platform is the adapter's name in the outbox, the allow-list and the store's chat refs.
const Platform = "slack"

// Modes.
const (
	ModeSocket = "socket"
	ModeHTTP   = "http"
)

// DefaultAPIURL is Slack's Web API.
const DefaultAPIURL = "https://slack.com/api/"

// Refs is where the adapter records which Slack message shows which card, so edits and
// thread replies work across restarts; *store.DB implements it.
type Refs = bot.RefStore

// Config configures an Adapter. Tokens come from the environment through the caller; they
// are never logged.
type Config struct {
	Mode        string // ModeSocket (default) or ModeHTTP
	APIURL      string // default DefaultAPIURL
	Channel     string // channel ID where session root messages go
	AllowUsers  []string
	AllowGroups []string // user group IDs (S…); membership read with usergroups:read
	// ReadUsers and ReadGroups may read (and nothing else); when both are empty, everyone
	// in the workspace may read.
	ReadUsers   []string
	ReadGroups  []string
	NotifyUsers []string
	HTTPListen  string // HTTP mode: address to listen on

	BotToken      string // xoxb-…
	AppToken      string // xapp-… (Socket Mode)
	SigningSecret string // HTTP mode

	Refs       Refs
	HTTPClient *http.Client // nil: a client with a 30 s timeout
	// PingInterval is how long Socket Mode waits for Slack's ping before reconnecting
	// (default 30 s, slack-go's).
	PingInterval time.Duration
	// GroupsTTL is how long user group membership is cached (default 5 min).
	GroupsTTL time.Duration
	Logger    *slog.Logger
}

// Adapter is the Slack platform: a bot.Sink for the outbox and the inbound side for Run.
type Adapter struct {
	cfg  Config
	api  *slack.Client
	http *http.Client
	log  *slog.Logger
	refs bot.Refs

	wg sync.WaitGroup // follow-up work started by inbound interactions

	mu       sync.Mutex
	self     string // the bot's own user ID, from auth.test
	botID    string
	groups   map[string][]string // user ID → group IDs
	groupsAt time.Time
	events   map[string]time.Time // Events API event IDs seen, for Slack's retries

	sigs signatures // HTTP mode: request signatures of the replay window
}

// New checks cfg and returns an adapter; it does not connect.
func New(cfg Config) (*Adapter, error) {
	if cfg.Mode == "" {
		cfg.Mode = ModeSocket
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		cfg.APIURL += "/"
	}
	var probs []string
	switch cfg.Mode {
	case ModeSocket:
		if cfg.AppToken == "" {
			probs = append(probs, "SLACK_APP_TOKEN is not set (Socket Mode needs an app-level token with connections:write)")
		}
	case ModeHTTP:
		if cfg.SigningSecret == "" {
			probs = append(probs, "SLACK_SIGNING_SECRET is not set (HTTP mode verifies every request with it)")
		}
	default:
		probs = append(probs, fmt.Sprintf("mode %q is not socket or http", cfg.Mode))
	}
	if cfg.BotToken == "" {
		probs = append(probs, "SLACK_BOT_TOKEN is not set")
	}
	if cfg.Channel == "" {
		probs = append(probs, "no channel is configured")
	}
	if cfg.Refs == nil {
		probs = append(probs, "no store for chat refs")
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("slack: %s", strings.Join(probs, "; "))
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.GroupsTTL <= 0 {
		cfg.GroupsTTL = 5 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	opts := []slack.Option{slack.OptionAPIURL(cfg.APIURL), slack.OptionHTTPClient(cfg.HTTPClient)}
	if cfg.AppToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(cfg.AppToken))
	}
	return &Adapter{cfg: cfg, api: slack.New(cfg.BotToken, opts...), http: cfg.HTTPClient,
		log: cfg.Logger.With("platform", Platform), refs: bot.Refs{Store: cfg.Refs, Platform: Platform}}, nil
}

// Platform returns "slack".
func (a *Adapter) Platform() string { return Platform }

// Grants allows the configured users and members of the configured user groups
// everything (with neither, nobody may start or decide from Slack), and the read users and
// groups reading; with no read grant, everyone may read.
func (a *Adapter) Grants() bot.AllowList {
	return bot.Grants(Platform, a.cfg.AllowUsers, a.cfg.AllowGroups, a.cfg.ReadUsers, a.cfg.ReadGroups)
}

// NotifyUsers are mentioned besides a session's owner.
func (a *Adapter) NotifyUsers() []string { return a.cfg.NotifyUsers }

// Chat ref keys.
func rootKey(sessionID string) string { return "root/" + sessionID }
func cardKey(ref string) string       { return "card/" + ref }
func threadKey(channel, ts string) string {
	return "thread/" + channel + "/" + ts
}
func fileKey(ref, name string) string { return "file/" + ref + "/" + name }

// where is a message's place: "channel/ts".
func where(channel, ts string) string { return channel + "/" + ts }

func splitWhere(v string) (channel, ts string, ok bool) {
	return strings.Cut(v, "/")
}

// Deliver posts or edits one card. The root card of a session goes to the channel and is
// edited in place afterwards; every other card goes in the root's thread, and a card seen
// before (a proposal receiving its stamp) edits its message. Each step is recorded before
// the next, so a retried delivery neither posts twice nor uploads a chart twice.
func (a *Adapter) Deliver(ctx context.Context, d bot.Delivery) error {
	c, sid := d.Message.Card, d.Session()
	ref := cardRef(d)
	blocks, text := Render(c)
	log := a.log.With("session", sid, "card", c.Kind, "outbox_id", d.ID)
	if c.Kind == "root" {
		return a.deliverRoot(ctx, sid, c, blocks, text, log)
	}
	root, ok, err := a.refs.Get(ctx, rootKey(sid))
	if err != nil {
		return err
	}
	if !ok {
		// The root card is queued before any other card of its session, so this only
		// happens when it could not be delivered; retry rather than post out of thread.
		return fmt.Errorf("the root message of session %s is not posted yet", session.Short(sid))
	}
	ch, thread, _ := splitWhere(root)
	if err := a.deliverInThread(ctx, ch, thread, ref, c, blocks, text, log); err != nil {
		return err
	}
	return a.upload(ctx, ch, thread, ref, c, log)
}

// cardRef is what a delivered card's message is recorded under: the card's own reference,
// else the delivery's key, else the delivery itself.
func cardRef(d bot.Delivery) string {
	switch {
	case d.Message.Card.Ref != "":
		return d.Message.Card.Ref
	case d.Key != "":
		return d.Key
	}
	return fmt.Sprintf("outbox/%d", d.ID)
}

// deliverRoot edits session sid's root message in place, or posts it to the channel when
// there is none yet (or it was deleted) and records where.
func (a *Adapter) deliverRoot(ctx context.Context, sid string, c bot.Card, blocks []slack.Block, text string, log *slog.Logger) error {
	if v, ok, err := a.refs.Get(ctx, rootKey(sid)); err != nil {
		return err
	} else if ok {
		ch, ts, _ := splitWhere(v)
		err := a.update(ctx, ch, ts, c, blocks, text)
		if !isSlackError(err, "message_not_found") {
			return a.classify(err, log)
		}
		log.Warn("the session's root message is gone; posting it again")
	}
	ch, ts, err := a.post(ctx, a.cfg.Channel, "", c, blocks, text)
	if err != nil {
		return a.classify(err, log)
	}
	if err := a.refs.Put(ctx, rootKey(sid), where(ch, ts)); err != nil {
		return err
	}
	return a.refs.Put(ctx, threadKey(ch, ts), sid)
}

// deliverInThread edits the message card ref was posted as before, or posts it in the
// thread of channel ch (again, when the old one was deleted) and records where.
func (a *Adapter) deliverInThread(ctx context.Context, ch, thread, ref string, c bot.Card, blocks []slack.Block, text string, log *slog.Logger) error {
	var ts string
	if v, ok, err := a.refs.Get(ctx, cardKey(ref)); err != nil {
		return err
	} else if ok {
		_, ts, _ = splitWhere(v)
		err := a.update(ctx, ch, ts, c, blocks, text)
		if err != nil && !isSlackError(err, "message_not_found") {
			return a.classify(err, log)
		}
		if err != nil {
			ts = ""
		}
	}
	if ts != "" {
		return nil
	}
	_, ts, err := a.post(ctx, ch, thread, c, blocks, text)
	if err != nil {
		return a.classify(err, log)
	}
	return a.refs.Put(ctx, cardKey(ref), where(ch, ts))
}

// upload puts the card's attachments into the thread (files.getUploadURLExternal → upload →
// files.completeUploadExternal), each once: charts, and files such as a preset's JSON.
func (a *Adapter) upload(ctx context.Context, channel, thread, ref string, c bot.Card, log *slog.Logger) error {
	for _, at := range attachments(c) {
		if _, ok, err := a.refs.Get(ctx, fileKey(ref, at.Name)); err != nil {
			return err
		} else if ok {
			continue
		}
		id, err := a.uploadFile(ctx, channel, thread, at)
		if err != nil {
			return a.classify(err, log)
		}
		if err := a.refs.Put(ctx, fileKey(ref, at.Name), id); err != nil {
			return err
		}
	}
	return nil
}

// attachments are the card's attachments that have content.
func attachments(c bot.Card) []bot.Attachment {
	var out []bot.Attachment
	for _, b := range c.Blocks {
		for _, at := range b.Attachments {
			if len(at.Data) > 0 {
				out = append(out, at)
			}
		}
	}
	return out
}

// uploadFile shares one attachment in channel (in thread when given) and returns the file's
// ID. Slack tells a file's type from its name, so the name keeps (or gains) the extension
// of its content type: a preset's JSON is shown as JSON, a chart as an image, a policy as
// a binary file to download.
func (a *Adapter) uploadFile(ctx context.Context, channel, thread string, at bot.Attachment) (string, error) {
	what := at.Kind()
	f, err := a.api.UploadFileContext(ctx, slack.UploadFileParameters{
		Reader: bytes.NewReader(at.Data), FileSize: len(at.Data), Filename: fileName(at), Title: at.Title,
		Channel: channel, ThreadTimestamp: thread, AltTxt: at.Title,
	})
	if err != nil {
		return "", fmt.Errorf("uploading %s %s: %w", what, at.Name, err)
	}
	return f.ID, nil
}

// extensions are the file name endings Slack reads each content type from.
var extensions = map[string]string{"": ".png", "image/png": ".png", bot.ContentJSON: ".json", bot.ContentBinary: "",
	"video/mp4": ".mp4", "image/gif": ".gif"}

func fileName(at bot.Attachment) string {
	name := at.Name
	if name == "" {
		name = "file"
	}
	if ext := extensions[at.ContentType]; ext != "" && !strings.HasSuffix(strings.ToLower(name), ext) {
		name += ext
	}
	return name
}

func (a *Adapter) post(ctx context.Context, channel, thread string, c bot.Card, blocks []slack.Block, text string) (string, string, error) {
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)}
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	ch, ts, err := a.api.PostMessageContext(ctx, channel, opts...)
	if isSlackError(err, "invalid_blocks") {
		a.log.Warn("Slack refused a card's blocks; posting it as text", "card", c.Kind, "err", err)
		opts[1] = slack.MsgOptionBlocks(FallbackBlocks(c)...)
		ch, ts, err = a.api.PostMessageContext(ctx, channel, opts...)
	}
	if err != nil {
		return "", "", fmt.Errorf("posting a %s card: %w", c.Kind, err)
	}
	return ch, ts, nil
}

func (a *Adapter) update(ctx context.Context, channel, ts string, c bot.Card, blocks []slack.Block, text string) error {
	_, _, _, err := a.api.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...))
	if isSlackError(err, "invalid_blocks") {
		a.log.Warn("Slack refused a card's blocks; editing it as text", "card", c.Kind, "err", err)
		_, _, _, err = a.api.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(FallbackBlocks(c)...))
	}
	if err != nil {
		return fmt.Errorf("editing a %s card: %w", c.Kind, err)
	}
	return nil
}

func isSlackError(err error, code string) bool {
	var se slack.SlackErrorResponse
	return err != nil && errors.As(err, &se) && se.Err == code
}

// fixes says what an operator does about a Slack error that no retry will cure.
var fixes = map[string]string{
	"channel_not_found":       "chat.slack.channel must be a channel ID (C…) the bot can see",
	"not_in_channel":          "invite the bot to the channel (/invite @tunebot) or grant chat:write.public",
	"is_archived":             "the channel is archived; unarchive it or configure another",
	"invalid_auth":            "SLACK_BOT_TOKEN is not a valid bot token (xoxb-…) for this workspace",
	"not_authed":              "SLACK_BOT_TOKEN is empty",
	"token_revoked":           "the bot token was revoked; reinstall the app and update SLACK_BOT_TOKEN",
	"account_inactive":        "the app's bot user is deactivated; reinstall the app",
	"missing_scope":           "the app lacks a scope; add those of docs/slack.md and reinstall",
	"restricted_action":       "a workspace policy forbids posting in the channel",
	"msg_too_long":            "the message is too long for Slack",
	"invalid_blocks":          "Slack refused the blocks even as plain text",
	"no_text":                 "the message was empty",
	"cant_update_message":     "the message was not posted by this bot",
	"edit_window_closed":      "the workspace forbids editing old messages",
	"ekm_access_denied":       "the workspace's encryption keys forbid access",
	"team_access_not_granted": "the token is not granted access to this workspace",
}

// transient Slack API errors: a retry may succeed.
var transient = map[string]bool{
	"internal_error": true, "fatal_error": true, "service_unavailable": true, "request_timeout": true,
	"ratelimited": true, "timeout": true, "team_added_to_org": true,
}

// classify maps a Slack failure to the outbox's vocabulary: 429 → RetryAfter, an API error
// no retry cures → Permanent (logged with what to fix), everything else (5xx, transport)
// → retried with backoff.
func (a *Adapter) classify(err error, log *slog.Logger) error {
	if err == nil {
		return nil
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return bot.RetryAfter(rl.RetryAfter, err)
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) {
		if sc.Code >= 500 || sc.Code == http.StatusTooManyRequests || sc.Code == http.StatusRequestTimeout {
			return err
		}
		log.Error("Slack refused a delivery; it is dropped", "status", sc.Code, "err", err)
		return bot.Permanent(err)
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		if transient[se.Err] {
			return err
		}
		fix := fixes[se.Err]
		if fix == "" {
			fix = "see https://api.slack.com/methods for the error code"
		}
		args := []any{"slack_error", se.Err, "fix", fix, "err", err}
		if se.Needed != "" {
			args = append(args, "needed_scope", se.Needed)
		}
		log.Error("Slack refused a delivery; it is dropped", args...)
		return bot.Permanent(err)
	}
	return err // transport failures and anything unknown: retried with backoff
}
