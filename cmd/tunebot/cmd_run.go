package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"tunebot/advisor"
	"tunebot/apply"
	"tunebot/bot"
	"tunebot/bot/console"
	"tunebot/bot/notify"
	"tunebot/charts"
	"tunebot/config"
	"tunebot/dashboard"
	"tunebot/httpd"
	"tunebot/retention"
	"tunebot/schedule"
	"tunebot/secret"
	"tunebot/session"
	"tunebot/store"
)

func init() {
	register("run", "run --config FILE [--resume]: the daemon, operated from chat (console when none is enabled)", runDaemon)
}

// drainTimeout bounds each step of the shutdown, so a stuck platform cannot hold the
// process forever (systemd's TimeoutStopSec should exceed the sum).
const drainTimeout = 15 * time.Second

func runDaemon(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "run", `usage: tunebot run --config FILE [--resume] [--verbose]

The daemon: the chat adapters the config enables (the console on this terminal when none is),
the scheduler, /healthz, /metrics and the monitoring page. SIGTERM drains it.`)
	cfgPath := fs.String("config", "", "config file (YAML); the embedded defaults when empty")
	resume := fs.Bool("resume", false, "resume sessions a previous run left interrupted")
	verbose := fs.Bool("verbose", false, verboseHelp+" (the console, when no chat is enabled)")
	cfg, code, ok := parseConfigFlags(e, fs, args, cfgPath)
	if !ok {
		return code
	}
	access := dataDirAccess(cfg.DataDir) // before the console's log file creates data_dir
	logger, closeLog, err := daemonLogger(cfg, e)
	if err != nil {
		fmt.Fprintln(e.stderr, "tunebot:", err)
		return 1
	}
	defer closeLog()
	for _, w := range cfg.Warnings {
		logger.Warn(w)
	}
	if access != "" {
		logger.Warn(access)
	}
	d := &daemon{cfg: cfg, e: e, log: logger, verbose: *verbose}
	if err := d.start(ctx, *resume); err != nil {
		// Said once, plainly, on stderr (the journal under systemd); the console, which
		// would have read commands, never started.
		fmt.Fprintln(e.stderr, "tunebot:", err)
		d.stop()
		return 1
	}
	logger.Info("tunebot is running", "platforms", d.platformNames(), "data_dir", cfg.DataDir)
	if d.con != nil {
		fmt.Fprintf(e.stdout, "tunebot is running; its log is %s (warnings and errors show here too)\n", logPath(cfg.DataDir))
		d.runConsole()
	}
	<-ctx.Done()
	logger.Info("shutting down: stopping jobs, delivering what is queued")
	d.stop()
	return 0
}

// daemonLogger is the daemon's logger. With a chat platform it logs to stderr (the journal
// under systemd); with none the console is this terminal's front end, and as in tune the
// log goes to data_dir/tunebot.log, warnings and errors showing here too, one line each, so
// the cards and the prompt are not interleaved with a trial's job lines.
func daemonLogger(cfg config.Config, e *env) (*slog.Logger, func(), error) {
	if chatEnabled(cfg.Chat) {
		return newLogger(cfg.Log, e.stderr), func() {}, nil
	}
	return consoleLogger(cfg.Log, cfg.DataDir, e.stderr)
}

// chatEnabled reports whether the config enables a chat platform; with none, run's front
// end is the console (buildChat decides the same from the adapters it builds).
func chatEnabled(c config.ChatConfig) bool { return c.Slack.Enabled || c.Discord.Enabled }

// daemon is tunebot run: the engine, the chat adapters, their outbox dispatchers and the
// notifier, with their goroutines owned here and ended in order by stop.
type daemon struct {
	cfg     config.Config
	e       *env
	log     *slog.Logger
	verbose bool // the console prints every card whole

	app         *app
	notifier    *bot.Notifier
	con         *console.Console
	handler     *bot.Handler
	gate        bot.CheckoutGate // chat and scheduled starts against applies to the trainer checkout
	adapters    []chatAdapter
	dispatchers map[string]*bot.Dispatcher

	scheduler *schedule.Scheduler
	pruner    *retention.Pruner // one at a time: the schedule's and those tunebot prune asks for
	service   *httpd.Server
	dash      *dashboard.Server // the monitoring page; nil when the service is off

	consoleCtx                                                 context.Context // the console's, ended with the notifiers'
	notifyCancel, dispatchCancel, adapterCancel, serviceCancel context.CancelFunc
	stopRelay                                                  func() // hands the engine's last events over
	notifyWG, dispatchWG, adapterWG, serviceWG                 sync.WaitGroup

	socketCancel context.CancelFunc // the tunebot command's socket; its goroutine is in serviceWG
}

