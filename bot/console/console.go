// Package console is the terminal adapter: it renders every card as text, saves charts as
// PNG files and reads the thread-reply verbs (and /tune commands) from a reader.
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"tunebot/bot"
	"tunebot/disk"
	"tunebot/private"
	"tunebot/secret"
	"tunebot/session"
)

// User is the console's person: allowed everything, as whoever runs tunebot in a
// terminal owns the machine anyway.
var User = session.Actor{Platform: bot.PlatformConsole, ID: "console", Name: "you"}

// Intro is the console's first line when it reads commands: a terminal has no /tune and no
// buttons, so it says what to type.
const Intro = "tunebot reads commands here: type help for the list (approve, reject <feedback>, status, pause, …)"

// Console is a session.Notifier that prints to out and a command reader from in.
type Console struct {
	out   io.Writer
	in    io.Reader
	dir   string
	store session.Store
	space *session.Space
	log   *slog.Logger

	events  chan session.Event
	charts  bot.ChartFunc
	final   bot.FinalChartFunc
	clips   bot.ClipFunc
	handler *bot.Handler

	names      func(session.TrialRef) []string // a trial report's chart files (Config.ReportNames)
	verbose    bool                            // every card whole; else a page: a line per trial, the cards that need a person
	endOfInput string                          // said when reading ends

	mu       sync.Mutex     // guards everything below, and out
	current  string         // the session of the newest event
	progress map[string]int // trial ref → last printed tenth
	dropped  int
}

var _ session.Notifier = (*Console)(nil)

// Config is what a console is built from. The engine exists before the console, which
// then needs no setter (docs/design.md §6): cmd/tunebot hands the engine's events over.
type Config struct {
	Out io.Writer
	In  io.Reader // nil: no commands are read
	Dir string    // where charts are saved
	// Engine is what the console's own handler acts on; nil with no Handler: the console
	// only prints.
	Engine bot.Engine
	// Handler runs the commands instead of a handler of the console's own: the daemon's,
	// with its applier, scheduler and allow-list.
	Handler *bot.Handler
	Store   session.Store
	Space   *session.Space
	SpaceOf func(task string) *session.Space // a task's own space (bot.HandlerConfig.SpaceOf)
	Charts  bot.ChartFunc                    // trial reports and chart answers (nil: no charts)
	Final   bot.FinalChartFunc               // a finished session's summary charts (nil: none)
	Clips   bot.ClipFunc                     // trial reports' clips and the summary's (nil: none)
	// ReportNames names the chart files of a finished trial's report (charts.ReportNames).
	// With it, a session heard of as running again (resumed) has the reports of its
	// finished trials that are missing under Dir (a full disk stopped their saving) drawn
	// again; nil: none are.
	ReportNames func(session.TrialRef) []string
	Logger      *slog.Logger
	// Verbose prints every card whole, as chat shows them. Without it the terminal is a
	// page: progress, one line per finished trial and one naming its clip's file, the
	// proposals and decisions a person makes, and the summary's table and headline; charts
	// are saved either way.
	Verbose bool
	// EndOfInput is said when reading ends (Ctrl-D, a closed pipe); "" says nothing.
	EndOfInput string
	// Redact masks tunebot's secrets (secret.Process) in everything printed, as chat's
	// handler and notifier mask them: a failed trial's reason and log are the trainer's
	// words. nil masks nothing.
	Redact *secret.Redactor
}

// New returns a console printing to cfg.Out, reading commands from cfg.In and saving
// charts under cfg.Dir.
func New(cfg Config) *Console {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Console{out: cfg.Redact.Writer(cfg.Out), in: cfg.In, dir: cfg.Dir, store: cfg.Store, space: cfg.Space, log: cfg.Logger,
		events: make(chan session.Event, 1024), charts: cfg.Charts, final: cfg.Final, clips: cfg.Clips, names: cfg.ReportNames, progress: map[string]int{}, verbose: cfg.Verbose, endOfInput: cfg.EndOfInput}
	c.handler = cfg.Handler
	if c.handler == nil && cfg.Engine != nil {
		// Without the daemon's handler the console serves one session in the foreground (tune).
		c.handler = bot.NewHandler(bot.HandlerConfig{Engine: cfg.Engine, Store: c.store, Space: c.space, SpaceOf: cfg.SpaceOf, Charts: c.charts, Clips: c.clips, Logger: c.log,
			Allow: bot.AllowList{{Platform: User.Platform, Users: []string{User.ID}}}, Foreground: true, Redact: cfg.Redact})
	}
	return c
}

