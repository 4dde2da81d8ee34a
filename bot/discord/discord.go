// Package discord is tunebot's Discord adapter (github.com/bwmarrin/discordgo): it renders
// the chat core's cards as embeds with buttons and PNG attachments in a thread per session,
// registers the guild's /tune command, and turns slash commands, button clicks, modal
// submissions and (optionally) thread replies into bot.Handler calls.
package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"tunebot/bot"
	"tunebot/session"
)

// Platform is the adapter's name in the outbox, the allow-list and the chat refs.
const Platform = "discord"

// DefaultAPIURL is the REST API discordgo speaks (its endpoints are fixed at v9).
const DefaultAPIURL = "https://discord.com/api/v9"

// Store is what the adapter keeps and reads: where its messages are (chat refs survive a
// restart, so a thread reply finds its session and a decision edits its proposal card),
// and the presets /tune autocompletes.
type Store interface {
	bot.RefStore
	Presets(ctx context.Context) ([]session.Preset, error)
}

// Handler answers interactions; *bot.Handler implements it.
type Handler interface {
	Handle(ctx context.Context, in bot.Interaction, followUp func(bot.Reply)) (first bot.Reply, sent func())
}

var _ Handler = (*bot.Handler)(nil)

// Config configures an Adapter.
type Config struct {
	Token         string // the bot token (DISCORD_BOT_TOKEN), never logged
	ApplicationID string
	GuildID       string
	ChannelID     string // where session root messages go; threads hang from them
	APIURL        string // default DefaultAPIURL; a proxy or a test server may stand there
	// ThreadReplies reads approve/reject/edit/… typed in a session thread. It needs the
	// privileged Message Content intent, so it is off unless asked for.
	ThreadReplies bool
	MaxUpload     int // bytes per file and per message (default DefaultMaxUpload)
	// RolesTTL is how long Roles reuses a member's roles (default DefaultRolesTTL).
	RolesTTL time.Duration
	Store    Store
	Logger   *slog.Logger
	// Transport carries the REST requests after their rewrite to APIURL (default
	// http.DefaultTransport); Dialer opens the gateway (default websocket.DefaultDialer).
	Transport http.RoundTripper
	Dialer    *websocket.Dialer
}

// Adapter is the Discord chat adapter: a bot.Sink for the outbox and the gateway client.
type Adapter struct {
	cfg  Config
	api  *url.URL // cfg.APIURL parsed
	dg   *discordgo.Session
	log  *slog.Logger
	refs bot.Refs

	mu      sync.Mutex // serialises thread creation per process
	flight  sync.WaitGroup
	running atomic.Bool

	membersMu sync.Mutex
	members   map[string]memberRoles // user → their roles as last read (Roles)
}

var _ bot.Sink = (*Adapter)(nil)

// Intents are the gateway intents the adapter asks for: guilds always (thread and channel
// events), guild messages and message content only with thread replies, the one feature
// that reads what people type.
func Intents(threadReplies bool) discordgo.Intent {
	i := discordgo.IntentGuilds
	if threadReplies {
		i |= discordgo.IntentGuildMessages | discordgo.IntentMessageContent
	}
	return i
}

var sdkLogger atomic.Pointer[slog.Logger]
var sdkLoggerOnce sync.Once

// New returns an adapter; Run connects it.
func New(cfg Config) (*Adapter, error) {
	cfg, to, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	dg, err := newSession(cfg, to)
	if err != nil {
		return nil, err
	}
	a := &Adapter{cfg: cfg, api: to, dg: dg, log: cfg.Logger.With("platform", Platform), refs: bot.Refs{Store: cfg.Store, Platform: Platform}}
	routeSDKLogs(a.log)
	return a, nil
}

