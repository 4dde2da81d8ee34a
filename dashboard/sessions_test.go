package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/dashboard"
	"tunebot/session"
	"tunebot/store"
)

// countingStore counts the sessions and trial lists a reader takes from the store.
type countingStore struct {
	*store.DB
	mu       sync.Mutex
	sessions int
	trials   int
}

func (c *countingStore) count(sessions, trials int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions += sessions
	c.trials += trials
}

func (c *countingStore) reads() (sessions, trials int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sessions, trials = c.sessions, c.trials
	c.sessions, c.trials = 0, 0
	return sessions, trials
}

func (c *countingStore) Session(ctx context.Context, id string) (session.Session, error) {
	c.count(1, 0)
	return c.DB.Session(ctx, id)
}

func (c *countingStore) Sessions(ctx context.Context) ([]session.Session, error) {
	all, err := c.DB.Sessions(ctx)
	c.count(len(all), 0)
	return all, err
}

func (c *countingStore) RecentSessions(ctx context.Context, cursor string, limit int) ([]session.Session, string, error) {
	page, next, err := c.DB.RecentSessions(ctx, cursor, limit)
	c.count(len(page), 0)
	return page, next, err
}

func (c *countingStore) ActiveSessions(ctx context.Context) ([]session.Session, error) {
	active, err := c.DB.ActiveSessions(ctx)
	c.count(len(active), 0)
	return active, err
}

func (c *countingStore) Trials(ctx context.Context, id string) ([]session.Trial, error) {
	c.count(0, 1)
	return c.DB.Trials(ctx, id)
}

func (c *countingStore) TrialOutlines(ctx context.Context, id string) ([]session.TrialOutline, error) {
	c.count(0, 1)
	return c.DB.TrialOutlines(ctx, id)
}

// readOnly answers every action: these tests only read.
type readOnly struct{}

func (readOnly) Do(context.Context, bot.Interaction) bot.Reply {
	return bot.Reply{Private: true, Text: "read-only"}
}

func (readOnly) Refuse(context.Context, bot.Interaction, bot.Command) (bot.Reply, bool) {
	return bot.Reply{Private: true, Text: "read-only"}, false
}

func (readOnly) Advised() bool { return true }

// A lab that runs sessions daily has thousands within a year: the sessions page reads one
// page of the newest from the store's index, and pages on to the oldest.
func TestSessionsPageReadsOnePage(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const n = 2*dashboard.SessionsPerPage + 20
	var newestFirst []string
	for i := range n {
		s := session.Session{ID: fmt.Sprintf("%016x", i+1), State: session.StateSucceeded, Settings: session.DefaultSettings(),
			BestTrial: -1, CreatedAt: t0.Add(time.Duration(i) * 24 * time.Hour)}
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := db.PutTrial(ctx, session.Trial{SessionID: s.ID, State: session.TrialCompleted}); err != nil {
			t.Fatal(err)
		}
		newestFirst = append([]string{s.ID}, newestFirst...)
	}
	pruned := newestFirst[len(newestFirst)-1]
	_, err = db.UpdateSession(ctx, pruned, func(s *session.Session) error {
		s.Pruned = &session.Pruned{At: t0, Curves: session.CurvesDownsample, Points: 200, RunDirs: true}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingStore{DB: db}
	dash, err := dashboard.New(dashboard.Options{Store: counted, Actions: readOnly{}, Key: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dash)
	t.Cleanup(srv.Close)
	c := (&fixture{db: db, dash: dash, srv: srv}).signIn(t, alice)

	var got []string
	cursor := ""
	for page := 0; ; page++ {
		path := "/api/sessions"
		if cursor != "" {
			path += "?cursor=" + url.QueryEscape(cursor)
		}
		counted.reads()
		resp := c.get(path)
		v := decode(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, v)
		}
		rows := v["sessions"].([]any)
		sessions, trials := counted.reads()
		if len(rows) > dashboard.SessionsPerPage || sessions > len(rows) || trials > len(rows) {
			t.Errorf("page %d: %d rows read %d sessions and %d trial lists of %d stored; want one page", page, len(rows), sessions, trials, n)
		}
		for _, r := range rows {
			row := r.(map[string]any)
			got = append(got, row["id"].(string))
			if row["trials_done"] != 1.0 {
				t.Errorf("session %s: %v trials done, want 1", row["id"], row["trials_done"])
			}
			if want := "pruned on 2026-03-01: curves thinned to 200 points, run directories deleted (its preset's policy and checkpoint kept)"; row["id"] == pruned && row["pruned"] != want {
				t.Errorf("the pruned session's row says %q, want %q", row["pruned"], want)
			}
		}
		cursor, _ = v["next"].(string)
		if cursor == "" {
			break
		}
	}
	// The page polls: finished sessions' rows are not read again.
	counted.reads()
	c.get("/api/sessions")
	if sessions, trials := counted.reads(); sessions > dashboard.SessionsPerPage || trials > 0 {
		t.Errorf("polling the first page again read %d sessions and %d trial lists; finished sessions' trials do not change", sessions, trials)
	}
	if strings.Join(got, " ") != strings.Join(newestFirst, " ") {
		t.Errorf("the pages listed %d sessions:\n%v\nwant every one once, newest first:\n%v", len(got), got, newestFirst)
	}
	resp := c.get("/api/sessions?cursor=zz")
	if v := decode(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(fmt.Sprint(v["error"]), "not a page of the session list") {
		t.Errorf("a bad cursor: %d %v", resp.StatusCode, v)
	}
}