// Notify queues e for printing; it never blocks the engine.
func (c *Console) Notify(ctx context.Context, e session.Event) {
	select {
	case c.events <- e:
	default:
		c.mu.Lock()
		c.dropped++
		c.mu.Unlock()
	}
}

// Run prints events and executes the lines read from in until ctx is done, then prints
// what is still queued. Reading ends at EOF (events keep printing); a read blocked on a
// terminal when ctx ends is left to the process exit, as a terminal read cannot be
// interrupted portably.
func (c *Console) Run(ctx context.Context) error {
	stop := make(chan struct{})
	var inflight sync.Mutex // held while a command runs, so Run returns after it
	defer func() {
		// Taking the lock waits for a running command; the reader takes it before its
		// next command and then sees stop.
		inflight.Lock()
		close(stop)
		inflight.Unlock()
	}()
	if c.in != nil {
		c.printf("%s\n", Intro)
		// Commands run in order on the reading goroutine, beside the printing: a cancel
		// waits for the trainer to stop, and the events that produces must still print.
		go func() {
			sc := bufio.NewScanner(c.in)
			sc.Buffer(make([]byte, 64<<10), 64<<10)
			for sc.Scan() {
				inflight.Lock()
				select {
				case <-stop:
					inflight.Unlock()
					return
				default:
				}
				c.Command(ctx, sc.Text())
				inflight.Unlock()
			}
			select {
			case <-stop:
			default:
				if c.endOfInput != "" {
					c.printf("» %s\n", c.endOfInput)
				}
			}
		}()
	}
	for {
		select {
		case e := <-c.events:
			c.show(context.WithoutCancel(ctx), e) // an event taken is printed whole
		case <-ctx.Done():
			drain := context.WithoutCancel(ctx)
			for {
				select {
				case e := <-c.events:
					c.show(drain, e)
				default:
					return nil
				}
			}
		}
	}
}

// Command executes one line as the console user: a decision or control (approve, reject
// …, edit …, pause, resume, cancel, status, why) for the current session, or a command
// (help, start …, best …), with or without "/tune" before it.
func (c *Console) Command(ctx context.Context, line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	c.mu.Lock()
	h, sid := c.handler, c.current
	c.mu.Unlock()
	if h == nil {
		c.printf("» tunebot is not ready for commands yet\n")
		return
	}
	in := bot.Interaction{Platform: User.Platform, User: User, Channel: "terminal", SessionID: sid, Kind: bot.KindReply, Text: line}
	if rest, ok := strings.CutPrefix(line, "/tune"); ok {
		in.Kind, in.Text = bot.KindCommand, rest
	} else if bot.IsCommandLine(line) {
		in.Kind = bot.KindCommand
	} else if sid == "" {
		if s, ok := c.active(ctx); ok {
			in.SessionID = s
		}
	}
	r := h.Do(ctx, in)
	if r.Empty() && in.Kind == bot.KindReply {
		r.Text = "not a command: type help for the list (approve · reject <feedback> · edit term=value … · pause · resume · cancel · status · why · prefer N over M · go · promote N · drop N)"
	}
	c.reply(r)
}

func (c *Console) active(ctx context.Context) (string, bool) {
	s, ok, err := session.ActiveSession(ctx, c.store)
	return s.ID, ok && err == nil
}

func (c *Console) reply(r bot.Reply) {
	var b strings.Builder
	if r.Text != "" {
		for _, l := range strings.Split(r.Text, "\n") {
			b.WriteString("» " + l + "\n")
		}
	}
	if r.Card != nil {
		b.WriteString(bot.RenderText(forTerminal(*r.Card), c.save(*r.Card)))
	}
	if r.Form != nil {
		b.WriteString("» this needs a form; in the terminal type reject <feedback>, edit term=value … or prefer N over M <note>\n")
	}
	c.printf("%s", b.String())
}

