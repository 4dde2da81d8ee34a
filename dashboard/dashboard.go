// Package dashboard is tunebot's monitoring page (docs/design.md §6): the sessions, a
// session's leaderboard, halving ladder, proposals and audit, TensorBoard-style curves and
// the presets, served by `tunebot run` on the service listener. Assets are embedded; the
// page reads JSON with its sign-in cookie, and every action goes through the chat handler,
// so the allow-list, audit and idempotency are chat's.
package dashboard

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"tunebot/bot"
	"tunebot/secret"
	"tunebot/session"
)

//go:embed assets
var assets embed.FS

// Actions is how the page acts: the chat handler, so that a click here and one in chat take
// the same path (allow-list, audit, engine call, one decision). *bot.Handler implements it.
// Refuse is the allow-list's check of a verb alone, audited as chat's, which every action
// passes before the session is looked up or its body read (Server.act); Advised says
// whether an advisor reads people's notes, so the page promises a prompt only then.
type Actions interface {
	Do(ctx context.Context, in bot.Interaction) bot.Reply
	Refuse(ctx context.Context, in bot.Interaction, cmd bot.Command) (bot.Reply, bool)
	Advised() bool
}

var _ Actions = (*bot.Handler)(nil)

// Options wires a Server.
type Options struct {
	Store   session.Store
	Actions Actions
	Allow   bot.AllowList // who may read the page, and what it offers a person; the handler checks again
	Space   *session.Space
	// SpaceOf is a task's own reward space when several are configured (nil: Space).
	SpaceOf func(task string) *session.Space
	Key     []byte // LoadKey's signing key
	// KeyPath is the key's file, which POST /api/rotate (tunebot dashboard rotate) replaces;
	// "" leaves rotation off.
	KeyPath string
	// Roles returns the roles (Slack user groups, Discord roles) user holds on platform now;
	// the allow-list is checked with them at every request. nil: nobody holds any.
	Roles func(ctx context.Context, platform, user string) []string
	// ReadLimit bounds each person's reads of the page (default PageReadLimit).
	ReadLimit bot.RateLimit
	// ActionLimit bounds each person's actions on the page, refused ones included (default
	// PageActionLimit): a budget of their own, so reading does not use it up.
	ActionLimit bot.RateLimit
	// PublicURL is where people reach the page (service.public_url), used for links and
	// as an accepted Origin; "" means the listener's own address (BaseURL).
	PublicURL string
	// BaseURL is the listener's address as a URL (http://127.0.0.1:9464), for links when
	// PublicURL is empty.
	BaseURL string
	Logger  *slog.Logger
	Now     func() time.Time // nil: time.Now
	// Clips opens a trial's clip for the page (nil: the page shows none).
	Clips ClipOpener
	// Redact masks tunebot's secrets in every answer the page reads (secret.Process), as
	// the chat handler and the notifier mask them in replies and cards: a failed trial's
	// reason quotes its log's end. nil masks nothing.
	Redact *secret.Redactor
}

// ClipOpener opens the clip recorded on trial t (poster: its poster frame), checked
// against the size and hash the store holds (cmd/tunebot wires trainer.OpenClip).
type ClipOpener func(t session.Trial, poster bool) (ClipFile, error)

// ClipFile is an open clip: the page streams Section, which reads the one descriptor the
// clip was checked on up to the size it was checked at, and then closes it.
type ClipFile interface {
	Section() *io.SectionReader
	Close() error
}

// PageReadLimit bounds one person's reads of the page's data: 60 at once, then two a second.
// A page refreshes every 3 s (a third of a read a second), so several open tabs stay well
// inside it; a large curves answer costs more (pointsPerRead).
var PageReadLimit = bot.RateLimit{Burst: 60, Every: 500 * time.Millisecond}

// PageActionLimit bounds one person's actions on the page (approve, reject, edit, pause,
// prefer, …): 20 at once, then one every 3 s. A person decides a proposal in minutes; a
// script sending thousands is answered 429 without reaching the handler or the audit.
var PageActionLimit = bot.RateLimit{Burst: 20, Every: 3 * time.Second}

// Server serves the monitoring page.
type Server struct {
	opt   Options
	auth  *auth
	log   *slog.Logger
	mux   *http.ServeMux
	page  *template.Template
	limit *bot.Limiter // each person's page reads
	acts  *bot.Limiter // each person's page actions

	doneMu sync.Mutex
	done   map[string]int // finished sessions' rung-0 trials with a result, for their rows
}

