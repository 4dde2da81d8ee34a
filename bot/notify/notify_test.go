package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/bot/notify"
	"tunebot/secret"
	"tunebot/session"
	"tunebot/store"
)

type request struct {
	path   string
	header http.Header
	body   string
}

// server answers with statuses in turn (200 once they run out) and records each request.
func server(t *testing.T, statuses ...int) (*httptest.Server, func() []request) {
	var mu sync.Mutex
	var got []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		h := r.Header.Clone()
		h.Set("X-Method", r.Method)
		got = append(got, request{r.URL.Path, h, string(b)})
		if len(statuses) > 0 {
			st := statuses[0]
			statuses = statuses[1:]
			if st == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "3")
			}
			http.Error(w, "nope", st)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []request { mu.Lock(); defer mu.Unlock(); return append([]request(nil), got...) }
}

func delivery() bot.Delivery {
	return bot.Delivery{ID: 1, Thread: "s1", Message: bot.Message{Event: session.EventProposalReady, Session: "s1",
		Card: bot.Card{Title: "proposal 3 für trial 4", Urgent: true, Mentions: []string{"phone"}, Blocks: []bot.Block{bot.Text("approve?")}}}}
}

func TestNtfyDeliver(t *testing.T) {
	for _, tc := range []struct {
		status    int
		permanent bool
		retryIn   time.Duration
		ok        bool
	}{
		{200, false, 0, true},
		{429, false, 3 * time.Second, false},
		{503, false, 0, false},
		{403, true, 0, false},
	} {
		srv, got := server(t, tc.status)
		env := map[string]string{"NTFY_TOKEN": "tk_secret"}
		n, err := notify.NewNtfy(srv.URL, "tunebot-alerts", func(k string) string { return env[k] }, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = n.Deliver(context.Background(), delivery())
		var perm *bot.PermanentError
		var ra *bot.RetryAfterError
		switch {
		case tc.ok && err != nil:
			t.Errorf("%d: %v", tc.status, err)
		case tc.permanent && !errors.As(err, &perm):
			t.Errorf("%d: %v is not permanent", tc.status, err)
		case tc.retryIn > 0 && (!errors.As(err, &ra) || ra.After != tc.retryIn):
			t.Errorf("%d: %v does not ask to retry in %s", tc.status, err, tc.retryIn)
		case !tc.ok && err == nil:
			t.Errorf("%d accepted", tc.status)
		}
		r := got()[0]
		if r.path != "/tunebot-alerts" || r.header.Get("Authorization") != "Bearer tk_secret" || r.header.Get("Priority") != "high" ||
			!strings.Contains(r.header.Get("Tags"), "raising_hand") || !strings.Contains(r.body, "approve?") {
			t.Errorf("request %+v", r)
		}
		if title := r.header.Get("Title"); !strings.HasPrefix(title, "=?utf-8?q?") {
			t.Errorf("non-ASCII title not encoded: %q", title)
		}
	}
	if _, err := notify.NewNtfy("ftp://x", "t", func(string) string { return "" }, nil, nil); err == nil {
		t.Error("accepted an ftp server")
	}
	if _, err := notify.NewNtfy("https://ntfy.sh", "a/b", func(string) string { return "" }, nil, nil); err == nil {
		t.Error("accepted a topic with a slash")
	}
}

// TestNtfyTopicCarriesNoSecret: chat.ntfy.topic: "tb-${SLACK_BOT_TOKEN}" made the daemon
// PUT /tb-xoxb-… to the push server. With tunebot's redactor the topic (and the server's
// URL) is masked before any request, so the push server never sees the value (issue 36).
func TestNtfyTopicCarriesNoSecret(t *testing.T) {
	const token = "xoxb-0123456789-slack"
	srv, got := server(t)
	n, err := notify.NewNtfy(srv.URL+"/p-"+token, "tb-"+token, func(string) string { return "" }, nil, secret.NewRedactor(token))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Deliver(context.Background(), delivery()); err != nil {
		t.Fatal(err)
	}
	for _, r := range got() {
		if strings.Contains(r.path+r.body+fmt.Sprint(r.header), token) || !strings.Contains(r.path, "tb-"+secret.Mask) {
			t.Errorf("the push server received the token: %s %v", r.path, r.header)
		}
	}
	if len(got()) == 0 {
		t.Error("nothing was pushed")
	}
	if _, err := notify.NewNtfy("ftp://"+token, "t", func(string) string { return "" }, nil, secret.NewRedactor(token)); err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("a bad server's refusal quotes the token: %v", err)
	}
}

