package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/dashboard"
	"tunebot/secret"
	"tunebot/session"
	"tunebot/store"
)

// roleBook is the roles people hold on the platform now, changed by the test as an admin
// would change a Slack user group or a Discord role.
type roleBook struct {
	mu    sync.Mutex
	roles map[string][]string
}

func (b *roleBook) set(user string, roles ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.roles[user] = roles
}

func (b *roleBook) lookup(_ context.Context, platform, user string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if platform != "slack" {
		return nil
	}
	return b.roles[user]
}

// TestRolesCountAtEachRequest: what the page allows someone is decided with the roles they
// hold at that request, not those of when they signed in: a role taken away stops their
// next action and is no longer offered.
func TestRolesCountAtEachRequest(t *testing.T) {
	book := &roleBook{roles: map[string][]string{"U2": {"SOPS"}}}
	f := newFixture(t, func(o *dashboard.Options) {
		o.Allow = bot.AllowList{{Platform: "slack", Roles: []string{"SOPS"}}}
		o.Roles = book.lookup
	})
	bob := f.signIn(t, dashboard.Identity{Platform: "slack", ID: "U2", Name: "bob"})
	if may := decode(t, bob.get("/api/me"))["may"].(map[string]any); may["decide"] != true {
		t.Fatalf("bob holds SOPS, yet the page offers him %v", may)
	}
	book.set("U2") // removed from the group while signed in
	if may := decode(t, bob.get("/api/me"))["may"].(map[string]any); may["decide"] != false || may["start"] != false {
		t.Errorf("bob lost SOPS, yet the page offers him %v", may)
	}
	code, v := bob.act("/api/sessions/"+sid+"/proposals/"+f.prop.ID+"/approve", "{}")
	if code != http.StatusForbidden || !strings.Contains(fmt.Sprint(v["text"]), "not allowed") {
		t.Errorf("bob approves after losing the role: %d %v", code, v)
	}
	if p := f.proposal(t); p.State != session.ProposalPending {
		t.Fatalf("the proposal is %s", p.State)
	}
	book.set("U2", "SOPS") // and given it back
	if code, v := bob.act("/api/sessions/"+sid+"/proposals/"+f.prop.ID+"/approve", "{}"); code != http.StatusOK {
		t.Errorf("bob approves holding the role again: %d %v", code, v)
	}
}

// TestReadGrant: once the allow-list has a read grant on a platform, only the people it (or
// a full grant) names may read the page there: anyone else who holds a cookie gets 403 and
// no data; the operator still reads.
func TestReadGrant(t *testing.T) {
	f := newFixture(t, func(o *dashboard.Options) {
		o.Allow = bot.AllowList{
			{Platform: "slack", Users: []string{"U1"}},
			{Platform: "slack", Users: []string{"U3"}, Permissions: []bot.Permission{bot.PermRead}},
			{Platform: dashboard.Operator.Platform, Users: []string{dashboard.Operator.ID}},
		}
	})
	reads := []string{"/api/me", "/api/sessions", "/api/sessions/" + sid, "/api/sessions/" + sid + "/tags",
		"/api/sessions/" + sid + "/curves?trials=0&tags=Train/mean_reward", "/api/presets", "/api/presets/auto-tune-1a2b3c4d",
		"/api/presets/auto-tune-1a2b3c4d/export", "/api/sessions/" + sid + "/trials/2/0/clip", "/api/sessions/" + sid + "/trials/2/0/poster"}
	f.putClip(t)
	e := f.signIn(t, eve)
	for _, path := range reads {
		resp := e.get(path)
		if body := readAll(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `\"read\" permission`) || strings.Contains(body, "raise pose") {
			t.Errorf("eve reads %s: %d %s", path, resp.StatusCode, body)
		}
	}
	for _, who := range []dashboard.Identity{{Platform: "slack", ID: "U3", Name: "carol"}, alice, dashboard.Operator} {
		c := f.signIn(t, who)
		for _, path := range reads {
			if resp := c.get(path); resp.StatusCode != http.StatusOK {
				t.Errorf("%s reads %s: %d", who.Name, path, resp.StatusCode)
			}
		}
	}
	carol := f.signIn(t, dashboard.Identity{Platform: "slack", ID: "U3", Name: "carol"})
	if code, _ := carol.act("/api/start", "{}"); code != http.StatusForbidden {
		t.Errorf("a reader starts a session: %d", code)
	}
}

