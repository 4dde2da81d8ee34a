package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"tunebot/advisor"
	"tunebot/bot/console"
	"tunebot/charts"
	"tunebot/config"
	"tunebot/secret"
	"tunebot/session"
)

func init() {
	register("tune", "run one tuning session in the foreground to its end (console adapter)", runTune)
	register("demo", "tune on the built-in config: sim trainer, fallback sampler, automatic mode", runDemo)
}

// verboseHelp is the --verbose flag of every command with a terminal console.
const verboseHelp = "print every card whole (each trial's objectives, diff and chart files), as chat shows them; by default one line per trial"

// tuneOptions are the flags of tune; demo fills them itself.
type tuneOptions struct {
	configPath string
	mode       string
	trials     int
	fallback   bool
	json       bool
	resume     bool
	preset     string // start from this preset (/tune start preset=NAME)
	from       string // build on this earlier session (/tune start from=SESSION)
	fromStart  string // where a session built on another starts: best or defaults
	dataDir    string
	demo       bool
	task       string // the task to tune, one of the config's (/tune start task=NAME); demo: the task whose reward space the sim trainer tunes
	space      string // demo: that space's file (default: the task's checked-in one)
	verbose    bool
}

func runTune(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "tune", `usage: tunebot tune [--config FILE] [--mode automatic|approval] [--trials N] [--task TASK] [--preset NAME] [--from SESSION [--from-start best|defaults]] [--fallback] [--json] [--resume] [--data-dir DIR] [--verbose]

Runs one tuning session in the foreground to its end, operated from this terminal (type help
while it runs). --resume continues the newest unfinished session instead. --from builds on an
earlier session of the same task: its trials seed the numeric sampler's model (down-weighted),
its rejected directions stay rejected, and the session starts from its best configuration
(--from-start defaults: from the defaults or --preset).`)
	var o tuneOptions
	fs.StringVar(&o.configPath, "config", "", "config file (YAML); the embedded defaults when empty")
	fs.StringVar(&o.mode, "mode", "", "automatic or approval (default: the config's)")
	fs.IntVar(&o.trials, "trials", 0, "trial count, baseline included (default: the config's)")
	fs.StringVar(&o.task, "task", "", "the task to tune, one of the config's reward_spaces (default: session.task)")
	fs.StringVar(&o.preset, "preset", "", "start from this preset's reward configuration (tunebot preset list) instead of the defaults")
	fs.StringVar(&o.from, "from", "", "build on this earlier session of the same task (its id or the start of it)")
	fs.StringVar(&o.fromStart, "from-start", "", "with --from: start from its best configuration (best, the default) or the defaults")
	fs.BoolVar(&o.fallback, "fallback", false, "let the numeric sampler propose when the advisor cannot")
	fs.BoolVar(&o.json, "json", false, "print only the summary on stdout, as one JSON document; progress goes to stderr")
	fs.BoolVar(&o.resume, "resume", false, "continue the newest interrupted session instead of starting one")
	fs.StringVar(&o.dataDir, "data-dir", "", "data directory (default: the config's data_dir)")
	fs.BoolVar(&o.verbose, "verbose", false, verboseHelp)
	if code, ok := parseFlags(e, fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(e, fs, "unexpected argument %q", fs.Arg(0))
	}
	if msg := tuneFlagProblem(fs, o); msg != "" {
		return usageError(e, fs, "%s", msg)
	}
	return tune(ctx, e, o)
}

// tuneFlagProblem is what is wrong with tune's --mode or --trials, "" when nothing: a bad
// value given on the command line is a usage error naming the flag (exit 2), before the
// config is read, so a bad count is not reported as the promote list derived from it.
func tuneFlagProblem(fs *flag.FlagSet, o tuneOptions) string {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	modes := []string{session.ModeAutomatic, session.ModeApproval}
	if given["mode"] && !slices.Contains(modes, o.mode) {
		return fmt.Sprintf("--mode %q is not automatic or approval%s", o.mode, didYouMean(o.mode, modes))
	}
	if given["preset"] && o.resume {
		return "--preset starts a new session; --resume continues one with its own settings"
	}
	if given["from"] && o.resume {
		return "--from starts a new session; --resume continues one with its own settings"
	}
	if given["from-start"] && !given["from"] {
		return "--from-start says where a session built on another starts: give --from SESSION too"
	}
	if given["from-start"] && o.fromStart != session.FromBest && o.fromStart != session.FromDefaults {
		return fmt.Sprintf("--from-start %q is not best or defaults%s", o.fromStart, didYouMean(o.fromStart, []string{session.FromBest, session.FromDefaults}))
	}
	if given["trials"] && (o.trials < session.MinTrials || o.trials > session.MaxTrials) {
		return fmt.Sprintf("--trials %d is outside %d–%d (the trial count, the baseline included)", o.trials, session.MinTrials, session.MaxTrials)
	}
	return ""
}