// show prints event e: in a line where the console says it in one, else as its cards and
// the replies they take.
func (c *Console) show(ctx context.Context, e session.Event) {
	r := c.renderer(e.Session.ID)
	stamp := e.Time.Local().Format("15:04:05")
	if e.Time.IsZero() {
		stamp = time.Now().Format("15:04:05")
	}
	if c.showLine(ctx, r, e, stamp) {
		return
	}
	c.showCards(ctx, r, e, stamp)
}

// renderer makes id the current session and returns a renderer over the console's charts,
// final evaluation and clips as they are now.
func (c *Console) renderer(id string) *bot.Renderer {
	c.mu.Lock()
	c.current = id
	charts, final, clips := c.charts, c.final, c.clips
	c.mu.Unlock()
	return &bot.Renderer{Records: c.store, Space: c.space, Charts: charts, Final: final, Clips: clips, Logger: c.log,
		NoAdvisor: c.handler != nil && !c.handler.Advised()}
}

// showLine says e in a line, or not at all, where the console does so (always for progress,
// updates, starts and decisions; on a page for answers and finished trials); false leaves e
// to showCards.
func (c *Console) showLine(ctx context.Context, r *bot.Renderer, e session.Event, stamp string) bool {
	switch e.Kind {
	case session.EventTrialProgress:
		c.showProgress(e, stamp)
	case session.EventSessionUpdated:
		c.printf("[%s] %s\n", stamp, e.Text)
		if e.Session.State == session.StateRunning && !e.Session.PauseAsked {
			c.redrawLost(ctx, r, e.Session) // resumed; a session pausing (a full disk) is not
		}
	case session.EventTrialStarted:
		if c.verbose {
			c.printf("[%s] %s\n", stamp, e.Text)
		}
	case session.EventSessionStarted:
		c.showStarted(ctx, r, e, stamp)
	case session.EventDecision:
		c.showDecision(e, stamp)
	case session.EventPreferenceAsked, session.EventPreference, session.EventReview:
		if c.verbose {
			return false
		}
		c.showAnswerLine(e, stamp)
	case session.EventTrialFinished:
		if c.verbose {
			return false
		}
		c.showTrialLine(ctx, r, e, stamp)
	default:
		return false
	}
	return true
}

// showProgress prints a trial's progress bar when it reaches a new step.
func (c *Console) showProgress(e session.Event, stamp string) {
	t := e.Trial
	if t == nil || t.Iterations <= 0 {
		return
	}
	key := fmt.Sprintf("%s/%d/%d", e.Session.ID, t.Number, t.Rung)
	step := c.progressStep()
	mark := step * t.Progress / t.Iterations
	c.mu.Lock()
	last, seen := c.progress[key]
	c.progress[key] = mark
	c.mu.Unlock()
	if progressShown(last, seen, mark, step, c.verbose) {
		c.printf("[%s] trial %d @ rung %d %s (%d/%d)\n", stamp, t.Number, t.Rung, bot.ProgressBar(t.Progress, t.Iterations, 20), t.Progress, t.Iterations)
	}
}

// progressShown says whether a trial's progress at mark (of step marks; last, if seen, the
// mark printed before) is printed: each mark once, and a page skips 100% because the trial's
// result line follows.
func progressShown(last int, seen bool, mark, step int, verbose bool) bool {
	return (!seen || mark > last) && (verbose || mark < step)
}

// showStarted announces a session: as its root card when verbose, else in a line unless it
// was started here (the command that started it announced it).
func (c *Console) showStarted(ctx context.Context, r *bot.Renderer, e session.Event, stamp string) {
	if c.verbose {
		c.printCard(r.Render(ctx, e, User.Platform).Root, stamp)
		return
	}
	if e.Session.Owner != User {
		c.printf("[%s] %s\n", stamp, e.Text)
	}
}

// showDecision says a decision in its stamp's line, when decisionSaid allows.
func (c *Console) showDecision(e session.Event, stamp string) {
	p := e.Proposal
	if p == nil || !decisionSaid(p.Decision, c.verbose) {
		return
	}
	card := bot.ProposalCard(*p, c.space, nil)
	for _, b := range card.Blocks {
		if b.Kind == bot.BlockStamp {
			c.printf("[%s] proposal %d:%s\n", stamp, p.Seq, strings.TrimPrefix(bot.StampLine(*b.Stamp), "  ✔"))
		}
	}
}