func TestWebhookThroughTheOutbox(t *testing.T) {
	srv, got := server(t, 503, 500, 429)
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w, err := notify.NewWebhook(srv.URL+"/hook?key=secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := delivery()
	body, _ := bot.EncodeMessage(d.Message)
	if _, err := db.Enqueue(context.Background(), bot.OutboxItem{Platform: notify.PlatformWebhook, Thread: "s1", Kind: "proposal", Body: body}); err != nil {
		t.Fatal(err)
	}
	disp := bot.NewDispatcher(db, notify.PlatformWebhook, w, bot.DispatcherOptions{Poll: time.Millisecond, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond, MaxRetryAt: time.Millisecond}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- disp.Run(ctx) }()
	for disp.Stats().Delivered == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	reqs := got()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 3 failures and 1 delivery", len(reqs))
	}
	var p notify.Payload
	if err := json.Unmarshal([]byte(reqs[3].body), &p); err != nil {
		t.Fatal(err)
	}
	if p.Event != session.EventProposalReady || p.Session != "s1" || !p.Urgent || p.Mentions[0] != "phone" || !strings.Contains(p.Text, "approve?") {
		t.Errorf("payload %+v", p)
	}
	if n, _ := db.OutboxDepth(context.Background()); n != 0 {
		t.Errorf("%d items left", n)
	}
}

// TestNtfyAttachesThePosterAndFallsBackToText: a card with a clip's first frame goes as an
// ntfy attachment (PUT, Filename, the line in Message) with Click; a server that takes no
// attachments (4xx) gets the same line as plain text instead of nothing.
func TestNtfyAttachesThePosterAndFallsBackToText(t *testing.T) {
	d := bot.Delivery{ID: 2, Thread: "s1", Message: bot.Message{Event: session.EventTrialFinished, Session: "s1", Card: bot.Card{
		Title: "session s1", Link: "https://tune.example.com/sessions/s1?trial=8@0",
		Blocks: []bot.Block{bot.Text("trial 8 @ rung 0: +0.041 vs baseline · eligible · 5/12 done"),
			{Kind: bot.BlockAttachments, Attachments: []bot.Attachment{{Name: "trial-008-rung-0.png", Data: []byte("\x89PNG fake"), ContentType: bot.ContentPNG}}}}}}}
	for _, tc := range []struct {
		name     string
		statuses []int
		methods  string
	}{
		{"attachments on", nil, "PUT"},
		{"attachments off", []int{http.StatusBadRequest}, "PUT POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, got := server(t, tc.statuses...)
			n, err := notify.NewNtfy(srv.URL, "robots", func(string) string { return "" }, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.Deliver(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			reqs := got()
			var methods []string
			for _, r := range reqs {
				methods = append(methods, r.header.Get("X-Method"))
			}
			first, last := reqs[0], reqs[len(reqs)-1]
			msg, _ := new(mime.WordDecoder).DecodeHeader(first.header.Get("Message"))
			if first.header.Get("Filename") != "trial-008-rung-0.png" || first.body != "\x89PNG fake" || msg != "trial 8 @ rung 0: +0.041 vs baseline · eligible · 5/12 done" {
				t.Errorf("the attachment request: filename %q, message %q, body %q", first.header.Get("Filename"), msg, first.body)
			}
			if strings.Join(methods, " ") != tc.methods {
				t.Errorf("methods %v, want %s", methods, tc.methods)
			}
			if last.header.Get("Click") != "https://tune.example.com/sessions/s1?trial=8@0" ||
				tc.statuses != nil && strings.TrimSpace(last.body) != "trial 8 @ rung 0: +0.041 vs baseline · eligible · 5/12 done" {
				t.Errorf("the delivered request: click %q, body %q", last.header.Get("Click"), last.body)
			}
		})
	}
}