func runDemo(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "demo", `usage: tunebot demo [--task TASK [--space FILE]] [--data-dir DIR] [--json] [--verbose]

Runs a whole 12-trial session on the built-in sim trainer, the numeric sampler proposing, in
automatic mode; everything goes under --data-dir. --task tunes that task's reward space
instead of the built-in Go2 one: its checked-in space (trainer/mjlab/spaces), or the file
--space names (a reward_space block as tunebot space printed it); no mjlab is needed.`)
	o := tuneOptions{demo: true, fallback: true, mode: session.ModeAutomatic}
	fs.StringVar(&o.dataDir, "data-dir", "./data", "where the demo keeps its store and outputs")
	fs.StringVar(&o.task, "task", "", "the task to tune, e.g. Mjlab-Velocity-Flat-Unitree-G1 (default: the built-in Unitree-Go2-Flat)")
	fs.StringVar(&o.space, "space", "", "the task's reward space file (default: its checked-in one)")
	fs.BoolVar(&o.json, "json", false, "print only the summary on stdout, as one JSON document; progress goes to stderr")
	fs.BoolVar(&o.verbose, "verbose", false, verboseHelp)
	if code, ok := parseFlags(e, fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(e, fs, "unexpected argument %q", fs.Arg(0))
	}
	return tune(ctx, e, o)
}

// loadTuneConfig loads the config and the session's settings as tune's flags change them, and
// says what is wrong with them (false) before anything starts: a bad config or setting, or a
// new session with no proposer (doctor says the same; a resumed one keeps its own).
func loadTuneConfig(e *env, o tuneOptions) (config.Config, session.Settings, bool) {
	cfg, err := config.Load(o.configPath, e.getenv)
	if err != nil {
		printProblems(e, err)
		return cfg, session.Settings{}, false
	}
	if o.dataDir != "" {
		cfg.DataDir = o.dataDir
	}
	if o.demo {
		if err := demoSpace(&cfg, o, e.getenv); err != nil {
			fmt.Fprintln(e.stderr, "tunebot demo:", err)
			return cfg, session.Settings{}, false
		}
	}
	st := tuneSettings(cfg.Session, o)
	if err := st.Validate(); err != nil {
		printProblems(e, err)
		return cfg, st, false
	}
	if msg := noProposer(e.getenv, st.Fallback, tuneFallbackFix); msg != "" && !o.resume {
		fmt.Fprintln(e.stderr, "tunebot:", msg)
		return cfg, st, false
	}
	return cfg, st, true
}

func tune(ctx context.Context, e *env, o tuneOptions) int {
	cfg, st, ok := loadTuneConfig(e, o)
	if !ok {
		return 1
	}
	logger, closeLog, err := consoleLogger(cfg.Log, cfg.DataDir, e.stderr)
	if err != nil {
		fmt.Fprintln(e.stderr, "tunebot:", err)
		return 1
	}
	defer closeLog()
	stdin := &eofReader{r: e.stdin, done: make(chan struct{})}
	// With --json stdout is one JSON document (the summary) and nothing else: the cards,
	// tables and progress a person reads go to stderr.
	human := e.stdout
	if o.json {
		human = e.stderr
	}
	// The engine's events wait in a relay until the console, which needs the engine, exists.
	events := newRelay(logger)
	a, err := openApp(ctx, cfg, e, logger, events)
	if err != nil {
		fmt.Fprintln(e.stderr, "tunebot:", err)
		return 1
	}
	defer a.close()
	stopSocket, err := serveTuneSocket(a, e, logger)
	if err != nil {
		fmt.Fprintln(e.stderr, "tunebot:", err)
		return 1
	}
	defer stopSocket()
	s, err := beginSession(ctx, a, st, o.resume)
	if err != nil {
		printStartRefusal(e, err, o)
		return 1
	}
	// The session's line, then the console's (its banner first, then the events of the
	// start, which wait in the relay's queue until it reads them).
	fmt.Fprintf(human, "session %s (task %s, %s mode, %d trials, rungs %v)%s; data in %s\n", s.ID, s.Settings.Task, s.Settings.Mode, s.Settings.TrialCount, s.Settings.Rungs, startsFrom(s), a.engine.SessionDir(s.ID))
	stopConsole := startTuneConsole(ctx, a, cfg, human, stdin, events, logger, o.verbose)

	final, code := follow(ctx, e, a.engine, s.ID, stdin.done)
	stopConsole()
	return tuneExit(ctx, e, a, o, final, code)
}