func (d *daemon) start(ctx context.Context, resume bool) error {
	// The engine's events wait in a relay until what needs the engine (the chat notifier's
	// charts, the console) exists: construction runs in one order.
	events := newRelay(d.log)
	a, err := openApp(ctx, d.cfg, d.e, d.log, events)
	if err != nil {
		return err
	}
	d.app = a
	d.pruner = pruner(a.cfg, a.actions)
	eng := a.engine
	charts := chartsWhileTraining(eng, storeCharts(a.db))
	wantConsole, err := d.buildChat(a.db, charts)
	if err != nil {
		return err
	}

	allow := d.allowList(wantConsole)
	applier, err := d.newApplier()
	if err != nil {
		return err
	}
	// The scheduler starts before the handler, which answers /tune schedule with it.
	if err := d.startScheduler(ctx); err != nil {
		return err
	}
	d.handler = bot.NewHandler(bot.HandlerConfig{
		Engine: eng, Store: a.actions, Space: d.cfg.NamesSpace(), SpaceOf: d.cfg.SpaceOf, Allow: allow, Defaults: d.cfg.Session,
		Charts: charts, Clips: a.clips(), Agent: d.agentTest, Logger: d.log,
		Applier: applier, Scheduler: d.scheduler, Gate: &d.gate, SessionsDir: filepath.Join(d.cfg.DataDir, "sessions"),
		Redact: secret.Process(), ReadLimit: d.cfg.Chat.ReadLimit,
		// Platforms allow 3 s; a modal must be the first answer to a click, so leave the
		// adapters room to send it after the handler's answer.
		AckWithin: 1500 * time.Millisecond,
		Dashboard: d.dashboardLink,
	})

	d.startNotifiers(ctx, events, wantConsole, charts)
	d.startChat(ctx)
	if err := d.startService(allow); err != nil {
		return err
	}
	if err := d.startSocket(); err != nil {
		return err
	}
	return d.resumeInterrupted(ctx, resume)
}

// allowList is who may command the daemon: the grants of each chat adapter, the console's
// user when it runs, the operator of the local service when it listens.
func (d *daemon) allowList(wantConsole bool) bot.AllowList {
	allow := bot.AllowList{}
	for _, ad := range d.adapters {
		allow = append(allow, ad.Grants()...)
	}
	if wantConsole {
		allow = append(allow, bot.Grant{Platform: console.User.Platform, Users: []string{console.User.ID}})
	}
	if !d.cfg.Service.Off() {
		allow = append(allow, operatorGrant)
	}
	return allow
}

// newApplier is the preset applier, or nil (not a nil *apply.Applier) when apply is off.
func (d *daemon) newApplier() (bot.Applier, error) {
	if d.cfg.Apply.Repo == "" {
		return nil, nil
	}
	ap, err := apply.New(d.cfg.Apply, d.cfg.SpaceOf(d.cfg.Apply.Task), d.app.actions, d.log)
	if err != nil {
		return nil, fmt.Errorf("apply: %w", err)
	}
	return ap, nil
}

// startNotifiers builds the console (when wanted), runs it and the chat notifier, and
// lets the relay hand them the engine's events it has kept so far and those to come.
func (d *daemon) startNotifiers(ctx context.Context, events *relay, wantConsole bool, draw bot.ChartFunc) {
	nctx, ncancel := context.WithCancel(context.WithoutCancel(ctx))
	d.notifyCancel = ncancel
	var to []session.Notifier // the console first, as it prints at once
	if wantConsole {
		d.con = console.New(console.Config{Out: d.e.stdout, In: d.e.stdin, Dir: reportsDir(d.cfg),
			Handler: d.handler, Store: d.app.db, Space: d.cfg.NamesSpace(), Charts: draw, Final: finalCharts(draw), Clips: d.app.clips(), ReportNames: charts.ReportNames, Logger: d.log, Verbose: d.verbose, Redact: secret.Process(),
			EndOfInput: "input has ended (Ctrl-D): this terminal reads no more commands; tunebot keeps running until Ctrl-C or SIGTERM"})
		to = append(to, d.con) // it queues what comes until runConsole, once the daemon runs
	}
	d.consoleCtx = nctx
	if d.notifier != nil {
		to = append(to, d.notifier)
		d.notifyWG.Add(1)
		go func() { defer d.notifyWG.Done(); _ = d.notifier.Run(nctx) }()
	}
	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	relayDone := make(chan struct{})
	go func() { defer close(relayDone); events.Run(rctx, to...) }()
	d.stopRelay = func() {
		rcancel()
		waitBounded(func() { <-relayDone }, drainTimeout)
	}
}

