package bot

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"tunebot/secret"
	"tunebot/session"
)

// Records is what rendering reads of the store; session.Store (and *store.DB) implement it.
type Records interface {
	Trials(ctx context.Context, sessionID string) ([]session.Trial, error)
}

// proposalRecords is what Records may also offer (session.Store does): the session's
// proposals, so the root card lists every one that waits for a decision.
type proposalRecords interface {
	Proposals(ctx context.Context, sessionID string) ([]session.Proposal, error)
}

// Renderer turns engine events into cards. It reads the store and renders charts, so it
// runs on a notifier's own goroutine, never on the engine's path.
type Renderer struct {
	Records Records
	Space   *session.Space
	Charts  ChartFunc // nil: trial reports carry no charts
	// Clips reads a trial's clip for its report and the session's summary (nil: none).
	Clips ClipFunc
	// Final draws the charts a finished session's summary carries again (nil: none).
	Final FinalChartFunc
	// Mentions lists, per platform, the user IDs to mention besides the session's owner
	// when a trial finishes, a decision waits or the session ends.
	Mentions map[string][]string
	Logger   *slog.Logger
	// TrialURL is the monitoring page's address of a trial, for trial reports; nil when the
	// page has no public address (service.public_url).
	TrialURL func(sessionID string, number, rung int) string
	// NoAdvisor is set when no advisor (DeepSeek) is configured: an answered A/B card then
	// promises no prompt reads its note (session.PreferenceEffectFor).
	NoAdvisor bool
}

// Rendered is the cards of one event.
type Rendered struct {
	Root   Card   // the session's root card, always
	Thread []Card // cards for the session's thread, in order
}

// Render renders e for platform. Chart rendering failures are logged and the report goes
// out without charts: a chart must never hold back a decision.
func (r *Renderer) Render(ctx context.Context, e session.Event, platform string) Rendered {
	s := e.Session
	trials, props := r.records(ctx, s.ID)
	var cur *session.Trial
	if e.Trial != nil && (e.Kind == session.EventTrialProgress || e.Kind == session.EventTrialStarted) {
		cur = e.Trial
	}
	out := Rendered{Root: RootCard(RootInput{Session: s, Trials: trials, Current: cur, Proposals: props})}
	mentions := r.mentions(s, platform)
	switch e.Kind {
	case session.EventTrialFinished:
		if e.Trial == nil {
			break
		}
		out.Thread = append(out.Thread, r.trialCard(ctx, s, *e.Trial, trials, mentions))
	case session.EventProposalReady, session.EventDecision:
		if e.Proposal != nil {
			var m []string
			if e.Kind == session.EventProposalReady {
				m = mentions
			}
			out.Thread = append(out.Thread, ProposalCard(*e.Proposal, r.Space, m))
		}
	case session.EventPreferenceAsked, session.EventPreference:
		if e.Preference != nil {
			out.Thread = append(out.Thread, r.preferenceCard(ctx, s, *e.Preference, trials))
		}
	case session.EventReview:
		if e.Review != nil {
			var m []string
			if !e.Review.Done && s.Settings.Mode == session.ModeApproval {
				m = mentions // approval mode waits for a person's go
			}
			out.Thread = append(out.Thread, ReviewCard(s, *e.Review, trials, m))
		}
	case session.EventSessionFinished:
		// the summary leads with the best trial's clip beside the baseline's (issue 21)
		if c, ok := BestClipsCard(s, trials, r.Clips, r.trialLink(s)); ok {
			out.Thread = append(out.Thread, c)
		}
		out.Thread = append(out.Thread, SummaryCard(SummaryInput{Session: s, Trials: trials, Mentions: mentions,
			Attachments: r.finalCharts(ctx, s, trials)}))
	case session.EventSessionUpdated:
		if e.Text != "" {
			out.Thread = append(out.Thread, NoticeCard(s.ID, fmt.Sprintf("s/%s/notice/%d", s.ID, e.Time.UnixNano()), e.Text, nil))
		}
	}
	return out
}