// startsFrom is what the start line says of where s starts ("; it builds on session …",
// "; it starts from preset NAME"), "" from the defaults.
func startsFrom(s session.Session) string {
	if line := session.StartLine(s); line != "" {
		return "; it " + line
	}
	return ""
}

// beginSession starts the session st, or with resume continues the newest unfinished one,
// owned by the person at the terminal. Refused, the engine is shut down before the console
// began: no "reads commands here" line for a session that never started.
func beginSession(ctx context.Context, a *app, st session.Settings, resume bool) (session.Session, error) {
	var s session.Session
	var err error
	if resume {
		s, err = resumeNewest(ctx, a.engine, console.User)
	} else {
		s, err = a.engine.Start(ctx, st, console.User)
	}
	if err != nil {
		a.engine.Shutdown(context.Background())
	}
	return s, err
}

// printStartRefusal says why no session began. Refused because another session is active,
// it names that one and the commands that reach it from here: the terminal has no cancel
// of its own, so a session is cancelled by resuming it and typing cancel.
func printStartRefusal(e *env, err error, o tuneOptions) {
	var be *session.BusyError
	if !errors.As(err, &be) {
		printProblems(e, err)
		return
	}
	resume := resumeCommand(o)
	fmt.Fprintf(e.stderr, "tunebot: %s; only one session runs at a time.\n", be.Error())
	fmt.Fprintf(e.stderr, "  resume it: %s\n", resume)
	fmt.Fprintf(e.stderr, "  cancel it: %s, then type cancel\n", resume)
}

// tuneExit ends a tune whose follow ended with code: the line that continues a session left
// unfinished, the summary, and the exit status (1 for a session that did not succeed).
func tuneExit(ctx context.Context, e *env, a *app, o tuneOptions, final session.Session, code int) int {
	if code != 0 && final.State.Active() {
		fmt.Fprintf(e.stderr, "session %s is %s; continue it with: %s\n", final.ID, final.State, resumeCommand(o))
	}
	if err := printSummary(ctx, e, a, final, o.json); err != nil {
		fmt.Fprintln(e.stderr, "tunebot:", err)
		return 1
	}
	if code == 0 && final.State != session.StateSucceeded {
		code = 1
	}
	return code
}

// tuneSettings is the session a tune starts: the config's, with the command line's flags
// over it, normalized.
func tuneSettings(st session.Settings, o tuneOptions) session.Settings {
	if o.demo {
		// The demo always shows the whole ladder: 12 trials, 4 promoted, 2 finalists.
		st.Patience = st.TrialCount - 1
	}
	if o.mode != "" {
		st.Mode = o.mode
	}
	if o.trials != 0 {
		// The config's promote list is for its own trial count.
		if len(st.Promote) > 0 && o.trials != st.TrialCount {
			st.Promote = nil
		}
		st.TrialCount = o.trials
	}
	if o.fallback {
		st.Fallback = true
	}
	if o.preset != "" {
		st.Preset = o.preset
	}
	st.From, st.FromStart = o.from, o.fromStart
	if o.task != "" {
		st.Task = o.task
	}
	st.Normalize()
	return st
}