// New returns the page's server.
func New(opt Options) (*Server, error) {
	if opt.Store == nil || opt.Actions == nil || len(opt.Key) < keySize {
		return nil, fmt.Errorf("dashboard: store, actions and a %d-byte key are required", keySize)
	}
	if opt.Space == nil {
		opt.Space = session.DefaultSpace()
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.ReadLimit == (bot.RateLimit{}) {
		opt.ReadLimit = PageReadLimit
	}
	if opt.ActionLimit == (bot.RateLimit{}) {
		opt.ActionLimit = PageActionLimit
	}
	opt.PublicURL = strings.TrimRight(opt.PublicURL, "/")
	opt.BaseURL = strings.TrimRight(opt.BaseURL, "/")
	page, err := template.ParseFS(assets, "assets/page.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	s := &Server{opt: opt, auth: newAuth(opt.Key, opt.Now), log: opt.Logger, mux: http.NewServeMux(), page: page, limit: bot.NewLimiter(opt.ReadLimit), acts: bot.NewLimiter(opt.ActionLimit), done: map[string]int{}}
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", cacheFor(time.Hour, files)))

	for path, kind := range map[string]string{
		"GET /{$}": "sessions", "GET /sessions/{id}": "session", "GET /sessions/{id}/curves": "curves",
		"GET /presets": "presets", "GET /presets/{name}": "preset",
	} {
		s.mux.HandleFunc(path, s.shell(kind))
	}
	s.mux.HandleFunc("GET /signin", s.signinPage)
	s.mux.HandleFunc("POST /signin", s.signin)
	s.mux.HandleFunc("POST /signout", s.signout)
	// The operator's routes (tunebot dashboard link and rotate) are not here: Operator
	// serves them, on the daemon's socket only.

	// Reading needs a valid cookie.
	s.mux.HandleFunc("GET /api/me", s.read(s.me))
	s.mux.HandleFunc("GET /api/sessions", s.read(s.sessions))
	s.mux.HandleFunc("GET /api/sessions/{id}", s.read(withLabels(s.sessionView)))
	s.mux.HandleFunc("GET /api/sessions/{id}/tags", s.read(withLabels(s.tags)))
	s.mux.HandleFunc("GET /api/sessions/{id}/curves", s.read(s.curves))
	s.mux.HandleFunc("GET /api/presets", s.read(s.presets))
	s.mux.HandleFunc("GET /api/presets/{name}", s.read(s.presetView))
	s.mux.HandleFunc("GET /api/presets/{name}/export", s.download(s.exportPreset))
	s.mux.HandleFunc("GET /api/presets/{name}/policy", s.download(s.policy))
	s.mux.HandleFunc("GET /api/sessions/{id}/trials/{number}/{rung}/clip", s.clip(false))
	s.mux.HandleFunc("GET /api/sessions/{id}/trials/{number}/{rung}/poster", s.clip(true))

	// Acting needs the cookie, the Origin and the allow-list: the permission of the verb
	// each route names is checked before the session is looked up or the body read.
	s.mux.HandleFunc("POST /api/sessions/{id}/proposals/{pid}/{verb}", s.act(pathVerb, s.decide))
	s.mux.HandleFunc("POST /api/sessions/{id}/prefer", s.act(fixedVerb(bot.VerbPrefer), s.prefer))
	s.mux.HandleFunc("POST /api/sessions/{id}/review", s.act(fixedVerb(bot.VerbGo), s.review))
	s.mux.HandleFunc("POST /api/sessions/{id}/{verb}", s.act(pathVerb, s.control))
	s.mux.HandleFunc("POST /api/start", s.act(fixedVerb(bot.VerbStart), s.start))
	s.mux.HandleFunc("POST /api/agent", s.act(fixedVerb(bot.VerbAgent), s.agent))
}

// Operator serves the operator's routes, POST /api/link and POST /api/rotate (tunebot
// dashboard link and rotate), for the daemon's Unix socket (httpd.Local): never on the page's
// listener, so no proxy in front of it can reach them, whatever headers it adds.
func (s *Server) Operator() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/link", s.operatorLink)
	mux.HandleFunc("POST /api/rotate", s.rotate)
	return mux
}

// ServeHTTP adds the headers every answer carries: no framing, no inline script, nothing
// from another origin.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // "no-referrer" would make Chromium send Origin: null
	h.Set("X-Frame-Options", "DENY")
	s.mux.ServeHTTP(w, r)
}

func cacheFor(d time.Duration, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", fmt.Sprintf("private, max-age=%d", int(d.Seconds())))
		h.ServeHTTP(w, r)
	})
}

