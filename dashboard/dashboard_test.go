package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"tunebot/bot"
	"tunebot/bot/bottest"
	"tunebot/dashboard"
	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer"
	"tunebot/trainer/sim"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

const sid = "1a2b3c4d5e6f7a8b"

var (
	alice = dashboard.Identity{Platform: "slack", ID: "U1", Name: "alice"}
	eve   = dashboard.Identity{Platform: "slack", ID: "U666", Name: "eve"}
)

// clock is a settable time for link and cookie expiry.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type fixture struct {
	dir   string // the engine's sessions directory
	db    *store.DB
	h     *bot.Handler
	dash  *dashboard.Server
	srv   *httptest.Server
	clock *clock
	prop  session.Proposal
}

func scored(total float64, eligible bool, reasons ...string) *session.Score {
	return &session.Score{Total: total, Eligible: eligible, Reasons: reasons, Objectives: map[string]float64{"tracking": 0.1}}
}

// newFixture stores a paused approval session with trials 0–2 (two rungs), a pending
// proposal, curves and a preset, and serves the page over the real handler and engine; mods
// change the page's options (the handler gets the same allow-list).
func newFixture(t *testing.T, mods ...func(*dashboard.Options)) *fixture {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sp := session.DefaultSpace()
	sessionsDir := t.TempDir()
	eng, err := session.NewEngine(session.EngineConfig{Store: db, Trainer: bottest.NoTrainer{}, Sampler: bottest.NoAdvisor{}, Space: sp, SessionsDir: sessionsDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	st := session.DefaultSettings()
	st.Mode = session.ModeApproval
	st.Normalize()
	base := sp.Defaults()
	s := session.Session{ID: sid, State: session.StatePaused, Settings: st, Owner: session.Actor{Platform: "slack", ID: "U1", Name: "alice"},
		Base: base, BestTrial: 2, BestRung: 0, BestScore: 0.12, CreatedAt: t0, UpdatedAt: t0}
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	c1 := session.Merge(base, session.Patch{Weights: map[string]float64{"pose": 1.5}})
	c2 := session.Merge(c1, session.Patch{Weights: map[string]float64{"foot_slip": -0.5}})
	for _, tr := range []session.Trial{
		{Number: 0, Rung: 0, Iterations: 300, State: session.TrialCompleted, Source: "baseline", RewardConfig: base, Score: scored(0, true), Metrics: session.Metrics{"fall_rate": 0.01}},
		{Number: 1, Rung: 0, Iterations: 300, State: session.TrialCompleted, Source: "advisor", RewardConfig: c1, Score: scored(0.05, false, "fall rate 0.050 exceeds the baseline's 0.010 + 0.02")},
		{Number: 2, Rung: 0, Iterations: 300, State: session.TrialCompleted, Source: "edit", RunDir: "trial-002-rung-0", Policy: "trial-002-rung-0/policy.onnx", RewardConfig: c2, Score: scored(0.12, true), Metrics: session.Metrics{"fall_rate": 0.005}},
	} {
		tr.SessionID = sid
		if err := db.PutTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	pts := make([]session.Point, 3000)
	for i := range pts {
		pts[i] = session.Point{Step: int64(i), Value: float64(i % 17)}
	}
	for _, n := range []int{0, 2} {
		if err := db.PutSeries(ctx, session.SeriesKey{SessionID: sid, Number: n, Rung: 0, Tag: "Train/mean_reward"}, pts); err != nil {
			t.Fatal(err)
		}
	}
	p := session.Proposal{ID: "1a2b3c4d-p03", SessionID: sid, Seq: 3, Number: 3, BaseTrial: 2, Base: c2,
		Patch:     session.Patch{Weights: map[string]float64{"pose": 1.25}, Params: map[string]float64{"foot_clearance.target_height": 0.12}},
		Rationale: "<script>alert(1)</script> raise pose", Source: "advisor", Model: "deepseek-v4-flash", State: session.ProposalPending, CreatedAt: t0}
	if err := db.PutProposal(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := db.Append(ctx, session.AuditEntry{Time: t0, SessionID: sid, Kind: "advisor_call", Actor: session.System,
		Detail: map[string]any{"model": "deepseek-v4-flash", "outcome": "ok", "usage": map[string]any{"prompt_tokens": 1200, "completion_tokens": 80}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.SavePreset(ctx, session.Preset{Name: "auto-tune-1a2b3c4d", SessionID: sid, Trial: session.TrialRef{Number: 2}, Config: c2, Score: 0.12, Task: st.Task, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	clk := &clock{t: time.Now()}
	clips := func(t session.Trial, poster bool) (dashboard.ClipFile, error) {
		f, err := trainer.OpenClip(sessionsDir, t, poster)
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	opt := dashboard.Options{Store: db, Allow: bot.AllowList{{Platform: "slack", Users: []string{"U1"}}}, Space: sp, Key: key, Now: clk.now, Clips: clips}
	for _, m := range mods {
		m(&opt)
	}
	h := bot.NewHandler(bot.HandlerConfig{Engine: eng, Store: db, Space: sp, Allow: opt.Allow, SessionsDir: sessionsDir})
	opt.Actions = h
	dash, err := dashboard.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dash)
	t.Cleanup(srv.Close)
	return &fixture{dir: sessionsDir, db: db, h: h, dash: dash, srv: srv, clock: clk, prop: p}
}

// client is a browser without redirects followed, holding its cookies.
type client struct {
	t      *testing.T
	f      *fixture
	cookie *http.Cookie
	origin string
}

func (f *fixture) anon(t *testing.T) *client { return &client{t: t, f: f, origin: f.srv.URL} }

// signIn goes through a one-time link as who.
func (f *fixture) signIn(t *testing.T, who dashboard.Identity) *client {
	t.Helper()
	c := f.anon(t)
	link, _, err := f.dash.Link(who)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(link)
	resp := c.post("/signin", "application/x-www-form-urlencoded", "token="+url.QueryEscape(u.Query().Get("token")))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign-in: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, ck := range resp.Cookies() {
		c.cookie = ck
	}
	if c.cookie == nil {
		t.Fatal("sign-in set no cookie")
	}
	return c
}

func (c *client) do(req *http.Request) *http.Response {
	c.t.Helper()
	if c.cookie != nil {
		req.AddCookie(c.cookie)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func (c *client) get(path string) *http.Response {
	req, _ := http.NewRequest(http.MethodGet, c.f.srv.URL+path, nil)
	return c.do(req)
}

func (c *client) post(path, ctype, body string) *http.Response {
	req, _ := http.NewRequest(http.MethodPost, c.f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	if c.origin != "" {
		req.Header.Set("Origin", c.origin)
	}
	return c.do(req)
}

func (c *client) act(path, body string) (int, map[string]any) {
	c.t.Helper()
	resp := c.post(path, "application/json", body)
	return resp.StatusCode, decode(c.t, resp)
}

func decode(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var v map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON (%d): %s", resp.StatusCode, raw)
	}
	return v
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func (f *fixture) proposal(t *testing.T) session.Proposal {
	t.Helper()
	ps, err := f.db.Proposals(context.Background(), sid)
	if err != nil || len(ps) != 1 {
		t.Fatalf("proposals %v %v", ps, err)
	}
	return ps[0]
}

func TestWithoutCookieNoData(t *testing.T) {
	f := newFixture(t)
	c := f.anon(t)
	for _, path := range []string{"/", "/sessions/" + sid, "/sessions/" + sid + "/curves", "/presets", "/presets/auto-tune-1a2b3c4d"} {
		resp := c.get(path)
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusOK || strings.Contains(body, "raise pose") || strings.Contains(body, "advisor") {
			t.Errorf("%s: %d, page must be a shell without data: %s", path, resp.StatusCode, body)
		}
		if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("%s: no CSP", path)
		}
	}
	for _, path := range []string{"/api/me", "/api/sessions", "/api/sessions/" + sid, "/api/sessions/" + sid + "/tags",
		"/api/sessions/" + sid + "/curves?trials=0&tags=Train/mean_reward", "/api/presets", "/api/presets/auto-tune-1a2b3c4d",
		"/api/presets/auto-tune-1a2b3c4d/export"} {
		resp := c.get(path)
		v := decode(t, resp)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(v["hint"].(string), "/tune dashboard") {
			t.Errorf("%s: %d %v, want 401 with the sign-in hint", path, resp.StatusCode, v)
		}
	}
	if code, _ := c.act("/api/sessions/"+sid+"/proposals/"+f.prop.ID+"/approve", "{}"); code != http.StatusUnauthorized {
		t.Errorf("approve without cookie: %d", code)
	}
	if p := f.proposal(t); p.State != session.ProposalPending {
		t.Errorf("proposal %s without a cookie", p.State)
	}
}

func TestSignIn(t *testing.T) {
	f := newFixture(t)
	link, exp, err := f.dash.Link(alice)
	if err != nil {
		t.Fatal(err)
	}
	if d := exp.Sub(f.clock.now()); d <= 0 || d > 15*time.Minute {
		t.Errorf("a link lives %v; want minutes", d)
	}
	u, _ := url.Parse(link)
	token := u.Query().Get("token")
	c := f.anon(t)
	// Opening the link (or a chat unfurl fetching it) does not use it up.
	if resp := c.get(u.RequestURI()); resp.StatusCode != http.StatusOK || !strings.Contains(readAll(t, resp), `id="signin"`) {
		t.Fatal("the link's page shows no sign-in button")
	}
	c.origin = "https://evil.example"
	if resp := c.post("/signin", "application/x-www-form-urlencoded", "token="+token); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in from another origin: %d", resp.StatusCode)
	}
	// The form is the page's own, small and url-encoded: a multipart body (whose files
	// would be written to $TMPDIR before the token is checked) or a large one is refused
	// unread, and the link stays unused.
	c.origin = f.srv.URL
	multi := "--b\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\n" + token + "\r\n" +
		"--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x\"\r\n\r\n" + strings.Repeat("x", 4096) + "\r\n--b--\r\n"
	if resp := c.post("/signin", "multipart/form-data; boundary=b", multi); resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("multipart sign-in: %d, want 415", resp.StatusCode)
	}
	if resp := c.post("/signin", "application/x-www-form-urlencoded", "token="+token+"&pad="+strings.Repeat("x", 2048)); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 KiB sign-in form: %d, want 413", resp.StatusCode)
	}
	c = f.signIn(t, alice) // a fresh link; the first is still unused
	ck := c.cookie
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.MaxAge <= 0 {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/", ck)
	}
	if strings.Contains(ck.Value, token) {
		t.Error("the cookie carries the link's token")
	}
	v := decode(t, c.get("/api/me"))
	if v["name"] != "alice" || v["platform"] != "slack" || v["may"].(map[string]any)["decide"] != true {
		t.Errorf("me: %v", v)
	}
	// The first link works once.
	c2 := f.anon(t)
	if resp := c2.post("/signin", "application/x-www-form-urlencoded", "token="+token); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("first use of a link: %d", resp.StatusCode)
	}
	if resp := c2.post("/signin", "application/x-www-form-urlencoded", "token="+token); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("second use of a link: %d", resp.StatusCode)
	}
	// An expired link does not work.
	late, _, _ := f.dash.Link(alice)
	lu, _ := url.Parse(late)
	f.clock.add(dashboard.LinkTTL + time.Second)
	if resp := f.anon(t).post("/signin", "application/x-www-form-urlencoded", "token="+lu.Query().Get("token")); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("expired link: %d", resp.StatusCode)
	}
	// A tampered cookie is no sign-in; an expired one neither.
	forged := &client{t: t, f: f, origin: f.srv.URL, cookie: &http.Cookie{Name: ck.Name, Value: strings.Replace(ck.Value, ".", "x.", 1)}}
	if resp := forged.get("/api/sessions"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("tampered cookie: %d", resp.StatusCode)
	}
	f.clock.add(dashboard.CookieTTL)
	if resp := c.get("/api/sessions"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("expired cookie: %d", resp.StatusCode)
	}
}

func TestOperatorLink(t *testing.T) {
	f := newFixture(t)
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	for _, tc := range []struct {
		name, auth, where string
		want              int
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"wrong token", "Bearer " + dashboard.OperatorToken(make([]byte, 32)), "", http.StatusUnauthorized},
		{"the key file's token", "Bearer " + dashboard.OperatorToken(key), "", http.StatusOK},
		// The page's listener serves no operator route, token or not: a proxy in front of
		// it would make every caller local (the daemon's socket serves them, Operator).
		{"on the page's listener", "Bearer " + dashboard.OperatorToken(key), "page", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.where == "page" {
				req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/api/link", nil)
				req.Header.Set("Authorization", tc.auth)
				if resp := f.anon(t).do(req); resp.StatusCode != tc.want {
					t.Fatalf("%d %s", resp.StatusCode, readAll(t, resp))
				}
				return
			}
			req := httptest.NewRequest(http.MethodPost, "/api/link", nil)
			req.Header.Set("Authorization", tc.auth)
			rec := httptest.NewRecorder()
			f.dash.Operator().ServeHTTP(rec, req)
			resp := rec.Result()
			v := decode(t, resp)
			if resp.StatusCode != tc.want {
				t.Fatalf("%d %v", resp.StatusCode, v)
			}
			if tc.want == http.StatusOK && !strings.Contains(v["url"].(string), "/signin?token=") {
				t.Errorf("url %v", v["url"])
			}
		})
	}
}

func TestReadViews(t *testing.T) {
	f := newFixture(t)
	c := f.signIn(t, eve) // reading needs no permission
	v := decode(t, c.get("/api/sessions"))
	rows := v["sessions"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["trials_done"] != 3.0 || rows[0].(map[string]any)["state"] != "paused" {
		t.Fatalf("sessions %v", v)
	}
	v = decode(t, c.get("/api/sessions/"+sid))
	trials := v["trials"].([]any)
	if len(trials) != 3 {
		t.Fatalf("trials %v", trials)
	}
	var why any // trial 1, wherever the leaderboard ranks it
	for _, x := range trials {
		if m := x.(map[string]any); m["number"] == 1.0 {
			why = m["why"]
		}
	}
	if why, _ := why.(string); !strings.Contains(why, "fall rate") {
		t.Errorf("trial 1 is not eligible, the board must say why: %v", why)
	}
	if v["may"].(map[string]any)["decide"] != false {
		t.Error("eve is offered decisions")
	}
	props := v["proposals"].([]any)
	p := props[0].(map[string]any)
	if p["state"] != "pending" || len(p["diff"].([]any)) != 2 || p["rationale"] != f.prop.Rationale {
		t.Errorf("proposal %v", p)
	}
	audit := v["audit"].([]any)
	if len(audit) == 0 || audit[0].(map[string]any)["kind"] != "advisor_call" {
		t.Errorf("audit %v", audit)
	}
	ladder := v["ladder"].([]any)
	if len(ladder) != 3 || len(ladder[0].(map[string]any)["trials"].([]any)) != 3 {
		t.Errorf("ladder %v", ladder)
	}
	cmp := v["comparison"].([]any)[0].(map[string]any)
	if cmp["best"].(map[string]any)["number"] != 2.0 || cmp["baseline"].(map[string]any)["number"] != 0.0 || cmp["matched"] != true {
		t.Errorf("comparison %v", cmp)
	}
	if resp := c.get("/api/sessions/nope"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: %d", resp.StatusCode)
	}
	// A long id is cut on a character boundary: the error stays valid UTF-8.
	long := strings.Repeat("日", 60)
	if resp := c.get("/api/sessions/" + url.PathEscape(long)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown long session: %d", resp.StatusCode)
	} else if body := readAll(t, resp); !utf8.ValidString(body) || !strings.Contains(body, strings.Repeat("日", 39)+"…") {
		t.Errorf("unknown long session: %q", body)
	}

	tags := decode(t, c.get("/api/sessions/"+sid+"/tags"))
	if got := tags["tags"].([]any); len(got) != 1 || got[0] != "Train/mean_reward" {
		t.Errorf("tags %v", got)
	}
	cv := decode(t, c.get("/api/sessions/"+sid+"/curves?trials=0@0,2@0,1@0&tags=Train/mean_reward&points=100"))
	curves := cv["curves"].([]any)
	if len(curves) != 2 {
		t.Fatalf("curves of trials 0 and 2 (1 has none): %v", len(curves))
	}
	c0 := curves[0].(map[string]any)
	if n := len(c0["steps"].([]any)); n != 100 || c0["total"] != 3000.0 || c0["trial"] != "0@0" {
		t.Errorf("curve down-sampled to %d of %v", n, c0["total"])
	}
	for _, bad := range []string{"trials=x&tags=a", "trials=0&tags=a&points=5", "trials=&tags=a", "trials=0&tags="} {
		resp := c.get("/api/sessions/" + sid + "/curves?" + bad)
		if v := decode(t, resp); resp.StatusCode != http.StatusBadRequest || v["error"] == "" {
			t.Errorf("%s: %d %v", bad, resp.StatusCode, v)
		}
	}

	pv := decode(t, c.get("/api/presets"))
	if ps := pv["presets"].([]any); len(ps) != 1 {
		t.Errorf("presets %v", ps)
	}
	one := decode(t, c.get("/api/presets/auto-tune-1a2b3c4d"))
	if len(one["diff"].([]any)) != 2 {
		t.Errorf("preset diff from defaults %v", one["diff"])
	}
	resp := c.get("/api/presets/auto-tune-1a2b3c4d/export")
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Disposition"), "auto-tune-1a2b3c4d.json") || !strings.Contains(body, `"foot_slip"`) {
		t.Errorf("export: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Disposition"), body)
	}
	if resp := c.get("/api/presets/nope/export"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("export of no preset: %d", resp.StatusCode)
	}
	if resp := c.get("/api/presets/auto-tune-1a2b3c4d/policy"); resp.StatusCode != http.StatusConflict {
		t.Errorf("policy download without a policy.onnx: %d", resp.StatusCode)
	}
	run := filepath.Join(f.dir, sid, "trial-002-rung-0")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "policy.onnx"), []byte("onnx bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	resp = c.get("/api/presets/auto-tune-1a2b3c4d/policy")
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK || body != "onnx bytes" || !strings.Contains(resp.Header.Get("Content-Disposition"), "auto-tune-1a2b3c4d-policy.onnx") {
		t.Errorf("policy download: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Disposition"), body)
	}
	if resp := c.get("/api/presets/..%2Fetc/policy"); resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotFound {
		t.Errorf("a path as a preset name: %d", resp.StatusCode)
	}
}

func TestSignOut(t *testing.T) {
	f := newFixture(t)
	c := f.signIn(t, alice)
	c.origin = "https://evil.example"
	if resp := c.post("/signout", "application/x-www-form-urlencoded", ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-out from another site: %d", resp.StatusCode)
	}
	c.origin = f.srv.URL
	resp := c.post("/signout", "application/x-www-form-urlencoded", "")
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || resp.Cookies()[0].MaxAge >= 0 {
		t.Errorf("sign-out: %d %v; want the cookie removed", resp.StatusCode, resp.Cookies())
	}
}

func TestActionGuards(t *testing.T) {
	f := newFixture(t)
	approve := "/api/sessions/" + sid + "/proposals/" + f.prop.ID + "/approve"
	c := f.signIn(t, alice)
	for _, tc := range []struct {
		name, origin, ctype string
		want                int
	}{
		{"no Origin", "", "application/json", http.StatusForbidden},
		{"another site", "https://evil.example", "application/json", http.StatusForbidden},
		{"a form post", f.srv.URL, "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.origin = tc.origin
			resp := c.post(approve, tc.ctype, "{}")
			if resp.StatusCode != tc.want {
				t.Errorf("%d, want %d", resp.StatusCode, tc.want)
			}
			if p := f.proposal(t); p.State != session.ProposalPending {
				t.Fatalf("refused request decided: %s", p.State)
			}
		})
	}
	c.origin = f.srv.URL
	if code, v := c.act(approve, "not json"); code != http.StatusBadRequest {
		t.Errorf("bad JSON: %d %v", code, v)
	}
	if code, _ := c.act("/api/sessions/"+sid+"/proposals/"+f.prop.ID+"/bless", "{}"); code != http.StatusNotFound {
		t.Errorf("unknown verb: %d", code)
	}
	if code, _ := c.act("/api/sessions/"+sid+"/explode", "{}"); code != http.StatusNotFound {
		t.Errorf("unknown action: %d", code)
	}
	// Someone chat does not allow: refused, audited as in chat, nothing changes.
	e := f.signIn(t, eve)
	code, v := e.act(approve, "{}")
	if code != http.StatusForbidden || !strings.Contains(v["text"].(string), "not allowed") {
		t.Errorf("eve approves: %d %v", code, v)
	}
	for _, path := range []string{"/api/sessions/" + sid + "/cancel", "/api/start"} {
		if code, _ := e.act(path, "{}"); code != http.StatusForbidden {
			t.Errorf("eve %s: %d", path, code)
		}
	}
	if p := f.proposal(t); p.State != session.ProposalPending {
		t.Fatalf("eve decided: %s", p.State)
	}
	audit, _ := f.db.Audit(context.Background(), sid)
	refused := 0
	for _, a := range audit {
		if a.Kind == "refused" && a.Actor.ID == "U666" && a.Actor.Where == "dashboard" {
			refused++
		}
	}
	if refused == 0 {
		t.Error("eve's refusal is not audited")
	}
}