// runConsole prints the console's queued events and reads its commands, from the moment
// the daemon runs: a start that fails shows no prompt.
func (d *daemon) runConsole() {
	d.notifyWG.Add(1)
	go func() { defer d.notifyWG.Done(); _ = d.con.Run(d.consoleCtx) }()
}

// startChat runs the outbox dispatchers and the chat adapters, each group with its own
// cancel so shutdown can stop them in order.
func (d *daemon) startChat(ctx context.Context) {
	dctx, dcancel := context.WithCancel(context.WithoutCancel(ctx))
	d.dispatchCancel = dcancel
	for _, disp := range d.dispatchers {
		d.dispatchWG.Add(1)
		go func() { defer d.dispatchWG.Done(); _ = disp.Run(dctx) }()
	}
	actx, acancel := context.WithCancel(context.WithoutCancel(ctx))
	d.adapterCancel = acancel
	for _, ad := range d.adapters {
		d.adapterWG.Add(1)
		go func() {
			defer d.adapterWG.Done()
			if err := ad.Run(actx, d.handler); err != nil && actx.Err() == nil {
				d.log.Error("chat adapter stopped", "platform", ad.Platform(), "err", err)
			}
		}()
	}
}

// resumeInterrupted resumes every session a previous run left interrupted (all, with
// --resume), or else only those with cluster jobs still recorded: a Slurm or Ray job
// outlives tunebot, and re-attaching it costs no GPU time (docs/design.md §4). One that will not
// resume is logged and the rest go on. A session a person paused, or that waits for a
// decision, stays so; it is said where the person looks (with --resume, which does not
// resume it, and always in the console, which has seen nothing of it).
func (d *daemon) resumeInterrupted(ctx context.Context, all bool) error {
	sessions, err := d.app.db.ActiveSessions(ctx)
	if err != nil {
		return fmt.Errorf("listing active sessions: %w", err)
	}
	for _, s := range sessions {
		if (s.State == session.StatePaused || s.State == session.StateAwaitingApproval) && (all || d.con != nil) {
			d.sayWaiting(ctx, s, all)
			continue
		}
		if s.State != session.StateInterrupted {
			continue
		}
		remote, err := remoteJobs(ctx, d.app.db, s.ID)
		if err != nil {
			return err
		}
		if !all && remote == 0 {
			continue
		}
		if remote > 0 {
			d.log.Info("re-attaching the session's cluster jobs", "session", s.ID, "jobs", remote)
		}
		if _, err := d.app.engine.Resume(ctx, s.ID, session.System); err != nil {
			d.log.Error("resuming session", "session", s.ID, "err", err)
		}
	}
	return nil
}

// sayWaiting says that s waits for a person: paused (resume continues it), or waiting for a
// decision (its proposals are shown again). Chat has shown both already; its operator, who
// gave --resume, reads it in the log.
func (d *daemon) sayWaiting(ctx context.Context, s session.Session, resume bool) {
	if d.con == nil {
		d.log.Info("a session waits for a person; --resume continues only sessions tunebot interrupted", "session", s.ID, "state", s.State)
		return
	}
	if s.State == session.StateAwaitingApproval {
		if err := d.app.engine.Announce(ctx, s.ID); err != nil {
			d.log.Error("announcing a waiting session", "session", s.ID, "err", err)
		}
		return
	}
	text := fmt.Sprintf("session %s is paused (%s): resume continues it", session.Short(s.ID), s.Message)
	if resume {
		text += "; --resume continues only sessions tunebot itself interrupted"
	}
	d.notifySession(s, text)
}