// startTuneConsole runs the terminal console on human and stdin, fed the engine's events
// from the relay; its reports go under cfg's data dir as given (a.cfg's is made absolute).
// The func it returns prints what the engine still had to say, then stops the console.
func startTuneConsole(ctx context.Context, a *app, cfg config.Config, human io.Writer, stdin *eofReader, events *relay, logger *slog.Logger, verbose bool) func() {
	draw := chartsWhileTraining(a.engine, storeCharts(a.db))
	con := console.New(console.Config{Out: human, In: stdin, Dir: reportsDir(cfg), Engine: a.engine,
		Store: a.db, Space: cfg.NamesSpace(), SpaceOf: cfg.SpaceOf, Charts: draw, Final: finalCharts(draw), Clips: a.clips(), ReportNames: charts.ReportNames, Logger: logger, Verbose: verbose, Redact: secret.Process()})
	uiCtx, stopUI := context.WithCancel(context.WithoutCancel(ctx))
	relayCtx, stopRelay := context.WithCancel(context.WithoutCancel(ctx))
	uiDone, relayDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(uiDone)
		_ = con.Run(uiCtx)
	}()
	go func() {
		defer close(relayDone)
		events.Run(relayCtx, con)
	}()
	return func() {
		a.engine.Shutdown(context.Background())
		stopRelay()
		<-relayDone
		stopUI()
		<-uiDone
	}
}

// resumeCommand is the command line that reaches the same session again: --resume with
// the config and the data dir this run used (absolute, so it works from anywhere; quoted
// for a shell when needed). The session's own settings come back from the store.
func resumeCommand(o tuneOptions) string {
	argv := []string{"tunebot", "tune", "--resume"}
	for _, f := range []struct{ flag, path string }{{"--config", o.configPath}, {"--data-dir", o.dataDir}} {
		if f.path == "" {
			continue
		}
		p := f.path
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		argv = append(argv, f.flag, shellWord(p))
	}
	return strings.Join(argv, " ")
}

// shellWord is s as one word for a POSIX shell: as it is when it is plain, else single-quoted.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:,+=@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// resumeNewest continues the newest session that is still active.
func resumeNewest(ctx context.Context, eng *session.Engine, by session.Actor) (session.Session, error) {
	s, ok, err := eng.Active(ctx)
	if err != nil {
		return s, err
	}
	if !ok {
		return s, errors.New("there is no interrupted, paused or waiting session to resume")
	}
	switch s.State {
	case session.StateInterrupted, session.StatePaused:
		return eng.Resume(ctx, s.ID, by)
	}
	// Waiting for a decision: show the proposal again, since this terminal has not seen it.
	return s, eng.Announce(ctx, s.ID)
}

// follow waits until the session ends. Once input has ended nobody can decide: a session
// that waits for a decision is paused, as a typed pause would, and follow returns 3 as soon
// as no job of the session runs any more (paused, or waiting for a person for another
// reason); whatever runs meanwhile (a trial, the halving ladder, which need nobody)
// finishes first. Nothing is lost: --resume shows the waiting proposals again. A signal
// interrupts it (130).
func follow(ctx context.Context, e *env, eng *session.Engine, id string, stdinDone <-chan struct{}) (session.Session, int) {
	inputEnded := false
	for {
		ch := eng.Changed()
		var s session.Session
		var err error
		done := false
		if inputEnded {
			s, done, err = unattended(ctx, e, eng, id)
		} else {
			s, err = eng.Store().Session(context.WithoutCancel(ctx), id)
		}
		if err != nil {
			fmt.Fprintln(e.stderr, "tunebot:", err)
			return s, 1
		}
		if !s.State.Active() {
			return s, 0
		}
		if done {
			return s, 3
		}
		select {
		case <-ch:
		case <-ctx.Done():
			eng.Shutdown(context.Background())
			s, _ = eng.Store().Session(context.Background(), id)
			return s, 130
		case <-stdinDone:
			stdinDone, inputEnded = nil, true
		}
	}
}

