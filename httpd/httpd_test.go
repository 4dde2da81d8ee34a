package httpd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/httpd"
	"tunebot/session"
	"tunebot/store"
)

type fakeSource struct {
	snap httpd.Snapshot
	err  error
}

func (f fakeSource) Snapshot(context.Context) (httpd.Snapshot, error) { return f.snap, f.err }

func sample() httpd.Snapshot {
	return httpd.Snapshot{
		Sessions:       map[session.State]int{session.StateRunning: 1, session.StateSucceeded: 4, session.StateFailed: 2},
		Trials:         map[session.TrialState]int{session.TrialCompleted: 30, session.TrialTraining: 1},
		TrialDurations: map[int]httpd.Summary{0: {Count: 20, Sum: 7200.5}, 2: {Count: 2, Sum: 9000}},
		OutboxDepth:    3,
		AdvisorCalls:   map[string]int{"ok": 12, "error": 2},
		AdvisorTokens:  map[string]int64{"prompt": 120000, "completion": 8000, "prompt_cache_hit": 90000},
		GPUSeconds:     123456.75,
	}
}

// family is one parsed metric family of the text exposition format.
type family struct {
	typ, help string
	samples   map[string]float64 // name{labels} as written → value
}

var (
	helpRE   = regexp.MustCompile(`^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$`)
	typeRE   = regexp.MustCompile(`^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|summary|histogram|untyped)$`)
	sampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*",?)*\})? (\S+)$`)
)

// parse checks every line against the text format and that each sample belongs to a
// family declared (HELP and TYPE) before it.
func parse(t *testing.T, text string) map[string]*family {
	t.Helper()
	fams := map[string]*family{}
	var cur string
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case helpRE.MatchString(line):
			m := helpRE.FindStringSubmatch(line)
			if fams[m[1]] != nil {
				t.Errorf("line %d: family %s declared twice", n, m[1])
			}
			cur = m[1]
			fams[cur] = &family{help: m[2], samples: map[string]float64{}}
		case typeRE.MatchString(line):
			m := typeRE.FindStringSubmatch(line)
			if m[1] != cur {
				t.Errorf("line %d: TYPE of %s after HELP of %s", n, m[1], cur)
				continue
			}
			fams[cur].typ = m[2]
		case sampleRE.MatchString(line):
			m := sampleRE.FindStringSubmatch(line)
			name := m[1]
			f := fams[cur]
			if f == nil || f.typ == "" {
				t.Errorf("line %d: sample before its TYPE: %q", n, line)
				continue
			}
			if name != cur && !(f.typ == "summary" && (name == cur+"_sum" || name == cur+"_count")) {
				t.Errorf("line %d: sample %s outside its family %s", n, name, cur)
			}
			v, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				t.Errorf("line %d: value %q: %v", n, m[3], err)
			}
			f.samples[name+m[2]] = v
		default:
			t.Errorf("line %d does not parse: %q", n, line)
		}
	}
	return fams
}

