package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"tunebot/advisor"
	"tunebot/bot"
	"tunebot/config"
	"tunebot/disk"
	"tunebot/private"
	"tunebot/secret"
	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer"
)

// app is tunebot wired together: the composition root shared by tune, demo and run.
type app struct {
	cfg    config.Config
	log    *slog.Logger
	db     *store.DB
	engine *session.Engine
	// actions is db with every audited action also logged; whatever acts for a person
	// (the engine, apply, the chat handler) is given it.
	actions actionLog
}

// newLogger builds the slog logger the config asks for, writing to w with tunebot's
// secrets redacted from every line.
func newLogger(c config.LogConfig, w io.Writer) *slog.Logger {
	w = secret.Process().Writer(w)
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openStore opens the data dir's store for writing, once the data dir is one nobody else
// can write (prepareDataDir); when a daemon holds it, the error says so. It is opened as
// the keys are (private.OpenOwn): never through a link, never a FIFO, the daemon user's
// alone.
func openStore(cfg config.Config) (*store.DB, error) {
	if err := prepareDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	return openPreparedStore(cfg)
}

// openPreparedStore is openStore for a caller that has already prepared data_dir
// (openApp, which checks it before its other steps).
func openPreparedStore(cfg config.Config) (*store.DB, error) {
	return store.Open(dataFile(cfg), store.Options{Redact: secret.Process(), OpenFile: openOwnStore})
}

// openOwnStore opens the store's file as private.OpenOwn does (store.Options.OpenFile).
func openOwnStore(name string, flag int, perm os.FileMode) (*os.File, error) {
	return private.OpenOwn(name, flag, perm, "the store")
}

// prepareDataDir makes data_dir (0700) when missing and refuses one that a user other than
// tunebot's or root could write, or one under such a directory (private.CheckDataDir): every
// command that writes there checks it first. The way to it is checked before anything is
// made, so no directory of tunebot's is made inside another user's.
func prepareDataDir(dir string) error {
	if err := private.CheckWay(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data_dir %s cannot be created: %w", dir, err)
	}
	return private.CheckDataDir(dir)
}

// sessionsDir is where every session's run directories live.
func sessionsDir(cfg config.Config) string { return filepath.Join(cfg.DataDir, "sessions") }

// reportsDir is where the terminal saves each session's charts (data_dir/reports/<session8>).
func reportsDir(cfg config.Config) string { return filepath.Join(cfg.DataDir, "reports") }

// makeOwnDirs makes (or checks) the directories tunebot writes under data_dir as the
// daemon user's own, not links: a link planted for sessions/ or reports/ put every run
// directory or chart in a directory someone else chose.
func makeOwnDirs(cfg config.Config) error {
	if err := private.OwnDir(sessionsDir(cfg), 0o755, "the sessions directory, which holds every run directory"); err != nil {
		return err
	}
	return private.OwnDir(reportsDir(cfg), 0o755, "the reports directory, which holds every session's charts")
}

// probeWritable says whether dir takes a new file: a fresh name (O_EXCL, no link followed,
// no FIFO's open waited for), removed after, so nothing planted at a fixed name is
// truncated, written through or hung on.
func probeWritable(dir string) error {
	probe := filepath.Join(dir, ".write-test-"+rand.Text())
	if err := private.Create(probe, nil); err != nil {
		return fmt.Errorf("data_dir %s is not writable: %w", dir, err)
	}
	if err := os.Remove(probe); err != nil {
		return fmt.Errorf("removing the write probe in data_dir %s: %w", dir, err)
	}
	return nil
}

// openLog opens tunebot.log in dataDir for appending as the keys are (private.OpenOwn), so
// a link or FIFO planted for it is refused, not written through or waited on.
func openLog(dataDir string) (*os.File, error) {
	return private.OpenOwn(logPath(dataDir), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600, "tunebot's log")
}

// dataFile is the path of the data dir's store.
func dataFile(cfg config.Config) string { return filepath.Join(cfg.DataDir, "tunebot.db") }

// logPath is the path of the log of the daemon and of tune in dataDir.
func logPath(dataDir string) string { return filepath.Join(dataDir, "tunebot.log") }

// dataDirAccess is a warning when data_dir exists and group or others may read it: it
// holds the store (every session and the audit log), the logs and every trial's run
// directory (the keys and tokens are 0600 whatever it is). tunebot makes it 0700; one others
// may write is refused (private.CheckDataDir), one they may read is left as it is, so run and
// doctor say so; "" when it is private or does not exist yet.
func dataDirAccess(dir string) string {
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() || info.Mode().Perm()&0o077 == 0 {
		return ""
	}
	return fmt.Sprintf("data_dir %s is open to group or others (mode %04o): it holds the store, the logs and every trial's run directory; chmod 700 %s unless others must read it",
		dir, info.Mode().Perm(), dir)
}

// consoleLogger is the logger of the foreground commands (tune, demo): everything at the
// configured level goes to <data_dir>/tunebot.log, and only warnings and errors reach the
// terminal, where the cards are, in its own format (terminalHandler). The returned func
// closes the file.
func consoleLogger(c config.LogConfig, dataDir string, stderr io.Writer) (*slog.Logger, func(), error) {
	if err := prepareDataDir(dataDir); err != nil {
		return nil, nil, err
	}
	f, err := openLog(dataDir)
	if err != nil {
		return nil, nil, fmt.Errorf("opening tunebot's log in data_dir %s: %w", dataDir, err)
	}
	file := newLogger(c, f).Handler()
	term := newTerminalHandler(secret.Process().Writer(stderr))
	return slog.New(slog.NewMultiHandler(file, term)), func() { f.Close() }, nil
}

// openApp opens the store, builds the trainer, proposers and engine, and recovers what a
// previous run left. note is the engine's notifier (nil: none): what needs the engine to be
// built is fed through a relay (relay.go). The caller closes the app.
func openApp(ctx context.Context, cfg config.Config, e *env, logger *slog.Logger, note session.Notifier) (*app, error) {
	// Run directories are handed to trainers that run in another working directory, so
	// every path derived from the data dir must be absolute.
	abs, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data_dir %s: %w", cfg.DataDir, err)
	}
	cfg.DataDir = abs
	// Refused when others may write it: a key planted there would sign anyone in as the
	// operator, and a link planted there would take what tunebot writes elsewhere.
	if err := prepareDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	if err := makeOwnDirs(cfg); err != nil {
		return nil, err
	}
	if disk.NewWatch(cfg.DataDir).ReleaseIfFull() {
		logger.Warn("the data disk is full: the reserve is released so that tunebot can start; free space, then resume", "data_dir", cfg.DataDir)
	}
	if err := probeWritable(cfg.DataDir); err != nil {
		return nil, err
	}
	resolveRayParallel(ctx, &cfg, e.getenv, logger)
	db, err := openPreparedStore(cfg)
	if err != nil {
		return nil, err
	}
	actions := actionLog{DB: db, log: logger}
	eng, err := newEngine(cfg, e, db, actions, logger, note)
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := eng.Recover(ctx); err != nil {
		eng.Shutdown(ctx)
		db.Close()
		return nil, fmt.Errorf("recovering interrupted sessions: %w", err)
	}
	return &app{cfg: cfg, log: logger, db: db, engine: eng, actions: actions}, nil
}

