package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/bot"
	slackbot "tunebot/bot/slack"
	"tunebot/bot/slack/slacktest"
	"tunebot/session"
	"tunebot/store"
)

func openStore(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func testLogger() *slog.Logger {
	if os.Getenv("SLACK_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type rig struct {
	fake *slacktest.Server
	db   *store.DB
	ad   *slackbot.Adapter
	h    *bot.Handler
	ctx  context.Context
}

// newRig connects an adapter over Socket Mode to a fake Slack, with a handler that has
// no engine: what these tests send never reaches one.
func newRig(t testing.TB, mode string) *rig {
	t.Helper()
	return newRigWith(t, mode, func(db *store.DB, ad *slackbot.Adapter) bot.HandlerConfig {
		return bot.HandlerConfig{Store: db, Space: session.DefaultSpace(), Allow: ad.Grants(), Logger: testLogger()}
	})
}

// newRigWith is newRig with the handler configured by handler.
func newRigWith(t testing.TB, mode string, handler func(*store.DB, *slackbot.Adapter) bot.HandlerConfig) *rig {
	t.Helper()
	fake := slacktest.New()
	t.Cleanup(fake.Close)
	db := openStore(t)
	ad, err := slackbot.New(slackbot.Config{Mode: mode, APIURL: fake.URL, Channel: "CTUNE", AllowUsers: []string{"UALICE"}, AllowGroups: []string{"SOPS"},
		BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, SigningSecret: "s3cret", Refs: db, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	h := bot.NewHandler(handler(db, ad))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	r := &rig{fake: fake, db: db, ad: ad, h: h, ctx: ctx}
	if mode == slackbot.ModeHTTP {
		close(done)
		return r
	}
	go func() { defer close(done); _ = ad.Run(ctx, h) }()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := fake.WaitConnected(wctx); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) waitResponse(t testing.TB, want string) slacktest.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	var got slacktest.Response
	err := r.fake.Wait(ctx, func(st *slacktest.State) bool {
		for _, x := range st.Responses {
			if strings.Contains(x.Text+x.Blocks, want) {
				got = x
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no response with %q: %v; have %+v", want, err, r.fake.Snapshot().Responses)
	}
	return got
}

func TestSlashHelpIsPrivate(t *testing.T) {
	r := newRig(t, slackbot.ModeSocket)
	id, err := r.fake.Send("slash_commands", r.fake.Slash("UANY", "CTUNE", "help"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.fake.WaitAck(r.ctx, id); err != nil {
		t.Fatal(err)
	}
	res := r.waitResponse(t, "/tune start")
	if res.ResponseType != "ephemeral" {
		t.Errorf("help answered %s, want ephemeral", res.ResponseType)
	}
}

func encode(t testing.TB, c bot.Card) []byte {
	t.Helper()
	b, err := bot.EncodeMessage(bot.Message{Session: c.Session, Card: c})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rootCard(sid, state string) bot.Card {
	return bot.Card{Ref: "s/" + sid + "/root", Kind: "root", Session: sid, Title: "tunebot session " + sid + " · " + state,
		Blocks: []bot.Block{{Kind: bot.BlockHeader, Text: "session " + state}}}
}

func trialCard(sid string, n int, png []byte) bot.Card {
	c := bot.Card{Ref: fmt.Sprintf("s/%s/trial/%d/0", sid, n), Kind: "trial", Session: sid, Title: fmt.Sprintf("trial %d @ rung 0", n),
		Mentions: []string{"UALICE"}, Blocks: []bot.Block{bot.Text(fmt.Sprintf("trial %d", n))}}
	if png != nil {
		c.Blocks = append(c.Blocks, bot.Block{Kind: bot.BlockAttachments, Attachments: []bot.Attachment{{Name: fmt.Sprintf("trial-%d.png", n), Title: "curves", Data: png}}})
	}
	return c
}

func newSink(t testing.TB, fake *slacktest.Server, db *store.DB) *slackbot.Adapter {
	t.Helper()
	ad, err := slackbot.New(slackbot.Config{APIURL: fake.URL, Channel: "CTUNE", BotToken: slacktest.BotToken, AppToken: slacktest.AppToken,
		Refs: db, HTTPClient: fake.Client(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

// TestDeliverRootThreadEditsAndCharts: the root goes to the channel and is edited in
// place, other cards go in its thread, a card seen before is edited, and a retried
// delivery neither posts nor uploads twice.
func TestDeliverRootThreadEditsAndCharts(t *testing.T) {
	fake := slacktest.New()
	defer fake.Close()
	db := openStore(t)
	ad := newSink(t, fake, db)
	ctx := context.Background()
	deliver := func(c bot.Card) {
		t.Helper()
		if err := ad.Deliver(ctx, bot.Delivery{ID: 1, Thread: "sess1", Key: c.Ref, Message: bot.Message{Session: "sess1", Card: c}}); err != nil {
			t.Fatalf("deliver %s: %v", c.Kind, err)
		}
	}
	deliver(rootCard("sess1", "running"))
	deliver(trialCard("sess1", 0, []byte("\x89PNG fake")))
	deliver(trialCard("sess1", 0, []byte("\x89PNG fake"))) // the same card again: an edit, no second upload
	deliver(rootCard("sess1", "succeeded"))
	st := fake.Snapshot()
	if len(st.Messages) != 2 {
		t.Fatalf("%d messages, want root and one report: %+v", len(st.Messages), st.Messages)
	}
	root, report := st.Messages[0], st.Messages[1]
	if root.Channel != "CTUNE" || root.ThreadTS != "" || root.Edits != 1 || !strings.Contains(root.Text, "succeeded") {
		t.Errorf("root %+v", root)
	}
	if report.ThreadTS != root.TS || report.Edits != 1 || !strings.Contains(report.Text, "<@UALICE>") {
		t.Errorf("report %+v", report)
	}
	if len(st.Uploads) != 1 || st.Uploads[0].ThreadTS != root.TS || st.Uploads[0].Channel != "CTUNE" || st.Uploads[0].Name != "trial-0.png" {
		t.Errorf("uploads %+v", st.Uploads)
	}
	if got, err := db.ChatRef(ctx, "slack", "thread/CTUNE/"+root.TS); err != nil || got != "sess1" {
		t.Errorf("thread ref %q %v", got, err)
	}
}

// errorAPI answers every Web API call with one canned response.
func errorAPI(status int, header map[string]string, body string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
}

// TestDeliverErrorsMapToTheOutbox: 429 → RetryAfter with Slack's delay, 5xx and transient
// API errors → retried, configuration errors → Permanent.
func TestDeliverErrorsMapToTheOutbox(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   string // retry-after, retry, permanent
		after  time.Duration
	}{
		{"rate limited", 429, map[string]string{"Retry-After": "7"}, `{"ok":false,"error":"ratelimited"}`, "retry-after", 7 * time.Second},
		{"server error", 503, nil, `<html>`, "retry", 0},
		{"bad gateway", 502, nil, `<html>`, "retry", 0},
		{"internal_error", 200, nil, `{"ok":false,"error":"internal_error"}`, "retry", 0},
		{"channel_not_found", 200, nil, `{"ok":false,"error":"channel_not_found"}`, "permanent", 0},
		{"not_in_channel", 200, nil, `{"ok":false,"error":"not_in_channel"}`, "permanent", 0},
		{"invalid_auth", 200, nil, `{"ok":false,"error":"invalid_auth"}`, "permanent", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := errorAPI(tc.status, tc.header, tc.body)
			defer srv.Close()
			ad, err := slackbot.New(slackbot.Config{APIURL: srv.URL + "/api/", Channel: "CTUNE", BotToken: "xoxb-x", AppToken: "xapp-x", Refs: openStore(t), Logger: testLogger()})
			if err != nil {
				t.Fatal(err)
			}
			err = ad.Deliver(context.Background(), bot.Delivery{ID: 1, Thread: "s1", Message: bot.Message{Card: rootCard("s1", "running")}})
			var ra *bot.RetryAfterError
			var perm *bot.PermanentError
			got := "retry"
			switch {
			case err == nil:
				got = "delivered"
			case errors.As(err, &ra):
				got = "retry-after"
				if ra.After != tc.after {
					t.Errorf("retry after %s, want %s", ra.After, tc.after)
				}
			case errors.As(err, &perm):
				got = "permanent"
			}
			if got != tc.want {
				t.Errorf("%v → %s, want %s", err, got, tc.want)
			}
		})
	}
}

// TestSlackDownForTwoMinutes: on the dispatcher's clock, Slack answers 503 for two minutes
// while cards keep coming; afterwards every card is delivered, in order, in the thread,
// none twice.
func TestSlackDownForTwoMinutes(t *testing.T) {
	fake := slacktest.New()
	defer fake.Close()
	db := openStore(t)
	synctest.Test(t, func(t *testing.T) {
		ad := newSink(t, fake, db)
		ctx, cancel := context.WithCancel(context.Background())
		disp := bot.NewDispatcher(db, "slack", ad, bot.DispatcherOptions{}, testLogger())
		done := make(chan struct{})
		go func() { defer close(done); _ = disp.Run(ctx) }()
		enqueue := func(c bot.Card, key string) {
			if _, err := db.Enqueue(ctx, bot.OutboxItem{Platform: "slack", Thread: "s1", Key: key, Kind: c.Kind, Body: encode(t, c), Expires: time.Now().Add(24 * time.Hour)}); err != nil {
				t.Fatal(err)
			}
			disp.Wake()
		}
		enqueue(rootCard("s1", "running"), "s/s1/root")
		synctest.Wait()
		fake.SetDown(true)
		for n := range 4 {
			enqueue(trialCard("s1", n, []byte{byte(n)}), "")
			time.Sleep(30 * time.Second)
			synctest.Wait()
		}
		enqueue(rootCard("s1", "succeeded"), "s/s1/root")
		fake.SetDown(false)
		time.Sleep(10 * time.Minute) // longer than the largest backoff
		synctest.Wait()
		cancel()
		<-done
		if fake.Failed() == 0 {
			t.Fatal("nothing was attempted during the outage")
		}
		st := fake.Snapshot()
		var thread []string
		for _, m := range st.Messages[1:] {
			if m.ThreadTS != st.Messages[0].TS {
				t.Errorf("%q outside the thread", m.Text)
			}
			thread = append(thread, m.Text)
		}
		want := []string{"trial 0 @ rung 0 <@UALICE>", "trial 1 @ rung 0 <@UALICE>", "trial 2 @ rung 0 <@UALICE>", "trial 3 @ rung 0 <@UALICE>"}
		if diff := cmp.Diff(want, thread); diff != "" {
			t.Errorf("thread after the outage (-want +got):\n%s", diff)
		}
		if !strings.Contains(st.Messages[0].Text, "succeeded") || len(st.Uploads) != 4 {
			t.Errorf("root %q, %d uploads", st.Messages[0].Text, len(st.Uploads))
		}
		if s := disp.Stats(); s.Delivered != 6 || s.Dropped != 0 || s.Expired != 0 {
			t.Errorf("dispatcher %+v", s)
		}
	})
}

// TestHTTPModeVerifiesSignatures: unsigned, stale, forged and oversized requests are
// refused before anything is read; a signed one is served, and url_verification answered.
func TestHTTPModeVerifiesSignatures(t *testing.T) {
	r := newRig(t, slackbot.ModeHTTP)
	srv := httptest.NewServer(r.ad.HTTPHandler(r.ctx, r.h))
	defer srv.Close()
	slash := url.Values{"command": {"/tune"}, "text": {"help"}, "user_id": {"UANY"}, "channel_id": {"CTUNE"}, "response_url": {r.fake.ResponseURL()}}.Encode()
	now := time.Now()
	for _, tc := range []struct {
		name   string
		body   string
		header http.Header
		status int
	}{
		{"unsigned", slash, http.Header{}, 401},
		{"forged", slash, slacktest.Sign("not-the-secret", []byte(slash), now), 401},
		{"stale", slash, slacktest.Sign("s3cret", []byte(slash), now.Add(-6*time.Minute)), 401},
		{"tampered", slash + "&x=1", slacktest.Sign("s3cret", []byte(slash), now), 401},
		{"oversized", strings.Repeat("a", 2<<20), slacktest.Sign("s3cret", []byte("a"), now), 413},
		{"url verification", `{"type":"url_verification","challenge":"ch4ll"}`, slacktest.Sign("s3cret", []byte(`{"type":"url_verification","challenge":"ch4ll"}`), now), 200},
		{"signed", slash, slacktest.Sign("s3cret", []byte(slash), now), 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/slack", strings.NewReader(tc.body))
			req.Header = tc.header.Clone()
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if strings.HasPrefix(tc.body, "{") {
				req.Header.Set("Content-Type", "application/json")
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (%s)", res.StatusCode, tc.status, body)
			}
			if tc.name == "url verification" && string(body) != "ch4ll" {
				t.Errorf("challenge answered %q", body)
			}
		})
	}
	r.ad.Wait()
	st := r.fake.Snapshot()
	if len(st.Responses) != 1 || !strings.Contains(st.Responses[0].Text+st.Responses[0].Blocks, "/tune start") {
		t.Errorf("only the signed request may be answered; answers: %+v", st.Responses)
	}
}

// TestHTTPModeDropsReplays: the same signed request sent twice within its 5-minute window
// (captured on the way and replayed) is acknowledged but run once, also when the replay
// spells the signature's hex in upper case (which verifies just the same); the same
// command signed anew is a new request.
func TestHTTPModeDropsReplays(t *testing.T) {
	r := newRig(t, slackbot.ModeHTTP)
	srv := httptest.NewServer(r.ad.HTTPHandler(r.ctx, r.h))
	defer srv.Close()
	slash := url.Values{"command": {"/tune"}, "text": {"help"}, "user_id": {"UANY"}, "channel_id": {"CTUNE"}, "response_url": {r.fake.ResponseURL()}}.Encode()
	now := time.Now()
	signed := slacktest.Sign("s3cret", []byte(slash), now)
	upper := signed.Clone()
	upper.Set("X-Slack-Signature", "v0="+strings.ToUpper(strings.TrimPrefix(signed.Get("X-Slack-Signature"), "v0=")))
	for i, h := range []http.Header{signed, signed, upper, slacktest.Sign("s3cret", []byte(slash), now.Add(-time.Second))} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/slack", strings.NewReader(slash))
		req.Header = h.Clone()
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i, res.StatusCode)
		}
	}
	r.ad.Wait()
	if n := len(r.fake.Snapshot().Responses); n != 2 {
		t.Errorf("%d answers, want 2: the replay must not run", n)
	}
}

// TestClicksAreCheckedAgainstUsersAndGroups: a stranger's click is refused privately and
// audited; a member of an allowed user group gets past the allow-list.
func TestClicksAreCheckedAgainstUsersAndGroups(t *testing.T) {
	r := newRig(t, slackbot.ModeSocket)
	r.fake.SetGroups(slacktest.Group{ID: "SOPS", Users: []string{"UGROUPIE"}}, slacktest.Group{ID: "SOTHER", Users: []string{"UEVE"}})
	msg := &slacktest.Message{Channel: "CTUNE", TS: "1.1", ThreadTS: "1.0"}
	action := bot.ActionID(bot.ButtonApprove, "sess-x", "prop-1")
	for _, tc := range []struct{ user, want string }{
		{"UEVE", "not allowed"},
		{"UGROUPIE", "does not exist"}, // allowed: the handler went on to look the session up
	} {
		id, err := r.fake.Send("interactive", r.fake.Click(tc.user, msg, action))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.fake.WaitAck(r.ctx, id); err != nil {
			t.Fatal(err)
		}
		if res := r.waitResponse(t, tc.want); res.ResponseType != "ephemeral" {
			t.Errorf("%s answered %s", tc.user, res.ResponseType)
		}
	}
	audit, err := r.db.Audit(context.Background(), "sess-x")
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, a := range audit {
		if a.Kind == "refused" {
			refused = append(refused, a.Actor.ID)
		}
	}
	if diff := cmp.Diff([]string{"UEVE"}, refused); diff != "" {
		t.Errorf("refusals audited (-want +got):\n%s", diff)
	}
}

// TestRetriedEventsAreHandledOnce: Slack sends an event again (same event_id, with
// X-Slack-Retry-Num) when it thinks the first went unanswered; the reply is handled once.
func TestRetriedEventsAreHandledOnce(t *testing.T) {
	r := newRig(t, slackbot.ModeHTTP)
	srv := httptest.NewServer(r.ad.HTTPHandler(r.ctx, r.h))
	defer srv.Close()
	if err := r.db.PutChatRef(r.ctx, slackbot.Platform, "thread/CTUNE/1.0", "sess-r"); err != nil {
		t.Fatal(err)
	}
	reply := r.fake.Reply("UEVE", "CTUNE", "1.0", "approve")
	other := r.fake.Reply("UEVE", "CTUNE", "1.0", "approve") // a new event: handled too
	for i, ev := range []map[string]any{reply, reply, reply, other} {
		body, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/slack/events", bytes.NewReader(body))
		req.Header = slacktest.Sign("s3cret", body, time.Now())
		req.Header.Set("Content-Type", "application/json")
		if i == 1 || i == 2 {
			req.Header.Set("X-Slack-Retry-Num", fmt.Sprint(i))
			req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("event %d: status %d", i, res.StatusCode)
		}
	}
	r.ad.Wait()
	audit, err := r.db.Audit(context.Background(), "sess-r")
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, a := range audit {
		if a.Kind == "refused" {
			n, _ := a.Detail[session.CountKey].(float64) // refusals within a minute are one entry
			refused += int(n)
		}
	}
	if refused != 2 {
		t.Errorf("%d refusals audited for one event sent three times and one other, want 2", refused)
	}
}