// records reads session sid's trials and, when the records hold them, its proposals; a
// card goes out with what could be read, the rest logged.
func (r *Renderer) records(ctx context.Context, sid string) ([]session.Trial, []session.Proposal) {
	trials, err := r.Records.Trials(ctx, sid)
	if err != nil {
		r.logger().Error("reading trials for a card", "session", sid, "err", err)
	}
	var props []session.Proposal
	if pr, ok := r.Records.(proposalRecords); ok {
		if props, err = pr.Proposals(ctx, sid); err != nil {
			r.logger().Error("reading proposals for a card", "session", sid, "err", err)
		}
	}
	return trials, props
}

// trialCard is finished trial t's report, with its link, its clip and charts, and the
// trials it is set against (trialRelatives).
func (r *Renderer) trialCard(ctx context.Context, s session.Session, t session.Trial, trials []session.Trial, mentions []string) Card {
	in := TrialInput{Session: s, Trial: t, Space: r.Space, Mentions: mentions}
	if r.TrialURL != nil {
		in.Link = r.TrialURL(s.ID, t.Number, t.Rung)
	}
	in.Parent, in.Control = trialRelatives(t, trials)
	in.Attachments = append(r.trialClip(ctx, s, t), r.TrialCharts(ctx, s, t)...)
	return TrialCard(in)
}

// trialRelatives are the trials t's report compares it with: its parent (the trial it was
// promoted from), and above rung 0 the baseline that completed the same rung (the control);
// nil for each that is not among trials.
func trialRelatives(t session.Trial, trials []session.Trial) (parent, control *session.Trial) {
	if t.Parent != nil {
		for i := range trials {
			if trials[i].Ref() == *t.Parent {
				parent = &trials[i]
			}
		}
	}
	for i := range trials {
		if b := &trials[i]; b.Number == 0 && b.Rung == t.Rung && t.Rung > 0 && b.State == session.TrialCompleted {
			control = b
		}
	}
	return parent, control
}

// FinalChartFunc draws, for a finished session's best trial t, the charts its summary
// carries: the score and progress charts drawn again after the finalists' re-evaluations
// came in, so they agree with the summary (docs/design.md §6). The wiring (cmd/tunebot)
// implements it, as it knows the charts' names.
type FinalChartFunc func(ctx context.Context, s session.Session, t session.Trial) ([]Attachment, error)

// finalCharts draws the summary's charts for the best trial, none when it has none.
func (r *Renderer) finalCharts(ctx context.Context, s session.Session, trials []session.Trial) []Attachment {
	t := s.BestOf(trials)
	if t == nil || r.Final == nil {
		return nil
	}
	return r.draw(ctx, s, *t, func(ctx context.Context, s session.Session, t session.Trial, _ []string) ([]Attachment, error) {
		return r.Final(ctx, s, t)
	})
}

// TrialCharts draws trial t's report charts, none when drawing fails or panics (logged).
func (r *Renderer) TrialCharts(ctx context.Context, s session.Session, t session.Trial) []Attachment {
	return r.draw(ctx, s, t, r.Charts)
}

// draw runs the chart function f for trial t; a failure or a panic is logged and draws
// nothing, as a chart must never hold back a card.
func (r *Renderer) draw(ctx context.Context, s session.Session, t session.Trial, f ChartFunc) (atts []Attachment) {
	if f == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			r.logger().Error("chart rendering panicked", "session", s.ID, "trial", t.Number, "panic", p, "stack", string(debug.Stack()))
			atts = nil
		}
	}()
	atts, err := f(ctx, s, t, nil)
	if err != nil {
		r.logger().Error("rendering charts", "session", s.ID, "trial", t.Number, "rung", t.Rung, "err", err)
		return nil
	}
	return atts
}

func (r *Renderer) mentions(s session.Session, platform string) []string {
	var out []string
	seen := map[string]bool{}
	if s.Owner.Platform == platform && s.Owner.ID != "" {
		out, seen[s.Owner.ID] = append(out, s.Owner.ID), true
	}
	for _, id := range r.Mentions[platform] {
		if !seen[id] {
			out, seen[id] = append(out, id), true
		}
	}
	return out
}