// decisionSaid says whether the console says decision d: a decision typed here was answered
// already; one made elsewhere (chat, the page) is said, and tunebot's own only when verbose.
func decisionSaid(d *session.Decision, verbose bool) bool {
	return d != nil && !typedHere(d.By) && (verbose || d.By != session.System)
}

// showAnswerLine says, on a page, an A/B question, its answer or a review in a line; the
// clips were named with the trials' lines.
func (c *Console) showAnswerLine(e session.Event, stamp string) {
	switch p, rv := e.Preference, e.Review; {
	case p != nil && p.Open():
		c.printf("[%s] which walks better? A: trial %d · B: trial %d (their clips are named above); type %s [note]\n", stamp, p.A, p.B, bot.PreferReplies(*p))
	case p != nil && p.Decided() && (p.By == nil || *p.By != User):
		c.printf("[%s] %s\n", stamp, e.Text)
	case rv != nil:
		c.printf("[%s] %s\n", stamp, session.ReviewLine(e.Session, *rv))
	}
}

// showTrialLine says, on a page, a finished trial in its result line and its clips' lines;
// its charts are kept.
func (c *Console) showTrialLine(ctx context.Context, r *bot.Renderer, e session.Event, stamp string) {
	line, clips := e.Text, ""
	for _, card := range r.Render(ctx, e, User.Platform).Thread {
		c.save(card) // the charts are kept, the card is one line and its clip's
		if line == "" {
			line = card.Title
		}
		clips += bot.RenderText(onlyClips(card), nil)
	}
	c.printf("[%s] %s\n%s", stamp, line, clips)
}

// showCards prints e's thread cards, then what may be typed in answer.
func (c *Console) showCards(ctx context.Context, r *bot.Renderer, e session.Event, stamp string) {
	for _, card := range r.Render(ctx, e, User.Platform).Thread {
		card.Mentions = nil
		if !c.verbose && card.Kind == "summary" {
			c.save(card)
			card = withoutAttachments(card) // saved under the reports directory, said at the end
		}
		c.printCard(card, stamp)
	}
	c.showPrompt(e)
}

// showPrompt names the replies a waiting proposal, A/B question or open review takes.
func (c *Console) showPrompt(e session.Event) {
	if p := e.Proposal; e.Kind == session.EventProposalReady && p != nil {
		// numbered: several proposals may wait at once (issue 14)
		c.printf("type: %s · cancel · status\n", bot.DecisionReplies(*p))
	}
	if p := e.Preference; e.Kind == session.EventPreferenceAsked && p != nil {
		c.printf("type: %s [note]\n", bot.PreferReplies(*p))
	}
	if rv := e.Review; e.Kind == session.EventReview && rv != nil && !rv.Done {
		c.printf("type: %s\n", session.ReviewReplies)
	}
}

// typedHere reports whether a was this console's person (Where, the channel, aside).
func typedHere(a session.Actor) bool { return a.Platform == User.Platform && a.ID == User.ID }

func (c *Console) printCard(card bot.Card, stamp string) {
	c.printf("\n[%s]\n%s", stamp, bot.RenderText(forTerminal(card), c.save(card)))
}

// progressStep is how finely progress is printed: tenths, or quarters on a page.
func (c *Console) progressStep() int {
	if c.verbose {
		return 10
	}
	return 4
}

func withoutAttachments(card bot.Card) bot.Card {
	blocks := make([]bot.Block, 0, len(card.Blocks))
	for _, b := range card.Blocks {
		if b.Kind != bot.BlockAttachments {
			blocks = append(blocks, b)
		}
	}
	card.Blocks = blocks
	return card
}

// onlyClips is the card's clips alone: on a page a trial's report is its line and one
// naming the clip's file ("  [clip] trial 3 @ rung 0 · 5.0 s: PATH").
func onlyClips(card bot.Card) bot.Card {
	var clips []bot.Attachment
	for _, b := range card.Blocks {
		for _, a := range b.Attachments {
			if bot.IsClip(a) {
				clips = append(clips, a)
			}
		}
	}
	card.Blocks, card.Mentions = nil, nil
	if len(clips) > 0 {
		card.Blocks = []bot.Block{{Kind: bot.BlockAttachments, Attachments: clips}}
	}
	return card
}