// TestPageReadsAreLimited: each person's reads of the page are rate limited; past the limit
// the answer is 429 with when to try again, and other people read on. A large curves answer
// uses up more of the limit than a small read.
func TestPageReadsAreLimited(t *testing.T) {
	f := newFixture(t, func(o *dashboard.Options) { o.ReadLimit = bot.RateLimit{Burst: 3, Every: time.Minute} })
	e := f.signIn(t, eve)
	for i := range 3 {
		if resp := e.get("/api/sessions"); resp.StatusCode != http.StatusOK {
			t.Fatalf("read %d within the burst: %d", i+1, resp.StatusCode)
		}
	}
	resp := e.get("/api/sessions/" + sid)
	if v := decode(t, resp); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "60" || !strings.Contains(fmt.Sprint(v["error"]), "slow down") {
		t.Errorf("the fourth read: %d Retry-After %q %v", resp.StatusCode, resp.Header.Get("Retry-After"), v)
	}
	// A clip and its poster frame are page reads too (issue 21).
	f.putClip(t)
	for _, path := range []string{"/api/sessions/" + sid + "/trials/2/0/clip", "/api/sessions/" + sid + "/trials/2/0/poster"} {
		if resp := e.get(path); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s past the limit: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	if resp := f.signIn(t, alice).get("/api/sessions"); resp.StatusCode != http.StatusOK {
		t.Errorf("another person is held back: %d", resp.StatusCode)
	}
	f.clock.add(time.Minute)
	if resp := e.get("/api/sessions"); resp.StatusCode != http.StatusOK {
		t.Errorf("a minute later: %d", resp.StatusCode)
	}

	// 20 series of 3000 points at points=5000: an answer of about 450 KB costs one more read
	// for each BytesPerRead of it.
	g := newFixture(t, func(o *dashboard.Options) { o.ReadLimit = bot.RateLimit{Burst: 5, Every: time.Hour} })
	var tags []string
	pts := make([]session.Point, 3000)
	for i := range pts {
		pts[i] = session.Point{Step: int64(i), Value: float64(i % 7)}
	}
	for k := range 10 {
		tag := fmt.Sprintf("Loss/part_%d", k)
		tags = append(tags, tag)
		for _, n := range []int{0, 2} {
			if err := g.db.PutSeries(context.Background(), session.SeriesKey{SessionID: sid, Number: n, Rung: 0, Tag: tag}, pts); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := g.signIn(t, eve)
	resp = c.get("/api/sessions/" + sid + "/curves?points=5000&trials=0@0,2@0&tags=" + url.QueryEscape(strings.Join(tags, ",")))
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("curves: %d %s", resp.StatusCode, body)
	}
	cost := float64(len(body)-dashboard.BytesPerRead) / dashboard.BytesPerRead
	if cost < 0.5 {
		t.Fatalf("the curves answer is only %d bytes: too small to test the charge", len(body))
	}
	left := 0
	for c.get("/api/presets").StatusCode == http.StatusOK {
		left++
	}
	if want := int(4 - cost); left != want {
		t.Errorf("after %d bytes of curves, %d reads were left of a burst of 5; want %d (1 for the request, %.2f for its bytes)", len(body), left, want, cost)
	}
}

// TestTagsArePaged: a session whose trials hold thousands of tags (issue 27: one event file
// of 200,000) answers /tags a page at a time, each page bounded and charged by its size,
// and following next walks every tag once, in order.
// wholeTagListRefused is the store with its whole-list read of a trial's tags refused: a
// /tags page must read each trial's tags from a cursor at after, never the whole list
// (issue 36 item 8).
type wholeTagListRefused struct{ *store.DB }

func (wholeTagListRefused) SeriesTags(context.Context, string, session.TrialRef) ([]string, error) {
	return nil, errors.New("a trial's whole tag list was read")
}

func TestTagsArePaged(t *testing.T) {
	f := newFixture(t, func(o *dashboard.Options) {
		o.ReadLimit = bot.RateLimit{Burst: 100, Every: time.Hour}
		o.Store = wholeTagListRefused{o.Store.(*store.DB)}
	})
	ctx := context.Background()
	var all []string
	for n, count := range []int{3000, 0, 2000} { // trial 2's tags are a part of trial 0's
		series := map[string][]session.Point{}
		for i := range count {
			tag := fmt.Sprintf("Episode_Reward/a_long_reward_term_name_written_by_a_buggy_logger_%05d", i)
			series[tag] = []session.Point{{Step: 1, Value: 1}}
			if n == 0 {
				all = append(all, tag)
			}
		}
		if count > 0 {
			if err := f.db.PutSeriesBatch(ctx, sid, session.TrialRef{Number: n}, series); err != nil {
				t.Fatal(err)
			}
		}
	}
	all = append(all, "Train/mean_reward") // the fixture's, on trials 0 and 2; sorts last
	c := f.signIn(t, eve)
	var got []string
	after, pages := "", 0
	for {
		resp := c.get("/api/sessions/" + sid + "/tags?after=" + url.QueryEscape(after))
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("page %d: %d %s", pages, resp.StatusCode, body)
		}
		if len(body) > 200<<10 {
			t.Errorf("page %d is %d bytes", pages, len(body))
		}
		var v struct {
			Tags   []string `json:"tags"`
			Next   string   `json:"next"`
			Trials []struct {
				Number int      `json:"number"`
				Tags   []string `json:"tags"`
			} `json:"trials"`
		}
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Tags) > dashboard.TagsPage || (v.Next != "" && len(v.Tags) != dashboard.TagsPage) {
			t.Fatalf("page %d: %d tags, want %d on every page but the last", pages, len(v.Tags), dashboard.TagsPage)
		}
		for _, tr := range v.Trials {
			for _, tag := range tr.Tags {
				if !slices.Contains(v.Tags, tag) {
					t.Fatalf("page %d: trial %d lists %q, which is not on the page", pages, tr.Number, tag)
				}
			}
		}
		got = append(got, v.Tags...)
		pages++
		if v.Next == "" || pages > 20 {
			break
		}
		after = v.Next
	}
	if !slices.Equal(got, all) {
		t.Errorf("the pages hold %d tags, want the %d of the trials once each, in order", len(got), len(all))
	}
	if want := (len(all) + dashboard.TagsPage - 1) / dashboard.TagsPage; pages != want {
		t.Errorf("%d pages, want %d", pages, want)
	}
	for _, bad := range []string{"limit=0", "limit=x", "limit=100000", "after=" + strings.Repeat("a", 2000)} {
		resp := c.get("/api/sessions/" + sid + "/tags?" + bad)
		if v := decode(t, resp); resp.StatusCode != http.StatusBadRequest || v["error"] == "" {
			t.Errorf("%s: %d %v", bad, resp.StatusCode, v)
		}
	}
}