func (r *Renderer) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

// NotifierConfig wires a Notifier.
type NotifierConfig struct {
	Queue    Queue
	Renderer *Renderer
	// Platforms receive every card (chat); Push platforms ("ntfy", "webhook") receive only
	// what a phone should hear: finished trials, waiting decisions, ended sessions.
	Platforms []string
	Push      []string
	// Expire is how long an undelivered item is kept (default 24 h).
	Expire time.Duration
	// Wake is called after items for platform were enqueued (a dispatcher's Wake); may be nil.
	Wake func(platform string)
	// Buffer is how many events may wait for rendering (default 256).
	Buffer int
	// Redact masks tunebot's secrets in every card (a failed trial's log tail is the
	// trainer's output); nil masks nothing.
	Redact *secret.Redactor
	Logger *slog.Logger
}

// Notifier is the engine's session.Notifier for chat: Notify only queues the event; Run
// renders cards (charts included) and enqueues them in the persisted outbox, one item per
// platform, in the session's thread.
type Notifier struct {
	cfg     NotifierConfig
	log     *slog.Logger
	events  chan session.Event
	dropped atomic.Int64
}

var _ session.Notifier = (*Notifier)(nil)

// NewNotifier returns a notifier; call Run to process events.
func NewNotifier(cfg NotifierConfig) *Notifier {
	if cfg.Expire <= 0 {
		cfg.Expire = 24 * time.Hour
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Notifier{cfg: cfg, log: cfg.Logger, events: make(chan session.Event, cfg.Buffer)}
}

// Notify queues e without blocking. When the queue is full the event is dropped and
// counted: progress comes again in seconds, and the root card shows the latest state.
func (n *Notifier) Notify(ctx context.Context, e session.Event) {
	select {
	case n.events <- e:
	default:
		n.dropped.Add(1)
		if e.Kind != session.EventTrialProgress {
			n.log.Warn("chat notification queue full; event dropped", "kind", e.Kind, "session", e.Session.ID)
		}
	}
}

// Dropped counts events and items dropped because a queue or the outbox was full.
func (n *Notifier) Dropped() int64 { return n.dropped.Load() }

// Run processes events until ctx is done, then renders what is still queued, so a
// shutdown keeps the last cards. Each event is processed under its own bound rather than
// ctx: an event taken from the queue is never half enqueued because ctx ended meanwhile.
func (n *Notifier) Run(ctx context.Context) error {
	for {
		select {
		case e := <-n.events:
			n.process(ctx, e)
		case <-ctx.Done():
			for {
				select {
				case e := <-n.events:
					n.process(ctx, e)
				default:
					return nil
				}
			}
		}
	}
}

func (n *Notifier) process(parent context.Context, e session.Event) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 30*time.Second)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			n.log.Error("rendering a chat notification panicked", "kind", e.Kind, "panic", p, "stack", string(debug.Stack()))
		}
	}()
	now := time.Now()
	// Charts are rendered, and clips read, once per event, whatever the number of platforms.
	rr := *n.cfg.Renderer
	rr.Charts, rr.Final = nil, nil
	rr.Clips = onceClips(n.cfg.Renderer.Clips)
	switch {
	case e.Kind == session.EventTrialFinished && e.Trial != nil, e.Preference != nil:
		// a trial's report, or an A/B card whose trial has no clip: its charts instead
		rr.Charts = onceCharts(n.cfg.Renderer.Charts)
	case e.Kind == session.EventSessionFinished && n.cfg.Renderer.Final != nil:
		// the summary's charts, drawn again after the final re-evaluation
		if trials, err := n.cfg.Renderer.Records.Trials(ctx, e.Session.ID); err == nil {
			atts := n.cfg.Renderer.finalCharts(ctx, e.Session, trials)
			rr.Final = func(context.Context, session.Session, session.Trial) ([]Attachment, error) {
				return atts, nil
			}
		}
	}
	render := func(platform string) Rendered { return rr.Render(ctx, e, platform) }
	for _, p := range n.platformsFor(e.Session) {
		r := render(p)
		n.enqueue(ctx, p, e, r.Root, r.Root.Ref, now)
		for _, c := range r.Thread {
			key := ""
			if c.Kind == "proposal" || c.Kind == "root" || c.Kind == "preference" || c.Kind == "review" {
				key = c.Ref // edited in place: a newer state replaces an undelivered older one
			}
			n.enqueue(ctx, p, e, c, key, now)
		}
		n.wake(p)
	}
	if !pushWorthy(e) || len(n.cfg.Push) == 0 {
		return
	}
	c, ok := rr.pushCard(ctx, e)
	if !ok {
		return
	}
	for _, p := range n.cfg.Push {
		c.Mentions = rr.mentions(e.Session, p)
		n.enqueue(ctx, p, e, c, "", now)
		n.wake(p)
	}
}

