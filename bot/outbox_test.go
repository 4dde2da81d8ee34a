package bot_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/bot"
	"tunebot/session"
	"tunebot/store"
)

// flakySink fails its first failures calls, then records what it delivers.
type flakySink struct {
	mu        sync.Mutex
	failures  int
	calls     int
	retryHint time.Duration // when set, failures ask for this Retry-After
	got       map[string][]string
	order     []string
}

func (s *flakySink) Deliver(ctx context.Context, d bot.Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.calls <= s.failures {
		if s.retryHint > 0 && s.calls%2 == 0 {
			return bot.RetryAfter(s.retryHint, errors.New("429 too many requests"))
		}
		return errors.New("503 platform down")
	}
	if s.got == nil {
		s.got = map[string][]string{}
	}
	s.got[d.Thread] = append(s.got[d.Thread], d.Message.Card.Title)
	s.order = append(s.order, d.Message.Card.Title)
	return nil
}

func enqueueCard(t *testing.T, q bot.Queue, platform, thread, key, title string) {
	t.Helper()
	body, err := bot.EncodeMessage(bot.Message{Session: thread, Card: bot.Card{Ref: key, Title: title}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(context.Background(), bot.OutboxItem{Platform: platform, Thread: thread, Key: key, Kind: "card", Body: body,
		Expires: time.Now().Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

// waitDrained advances the bubble's clock until the outbox of every platform is empty.
func waitDrained(t *testing.T, db *store.DB) {
	t.Helper()
	for i := 0; ; i++ {
		synctest.Wait()
		n, err := db.OutboxDepth(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if i > 100000 {
			t.Fatalf("%d items still undelivered", n)
		}
		time.Sleep(time.Second)
	}
}

func TestDispatcherRetriesUntilDeliveredOnceInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t)
		want := map[string][]string{}
		for i := range 8 {
			for _, th := range []string{"s1", "s2", "s3"} {
				title := fmt.Sprintf("%s-%d", th, i)
				enqueueCard(t, db, "slack", th, "", title)
				want[th] = append(want[th], title)
			}
		}
		enqueueCard(t, db, "discord", "s1", "", "not mine") // another platform's item stays put
		sink := &flakySink{failures: 50, retryHint: 7 * time.Second}
		d := bot.NewDispatcher(db, "slack", sink, bot.DispatcherOptions{}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- d.Run(ctx) }()
		for {
			synctest.Wait()
			n, _ := db.OutboxDepth(context.Background())
			if n == 1 {
				break
			}
			time.Sleep(time.Second)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, sink.got); diff != "" {
			t.Errorf("deliveries per thread (-want +got):\n%s", diff)
		}
		if st := d.Stats(); st.Delivered != 24 || st.Retried != 50 || st.Dropped != 0 || st.Expired != 0 {
			t.Errorf("stats %+v", st)
		}
		items, err := db.Due(context.Background(), "discord", time.Now(), 0)
		if err != nil || len(items) != 1 {
			t.Errorf("the other platform's item: %v %v", items, err)
		}
	})
}

func TestDispatcherBackoffIsCappedAndExpiresOldItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t)
		start := time.Now()
		body, _ := bot.EncodeMessage(bot.Message{Card: bot.Card{Title: "doomed"}})
		if _, err := db.Enqueue(context.Background(), bot.OutboxItem{Platform: "slack", Thread: "s1", Kind: "card", Body: body, Expires: start.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		sink := &flakySink{failures: 1 << 30}
		d := bot.NewDispatcher(db, "slack", sink, bot.DispatcherOptions{BaseDelay: time.Second, MaxDelay: time.Minute}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- d.Run(ctx) }()
		waitDrained(t, db)
		cancel()
		<-done
		elapsed := time.Since(start)
		st := d.Stats()
		if st.Expired != 1 || st.Delivered != 0 {
			t.Errorf("stats %+v", st)
		}
		// Capped at a minute (jitter: at least half of it), an hour holds at least 60
		// attempts and at most ~130; an uncapped doubling would make about 12.
		if sink.calls < 55 || sink.calls > 140 {
			t.Errorf("%d attempts in %s; backoff not capped as configured", sink.calls, elapsed)
		}
	})
}

func TestDispatcherPermanentFailureDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t)
		enqueueCard(t, db, "slack", "s1", "", "bad")
		enqueueCard(t, db, "slack", "s1", "", "good")
		var got []string
		sink := sinkFunc(func(ctx context.Context, d bot.Delivery) error {
			if d.Message.Card.Title == "bad" {
				return bot.Permanent(errors.New("400 channel_not_found"))
			}
			got = append(got, d.Message.Card.Title)
			return nil
		})
		d := bot.NewDispatcher(db, "slack", sink, bot.DispatcherOptions{}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		go d.Run(ctx)
		waitDrained(t, db)
		cancel()
		if diff := cmp.Diff([]string{"good"}, got); diff != "" || d.Stats().Dropped != 1 {
			t.Errorf("(-want +got):\n%s stats %+v", diff, d.Stats())
		}
	})
}