// forTerminal drops what only chat can use: buttons and the line saying what to reply in
// a thread (the console prints what to type instead).
func forTerminal(card bot.Card) bot.Card {
	blocks := make([]bot.Block, 0, len(card.Blocks))
	for _, b := range card.Blocks {
		if b.Kind != bot.BlockActions && !b.ThreadHint {
			blocks = append(blocks, b)
		}
	}
	card.Blocks = blocks
	return card
}

// redrawLost draws again, through r (a chart that fails or panics is logged and skipped),
// the reports of s's finished trials whose chart files are missing under the reports
// directory (a full disk stopped their saving before s was paused), and saves the missing
// ones; the charts still there are left as they were drawn.
func (c *Console) redrawLost(ctx context.Context, r *bot.Renderer, s session.Session) {
	if r.Charts == nil || c.names == nil || c.dir == "" || c.store == nil {
		return
	}
	trials, err := c.store.Trials(ctx, s.ID)
	if err != nil {
		c.log.Warn("listing trials to draw lost charts again", "session", s.ID, "err", err)
		return
	}
	for _, t := range trials {
		if t.State != session.TrialCompleted && t.State != session.TrialFailed {
			continue // no report yet
		}
		lost := c.lostCharts(s.ID, t.Ref())
		if len(lost) == 0 {
			continue
		}
		var missing []bot.Attachment
		for _, a := range r.TrialCharts(ctx, s, t) {
			if lost[a.Name] {
				missing = append(missing, a)
			}
		}
		c.save(bot.Card{Session: s.ID, Blocks: []bot.Block{{Kind: bot.BlockAttachments, Attachments: missing}}})
	}
}

// lostCharts are the chart files of trial ref's report that are not under the reports
// directory.
func (c *Console) lostCharts(sessionID string, ref session.TrialRef) map[string]bool {
	lost := map[string]bool{}
	for _, name := range c.names(ref) {
		if _, err := os.Stat(c.chartPath(sessionID, name)); errors.Is(err, fs.ErrNotExist) {
			lost[name] = true
		}
	}
	return lost
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// chartPath is where a chart named name of session sessionID ("": of no session) is saved:
// dir/<session8>/name. Both are sanitised: nothing from outside becomes a path.
func (c *Console) chartPath(sessionID, name string) string {
	sub := "charts"
	if sessionID != "" {
		sub = unsafeName.ReplaceAllString(session.Short(sessionID), "_")
	}
	name = strings.TrimLeft(unsafeName.ReplaceAllString(filepath.Base(name), "_"), ".")
	if name == "" {
		name = "chart.png"
	}
	return filepath.Join(c.dir, sub, name)
}

// save writes the card's attachments under dir/<session8>/ and returns name → path.
func (c *Console) save(card bot.Card) map[string]string {
	paths := map[string]string{}
	for _, b := range card.Blocks {
		for _, a := range b.Attachments {
			if a.Path != "" { // a file already on this machine (a clip): named, not copied
				continue
			}
			if len(a.Data) == 0 || c.dir == "" {
				continue
			}
			path := c.chartPath(card.Session, a.Name)
			if err := c.makeChartDir(filepath.Dir(path)); err != nil {
				c.log.Error("creating the chart directory", "err", err)
				continue
			}
			if err := disk.WriteFile(path, a.Data, 0o644); err != nil { // never half a chart
				c.log.Error("saving a chart", "path", path, "err", err)
				continue
			}
			paths[a.Name] = path
		}
	}
	return paths
}

// makeChartDir makes dir/<session8> (and dir) as directories of tunebot's user, not links:
// a link planted for either put every chart in a directory someone else chose (issue 44).
func (c *Console) makeChartDir(sub string) error {
	if err := private.OwnDir(c.dir, 0o755, "the reports directory"); err != nil {
		return err
	}
	return private.OwnDir(sub, 0o755, "a session's charts")
}

func (c *Console) printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.out, format, args...)
}