// TestCurvesAreBounded: however many curves and points are asked for, one answer holds at
// most MaxServedPoints points: asking for more curves than fit gets fewer points per curve.
func TestCurvesAreBounded(t *testing.T) {
	f := newFixture(t)
	c := f.signIn(t, eve)
	refs := []string{"0@0", "2@0"}
	for n := 3; len(refs) < 200; n++ {
		refs = append(refs, fmt.Sprintf("%d@0", n)) // trials without curves still count as asked for
	}
	v := decode(t, c.get("/api/sessions/"+sid+"/curves?points=5000&tags=Train/mean_reward&trials="+strings.Join(refs, ",")))
	want := dashboard.MaxServedPoints / 200
	if v["points"] != float64(want) {
		t.Errorf("points per curve %v, want %d for 200 curves", v["points"], want)
	}
	for _, cv := range v["curves"].([]any) {
		if n := len(cv.(map[string]any)["steps"].([]any)); n != want {
			t.Errorf("a curve of %d points, want %d", n, want)
		}
	}
	// Few curves keep the points asked for.
	v = decode(t, c.get("/api/sessions/"+sid+"/curves?points=5000&tags=Train/mean_reward&trials=0@0"))
	if n := len(v["curves"].([]any)[0].(map[string]any)["steps"].([]any)); n != 3000 {
		t.Errorf("one curve of 3000 points came down to %d", n)
	}
}