// newEngine builds the trainer, the proposers and the engine. st is the store as the engine
// sees it: db with every action audited (actionLog); the advisor keeps its records in db.
func newEngine(cfg config.Config, e *env, db *store.DB, st session.Store, logger *slog.Logger, note session.Notifier) (*session.Engine, error) {
	lease := &trainer.Lease{}
	train, evaluate := cfg.Trainer.Templates()
	runner, err := trainer.New(trainer.Templates{
		Python: cfg.Trainer.Python, Workdir: cfg.Trainer.Workdir, Train: train,
		ResumeArgs: cfg.Trainer.ResumeArgs, Evaluate: evaluate,
		JobTimeout: cfg.Trainer.JobTimeout, EvalTimeout: cfg.Trainer.EvalTimeout, Grace: cfg.Trainer.Grace,
		Slurm: cfg.Executor.SlurmBackend(), Ray: cfg.Executor.RayBackend(e.getenv("RAY_AUTH_TOKEN")), Events: cfg.Trainer.Events,
	}, lease, logger)
	if err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	sampler := advisor.NewSampler(advisor.SamplerOptions{})
	primary, err := buildAdvisor(cfg, e, db, sampler, logger)
	if err != nil {
		return nil, err
	}
	return session.NewEngine(session.EngineConfig{
		Store: st, Trainer: runner, Advisor: primary, Sampler: sampler,
		Notifier: note, Space: cfg.EngineSpace(), Spaces: cfg.TaskSpaces(), SessionsDir: sessionsDir(cfg), Logger: logger,
		// Parallel 0 lets the engine take each session's own GPUs into account (local).
		Parallel: cfg.Executor.Parallel, GPUsPerTrial: cfg.Executor.GPUsPerTrial,
		LeaseGPUs: cfg.Executor.Backend == config.BackendLocal, TrainerKind: trainerKind(cfg.Trainer),
		Disks: disk.NewWatch(cfg.DataDir), DataDir: cfg.DataDir, MinFree: int64(cfg.Service.MinFree),
	})
}

