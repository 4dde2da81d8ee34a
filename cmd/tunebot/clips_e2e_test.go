package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tunebot/session"
	"tunebot/store"
)

// ntfyRequest is one notification the fake ntfy server received.
type ntfyRequest struct {
	method, filename, message, click, title string
	body                                    []byte
}

// TestPhonesAndTheConsoleGetTheClips runs a sim session under the daemon with ntfy on and
// the page's public address set: every finished trial buzzes the phone with one line, the
// poster frame of its clip attached, opening the trial's page when tapped; the console names
// each trial's clip file (issue 21).
func TestPhonesAndTheConsoleGetTheClips(t *testing.T) {
	var mu sync.Mutex
	var got []ntfyRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		dec := new(mime.WordDecoder)
		msg, _ := dec.DecodeHeader(r.Header.Get("Message"))
		title, _ := dec.DecodeHeader(r.Header.Get("Title"))
		mu.Lock()
		got = append(got, ntfyRequest{method: r.Method, filename: r.Header.Get("Filename"), message: msg, click: r.Header.Get("Click"), title: title, body: body})
		mu.Unlock()
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
data_dir: data
service: {addr: "127.0.0.1:0", public_url: "https://tune.example.com"}
chat:
  ntfy: {server: %q, topic: robots}
`, srv.URL))
	cmd, stdinW, out := startDaemon(t, cfg)
	stdinW.WriteString("/tune start trials=4 rungs=20,40,60 fallback=true\n")
	waitFor(t, "the session to succeed", 60*time.Second, func() bool { return strings.Contains(out.String(), "succeeded") })
	db := func() *store.DB {
		t.Helper()
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		db, err := store.Open(filepath.Join(dir, "data", "tunebot.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}()
	defer db.Close()
	ctx := context.Background()
	all, _, err := db.RecentSessions(ctx, "", 1)
	if err != nil || len(all) != 1 {
		t.Fatalf("sessions: %v %v", all, err)
	}
	s := all[0]
	trials, _ := db.Trials(ctx, s.ID)

	mu.Lock()
	defer mu.Unlock()
	// above rung 0 the line says which baseline the score is against (issue 28, item 1)
	line := regexp.MustCompile(`^trial (\d+) @ rung (\d+): [+-]\d\.\d{3} vs baseline( @ rung \d+(, trained less)?)? · (eligible|not eligible) · \d+/4 done$`)
	pushed := map[string]bool{}
	for _, r := range got {
		m := line.FindStringSubmatch(r.message)
		if m == nil {
			continue
		}
		ref := m[1] + "@" + m[2]
		pushed[ref] = true
		want := fmt.Sprintf("https://tune.example.com/sessions/%s?trial=%s", s.ID, ref)
		if r.method != http.MethodPut || !bytes.HasPrefix(r.body, []byte("\x89PNG")) || r.click != want ||
			r.filename != fmt.Sprintf("trial-%03s-rung-%s.png", m[1], m[2]) || r.title != "tunebot: session "+session.Short(s.ID) {
			t.Errorf("trial %s's notification: %s %q, click %q, title %q, %d bytes starting %q", ref, r.method, r.filename, r.click, r.title, len(r.body), r.body[:min(8, len(r.body))])
		}
	}
	for _, tr := range trials {
		ref := fmt.Sprintf("%d@%d", tr.Number, tr.Rung)
		if !pushed[ref] {
			t.Errorf("no phone notification for trial %s", ref)
		}
		if tr.Clip == nil {
			t.Errorf("trial %s has no clip: %s", ref, tr.ClipNote)
			continue
		}
		// the console named the clip's file
		path := filepath.Join(dir, "data", "sessions", s.ID, tr.Clip.Path)
		if !strings.Contains(out.String(), fmt.Sprintf("[clip] trial %d @ rung %d", tr.Number, tr.Rung)) || !strings.Contains(out.String(), path) {
			t.Errorf("the console does not name trial %s's clip %s", ref, path)
		}
		if _, err := os.Stat(path); err != nil {
			t.Error(err)
		}
	}
	last := got[len(got)-1]
	// a session in which nothing beat the baseline says so (issue 28, item 2)
	end := "session " + session.Short(s.ID) + " succeeded: "
	switch {
	case s.Outcome == session.OutcomeNoImprovement:
		end = "session " + session.Short(s.ID) + " succeeded (no_improvement): nothing beat the defaults; they stand"
	case session.Unconfirmed(s.Outcome):
		// saved, but its gain did not clear its spread (issue 43): the push says which
		end = "session " + session.Short(s.ID) + " succeeded (" + s.Outcome + "): "
	}
	if !strings.HasPrefix(last.message, end) || !bytes.HasPrefix(last.body, []byte("\x89PNG")) {
		t.Errorf("the session's end: %q with %d bytes", last.message, len(last.body))
	}
}