// TestRotateSignsEveryoneOut: the operator's rotate (tunebot dashboard rotate) replaces the
// key file and the key in use: every cookie and unused link stops working, the old key no
// longer proves the operator, and the new one does.
func TestRotateSignsEveryoneOut(t *testing.T) {
	keyPath := filepath.Join(t.TempDir(), "dashboard.key")
	old, err := dashboard.LoadKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *dashboard.Options) { o.Key, o.KeyPath = old, keyPath })
	c := f.signIn(t, alice)
	unused, _, err := f.dash.Link(eve)
	if err != nil {
		t.Fatal(err)
	}
	operator := func(path string, key []byte) *http.Response {
		req := httptest.NewRequest(http.MethodPost, path, nil)
		req.Header.Set("Authorization", "Bearer "+dashboard.OperatorToken(key))
		rec := httptest.NewRecorder()
		f.dash.Operator().ServeHTTP(rec, req)
		return rec.Result()
	}
	if resp := operator("/api/rotate", make([]byte, 32)); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("rotate without the key: %d", resp.StatusCode)
	}
	if resp := c.get("/api/sessions"); resp.StatusCode != http.StatusOK {
		t.Fatalf("signed in before the rotation: %d", resp.StatusCode)
	}
	if resp := operator("/api/rotate", old); resp.StatusCode != http.StatusOK {
		t.Fatalf("rotate: %d %s", resp.StatusCode, readAll(t, resp))
	}
	if resp := c.get("/api/sessions"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a cookie from before the rotation: %d", resp.StatusCode)
	}
	u, _ := url.Parse(unused)
	if resp := f.anon(t).post("/signin", "application/x-www-form-urlencoded", "token="+u.Query().Get("token")); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a link from before the rotation: %d", resp.StatusCode)
	}
	fresh, err := dashboard.ReadKey(keyPath)
	if err != nil || string(fresh) == string(old) {
		t.Fatalf("the key file after the rotation: %v (unchanged: %v)", err, string(fresh) == string(old))
	}
	if resp := operator("/api/link", old); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the old key still proves the operator: %d", resp.StatusCode)
	}
	if resp := operator("/api/link", fresh); resp.StatusCode != http.StatusOK {
		t.Errorf("the new key does not prove the operator: %d", resp.StatusCode)
	}
	if resp := f.signIn(t, alice).get("/api/sessions"); resp.StatusCode != http.StatusOK {
		t.Errorf("signing in again: %d", resp.StatusCode)
	}
}

// TestSessionViewIsBoundedAgainstExtraMetrics: issue 36's attack, a trial carrying 15,000
// extra metric names (as a trainer wrote them before tunebot cut them, or an older tunebot
// stored them), no longer makes the session view megabytes: the page gets the seven and at
// most session.MaxExtraMetrics others per trial, in the view and in the tags answer.
func TestSessionViewIsBoundedAgainstExtraMetrics(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	m := session.Metrics{session.MetricFallRate: 0.02}
	for i := range 15000 {
		m[fmt.Sprintf("extra_metric_written_by_a_hostile_trainer_%05d", i)] = float64(i)
	}
	for n := 3; n < 8; n++ {
		tr := session.Trial{SessionID: sid, Number: n, Iterations: 300, State: session.TrialCompleted, Source: "advisor", Score: scored(0.01, true), Metrics: m}
		if err := f.db.PutTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	c := f.signIn(t, eve)
	for _, path := range []string{"/api/sessions/" + sid, "/api/sessions/" + sid + "/tags"} {
		resp := c.get(path)
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %.300s", path, resp.StatusCode, body)
		}
		if len(body) > 100<<10 {
			t.Errorf("%s is %d bytes with 5 trials of 15,000 extra metrics", path, len(body))
		}
		if n := strings.Count(body, "extra_metric_written_by_a_hostile_trainer_"); n == 0 || n > 5*3*session.MaxExtraMetrics {
			t.Errorf("%s names %d extra metrics", path, n)
		}
	}
}