// noProposer says why no session could start with these settings: no advisor (without
// DEEPSEEK_API_KEY there is none) and no fallback to the numeric sampler. "" when one can
// propose. tune refuses with it before anything starts, and doctor fails with it; fix is
// how the caller's user turns the fallback on (doctor takes no --fallback).
func noProposer(getenv func(string) string, fallback bool, fix string) string {
	if fallback || getenv("DEEPSEEK_API_KEY") != "" {
		return ""
	}
	return "no advisor and no fallback: DEEPSEEK_API_KEY is not set, so the DeepSeek advisor (the config's advisor: section) cannot propose, " +
		"and fallback is off; set DEEPSEEK_API_KEY, or let the numeric sampler propose with " + fix
}

// How tune and doctor turn the fallback on, for noProposer.
const (
	tuneFallbackFix   = "--fallback or session.fallback: true"
	doctorFallbackFix = "session.fallback: true in the config (tunebot tune --fallback does it for one session)"
)

// buildAdvisor returns the DeepSeek advisor when DEEPSEEK_API_KEY is set (wrapped in the
// configured hybrid with the sampler), else nil: sessions then need fallback.
func buildAdvisor(cfg config.Config, e *env, db *store.DB, sampler session.Advisor, logger *slog.Logger) (session.Advisor, error) {
	key := e.getenv("DEEPSEEK_API_KEY")
	if key == "" {
		return nil, nil
	}
	ds, err := advisor.NewDeepSeek(deepSeekConfig(cfg.Advisor), key, db, logger)
	if err != nil {
		return nil, fmt.Errorf("advisor: %w", err)
	}
	if cfg.Advisor.Hybrid == "off" {
		return ds, nil
	}
	return advisor.NewHybrid(ds, sampler, cfg.Advisor.Hybrid, cfg.Advisor.StallAfter, db, logger), nil
}

func deepSeekConfig(c config.AdvisorConfig) advisor.DeepSeekConfig {
	return advisor.DeepSeekConfig{BaseURL: c.BaseURL, Model: c.Model, Timeout: c.Timeout, Temperature: c.Temperature, Redact: secret.Process()}
}

// close stops the engine (sessions with a running job become interrupted), then closes the
// store last.
func (a *app) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a.engine.Shutdown(ctx)
	if err := a.db.Close(); err != nil {
		a.log.Error("closing the store", "err", err)
	}
}

// chartsWhileTraining renders charts only once the next trainer job runs (or the session
// waits for someone): rendering is CPU work that must not sit between two training jobs.
func chartsWhileTraining(eng *session.Engine, f bot.ChartFunc) bot.ChartFunc {
	return func(ctx context.Context, s session.Session, t session.Trial, tags []string) ([]bot.Attachment, error) {
		eng.WaitForTrainer(ctx, 5*time.Second)
		return f(ctx, s, t, tags)
	}
}