// pushCard is e as a phone notification: its line, the poster frame of the clip it is
// about, and its trial's page.
func (r *Renderer) pushCard(ctx context.Context, e session.Event) (Card, bool) {
	s := e.Session
	trials, err := r.Records.Trials(ctx, s.ID)
	if err != nil {
		r.logger().Error("reading trials for a notification", "session", s.ID, "err", err)
	}
	var about *session.Trial
	switch {
	case e.Kind == session.EventTrialFinished:
		about = e.Trial
	case e.Kind == session.EventSessionFinished:
		about = s.BestOf(trials)
	}
	in := PushInput{Event: e, Trials: trials}
	if about != nil {
		if r.TrialURL != nil {
			in.Link = r.TrialURL(s.ID, about.Number, about.Rung)
		}
		if about.Clip != nil && about.Clip.Poster != nil && r.Clips != nil {
			if data, _, err := r.Clips(*about, true); err == nil {
				in.Poster = &Attachment{Name: fmt.Sprintf("trial-%03d-rung-%d.png", about.Number, about.Rung),
					Title: ClipTitle(*about) + " (poster frame)", Data: data, Size: len(data), ContentType: ContentPNG}
			} else {
				r.logger().Warn("reading a clip's poster frame", "session", s.ID, "trial", about.Number, "err", err)
			}
		}
	} else if e.Proposal != nil && r.TrialURL != nil {
		in.Link = r.TrialURL(s.ID, e.Proposal.BaseTrial, 0)
	}
	return PushCard(in)
}

// platformsFor routes a session's cards: a session started from a chat platform posts
// there only; one started elsewhere (a terminal, a schedule) posts to every platform.
func (n *Notifier) platformsFor(s session.Session) []string {
	for _, p := range n.cfg.Platforms {
		if p == s.Owner.Platform {
			return []string{p}
		}
	}
	return n.cfg.Platforms
}

func withoutAttachments(bs []Block) []Block {
	out := make([]Block, 0, len(bs))
	for _, b := range bs {
		if b.Kind != BlockAttachments && b.Kind != BlockActions {
			out = append(out, b)
		}
	}
	return out
}

func (n *Notifier) enqueue(ctx context.Context, platform string, e session.Event, c Card, key string, now time.Time) {
	body, err := EncodeMessage(Message{Event: e.Kind, Session: e.Session.ID, Text: n.cfg.Redact.String(e.Text), Card: redactCard(c, n.cfg.Redact)})
	if err != nil {
		n.log.Error("encoding a chat message", "err", err)
		return
	}
	_, err = n.cfg.Queue.Enqueue(ctx, OutboxItem{Platform: platform, Thread: e.Session.ID, Key: key, Kind: c.Kind,
		Body: body, Expires: now.Add(n.cfg.Expire), CreatedAt: now.UTC()})
	if err != nil {
		n.dropped.Add(1)
		n.log.Error("queueing a chat delivery; dropped", "platform", platform, "session", e.Session.ID, "card", c.Kind, "err", err)
	}
}

func (n *Notifier) wake(platform string) {
	if n.cfg.Wake != nil {
		n.cfg.Wake(platform)
	}
}