// remoteJobs counts the unfinished trials of session id whose job runs on a cluster.
func remoteJobs(ctx context.Context, db *store.DB, id string) (int, error) {
	trials, err := db.Trials(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("listing trials of %s: %w", id, err)
	}
	n := 0
	for _, t := range trials {
		if t.RemoteJob() != nil && !t.State.Terminal() {
			n++
		}
	}
	return n, nil
}

// buildChat builds the enabled adapters, their dispatchers and the notifier that feeds
// them (none without a platform or a push); with no chat platform enabled, the console is
// the front end (wantConsole), built once the handler exists.
func (d *daemon) buildChat(db *store.DB, charts bot.ChartFunc) (wantConsole bool, err error) {
	deps := chatDeps{cfg: d.cfg, env: d.e, log: d.log, db: db}
	adapters, err := newAdapters(deps)
	if err != nil {
		return false, err
	}
	mentions := map[string][]string{}
	var platforms []string
	sinks := map[string]bot.Sink{}
	for _, ad := range adapters {
		d.adapters = append(d.adapters, ad)
		platforms = append(platforms, ad.Platform())
		sinks[ad.Platform()] = ad
		mentions[ad.Platform()] = ad.NotifyUsers()
	}
	push, pushSinks, err := newPushes(d.cfg, d.e.getenv)
	if err != nil {
		return false, err
	}
	maps.Copy(sinks, pushSinks)
	d.dispatchers = map[string]*bot.Dispatcher{}
	for p, sink := range sinks {
		d.dispatchers[p] = bot.NewDispatcher(deps.db, p, sink, bot.DispatcherOptions{}, d.log.With("platform", p))
	}
	if len(platforms) == 0 && len(push) == 0 {
		return true, nil
	}
	d.notifier = bot.NewNotifier(bot.NotifierConfig{
		Queue: deps.db, Platforms: platforms, Push: push, Expire: d.cfg.Chat.Expire, Logger: d.log, Redact: secret.Process(),
		Renderer: &bot.Renderer{Records: db, Space: d.cfg.NamesSpace(), Charts: charts, Final: finalCharts(charts), Clips: d.app.clips(),
			Mentions: mentions, Logger: d.log, TrialURL: d.trialURL(), NoAdvisor: !d.app.engine.Advised()},
		Wake: func(p string) {
			if disp, ok := d.dispatchers[p]; ok {
				disp.Wake()
			}
		},
	})
	return len(platforms) == 0, nil
}

// newAdapters builds the adapter of every chat platform the config enables, in name
// order; one that cannot be built (a token missing from the environment) is the error.
// Building one connects nowhere, so doctor builds them too.
func newAdapters(deps chatDeps) ([]chatAdapter, error) {
	names := slices.Sorted(maps.Keys(chatFactories))
	var out []chatAdapter
	for _, n := range names {
		ad, err := chatFactories[n](deps)
		if err != nil {
			return nil, fmt.Errorf("chat %s: %w", n, err)
		}
		if ad != nil {
			out = append(out, ad)
		}
	}
	return out, nil
}

// newPushes builds the phone pushes the config enables (ntfy, the webhook) and returns
// their names, in the order the notifier uses them, and sinks.
func newPushes(cfg config.Config, getenv func(string) string) ([]string, map[string]bot.Sink, error) {
	var names []string
	sinks := map[string]bot.Sink{}
	if c := cfg.Chat.Ntfy; c.Server != "" {
		n, err := notify.NewNtfy(c.Server, c.Topic, getenv, nil, secret.Process())
		if err != nil {
			return nil, nil, err
		}
		names, sinks["ntfy"] = append(names, "ntfy"), n
	}
	if cfg.Chat.Webhook.Enabled {
		u := getenv("TUNEBOT_WEBHOOK_URL")
		if u == "" {
			return nil, nil, fmt.Errorf("chat.webhook is enabled but TUNEBOT_WEBHOOK_URL is not set")
		}
		w, err := notify.NewWebhook(u, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("TUNEBOT_WEBHOOK_URL is not an http(s) URL")
		}
		names, sinks["webhook"] = append(names, "webhook"), w
	}
	return names, sinks, nil
}

func (d *daemon) platformNames() []string {
	var out []string
	for _, ad := range d.adapters {
		out = append(out, ad.Platform())
	}
	if d.con != nil {
		out = append(out, "console")
	}
	return out
}