// TestPageRedactsSecrets: what a trainer wrote reaches the page as it reaches chat, through
// tunebot's redactor (Options.Redact): a failed trial's reason quotes its log's end, and a
// key the trainer found and printed is masked there as on its chat card. The page strips
// zero-width and bidi marks from what it serves (session.Printable); a key printed with one
// inside it passed the redactor when it ran first and was served joined whole, so the page
// sanitizes, then redacts.
func TestPageRedactsSecrets(t *testing.T) {
	const key = "sk-planted-deepseek-0123456789"
	for _, c := range []struct{ name, printed, want string }{
		{"as printed", `"` + key + `" <b>`, `using key \"` + secret.Mask},
		{"split by invisible marks", "sk-planted-\u200bdeepseek-\u202e0123456789", "using key " + secret.Mask},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, func(o *dashboard.Options) { o.Redact = secret.NewRedactor(key) })
			tr := session.Trial{SessionID: sid, Number: 3, Rung: 0, Iterations: 300, State: session.TrialFailed,
				Reason: "train job failed: exit status 1; train.log ends: using key " + c.printed}
			if err := f.db.PutTrial(context.Background(), tr); err != nil {
				t.Fatal(err)
			}
			body := readAll(t, f.signIn(t, eve).get("/api/sessions/"+sid))
			if strings.Contains(body, key) || !strings.Contains(body, c.want) {
				t.Errorf("the page's session view quotes the key, or not the masked reason:\n%.2000s", body)
			}
		})
	}
}

// TestPageReadCostsItsShare: a hostile advisor's failed proposals left audit entries of
// 3 MB; one read of the session (21 MB) used up the person's whole read allowance, 429
// (issue 44, table item 7). The session view's timeline holds the newest entries that fit
// in a bounded number of bytes, each string cut, so every poll of the view costs one read.
func TestPageReadCostsItsShare(t *testing.T) {
	f := newFixture(t, func(o *dashboard.Options) { o.ReadLimit = bot.RateLimit{Burst: 5, Every: time.Hour} })
	ctx := context.Background()
	problems := strings.Repeat("weights.bogus_term: unknown term; ", 100_000) // 3.4 MB
	for i := range 500 {
		text := problems[:4000]
		if i%70 == 0 {
			text = problems
		}
		e := session.AuditEntry{Time: t0, SessionID: sid, Kind: "advisor_call", Actor: session.System,
			Detail: map[string]any{"outcome": "invalid: " + text, "model": "deepseek-v4-flash"}}
		if err := f.db.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	e := f.signIn(t, eve)
	for i := range 5 {
		resp := e.get("/api/sessions/" + sid)
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("read %d of 5: %d, want each read to cost one", i+1, resp.StatusCode)
		}
		if len(body) > dashboard.BytesPerRead {
			t.Errorf("read %d: the view is %d bytes, more than one read's %d", i+1, len(body), dashboard.BytesPerRead)
		}
		if i == 0 && !strings.Contains(body, `"audit_more":`) {
			t.Errorf("the view does not say how many older entries it left out")
		}
	}
}

// TestBidiAndZeroWidthStrippedFromThePage: a failure reason, a proposal's model and an audit
// entry holding U+202E, U+200B, U+061C or U+2066 (stored by an older tunebot, or by a path
// that missed the sanitizer) were served raw (issue 44, table item 9). Every answer of the
// page passes session.Printable as it leaves.
func TestBidiAndZeroWidthStrippedFromThePage(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	hidden := "exit status 1; train.log ends: \u202eValueError\u200b \u061cbad\u2066 term\ufeff"
	trials, _ := f.db.Trials(ctx, sid)
	tr := trials[1]
	tr.State, tr.Reason, tr.LogTail = session.TrialFailed, hidden, hidden
	if err := f.db.PutTrial(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Append(ctx, session.AuditEntry{Time: t0, SessionID: sid, Kind: "trial_finished", Actor: session.System, Detail: map[string]any{"reason": hidden}}); err != nil {
		t.Fatal(err)
	}
	body := readAll(t, f.signIn(t, eve).get("/api/sessions/"+sid))
	if !strings.Contains(body, "ValueError bad term") {
		t.Fatalf("the reason is not served: %.300s", body)
	}
	for _, r := range "\u202e\u200b\u061c\u2066\ufeff" {
		if strings.ContainsRune(body, r) {
			t.Errorf("the session view serves %U", r)
		}
	}
}
