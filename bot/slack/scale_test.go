package slack_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"tunebot/bot"
	slackbot "tunebot/bot/slack"
	"tunebot/session"
	"tunebot/store"
)

// sessionReads counts the sessions the handler takes from the store, whichever way.
type sessionReads struct {
	*store.DB
	mu sync.Mutex
	n  int
}

func (c *sessionReads) add(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += n
}

func (c *sessionReads) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = 0
	return n
}

func (c *sessionReads) Session(ctx context.Context, id string) (session.Session, error) {
	c.add(1)
	return c.DB.Session(ctx, id)
}

func (c *sessionReads) Sessions(ctx context.Context) ([]session.Session, error) {
	all, err := c.DB.Sessions(ctx)
	c.add(len(all))
	return all, err
}

func (c *sessionReads) RecentSessions(ctx context.Context, cursor string, limit int) ([]session.Session, string, error) {
	page, next, err := c.DB.RecentSessions(ctx, cursor, limit)
	c.add(len(page))
	return page, next, err
}

func (c *sessionReads) ActiveSessions(ctx context.Context) ([]session.Session, error) {
	active, err := c.DB.ActiveSessions(ctx)
	c.add(len(active))
	return active, err
}

// /tune status answers about the active session, else the newest, and reads those from the
// store's indexes rather than every session a year of tuning left.
func TestStatusReadsOnlyTheSessionItShows(t *testing.T) {
	var reads *sessionReads
	r := newRigWith(t, slackbot.ModeSocket, func(db *store.DB, ad *slackbot.Adapter) bot.HandlerConfig {
		reads = &sessionReads{DB: db}
		return bot.HandlerConfig{Store: reads, Space: session.DefaultSpace(), Allow: ad.Grants(), Logger: testLogger()}
	})
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	const n = 120
	for i := range n {
		// Created out of order: the newest is neither the first nor the last written.
		day := (i * 7) % n
		s := session.Session{ID: sessionID(day), State: session.StateSucceeded, Settings: session.DefaultSettings(),
			BestTrial: -1, CreatedAt: t0.Add(time.Duration(day) * 24 * time.Hour), Message: fmt.Sprintf("day %d", day)}
		if err := r.db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	status := func(want string) {
		t.Helper()
		reads.take()
		id, err := r.fake.Send("slash_commands", r.fake.Slash("UANY", "CTUNE", "status"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.fake.WaitAck(r.ctx, id); err != nil {
			t.Fatal(err)
		}
		r.waitResponse(t, want)
		if got := reads.take(); got > 1 {
			t.Errorf("/tune status read %d sessions of %d stored, want the one it shows", got, n)
		}
	}
	status(session.Short(sessionID(n - 1)))
	// An older session paused (resumable): status is about it now.
	paused := sessionID(30)
	if _, err := r.db.UpdateSession(ctx, paused, func(s *session.Session) error { s.State = session.StatePaused; return nil }); err != nil {
		t.Fatal(err)
	}
	status(session.Short(paused))
}

// sessionID is the id of the session of day d, told apart by its short form.
func sessionID(d int) string { return fmt.Sprintf("%08x%08x", 0xa0000000+d, d) }