// unattended is one look of follow at session id once input has ended. It acts only when
// the session's worker has settled: a decision typed just before the end has been recorded,
// but until the worker has acted on it the stored state still says awaiting_approval (or,
// read a moment too early, still running). A settled session that waits for a decision is
// paused; done is true once no worker is left, and s is then the session as it stays.
func unattended(ctx context.Context, e *env, eng *session.Engine, id string) (s session.Session, done bool, err error) {
	// Read before the session: a worker settled before the read leaves the state read as
	// it is (input has ended, so only a promotion review's clock can move it on).
	settled, running := eng.Settled(id), eng.Running(id)
	s, err = eng.Store().Session(context.WithoutCancel(ctx), id)
	if err != nil || !settled || !s.State.Active() {
		return s, false, err
	}
	if s.State == session.StateAwaitingApproval {
		if p, err := eng.PauseBecause(ctx, id, session.System, "input ended (nobody is left to decide)"); err == nil {
			s = p
			waits := "its proposals wait"
			if _, review := s.OpenReview(); review {
				waits = "its promotion plan waits"
			}
			fmt.Fprintf(e.stderr, "input has ended and nobody is left to decide: session %s is paused; %s for --resume\n", session.Short(id), waits)
		} else if !errors.Is(err, session.ErrConflict) {
			fmt.Fprintln(e.stderr, "tunebot:", err)
		}
	}
	if running {
		return s, false, nil // its worker waits on a clock, or leaves now that it is paused
	}
	if s.State != session.StatePaused {
		fmt.Fprintf(e.stderr, "session %s is %s and input has ended; nobody is left to decide.\n", session.Short(id), session.StateLabel(s.State))
	}
	return s, true, nil
}

// eofReader closes done when its reader reaches the end: nobody is left to type.
type eofReader struct {
	r    io.Reader
	done chan struct{}
	once sync.Once
}

func (r *eofReader) Read(p []byte) (int, error) {
	if r.r == nil {
		r.once.Do(func() { close(r.done) })
		return 0, io.EOF
	}
	n, err := r.r.Read(p)
	if err != nil {
		r.once.Do(func() { close(r.done) })
	}
	return n, err
}

// summaryJSON is the --json summary: the session, its best trial, every trial, every
// proposal (rejected ones included) and the baseline the headline compares with (control).
// Every field is always there (null or "" when it has no value), as the README's outline
// of it says.
type summaryJSON struct {
	Session   string            `json:"session"`
	State     session.State     `json:"state"`
	Preset    string            `json:"preset"`
	Reason    string            `json:"reason"`
	Best      *session.Standing `json:"best"`    // the preset's trial as it stands: its final evaluation on fresh seeds (final true)
	Control   *session.Standing `json:"control"` // the baseline the headline compares with (at the best's rung); null when none
	Headline  string            `json:"headline"`
	Trials    []trialJSON       `json:"trials"`
	Proposals []proposalJSON    `json:"proposals"`
	// Preferences are people's answers to "which walks better?" (winner null: can't tell).
	Preferences []preferenceJSON `json:"preferences"`
	// PlanChanges are people's promote and drop on the promotion plans, in order: a drop
	// that left no trial to take its place shows here only.
	PlanChanges []planChangeJSON `json:"plan_changes"`
	Outputs     map[string]any   `json:"outputs"`

	// Outcome is what a succeeded session came to: "improved" (preset names it),
	// "within_noise" or "unmeasured" (a preset is saved, marked so) or "no_improvement"
	// (nothing beat the baseline; no preset); "" for any other state.
	Outcome string `json:"outcome"`
	// Versus is the headline's best tuned trial against the baseline at its rung
	// (session.Comparison.Versus): on fresh seeds (final true) once the session measured it;
	// null before there is one.
	Versus *session.Versus `json:"versus"`
	// Verdict is the headline's gain as the fresh seeds measured it: its standard error,
	// 95 % lower bound, seeds, the test and whether it clears the noise; null until the
	// session chose its result.
	Verdict *session.Verdict `json:"verdict"`
	// BuiltOn is the earlier session this one built on (--from), null when none.
	BuiltOn *session.BuiltOn `json:"built_on"`
	// outcomeLine is session.OutcomeLine, for the terminal (the JSON has outcome and verdict).
	outcomeLine string
	// Shipped is what the preset's configuration carries from the defaults and what the
	// sampler's model credits each change with, null without a preset.
	Shipped *shippedJSON `json:"shipped"`
}

// planChangeJSON is one change a person made to rung's promotion plan.
type planChangeJSON struct {
	Rung   int    `json:"rung"`
	Action string `json:"action"` // promote or drop
	Trial  int    `json:"trial"`
	// Other is, for a promote, the planned trial it replaced; for a drop, the trial that
	// took the dropped one's place, null when none was left.
	Other *int      `json:"other"`
	By    string    `json:"by"`
	At    time.Time `json:"at"`
}