// agentTest is /tune agent: the advisor's live round trip, or why there is none.
func (d *daemon) agentTest(ctx context.Context) (string, error) {
	key := d.e.getenv("DEEPSEEK_API_KEY")
	if key == "" {
		return "", fmt.Errorf("no advisor is configured: DEEPSEEK_API_KEY is not set on the tunebot machine")
	}
	ds, err := advisor.NewDeepSeek(deepSeekConfig(d.cfg.Advisor), key, d.app.db, d.log)
	if err != nil {
		return "", err
	}
	res, err := ds.Test(ctx)
	if err != nil {
		return "", err
	}
	if !res.OK {
		return "", fmt.Errorf("%s", res.Error)
	}
	return fmt.Sprintf("DeepSeek answered: model %s, %s round trip", res.Model, res.Latency.Round(time.Millisecond)), nil
}

// stop drains in order: tell open sessions, end the jobs (their sessions become
// interrupted, resumable), finish the interactions in flight, render what the engine
// said last, deliver what is due, disconnect, and close the store last.
func (d *daemon) stop() {
	if d.app == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if s, ok, err := d.app.engine.Active(ctx); err == nil && ok && d.app.engine.Running(s.ID) {
		text := "tunebot is shutting down: the running jobs are stopped and this session is interrupted; it continues from its last complete result with /tune resume once tunebot is back"
		if n, err := remoteJobs(ctx, d.app.db, s.ID); err == nil && n > 0 {
			text = fmt.Sprintf("tunebot is shutting down: the session's %d %s job(s) keep running and are re-attached when tunebot is back; nothing new starts meanwhile", n, clusterName(d.cfg))
		}
		note := session.Event{Kind: session.EventSessionUpdated, Session: s, Time: time.Now().UTC(), Text: text}
		if d.notifier != nil {
			d.notifier.Notify(ctx, note)
		}
	}
	if d.scheduler != nil {
		d.scheduler.Stop(ctx) // no new session starts while the engine drains
	}
	d.app.engine.Shutdown(ctx)
	if d.handler != nil {
		waitBounded(d.handler.Wait, drainTimeout)
	}
	if d.stopRelay != nil {
		d.stopRelay()
	}
	if d.notifyCancel != nil {
		d.notifyCancel()
		waitBounded(d.notifyWG.Wait, drainTimeout)
	}
	if d.dispatchCancel != nil {
		for _, disp := range d.dispatchers {
			disp.Wake()
		}
		// Give the dispatchers a moment to deliver the last cards before disconnecting;
		// whatever stays undelivered is kept in the outbox for the next start.
		deadline := time.Now().Add(5 * time.Second)
		for len(d.dispatchers) > 0 && time.Now().Before(deadline) {
			if n, err := d.app.db.OutboxDepth(ctx); err != nil || n == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		d.dispatchCancel()
		waitBounded(d.dispatchWG.Wait, drainTimeout)
	}
	if d.adapterCancel != nil {
		d.adapterCancel()
		waitBounded(d.adapterWG.Wait, drainTimeout)
	}
	if d.serviceCancel != nil {
		d.serviceCancel()
	}
	d.stopSocket()
	waitBounded(d.serviceWG.Wait, drainTimeout)
	d.app.close()
	d.app = nil
}

// startService serves /healthz, /metrics and the monitoring page; a taken port fails the
// start, not later.
func (d *daemon) startService(allow bot.AllowList) error {
	if d.cfg.Service.Off() {
		return nil
	}
	src := httpd.NewStoreSource(d.app.db, d.app.db, 0)
	src.Disks = func() []session.DiskUsage { return diskUsages(d.cfg) }
	srv, err := httpd.New(d.cfg.Service.Config, src, versionString(), d.log)
	if err != nil {
		return err
	}
	if err := d.mountDashboard(srv, allow); err != nil {
		return err
	}
	ln, err := srv.Listen()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.service, d.serviceCancel = srv, cancel
	d.serviceWG.Add(1)
	go func() {
		defer d.serviceWG.Done()
		if err := srv.Serve(ctx, ln); err != nil && ctx.Err() == nil {
			d.log.Error("service stopped", "err", err)
		}
	}()
	return nil
}

// startScheduler runs the stored schedules, the decision reminders and the daily digest.
func (d *daemon) startScheduler(ctx context.Context) error {
	space := d.cfg.NamesSpace()
	sch, err := schedule.New(schedule.Options{
		Config:  d.cfg.Schedule,
		Store:   scheduleStore{d.app.db},
		Starter: scheduledStarter{d},
		Notify:  d.announce,
		CheckArgs: func(args string) error {
			_, err := startSettings(args, d.cfg.Session, space)
			return err
		},
		Logger: d.log,
	})
	if err != nil {
		return err
	}
	if err := sch.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	d.scheduler = sch
	if d.cfg.Schedule.Digest != "" {
		if err := sch.Every(d.cfg.Schedule.Digest, func(ctx context.Context) {
			// Once a day, so it may read every session: one that ended today may have
			// started long ago.
			all, err := d.app.db.Sessions(ctx)
			if err == nil {
				if text := bot.Digest(time.Now(), all); text != "" {
					d.announce(text)
				}
			}
		}); err != nil {
			return fmt.Errorf("schedule.digest: %w", err)
		}
	}
	if r := d.cfg.Retention; r.Enabled {
		if err := sch.Every(r.At, func(ctx context.Context) {
			if _, err := d.pruner.Run(ctx, r.Options(), session.System); err != nil {
				d.log.Error("pruning old sessions (retention)", "err", err)
			}
		}); err != nil {
			return fmt.Errorf("retention.at: %w", err)
		}
	}
	if d.cfg.Schedule.RemindAfter > 0 {
		reminded := map[string]time.Time{}
		if err := sch.Every("*/5 * * * *", func(ctx context.Context) { d.remind(ctx, reminded) }); err != nil {
			return err
		}
	}
	return nil
}

// remind posts in a session's thread when its decision has waited longer than configured.
func (d *daemon) remind(ctx context.Context, reminded map[string]time.Time) {
	s, ok, err := d.app.engine.Active(ctx)
	if err != nil || !ok || s.State != session.StateAwaitingApproval {
		return
	}
	ps, err := d.app.db.Proposals(ctx, s.ID)
	if err != nil {
		return
	}
	var pending []session.Proposal
	for _, p := range ps {
		if p.State == session.ProposalPending {
			pending = append(pending, p)
		}
	}
	for _, p := range bot.Reminders(time.Now(), pending, d.cfg.Schedule.RemindAfter, reminded) {
		d.notifySession(s, bot.ReminderText(p))
	}
}

// announce posts a line for people: in the console, or as a notice of the active session
// (a schedule's start lands in the new session's thread by itself).
func (d *daemon) announce(text string) {
	ctx := context.Background()
	s, ok, err := d.app.engine.Active(ctx)
	if err != nil || !ok {
		newest, _, _ := d.app.db.RecentSessions(ctx, "", 1)
		if len(newest) == 0 {
			d.log.Info(text)
			return
		}
		s = newest[0]
	}
	d.notifySession(s, text)
}

func (d *daemon) notifySession(s session.Session, text string) {
	e := session.Event{Kind: session.EventSessionUpdated, Session: s, Time: time.Now().UTC(), Text: text}
	if d.notifier != nil {
		d.notifier.Notify(context.Background(), e)
	}
	if d.con != nil {
		d.con.Notify(context.Background(), e)
	}
}

// scheduledStarter starts a session from a schedule entry's /tune start arguments.
type scheduledStarter struct{ d *daemon }

func (s scheduledStarter) StartScheduled(ctx context.Context, e bot.ScheduleEntry) (string, error) {
	st, err := startSettings(e.Args, s.d.cfg.Session, s.d.cfg.NamesSpace())
	if err != nil {
		return "", err
	}
	owner := session.Actor{Platform: "schedule", ID: e.ID, Name: "schedule " + e.ID}
	if e.CreatedBy.ID != "" {
		owner = e.CreatedBy // the session posts where its schedule was made
	}
	sess, err := s.d.gate.Start(ctx, s.d.app.engine, st, owner)
	if err != nil {
		return "", err
	}
	return sess.ID, nil
}

// startSettings turns /tune start arguments ("mode=approval trials=8") into settings.
func startSettings(args string, defaults session.Settings, space *session.Space) (session.Settings, error) {
	cmd, err := bot.ParseCommand("start "+args, space)
	if err != nil {
		return session.Settings{}, err
	}
	return cmd.Settings(defaults)
}

func waitBounded(wait func(), bound time.Duration) {
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(bound):
	}
}