// withDefaults checks cfg (a token, a store, Discord IDs, an http(s) API URL), fills in
// the defaults of what it leaves out, and returns it with the API URL parsed.
func withDefaults(cfg Config) (Config, *url.URL, error) {
	if cfg.Token == "" {
		return cfg, nil, errors.New("discord: no bot token (set DISCORD_BOT_TOKEN)")
	}
	if cfg.Store == nil {
		return cfg, nil, errors.New("discord: no store")
	}
	for _, f := range []struct{ name, v string }{{"application_id", cfg.ApplicationID}, {"guild_id", cfg.GuildID}, {"channel_id", cfg.ChannelID}} {
		if !snowflake.MatchString(f.v) {
			return cfg, nil, fmt.Errorf("discord: %s %q is not a Discord ID (digits; copy it with Developer Mode on)", f.name, f.v)
		}
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	to, err := url.Parse(strings.TrimRight(cfg.APIURL, "/"))
	if err != nil || (to.Scheme != "https" && to.Scheme != "http") || to.Host == "" {
		return cfg, nil, fmt.Errorf("discord: api_url %q is not an http(s) URL", cfg.APIURL)
	}
	if cfg.MaxUpload <= 0 {
		cfg.MaxUpload = DefaultMaxUpload
	}
	if cfg.RolesTTL <= 0 {
		cfg.RolesTTL = DefaultRolesTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport
	}
	return cfg, to, nil
}

// newSession makes the discordgo session, its requests sent to the API at to.
func newSession(cfg Config, to *url.URL) (*discordgo.Session, error) {
	token := cfg.Token
	if !strings.HasPrefix(token, "Bot ") {
		token = "Bot " + token
	}
	dg, err := discordgo.New(token)
	if err != nil {
		return nil, fmt.Errorf("discord: creating the session: %w", err)
	}
	dg.Client = &http.Client{Timeout: 20 * time.Second, Transport: &rewriter{base: cfg.Transport, to: to}}
	// The outbox dispatcher owns retries: discordgo must neither sleep through a 429 nor
	// loop on 502s inside a delivery.
	dg.ShouldRetryOnRateLimit = false
	dg.MaxRestRetries = 0
	dg.StateEnabled = false
	dg.Compress = false
	dg.Identify.Compress = false
	dg.Identify.Intents = Intents(cfg.ThreadReplies)
	if cfg.Dialer != nil {
		dg.Dialer = cfg.Dialer
	}
	return dg, nil
}

// routeSDKLogs sends discordgo's log lines to log, a level lower: discordgo reports
// reconnects as errors, and they are routine.
func routeSDKLogs(log *slog.Logger) {
	sdkLogger.Store(log)
	sdkLoggerOnce.Do(func() {
		discordgo.Logger = func(level, _ int, format string, args ...any) {
			l := sdkLogger.Load()
			if l == nil {
				return
			}
			lv := slog.LevelDebug
			switch level {
			case discordgo.LogError:
				lv = slog.LevelWarn // discordgo reports reconnects as errors; they are routine
			case discordgo.LogWarning:
				lv = slog.LevelInfo
			}
			l.Log(context.Background(), lv, "discordgo: "+fmt.Sprintf(format, args...))
		}
	})
}

// rewriter sends discordgo's requests for https://discord.com/api/v9/… to the configured
// API URL (discordgo's endpoints are package variables fixed at load) and refuses any other
// destination, so the token only ever goes to the configured API. It also records each
// response's status and rate-limit headers for the caller's probe.
type rewriter struct {
	base http.RoundTripper
	to   *url.URL
}

const apiPrefix = "/api/v" + "9"

func (t *rewriter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != "discord.com" || !strings.HasPrefix(r.URL.Path, apiPrefix) {
		return nil, fmt.Errorf("discord: refusing a request outside the Discord API: %s %s", r.Method, r.URL.Redacted())
	}
	r2 := r.Clone(r.Context())
	u := *r.URL
	u.Scheme, u.Host = t.to.Scheme, t.to.Host
	u.Path = t.to.Path + strings.TrimPrefix(r.URL.Path, apiPrefix)
	u.RawPath = ""
	r2.URL, r2.Host = &u, ""
	resp, err := t.base.RoundTrip(r2)
	if p, ok := r.Context().Value(probeKey{}).(*probe); ok && resp != nil {
		p.record(resp)
	}
	return resp, err
}

// probe keeps what the last response of a call said, beyond what discordgo's error keeps
// (a 429 without a JSON body, the Retry-After headers).
type probe struct {
	mu         sync.Mutex
	status     int
	retryAfter time.Duration
}

type probeKey struct{}

func (p *probe) record(resp *http.Response) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status = resp.StatusCode
	p.retryAfter = 0
	for _, h := range []string{"Retry-After", "X-RateLimit-Reset-After"} {
		if v := resp.Header.Get(h); v != "" {
			if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
				p.retryAfter = max(p.retryAfter, time.Duration(f*float64(time.Second)))
			}
		}
	}
}