// Link returns a one-time sign-in link for who (for /tune dashboard).
func (s *Server) Link(who Identity) (string, time.Time, error) {
	token, exp, err := s.auth.issue(who)
	if err != nil {
		return "", time.Time{}, err
	}
	return s.URL("/signin") + "?token=" + url.QueryEscape(token), exp, nil
}

// URL is the address of path on the page, as people reach it.
func (s *Server) URL(path string) string {
	base := s.opt.PublicURL
	if base == "" {
		base = s.opt.BaseURL
	}
	return base + path
}

// TrialPath is the page of a session with one trial picked out, for chat's trial reports.
func TrialPath(sessionID string, number, rung int) string {
	return fmt.Sprintf("/sessions/%s?trial=%d@%d", url.PathEscape(sessionID), number, rung)
}

type shellData struct {
	Kind  string
	Title string
	ID    string
	Name  string
}

// shell serves a page's HTML: no data in it, so it is the same signed in or not; the
// script fetches the data with the cookie and shows the sign-in hint when there is none.
// So a link followed from chat (a cross-site navigation, which carries no SameSite=Strict
// cookie) still shows the page: the script's own requests are same-site.
func (s *Server) shell(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d := shellData{Kind: kind, Title: "tunebot", ID: r.PathValue("id"), Name: r.PathValue("name")}
		s.render(w, http.StatusOK, d)
	}
}

func (s *Server) render(w http.ResponseWriter, status int, d shellData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := s.page.Execute(w, d); err != nil {
		s.log.Warn("rendering the page", "err", err)
	}
}

// signinPage shows a button that redeems the link's token by POST: link previews (chat
// unfurls) only GET, so they cannot use up a person's link.
func (s *Server) signinPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, http.StatusOK, shellData{Kind: "signin", Title: "tunebot: sign in", Name: r.URL.Query().Get("token")})
}

// maxSigninBody caps the sign-in form: "token=" and a 32-character token. The route answers
// anyone, before any token is checked, so nothing larger is read.
const maxSigninBody = 1 << 10

func (s *Server) signin(w http.ResponseWriter, r *http.Request) {
	if !s.sameOrigin(r) {
		http.Error(w, "sign-in must come from the page itself", http.StatusForbidden)
		return
	}
	// Only the page's own form, and only its size: PostFormValue would otherwise parse a
	// multipart body of any size and write its files to $TMPDIR for anyone who asks.
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		http.Error(w, "sign-in takes the page's form (Content-Type: application/x-www-form-urlencoded)", http.StatusUnsupportedMediaType)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxSigninBody)
	if err := r.ParseForm(); err != nil {
		if tooBig := new(http.MaxBytesError); errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("the sign-in form is larger than %d bytes", maxSigninBody), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "the sign-in form is malformed", http.StatusBadRequest)
		return
	}
	who, ok := s.auth.redeem(r.PostForm.Get("token"))
	if !ok {
		s.render(w, http.StatusUnauthorized, shellData{Kind: "expired", Title: "tunebot: link expired"})
		return
	}
	http.SetCookie(w, s.auth.cookie(who, s.secure(r)))
	s.log.Info("signed in to the monitoring page", "platform", who.Platform, "user", who.ID)
	// A clean address: the token never stays in the bar or the history.
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) signout(w http.ResponseWriter, r *http.Request) {
	if !s.sameOrigin(r) {
		http.Error(w, "sign-out must come from the page itself", http.StatusForbidden)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(s.opt.PublicURL, "https://")
}

// operator reports whether r proves its sender read the key file; if not, it answers 401.
func (s *Server) operator(w http.ResponseWriter, r *http.Request) bool {
	got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if subtle.ConstantTimeCompare([]byte(got), []byte(s.auth.operatorToken())) != 1 {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "not the operator: the token must come from the data directory's dashboard.key"})
		return false
	}
	return true
}

// operatorLink is `tunebot dashboard link`: a sign-in link for whoever proves they read the
// key file.
func (s *Server) operatorLink(w http.ResponseWriter, r *http.Request) {
	if !s.operator(w, r) {
		return
	}
	u, exp, err := s.Link(Operator)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"url": u, "expires": exp.UTC()})
}