func TestDecisions(t *testing.T) {
	base := func(f *fixture, verb string) string {
		return "/api/sessions/" + sid + "/proposals/" + f.prop.ID + "/" + verb
	}
	t.Run("approve", func(t *testing.T) {
		f := newFixture(t)
		code, v := f.signIn(t, alice).act(base(f, "approve"), "")
		if code != http.StatusOK || v["ok"] != true {
			t.Fatalf("%d %v", code, v)
		}
		p := f.proposal(t)
		if p.State == session.ProposalPending || p.Decision.By.ID != "U1" || p.Decision.By.Platform != "slack" || p.Decision.By.Where != "dashboard" {
			t.Errorf("decision %+v", p.Decision)
		}
	})
	t.Run("decided from chat meanwhile", func(t *testing.T) {
		f := newFixture(t)
		c := f.signIn(t, alice)
		r := f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: session.Actor{ID: "U1", Name: "alice"}, Kind: bot.KindAction,
			ActionID: bot.ActionID(bot.ButtonReject, sid, f.prop.ID)})
		if r.Form == nil {
			t.Fatalf("chat reject opens no form: %+v", r)
		}
		r = f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: session.Actor{ID: "U1", Name: "alice"}, Kind: bot.KindSubmit,
			ActionID: bot.ActionID(bot.ButtonReject, sid, f.prop.ID), Values: map[string]string{bot.FieldFeedback: "too timid"}})
		if r.Private {
			t.Fatalf("chat reject: %+v", r)
		}
		code, v := c.act(base(f, "approve"), "{}")
		if code != http.StatusConflict || !strings.Contains(v["text"].(string), "alice") {
			t.Errorf("page approve after chat's reject: %d %v; want a refusal naming who decided", code, v)
		}
		if p := f.proposal(t); p.State != session.ProposalRejected || p.Decision.Feedback != "too timid" {
			t.Errorf("one decision, chat's: %+v", p)
		}
	})
	t.Run("page and chat at once", func(t *testing.T) {
		f := newFixture(t)
		c := f.signIn(t, alice)
		var wg sync.WaitGroup
		var page int
		var chat bot.Reply
		wg.Add(2)
		go func() { defer wg.Done(); page, _ = c.act(base(f, "approve"), "{}") }()
		go func() {
			defer wg.Done()
			chat = f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: session.Actor{ID: "U1", Name: "alice"}, Kind: bot.KindAction,
				ActionID: bot.ActionID(bot.ButtonApprove, sid, f.prop.ID)})
		}()
		wg.Wait()
		if ok := (page == http.StatusOK) != !chat.Private; !ok {
			t.Errorf("page %d, chat %+v: want exactly one decision", page, chat)
		}
		audit, _ := f.db.Audit(context.Background(), sid)
		decisions := 0
		for _, a := range audit {
			if a.Kind == "decision" {
				decisions++
			}
		}
		if decisions != 1 {
			t.Errorf("%d decisions audited, want 1", decisions)
		}
	})
	t.Run("reject needs feedback", func(t *testing.T) {
		f := newFixture(t)
		c := f.signIn(t, alice)
		if code, v := c.act(base(f, "reject"), `{"feedback":"  "}`); code != http.StatusConflict || v["fields"] == nil {
			t.Errorf("empty feedback: %d %v", code, v)
		}
		if code, v := c.act(base(f, "reject"), `{"feedback":"try foot_slip instead"}`); code != http.StatusOK {
			t.Fatalf("%d %v", code, v)
		}
		if p := f.proposal(t); p.State != session.ProposalRejected || p.Decision.Feedback != "try foot_slip instead" {
			t.Errorf("%+v", p)
		}
	})
	t.Run("edit with per-field errors", func(t *testing.T) {
		f := newFixture(t)
		c := f.signIn(t, alice)
		code, v := c.act(base(f, "edit"), `{"patch":"pose=1.3\nfoot_slip=-9"}`)
		fields, _ := v["fields"].(map[string]any)
		if code != http.StatusConflict || fields == nil || !strings.Contains(fields["1"].(string), "foot_slip") {
			t.Fatalf("bad edit: %d %v; want the foot_slip problem on line 1", code, v)
		}
		if _, ok := fields["0"]; ok && strings.Contains(fields["0"].(string), "foot_slip") {
			t.Errorf("foot_slip's problem on the pose line: %v", fields)
		}
		if code, v := c.act(base(f, "edit"), `{"patch":"nonsense"}`); code != http.StatusConflict || v["fields"] == nil {
			t.Errorf("unparsable edit: %d %v", code, v)
		}
		if p := f.proposal(t); p.State != session.ProposalPending {
			t.Fatal("a refused edit decided")
		}
		if code, v := c.act(base(f, "edit"), `{"patch":"pose=1.3"}`); code != http.StatusOK {
			t.Fatalf("good edit: %d %v", code, v)
		}
		p := f.proposal(t)
		if p.Decision == nil || p.Decision.Action != session.ActionEdit || p.Decision.Edited.Weights["pose"] != 1.3 || len(p.Decision.Edited.Params) != 0 {
			t.Errorf("edit decision %+v", p.Decision)
		}
	})
	t.Run("pause and resume", func(t *testing.T) {
		f := newFixture(t)
		c := f.signIn(t, alice)
		// The session is paused already: the handler's answer says so, nothing changes.
		if code, v := c.act("/api/sessions/"+sid+"/pause", "{}"); code != http.StatusConflict || v["text"] == "" {
			t.Errorf("pause of a paused session: %d %v", code, v)
		}
		if code, v := f.signIn(t, eve).act("/api/sessions/"+sid+"/resume", "{}"); code != http.StatusForbidden {
			t.Errorf("eve resumes: %d %v", code, v)
		}
		if code, v := c.act("/api/sessions/"+sid+"/resume", "{}"); code != http.StatusOK {
			t.Fatalf("resume: %d %v", code, v)
		}
		audit, _ := f.db.Audit(context.Background(), sid)
		found := false
		for _, a := range audit {
			found = found || a.Kind == "resume" && a.Actor.ID == "U1" && a.Actor.Where == "dashboard"
		}
		if !found {
			t.Errorf("the resume is not audited as alice's from the dashboard: %+v", audit)
		}
	})
	t.Run("cancel and the agent test", func(t *testing.T) {
		f := newFixture(t)
		c := f.signIn(t, alice)
		if code, v := c.act("/api/agent", "{}"); code != http.StatusConflict || !strings.Contains(v["text"].(string), "no advisor is configured") {
			t.Errorf("agent: %d %v", code, v)
		}
		if code, v := c.act("/api/sessions/nope/cancel", "{}"); code != http.StatusNotFound {
			t.Errorf("cancel of no session: %d %v", code, v)
		}
		if code, v := c.act("/api/sessions/"+sid+"/cancel", "{}"); code != http.StatusOK {
			t.Fatalf("cancel: %d %v", code, v)
		}
		s, _ := f.db.Session(context.Background(), sid)
		if s.State != session.StateCancelled {
			t.Errorf("session %s after cancel", s.State)
		}
		if code, v := c.act("/api/start", `{"args":"trials=99"}`); code != http.StatusConflict || !strings.Contains(v["text"].(string), "trial_count") {
			t.Errorf("bad start: %d %v", code, v)
		}
	})
}