func get(t *testing.T, h http.Handler, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestMetricsText(t *testing.T) {
	h := httpd.Handler(fakeSource{snap: sample()}, "v1.2.3 \"rc\"\nx\\y", nil)
	res, body := get(t, h, "/metrics")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	fams := parse(t, body)
	want := map[string]map[string]float64{
		"tunebot_sessions": {
			`tunebot_sessions{state="queued"}`: 0, `tunebot_sessions{state="running"}`: 1, `tunebot_sessions{state="evaluating"}`: 0,
			`tunebot_sessions{state="awaiting_approval"}`: 0, `tunebot_sessions{state="paused"}`: 0, `tunebot_sessions{state="interrupted"}`: 0,
			`tunebot_sessions{state="cancelled"}`: 0, `tunebot_sessions{state="failed"}`: 2, `tunebot_sessions{state="succeeded"}`: 4,
		},
		"tunebot_sessions_active": {"tunebot_sessions_active": 1},
		"tunebot_trials": {
			`tunebot_trials{state="queued"}`: 0, `tunebot_trials{state="training"}`: 1, `tunebot_trials{state="evaluating"}`: 0,
			`tunebot_trials{state="completed"}`: 30, `tunebot_trials{state="failed"}`: 0, `tunebot_trials{state="interrupted"}`: 0,
		},
		"tunebot_trial_duration_seconds": {
			`tunebot_trial_duration_seconds_sum{rung="0"}`: 7200.5, `tunebot_trial_duration_seconds_count{rung="0"}`: 20,
			`tunebot_trial_duration_seconds_sum{rung="2"}`: 9000, `tunebot_trial_duration_seconds_count{rung="2"}`: 2,
		},
		"tunebot_outbox_depth": {"tunebot_outbox_depth": 3},
		"tunebot_advisor_calls_total": {
			`tunebot_advisor_calls_total{outcome="ok"}`: 12, `tunebot_advisor_calls_total{outcome="invalid"}`: 0,
			`tunebot_advisor_calls_total{outcome="cancelled"}`: 0, `tunebot_advisor_calls_total{outcome="error"}`: 2,
		},
		"tunebot_advisor_tokens_total": {
			`tunebot_advisor_tokens_total{kind="prompt"}`: 120000, `tunebot_advisor_tokens_total{kind="completion"}`: 8000,
			`tunebot_advisor_tokens_total{kind="prompt_cache_hit"}`: 90000, `tunebot_advisor_tokens_total{kind="prompt_cache_miss"}`: 0,
		},
		"tunebot_gpu_seconds_total": {"tunebot_gpu_seconds_total": 123456.75},
	}
	types := map[string]string{"tunebot_trial_duration_seconds": "summary", "tunebot_advisor_calls_total": "counter",
		"tunebot_advisor_tokens_total": "counter", "tunebot_gpu_seconds_total": "counter"}
	for name, samples := range want {
		f := fams[name]
		if f == nil {
			t.Errorf("family %s missing", name)
			continue
		}
		if diff := cmp.Diff(samples, f.samples); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
		wantType := types[name]
		if wantType == "" {
			wantType = "gauge"
		}
		if f.typ != wantType || f.help == "" {
			t.Errorf("%s: type %q help %q, want type %s and a help text", name, f.typ, f.help, wantType)
		}
	}
	// The version string carries a quote, a newline and a backslash: all escaped.
	if !strings.Contains(body, `tunebot_build_info{version="v1.2.3 \"rc\"\nx\\y",goversion="go`) {
		t.Errorf("build info label not escaped:\n%s", body)
	}
	if len(fams["tunebot_build_info"].samples) != 1 {
		t.Errorf("build info: %v", fams["tunebot_build_info"].samples)
	}
}

func TestHealth(t *testing.T) {
	tests := []struct {
		name   string
		src    fakeSource
		status int
		want   map[string]any
	}{
		{"ok", fakeSource{snap: sample()}, 200, map[string]any{"status": "ok", "store": "ok", "sessions_active": 1.0, "outbox_depth": 3.0, "version": "v9"}},
		{"store down", fakeSource{err: errors.New("data file locked")}, 503, map[string]any{"status": "unhealthy", "store": "error: data file locked", "version": "v9"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := httpd.Handler(tc.src, "v9", nil)
			res, body := get(t, h, "/healthz")
			if res.StatusCode != tc.status {
				t.Errorf("status %d, want %d", res.StatusCode, tc.status)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatalf("body %q: %v", body, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if tc.status == 503 {
				if res, _ := get(t, h, "/metrics"); res.StatusCode != 503 {
					t.Errorf("/metrics with a failing store: %d", res.StatusCode)
				}
			}
		})
	}
	if res, _ := get(t, httpd.Handler(fakeSource{}, "", nil), "/other"); res.StatusCode != 404 {
		t.Errorf("unknown path: %d", res.StatusCode)
	}
}

func TestCheckAddr(t *testing.T) {
	tests := []struct {
		addr   string
		remote bool
		want   string // "" accepts
	}{
		{"127.0.0.1:9464", false, ""},
		{"[::1]:9464", false, ""},
		{"localhost:9464", false, ""},
		{"127.0.0.2:80", false, ""},
		{"0.0.0.0:9464", false, "not loopback: /healthz and /metrics have no authentication"},
		{":9464", false, "listens on every interface"},
		{"10.1.2.3:9464", false, "set service.allow_remote: true"},
		{"gpu-box:9464", false, "not loopback"},
		{"0.0.0.0:9464", true, ""},
		{"127.0.0.1", false, "must be host:port"},
	}
	for _, tc := range tests {
		err := httpd.CheckAddr(tc.addr, tc.remote)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckAddr(%q, %v) = %v, want %q", tc.addr, tc.remote, err, tc.want)
		}
	}
	if _, err := httpd.New(httpd.Config{Addr: "0.0.0.0:9464"}, fakeSource{}, "", nil); err == nil {
		t.Errorf("New accepted a non-loopback address")
	}
	for _, tc := range []struct {
		url  string
		want string // "" accepts
	}{
		{"https://tune.example.com", ""},
		{"http://127.0.0.1:8080/", ""},
		{"https://example.com/tunebot", "without path"},
		{"ftp://x", "must be an http(s) address"},
		{"https://tune.example.com/?t=1", "query"},
		{"https://user:pw@tune.example.com", "credentials"},
		{"tune.example.com", "must be an http(s) address"},
	} {
		err := httpd.Config{PublicURL: tc.url}.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("public_url %q: %v, want %q", tc.url, err, tc.want)
		}
	}
	for addr, want := range map[string]string{"": "http://127.0.0.1:9464", "0.0.0.0:8000": "http://127.0.0.1:8000", "[::1]:9": "http://[::1]:9", "localhost:7": "http://localhost:7"} {
		if got := (httpd.Config{Addr: addr}).BaseURL(); got != want {
			t.Errorf("BaseURL of %q = %q, want %q", addr, got, want)
		}
	}
	if (httpd.Config{Addr: "off"}).Enabled() || !(httpd.Config{}).Enabled() {
		t.Errorf("Enabled: off must disable, empty must enable the default")
	}
}

func TestServeAndShutdown(t *testing.T) {
	srv, err := httpd.New(httpd.Config{Addr: "127.0.0.1:0"}, fakeSource{snap: sample()}, "v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	res, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("status %d", res.StatusCode)
	}
	// Other paths are the monitoring page's, once mounted.
	if res, err := http.Get("http://" + ln.Addr().String() + "/sessions"); err != nil || res.StatusCode != 404 {
		t.Errorf("nothing mounted: %v %v", res, err)
	}
	srv.Mount(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for path, want := range map[string]int{"/sessions": http.StatusTeapot, "/": http.StatusTeapot, "/healthz": 200, "/metrics": 200} {
		res, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, res.StatusCode, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
}

func TestStoreSource(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range []session.Session{
		{ID: "a1", State: session.StateSucceeded, GPUSeconds: 100, CreatedAt: t0},
		{ID: "b2", State: session.StateRunning, GPUSeconds: 50.5, CreatedAt: t0.Add(time.Hour)},
	} {
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, tr := range []session.Trial{
		{SessionID: "a1", Number: 0, State: session.TrialCompleted, StartedAt: t0, EndedAt: t0.Add(10 * time.Minute)},
		{SessionID: "a1", Number: 1, State: session.TrialFailed, StartedAt: t0, EndedAt: t0.Add(5 * time.Minute)},
		{SessionID: "a1", Number: 0, Rung: 1, State: session.TrialCompleted, StartedAt: t0, EndedAt: t0.Add(time.Hour)},
		{SessionID: "b2", Number: 0, State: session.TrialTraining, StartedAt: t0},
	} {
		if err := db.PutTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	usage := map[string]any{"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200, "prompt_cache_hit_tokens": 700, "prompt_cache_miss_tokens": 300}
	for _, outcome := range []string{"ok", "ok", "invalid: weights.x unknown", "HTTP 429 rate limited", "cancelled"} {
		if err := db.Append(ctx, session.AuditEntry{SessionID: "a1", Kind: "advisor_call", Actor: session.System,
			Detail: map[string]any{"outcome": outcome, "usage": usage}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Append(ctx, session.AuditEntry{Kind: "decision", Actor: session.System}); err != nil {
		t.Fatal(err)
	}
	src := httpd.NewStoreSource(db, db, time.Minute)
	snap, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := httpd.Snapshot{
		Sessions:       map[session.State]int{session.StateSucceeded: 1, session.StateRunning: 1},
		Trials:         map[session.TrialState]int{session.TrialCompleted: 2, session.TrialFailed: 1, session.TrialTraining: 1},
		TrialDurations: map[int]httpd.Summary{0: {Count: 2, Sum: 900}, 1: {Count: 1, Sum: 3600}},
		AdvisorCalls:   map[string]int{"ok": 2, "invalid": 1, "error": 1, "cancelled": 1},
		AdvisorTokens:  map[string]int64{"prompt": 5000, "completion": 1000, "prompt_cache_hit": 3500, "prompt_cache_miss": 1500},
		GPUSeconds:     150.5,
	}
	if diff := cmp.Diff(want, snap); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	// Within the TTL a scrape is served from the cache, not the store.
	if err := db.PutTrial(ctx, session.Trial{SessionID: "b2", Number: 1, State: session.TrialQueued}); err != nil {
		t.Fatal(err)
	}
	if again, _ := src.Snapshot(ctx); again.Trials[session.TrialQueued] != 0 {
		t.Errorf("a scrape within the TTL read the store again")
	}
	if fresh, _ := httpd.NewStoreSource(db, db, time.Minute).Snapshot(ctx); fresh.Trials[session.TrialQueued] != 1 {
		t.Errorf("a new source did not see the new trial")
	}
}

// countingRecords counts the sessions, trials and audit entries read through it.
type countingRecords struct {
	*store.DB
	reads int
}

func (c *countingRecords) Session(ctx context.Context, id string) (session.Session, error) {
	c.reads++
	return c.DB.Session(ctx, id)
}

func (c *countingRecords) RecentSessions(ctx context.Context, cursor string, limit int) ([]session.Session, string, error) {
	page, next, err := c.DB.RecentSessions(ctx, cursor, limit)
	c.reads += len(page)
	return page, next, err
}

func (c *countingRecords) ActiveSessions(ctx context.Context) ([]session.Session, error) {
	active, err := c.DB.ActiveSessions(ctx)
	c.reads += len(active)
	return active, err
}

func (c *countingRecords) Trials(ctx context.Context, id string) ([]session.Trial, error) {
	trials, err := c.DB.Trials(ctx, id)
	c.reads += len(trials)
	return trials, err
}

func (c *countingRecords) TrialOutlines(ctx context.Context, id string) ([]session.TrialOutline, error) {
	trials, err := c.DB.TrialOutlines(ctx, id)
	c.reads += len(trials)
	return trials, err
}

func (c *countingRecords) Audit(ctx context.Context, id string) ([]session.AuditEntry, error) {
	es, err := c.DB.Audit(ctx, id)
	c.reads += len(es)
	return es, err
}

func (c *countingRecords) AuditSince(ctx context.Context, after uint64) ([]session.AuditEntry, error) {
	es, err := c.DB.AuditSince(ctx, after)
	c.reads += len(es)
	return es, err
}

// TestStoreSourceAfterARestart: a daemon restarted on a year of sessions answers its first
// scrape from the store's running totals, reading no session, trial or audit entry, and the
// totals stay right as sessions end, trials change and go, and the advisor is called.
func TestStoreSourceAfterARestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tunebot.db")
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const ended = 200
	for i := range ended + 1 {
		s := session.Session{ID: fmt.Sprintf("s%03d", i), State: session.StateRunning, GPUSeconds: 10, CreatedAt: t0.AddDate(0, 0, i)}
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		for n := range 2 {
			tr := session.Trial{SessionID: s.ID, Number: n, State: session.TrialCompleted, StartedAt: t0, EndedAt: t0.Add(time.Minute)}
			if err := db.PutTrial(ctx, tr); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Append(ctx, session.AuditEntry{SessionID: s.ID, Kind: "advisor_call", Actor: session.System,
			Detail: map[string]any{"outcome": "ok", "usage": map[string]any{"prompt_tokens": 100}}}); err != nil {
			t.Fatal(err)
		}
		if i < ended {
			if _, err := db.UpdateSession(ctx, s.ID, func(s *session.Session) error { s.State, s.GPUSeconds = session.StateSucceeded, 20; return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	db.Close()

	if db, err = store.Open(path, store.Options{NoSync: true}); err != nil { // the restart
		t.Fatal(err)
	}
	defer db.Close()
	rec := &countingRecords{DB: db}
	src := httpd.NewStoreSource(rec, nil, time.Nanosecond)
	scrape := func(step string, want httpd.Snapshot) {
		t.Helper()
		time.Sleep(time.Millisecond)
		snap, err := src.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, snap); diff != "" {
			t.Errorf("%s: snapshot (-want +got):\n%s", step, diff)
		}
		if rec.reads != 0 {
			t.Errorf("%s: the scrape read %d sessions, trials or audit entries, want none", step, rec.reads)
		}
	}
	scrape("first after the restart", httpd.Snapshot{
		Sessions:       map[session.State]int{session.StateSucceeded: ended, session.StateRunning: 1},
		Trials:         map[session.TrialState]int{session.TrialCompleted: 2 * (ended + 1)},
		TrialDurations: map[int]httpd.Summary{0: {Count: 2 * (ended + 1), Sum: 60 * 2 * (ended + 1)}},
		AdvisorCalls:   map[string]int{"ok": ended + 1},
		AdvisorTokens:  map[string]int64{"prompt": 100 * (ended + 1)},
		GPUSeconds:     20*ended + 10,
	})

	live := fmt.Sprintf("s%03d", ended)
	if err := db.PutTrial(ctx, session.Trial{SessionID: live, Number: 2, State: session.TrialTraining, StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutTrial(ctx, session.Trial{SessionID: live, Number: 1, State: session.TrialFailed, StartedAt: t0, EndedAt: t0.Add(3 * time.Minute)}); err != nil {
		t.Fatal(err) // replaces trial 1: completed in a minute → failed in three
	}
	if err := db.DeleteTrial(ctx, "s000", session.TrialRef{Number: 0}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpdateSession(ctx, live, func(s *session.Session) error { s.State, s.GPUSeconds = session.StateFailed, 15; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.Append(ctx, session.AuditEntry{Kind: "advisor_call", Actor: session.System, Detail: map[string]any{"outcome": "HTTP 500"}}); err != nil {
		t.Fatal(err)
	}
	scrape("after writes", httpd.Snapshot{
		Sessions:       map[session.State]int{session.StateSucceeded: ended, session.StateFailed: 1},
		Trials:         map[session.TrialState]int{session.TrialCompleted: 2*(ended+1) - 2, session.TrialFailed: 1, session.TrialTraining: 1},
		TrialDurations: map[int]httpd.Summary{0: {Count: 2*(ended+1) - 1, Sum: 60*(2*(ended+1)-2) + 180}},
		AdvisorCalls:   map[string]int{"ok": ended + 1, "error": 1},
		AdvisorTokens:  map[string]int64{"prompt": 100 * (ended + 1)},
		GPUSeconds:     20*ended + 15,
	})
}