type sinkFunc func(ctx context.Context, d bot.Delivery) error

func (f sinkFunc) Deliver(ctx context.Context, d bot.Delivery) error { return f(ctx, d) }

func TestCardUpdatesCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t)
		enqueueCard(t, db, "slack", "s1", "", "report 1")
		for i := range 10 {
			enqueueCard(t, db, "slack", "s1", "s/s1/root", fmt.Sprintf("root v%d", i))
		}
		enqueueCard(t, db, "slack", "s1", "", "report 2")
		enqueueCard(t, db, "slack", "s1", "s/s1/root", "root v10")
		sink := &flakySink{}
		d := bot.NewDispatcher(db, "slack", sink, bot.DispatcherOptions{}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		go d.Run(ctx)
		waitDrained(t, db)
		cancel()
		// The root card keeps its first place in the thread and carries its newest state.
		if diff := cmp.Diff([]string{"report 1", "root v10", "report 2"}, sink.order); diff != "" {
			t.Errorf("deliveries (-want +got):\n%s", diff)
		}
	})
}

func TestMessageRoundTrip(t *testing.T) {
	m := bot.Message{Event: session.EventTrialFinished, Session: "s1", Text: "done", Card: bot.Card{Title: "t", Blocks: []bot.Block{
		bot.Text("x"),
		{Kind: bot.BlockAttachments, Attachments: []bot.Attachment{{Name: "a.png", Data: []byte("\x89PNG-a")}, {Name: "b.png", Data: bytes.Repeat([]byte{7}, 10000)}}},
	}}}
	body, err := bot.EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := bot.DecodeMessage(body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(body) > 11000 {
		t.Errorf("body is %d bytes: PNGs are not carried raw", len(body))
	}
	for _, bad := range [][]byte{nil, {0xff}, body[:len(body)-1], append([]byte{5}, "{}"...)} {
		if _, err := bot.DecodeMessage(bad); err == nil {
			t.Errorf("DecodeMessage(%q) accepted", bad)
		}
	}
}

func TestNotifierEnqueuesCardsPerPlatformAndNeverBlocks(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{MaxOutbox: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := fixtureSession()
	tr := fixtureTrials()
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, x := range tr[:3] {
		x.SessionID = s.ID
		if err := db.PutTrial(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	chartCalls := 0
	r := &bot.Renderer{Records: db, Space: session.DefaultSpace(), Mentions: map[string][]string{"slack": {"U7"}, "ntfy": {"phone"}},
		Charts: func(context.Context, session.Session, session.Trial, []string) ([]bot.Attachment, error) {
			chartCalls++
			return []bot.Attachment{{Name: "t002-r0-reward.png", Title: "reward", Data: []byte("png")}}, nil
		}}
	n := bot.NewNotifier(bot.NotifierConfig{Queue: db, Renderer: r, Platforms: []string{"slack", "discord"}, Push: []string{"ntfy"}, Buffer: 4})
	p := fixtureProposal()
	decided := p
	decided.State, decided.Decision = session.ProposalApproved, &session.Decision{Action: "approve", By: alice, At: t0}
	trial := tr[2]
	trial.SessionID = s.ID
	for _, e := range []session.Event{
		{Kind: session.EventTrialFinished, Session: s, Trial: &trial, Text: "trial 2 done"},
		{Kind: session.EventProposalReady, Session: s, Proposal: &p},
		{Kind: session.EventDecision, Session: s, Proposal: &decided},
		{Kind: session.EventTrialProgress, Session: s, Trial: &trial},
		{Kind: session.EventTrialProgress, Session: s, Trial: &trial}, // the buffer holds 4: dropped
	} {
		n.Notify(ctx, e)
	}
	if n.Dropped() != 1 {
		t.Fatalf("dropped %d, want 1", n.Dropped())
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel() // Run drains what is queued, then returns
	if err := n.Run(cctx); err != nil {
		t.Fatal(err)
	}
	if chartCalls != 1 {
		t.Errorf("charts rendered %d times for one finished trial on two platforms", chartCalls)
	}
	kinds := func(platform string) []string {
		items, err := db.Due(ctx, platform, time.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for len(items) > 0 {
			for _, it := range items {
				m, err := bot.DecodeMessage(it.Body)
				if err != nil {
					t.Fatal(err)
				}
				desc := it.Kind
				if len(m.Card.Mentions) > 0 {
					desc += fmt.Sprint(m.Card.Mentions)
				}
				for _, b := range m.Card.Blocks {
					if b.Kind == bot.BlockStamp {
						desc += " stamped"
					}
					if b.Kind == bot.BlockAttachments {
						desc += fmt.Sprintf(" %d charts", len(b.Attachments))
					}
				}
				out = append(out, desc)
				db.Delivered(ctx, it.ID)
			}
			items, _ = db.Due(ctx, platform, time.Now(), 0)
		}
		return out
	}
	// slack: root (coalesced across the 4 events), trial report with charts and mentions,
	// the proposal card, whose undelivered pending state the decision replaced in place.
	if diff := cmp.Diff([]string{"root", "trial[U1 U7] 1 charts", "proposal stamped"}, kinds("slack")); diff != "" {
		t.Errorf("slack (-want +got):\n%s", diff)
	}
	// The session was started from Slack, so it posts there only.
	if got := kinds("discord"); len(got) != 0 {
		t.Errorf("discord got %v for a session started on slack", got)
	}
	// A session started elsewhere (a terminal, a schedule) posts to every platform.
	other := s
	other.ID, other.Owner = "feedc0de00000000", session.Actor{Platform: "console", ID: "console"}
	if err := db.CreateSession(ctx, other); err != nil && !errors.Is(err, session.ErrBusy) {
		t.Fatal(err)
	}
	n.Notify(ctx, session.Event{Kind: session.EventSessionUpdated, Session: other, Text: "hello"})
	cctx2, cancel2 := context.WithCancel(ctx)
	cancel2()
	n.Run(cctx2)
	for _, p := range []string{"slack", "discord"} {
		if diff := cmp.Diff([]string{"root", "notice"}, kinds(p)); diff != "" {
			t.Errorf("%s for a console session (-want +got):\n%s", p, diff)
		}
	}
	// ntfy hears the finished trial and the waiting decision, as text.
	if diff := cmp.Diff([]string{"trial[phone]", "proposal[phone]"}, kinds("ntfy")); diff != "" {
		t.Errorf("ntfy (-want +got):\n%s", diff)
	}

	// A full outbox drops and counts, without blocking.
	for i := range 12 {
		n.Notify(ctx, session.Event{Kind: session.EventSessionUpdated, Session: s, Text: fmt.Sprint("update ", i), Time: t0.Add(time.Duration(i))})
		if i%3 == 2 {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			n.Run(cctx)
		}
	}
	if n.Dropped() <= 1 {
		t.Errorf("a full outbox dropped nothing (dropped %d)", n.Dropped())
	}
}

// A finished session's summary reaches chat with the score and progress charts drawn again
// for its best trial, once for every platform.
func TestNotifierSummaryCarriesTheRedrawnCharts(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := fixtureSession()
	s.Owner = session.Actor{Platform: "console", ID: "console"} // posts to every platform
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, x := range fixtureTrials()[:3] {
		x.SessionID = s.ID
		if err := db.PutTrial(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	s.State, s.Preset, s.BestTrial, s.BestRung = session.StateSucceeded, "auto-tune-1a2b3c4d", 2, 0
	var drawn []session.TrialRef
	r := &bot.Renderer{Records: db, Space: session.DefaultSpace(),
		Final: func(_ context.Context, _ session.Session, tr session.Trial) ([]bot.Attachment, error) {
			drawn = append(drawn, tr.Ref())
			return []bot.Attachment{{Name: "final-scores.png", Data: []byte("s")}, {Name: "final-progress.png", Data: []byte("p")}}, nil
		}}
	n := bot.NewNotifier(bot.NotifierConfig{Queue: db, Renderer: r, Platforms: []string{"slack", "discord"}})
	n.Notify(ctx, session.Event{Kind: session.EventSessionFinished, Session: s, Text: "done"})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := n.Run(cctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"slack", "discord"} {
		var names []string
		for items, _ := db.Due(ctx, p, time.Now(), 0); len(items) > 0; items, _ = db.Due(ctx, p, time.Now(), 0) {
			for _, it := range items {
				m, err := bot.DecodeMessage(it.Body)
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range m.Card.Blocks {
					for _, a := range b.Attachments {
						names = append(names, it.Kind+":"+a.Name)
					}
				}
				db.Delivered(ctx, it.ID)
			}
		}
		if diff := cmp.Diff([]string{"summary:final-scores.png", "summary:final-progress.png"}, names); diff != "" {
			t.Errorf("%s (-want +got):\n%s", p, diff)
		}
	}
	if len(drawn) != 1 || drawn[0] != (session.TrialRef{Number: 2}) {
		t.Errorf("charts drawn for %v, want once for the best trial 2 @ rung 0", drawn)
	}
}