// putClip gives trial 2 of the fixture's session a clip and a poster frame, checked as the
// engine checks them, and returns their bytes, the trial as stored and the run directory.
func (f *fixture) putClip(t *testing.T) (gifData, posterData []byte, tr session.Trial, run string) {
	t.Helper()
	ctx := context.Background()
	run = filepath.Join(f.dir, sid, "trial-002-rung-0")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	gifData, posterData, err := sim.Clip(session.Metrics{session.MetricVelLinear: 0.2}, sim.NoLabel)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"clip": gifData, "clip-poster.png": posterData} {
		if err := os.WriteFile(filepath.Join(run, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := trainer.CheckClip(filepath.Join(run, "clip"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := trainer.CheckPoster(filepath.Join(run, "clip-poster.png"))
	if err != nil {
		t.Fatal(err)
	}
	c.Path, p.Path = "trial-002-rung-0/clip", "trial-002-rung-0/clip-poster.png"
	c.Poster = &p
	trials, _ := f.db.Trials(ctx, sid)
	tr = trials[2]
	tr.Clip = &c
	if err := f.db.PutTrial(ctx, tr); err != nil {
		t.Fatal(err)
	}
	return gifData, posterData, tr, run
}

// TestClipsAreServedToTheSignedIn: a trial's clip and its poster frame come with the
// sign-in and the path checks of the policy download, as the bytes that were checked, and a
// player may seek (Range); the session view names them (issue 21).
func TestClipsAreServedToTheSignedIn(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	gifData, posterData, tr, run := f.putClip(t)
	base := "/api/sessions/" + sid + "/trials/2/0/"

	anon := f.anon(t)
	for _, path := range []string{base + "clip", base + "poster"} {
		if resp := anon.get(path); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a sign-in: %d", path, resp.StatusCode)
		}
	}
	user := f.signIn(t, dashboard.Identity{Platform: "slack", ID: "U2", Name: "bob"})
	v := decode(t, user.get("/api/sessions/"+sid))
	var clip map[string]any
	for _, x := range v["trials"].([]any) { // the leaderboard's order: by rung and score
		if m := x.(map[string]any); m["number"] == 2.0 && m["rung"] == 0.0 {
			clip = m["clip"].(map[string]any)
		}
	}
	if clip["format"] != "gif" || !strings.HasPrefix(clip["url"].(string), base+"clip?v=") || !strings.HasPrefix(clip["poster"].(string), base+"poster?v=") {
		t.Errorf("session view's clip %v", clip)
	}
	resp := user.get(clip["url"].(string))
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/gif" || body != string(gifData) {
		t.Errorf("clip: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
	resp = user.get(clip["poster"].(string))
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" || body != string(posterData) {
		t.Errorf("poster: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+base+"clip", nil)
	req.Header.Set("Range", "bytes=0-5")
	resp = user.do(req)
	if body := readAll(t, resp); resp.StatusCode != http.StatusPartialContent || body != "GIF89a" {
		t.Errorf("a range of the clip: %d %q", resp.StatusCode, body)
	}
	for path, want := range map[string]int{
		"/api/sessions/" + sid + "/trials/1/0/clip": http.StatusNotFound,   // no clip
		"/api/sessions/" + sid + "/trials/7/0/clip": http.StatusNotFound,   // no such trial
		"/api/sessions/" + sid + "/trials/x/0/clip": http.StatusBadRequest, // not a trial
	} {
		if resp := user.get(path); resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	// a file changed since it was checked is not served
	if err := os.WriteFile(filepath.Join(run, "clip"), append([]byte("GIF89a"), make([]byte, len(gifData)-6)...), 0o644); err != nil {
		t.Fatal(err)
	}
	if resp := user.get(base + "clip"); resp.StatusCode != http.StatusConflict || !strings.Contains(readAll(t, resp), "changed on disk") {
		t.Errorf("a changed clip: %d", resp.StatusCode)
	}
	// a recorded path that leaves the sessions directory is refused
	escaping := *tr.Clip
	escaping.Path = "../../etc/passwd"
	tr.Clip = &escaping
	if err := f.db.PutTrial(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if resp := user.get(base + "clip"); resp.StatusCode != http.StatusInternalServerError || strings.Contains(readAll(t, resp), "passwd") {
		t.Errorf("an escaping path: %d", resp.StatusCode)
	}
}