// rotate is `tunebot dashboard rotate`: a new key in the key file and in use at once, so
// every cookie and unused link stops working; everyone signs in again.
func (s *Server) rotate(w http.ResponseWriter, r *http.Request) {
	if !s.operator(w, r) {
		return
	}
	if s.opt.KeyPath == "" {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "this monitoring page has no key file to rotate"})
		return
	}
	key, err := RotateKey(s.opt.KeyPath)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.auth.rekey(key)
	s.log.Warn("the monitoring page's key was rotated: everyone is signed out")
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// sameOrigin accepts a state-changing request only from the page: its Origin must be the
// public URL's, or the address the browser used (an SSH tunnel's localhost:PORT).
func (s *Server) sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return false
	}
	if s.opt.PublicURL != "" {
		if u, err := url.Parse(s.opt.PublicURL); err == nil && strings.EqualFold(origin, u.Scheme+"://"+u.Host) {
			return true
		}
	}
	return strings.EqualFold(origin, "http://"+r.Host) || strings.EqualFold(origin, "https://"+r.Host)
}

// readFunc answers a read of the page for the person in (their identity and the roles they
// hold now).
type readFunc func(ctx context.Context, in bot.Interaction, r *http.Request) (any, error)

// person is who as the chat handler knows people: their platform and id, and the roles
// they hold now (not when they signed in).
func (s *Server) person(ctx context.Context, who Identity) bot.Interaction {
	in := bot.Interaction{Platform: who.Platform, User: session.Actor{ID: who.ID, Name: nameOf(who), Where: "dashboard"}, Channel: "dashboard"}
	if s.opt.Roles != nil {
		in.Roles = s.opt.Roles(ctx, who.Platform, who.ID)
	}
	return in
}

// reader checks a read of the page: a valid cookie (else 401), the read permission as the
// allow-list grants it now (else 403), and the person's read limit (else 429). It answers
// the refusal itself and reports ok false.
func (s *Server) reader(w http.ResponseWriter, r *http.Request) (bot.Interaction, bool) {
	who, ok := s.auth.identity(r)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, signInHint)
		return bot.Interaction{}, false
	}
	in := s.person(r.Context(), who)
	if !s.opt.Allow.Allows(in.Platform, in.User.ID, in.Roles, bot.PermRead) {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf("you are not allowed to read tunebot's monitoring page (it needs the %q permission on %s); ask a tunebot operator", bot.PermRead, in.Platform)})
		return in, false
	}
	if wait := s.limit.Take(in.Platform+"/"+in.User.ID, s.opt.Now()); wait > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(int((wait+time.Second-1)/time.Second)))
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"error": s.limit.SlowDown("page reads", wait)})
		return in, false
	}
	return in, true
}

// read serves JSON to a signed-in person allowed to read; without a valid cookie, 401 and
// no data.
func (s *Server) read(f readFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		in, ok := s.reader(w, r)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if err := s.resolveID(ctx, r); err != nil {
			s.fail(w, err)
			return
		}
		v, err := f(ctx, in, r)
		if err != nil {
			s.fail(w, err)
			return
		}
		body, err := json.Marshal(v)
		if err != nil {
			s.fail(w, fmt.Errorf("encoding an answer: %w", err))
			return
		}
		// Every string the page serves passes the one sanitizer (session.Printable) here, so
		// a bidi or zero-width mark a trainer, an advisor or an older tunebot stored never
		// reaches the page. json.Marshal has escaped every control character, and the
		// newline and tab Printable keeps never occur raw in its output. It comes before the
		// redactor, which then sees a secret split by invisible marks whole.
		body = []byte(session.Printable(string(body)))
		// The redactor knows each secret's JSON-escaped form too, so the answer is masked
		// whole, whatever field a trainer's words reached, and stays JSON (Redactor.JSON).
		if body, err = s.opt.Redact.JSON(body); err != nil {
			s.fail(w, fmt.Errorf("encoding an answer: %w", err))
			return
		}
		// A read buys BytesPerRead of answer; each BytesPerRead more costs one more.
		s.limit.Charge(in.Platform+"/"+in.User.ID, s.opt.Now(), float64(max(len(body)-BytesPerRead, 0))/BytesPerRead)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(append(body, '\n'))
	}
}

var signInHint = map[string]string{"error": "not signed in", "hint": "ask tunebot for a link: /tune dashboard in chat, or tunebot dashboard link --config FILE on the machine"}

// problem is an error with the HTTP status and message a person sees.
type problem struct {
	status int
	msg    string
}

func (p *problem) Error() string { return p.msg }

func notFound(format string, args ...any) error {
	return &problem{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return &problem{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func (s *Server) fail(w http.ResponseWriter, err error) {
	if p, ok := err.(*problem); ok {
		writeJSON(w, p.status, map[string]string{"error": p.msg})
		return
	}
	s.log.Error("monitoring page", "err", err)
	writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "that failed inside tunebot; the details are in its log"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