func (p *probe) get() (int, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, p.retryAfter
}

// call runs one REST call with ctx and a fresh probe.
func call[T any](ctx context.Context, f func(...discordgo.RequestOption) (T, error)) (T, *probe, error) {
	p := &probe{}
	v, err := f(discordgo.WithContext(context.WithValue(ctx, probeKey{}, p)))
	return v, p, err
}

// Discord JSON error codes the adapter acts on.
const (
	codeUnknownChannel     = 10003
	codeUnknownMessage     = 10008
	codeUnknownWebhook     = 10015
	codeUnknownInteraction = 10062
	codeInvalidWebhookTok  = 50027
	codeThreadExists       = 160004
)

func restCode(err error) (status, code int) {
	var re *discordgo.RESTError
	if errors.As(err, &re) {
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		if re.Message != nil {
			code = re.Message.Code
		}
	}
	return status, code
}

// stale reports whether err says an interaction token can no longer be used: Discord
// forgets a token after 15 minutes, and the first answer must come within 3 seconds.
func stale(err error) bool {
	status, code := restCode(err)
	switch code {
	case codeUnknownInteraction, codeUnknownWebhook, codeInvalidWebhookTok:
		return true
	}
	return status == http.StatusUnauthorized || status == http.StatusNotFound
}

// classify turns a failed REST call of a delivery into what the dispatcher should do.
func (a *Adapter) classify(err error, p *probe, what string) error {
	status, after := 0, time.Duration(0)
	if p != nil {
		status, after = p.get()
	}
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		return bot.RetryAfter(max(rl.RetryAfter, after), fmt.Errorf("%s: rate limited by Discord: %w", what, err))
	}
	st, code := restCode(err)
	if st != 0 {
		status = st
	}
	switch {
	case status == http.StatusTooManyRequests:
		return bot.RetryAfter(max(after, time.Second), fmt.Errorf("%s: rate limited by Discord: %w", what, err))
	case status >= 500:
		return fmt.Errorf("%s: Discord is failing (HTTP %d): %w", what, status, err)
	case status == http.StatusUnauthorized:
		a.log.Error("Discord refused the bot token: set a valid DISCORD_BOT_TOKEN (Developer Portal → Bot → Reset Token)", "doing", what)
		return bot.Permanent(fmt.Errorf("%s: unauthorized: %w", what, err))
	case status == http.StatusForbidden:
		a.log.Error("Discord refused the bot: give it Send Messages, Send Messages in Threads, Create Public Threads, Embed Links, Attach Files and Read Message History in the channel", "channel_id", a.cfg.ChannelID, "doing", what, "code", code)
		return bot.Permanent(fmt.Errorf("%s: missing permissions: %w", what, err))
	case status == http.StatusNotFound || code == codeUnknownChannel:
		a.log.Error("Discord does not know that channel or message: check chat.discord.channel_id and that the bot is in the server", "channel_id", a.cfg.ChannelID, "doing", what, "code", code)
		return bot.Permanent(fmt.Errorf("%s: not found: %w", what, err))
	case status >= 400:
		a.log.Error("Discord refused a message tunebot built; this is a tunebot bug", "doing", what, "status", status, "code", code, "err", err)
		return bot.Permanent(fmt.Errorf("%s: refused (HTTP %d): %w", what, status, err))
	}
	return fmt.Errorf("%s: %w", what, err)
}