type preferenceJSON struct {
	A      int       `json:"a"`
	B      int       `json:"b"`
	Winner *int      `json:"winner"`
	Note   string    `json:"note"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// promotionJSON is who put a trial into its rung's plan, and how.
type promotionJSON struct {
	By     string    `json:"by"`
	Action string    `json:"action"` // promote (over: the trial it replaced) or drop (over: the trial dropped)
	Over   int       `json:"over"`
	At     time.Time `json:"at"`
}

type trialJSON struct {
	Number       int                  `json:"number"`
	Rung         int                  `json:"rung"`
	Iterations   int                  `json:"iterations"`
	State        session.TrialState   `json:"state"`
	Source       string               `json:"source"`
	Score        *float64             `json:"score"`
	Eligible     bool                 `json:"eligible"`
	RewardConfig session.RewardConfig `json:"reward_config"`
	Metrics      session.Metrics      `json:"metrics"`
	Reason       string               `json:"reason"`
	Final        *finalJSON           `json:"final"`       // finalists only
	Clip         *string              `json:"clip"`        // the clip of the policy (absolute path), null when none
	ClipNote     string               `json:"clip_note"`   // why there is none, "" when nothing to say
	PromotedBy   *promotionJSON       `json:"promoted_by"` // a person's change of the plan put it here; null when tunebot's
	// Versus is the score against the baseline at the trial's rung (control_rung: its rung),
	// or rung 0's when none was trained as long (control_rung 0); null without a score.
	Versus *session.Versus `json:"versus"`
}

// finalJSON is a trial's final evaluation on fresh seeds: its score against rung 0's
// baseline with the per-seed spread, and Versus, its figure against the baseline trained as
// long measured on the same seeds (null when that has no final evaluation).
type finalJSON struct {
	Score  float64         `json:"score"`
	Std    float64         `json:"std"`
	Seeds  []int           `json:"seeds"`
	Versus *session.Versus `json:"versus"`
}

// verdictOf is v as the summary gives it, measured numbers rounded; nil stays nil.
func verdictOf(v *session.Verdict) *session.Verdict {
	if v == nil {
		return nil
	}
	r := v.Rounded()
	return &r
}

type proposalJSON struct {
	Seq      int                   `json:"seq"`
	Number   int                   `json:"number"`
	State    session.ProposalState `json:"state"`
	Source   string                `json:"source"`
	Patch    session.Patch         `json:"patch"`
	Edited   *session.Patch        `json:"edited"` // what ran instead, when a person edited it; null when not
	Feedback string                `json:"feedback"`
}

func buildSummary(ctx context.Context, a *app, s session.Session) (summaryJSON, error) {
	trials, err := a.db.Trials(ctx, s.ID)
	if err != nil {
		return summaryJSON{}, fmt.Errorf("listing trials: %w", err)
	}
	proposals, err := a.db.Proposals(ctx, s.ID)
	if err != nil {
		return summaryJSON{}, fmt.Errorf("listing proposals: %w", err)
	}
	out := summaryJSON{Session: s.ID, State: s.State, Preset: s.Preset, Outcome: s.Outcome, outcomeLine: s.OutcomeLine(), Reason: s.Reason, BuiltOn: s.BuiltOn, Trials: []trialJSON{}, Proposals: []proposalJSON{}, Preferences: []preferenceJSON{}, PlanChanges: []planChangeJSON{},
		Outputs: map[string]any{"session_dir": a.engine.SessionDir(s.ID), "store": dataFile(a.cfg),
			"reports": filepath.Join(reportsDir(a.cfg), session.Short(s.ID)), "log": logPath(a.cfg.DataDir)}}
	if c, ok := session.Compare(s, trials); ok {
		out.Headline = c.Headline()
		if c.Best.Trial != 0 {
			out.Versus = measuredVersus(c.Versus)
			out.Verdict = verdictOf(c.Verdict)
		}
		// The control the headline compares with (the baseline at the best's rung), not
		// the top rung's when the result fell back to a lower one.
		if c.Control != nil {
			out.Control = measuredStanding(*c.Control)
		}
	}
	best := s.BestOf(trials)
	if s.Preset != "" && best != nil {
		out.Best = measuredStanding(session.StandingOf(*best, s.Settings.EvalSeeds))
		out.Shipped = shippedSummary(a, s, *best, trials)
	}
	for _, t := range trials {
		out.Trials = append(out.Trials, trialSummary(a, s, trials, t))
	}
	for _, p := range proposals {
		pj := proposalJSON{Seq: p.Seq, Number: p.Number, State: p.State, Source: p.Source, Patch: p.Patch}
		if p.Decision != nil {
			pj.Feedback = p.Decision.Feedback
			pj.Edited = p.Decision.Edited
		}
		out.Proposals = append(out.Proposals, pj)
	}
	out.Preferences = append(out.Preferences, preferencesSummary(s)...)
	out.PlanChanges = append(out.PlanChanges, planChangesSummary(s)...)
	return out, nil
}

// measuredStanding is st with its score and spread rounded as every measured number of the
// summary is (session.Measured).
func measuredStanding(st session.Standing) *session.Standing {
	st.Score, st.Std = session.Measured(st.Score), session.Measured(st.Std)
	return &st
}

// measuredVersus is v with its score rounded as every measured number of the summary is
// (session.Measured); nil stays nil.
func measuredVersus(v *session.Versus) *session.Versus {
	if v == nil {
		return nil
	}
	m := *v
	m.Score = session.Measured(m.Score)
	return &m
}

// trialSummary is trial t of session s as the summary gives it; trials are all of s's, for
// its score against the baseline. Measured numbers go out as a person reads them: 4
// significant digits, no -0.
func trialSummary(a *app, s session.Session, trials []session.Trial, t session.Trial) trialJSON {
	tj := trialJSON{Number: t.Number, Rung: t.Rung, Iterations: t.Iterations, State: t.State, Source: t.Source,
		Eligible: t.Eligible(), RewardConfig: t.RewardConfig, Metrics: t.Metrics, Reason: t.Reason}
	if t.Score != nil {
		v := session.Measured(t.Score.Total)
		tj.Score = &v
	}
	if vs, ok := session.VersusControl(s.Settings, trials, t); ok {
		tj.Versus = measuredVersus(&vs)
	}
	tj.Metrics = session.MeasuredMetrics(tj.Metrics)
	if tj.Metrics == nil {
		tj.Metrics = session.Metrics{}
	}
	if t.Final != nil {
		tj.Final = &finalJSON{Score: session.Measured(t.Final.Score.Total), Std: session.Measured(t.Final.ScoreStd), Seeds: append([]int{}, t.Final.Seeds...)}
		if v, ok := session.FinalVersusOf(s.Settings, session.ControlAt(trials, t.Rung), t); ok && v.Final && v.Matched() {
			tj.Final.Versus = measuredVersus(&v)
		}
	}
	if t.Clip != nil {
		p := filepath.Join(a.engine.SessionDir(s.ID), t.Clip.Path)
		tj.Clip = &p
	}
	tj.ClipNote = t.ClipNote
	if p := t.PromotedBy; p != nil {
		tj.PromotedBy = &promotionJSON{By: p.By.String(), Action: p.Action, Over: p.Over, At: p.At}
	}
	return tj
}

// shippedJSON is the shipped configuration's changes from the defaults, and what the
// sampler's model, fitted to the session's rung-0 trials, credits each with: the score the
// configuration would lose without that change alone (docs/design.md §5).
type shippedJSON struct {
	Changes int          `json:"changes"`
	Line    string       `json:"line"` // "carries 7 changes from the defaults; the model credits the gain to ..."
	Credit  []creditJSON `json:"credit"`
}

type creditJSON struct {
	Name     string  `json:"name"`
	Change   string  `json:"change"`
	Gain     float64 `json:"gain"`
	SD       float64 `json:"sd"`
	Credited bool    `json:"credited"`
	Harmful  bool    `json:"harmful"` // taking it back alone would gain more than its deviation
}

// shippedSummary is what the configuration of s's preset (its best trial's) carries and
// what the model, fitted to s's rung-0 trials, credits.
func shippedSummary(a *app, s session.Session, best session.Trial, trials []session.Trial) *shippedJSON {
	var hist []session.TrialSummary
	for _, t := range trials {
		if t.Rung == 0 {
			hist = append(hist, session.SummaryOf(t))
		}
	}
	sp := a.engine.SpaceOf(s.Settings.Task)
	req := session.ProposalRequest{SessionID: s.ID, Space: sp, Objective: s.Settings.Objective, Floors: s.Settings.Floors,
		History: hist, Base: best.RewardConfig, Seed: s.Settings.Seed}
	return shippedOf(sp, best.RewardConfig, advisor.NewSampler(advisor.SamplerOptions{}).Credit(req, best.RewardConfig), len(hist))
}

// shippedOf is what configuration c carries from sp's defaults, counted as every surface
// counts a preset's changes (Space.Diff), and cs, the model's credit for them. Credit gives
// nothing both when c changes nothing and when the model cannot be fitted (the baseline has
// no metrics): the line tells the two apart.
func shippedOf(sp *session.Space, c session.RewardConfig, cs []advisor.ChangeCredit, trials int) *shippedJSON {
	n := len(sp.Diff(sp.Defaults(), c))
	line := advisor.CreditLine(cs, trials)
	if len(cs) == 0 && n > 0 {
		line = "carries " + plural(n, "change") + " from the defaults; the sampler's model could not be fitted to credit them (no rung-0 baseline with metrics)"
	}
	out := &shippedJSON{Changes: n, Line: line, Credit: []creditJSON{}}
	for _, c := range cs {
		out.Credit = append(out.Credit, creditJSON{Name: c.Name, Change: c.Change, Gain: session.Measured(c.Gain), SD: session.Measured(c.SD), Credited: c.Credited(), Harmful: c.Harmful()})
	}
	return out
}

// preferencesSummary is s's decided "which walks better?" answers, in order.
func preferencesSummary(s session.Session) []preferenceJSON {
	var out []preferenceJSON
	for _, p := range s.Preferences {
		if !p.Decided() || p.By == nil {
			continue
		}
		pj := preferenceJSON{A: p.A, B: p.B, Note: p.Note, By: p.By.String(), At: p.At}
		if w, _, ok := p.Winner(); ok {
			pj.Winner = &w
		}
		out = append(out, pj)
	}
	return out
}

// planChangesSummary is people's promote and drop on s's promotion plans, in order.
func planChangesSummary(s session.Session) []planChangeJSON {
	var out []planChangeJSON
	for _, r := range s.Reviews {
		for _, c := range r.Changes {
			cj := planChangeJSON{Rung: r.Rung, Action: c.Action, Trial: c.Trial, By: c.By.String(), At: c.At}
			if c.Other >= 0 {
				cj.Other = &c.Other
			}
			out = append(out, cj)
		}
	}
	return out
}

func printSummary(ctx context.Context, e *env, a *app, s session.Session, asJSON bool) error {
	sum, err := buildSummary(context.WithoutCancel(ctx), a, s)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(e, sum)
	}
	writeSummaryText(e.stdout, sum)
	return nil
}

// writeSummaryText ends a terminal session with where things are. The console has already
// printed the summary card (the trials table, the headline, the preset) of a session that
// ended; one that still waits says why here.
func writeSummaryText(w io.Writer, s summaryJSON) {
	fmt.Fprintf(w, "\nsession %s: %s\n", s.Session, session.StateLabel(s.State))
	if s.outcomeLine != "" {
		fmt.Fprintf(w, "  outcome:     %s\n", s.outcomeLine)
	}
	if s.Reason != "" && s.State.Active() {
		fmt.Fprintf(w, "  reason: %s\n", s.Reason)
	}
	if s.BuiltOn != nil {
		fmt.Fprintf(w, "  built on:    %s\n", strings.TrimPrefix(s.BuiltOn.Line(), "builds on "))
	}
	if s.Shipped != nil {
		fmt.Fprintf(w, "  shipped:     %s\n", s.Shipped.Line)
	}
	for _, k := range []struct{ key, label string }{{"session_dir", "session_dir"}, {"reports", "charts"}, {"store", "store"}, {"log", "log"}} {
		fmt.Fprintf(w, "  %-12s %s\n", k.label+":", s.Outputs[k.key])
	}
}
