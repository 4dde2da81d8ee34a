package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"tunebot/config"
	"tunebot/httpd"
	"tunebot/private"
	"tunebot/retention"
	"tunebot/secret"
	"tunebot/session"
	"tunebot/store"
)

func init() {
	register("prune", "prune [--older-than 90d] [--keep-last N] [--curves downsample|drop|keep] [--dry-run] --config FILE [--data-dir DIR]: thin old sessions' curves, delete their run dirs, compact the data file", runPrune)
}

const pruneUsage = `usage: tunebot prune [--config FILE] [--data-dir DIR] [--older-than AGE] [--keep-last N] [--curves downsample|drop|keep]
                    [--points N] [--run-dirs=false] [--compact=false] [--dry-run] [--json]

Thins old sessions' curves and deletes their run directories (never their records, nor a
preset's policy), then compacts the data file; the running daemon does it when it holds the file.`

// prunePath is where the running daemon prunes for `tunebot prune`: it holds the data file.
const prunePath = "/prune"

// pruneTimeout bounds a prune the daemon runs for the command: compacting a large file
// takes seconds to minutes.
const pruneTimeout = 30 * time.Minute

// pruneRequest is what `tunebot prune` asks of the running daemon. By is the operator when
// the command prunes itself; the daemon ignores it and records the socket's caller instead.
type pruneRequest struct {
	Options retention.Options `json:"options"`
	By      session.Actor     `json:"by"`
}

func runPrune(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "prune", pruneUsage)
	cfgPath := fs.String("config", "", "config file (default: the built-in defaults); its retention section gives the defaults of the flags below")
	def := retention.Defaults()
	olderThan := def.OlderThan
	fs.TextVar(&olderThan, "older-than", def.OlderThan, "prune sessions that ended longer ago than this (90d, 12w, 36h)")
	keepLast := fs.Int("keep-last", def.KeepLast, "never prune the newest N finished sessions (an unfinished one is never pruned, and not counted)")
	curves := fs.String("curves", def.Curves, "what to do with their curves: downsample, drop or keep")
	points := fs.Int("points", def.Points, "points each curve keeps with --curves downsample")
	runDirs := fs.Bool("run-dirs", def.RunDirs, "delete their run directories and charts (each preset's policy.onnx and checkpoint stay)")
	compact := fs.Bool("compact", def.Compact, "compact the data file afterwards, through a checked copy")
	dryRun := fs.Bool("dry-run", false, "say what would go, change nothing")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	useDataDir := dataDirFlag(fs)
	cfg, code, ok := parseConfigFlags(e, fs, args, cfgPath)
	if !ok {
		return code
	}
	useDataDir(&cfg)
	// The config's retention section is the default; a flag given on the command line wins.
	o := cfg.Retention.Options()
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "older-than":
			o.OlderThan = time.Duration(olderThan)
		case "keep-last":
			o.KeepLast = *keepLast
		case "curves":
			o.Curves = *curves
		case "points":
			o.Points = *points
		case "run-dirs":
			o.RunDirs = *runDirs
		case "compact":
			o.Compact = *compact
		}
	})
	o.DryRun = *dryRun
	if err := o.Check(); err != nil {
		printProblems(e, err)
		return 2
	}
	rep, err := prune(ctx, cfg, pruneRequest{Options: o, By: cliActor(e)})
	if err != nil {
		fmt.Fprintln(e.stderr, "prune:", err)
		return 1
	}
	if *asJSON {
		_ = writeJSON(e, rep)
		return 0
	}
	printPruneReport(e.stdout, rep)
	return 0
}

// pruner is retention over the data dir of cfg and db.
func pruner(cfg config.Config, db retention.Store) *retention.Pruner {
	return &retention.Pruner{Store: db, SessionsDir: sessionsDir(cfg), ReportsDir: reportsDir(cfg)}
}

// prune runs req on the data dir of cfg: itself when no daemon holds the data file, else
// through the running daemon's socket, which then prunes and compacts its open store.
func prune(ctx context.Context, cfg config.Config, req pruneRequest) (retention.Report, error) {
	path := dataFile(cfg)
	if _, err := os.Stat(path); err != nil {
		return retention.Report{}, fmt.Errorf("no data file at %s to prune: %w", path, err)
	}
	// prune removes and rewrites files under data_dir (run directories, charts, the
	// compacted store): only in one nobody else can write.
	if !req.Options.DryRun {
		if err := private.CheckDataDir(cfg.DataDir); err != nil {
			return retention.Report{}, err
		}
	}
	// A dry run changes nothing, not even the file's last transaction.
	db, err := store.Open(path, store.Options{Timeout: 200 * time.Millisecond, ReadOnly: req.Options.DryRun, Redact: secret.Process(), OpenFile: openOwnStore})
	if err == nil {
		defer db.Close()
		return pruner(cfg, db).Run(ctx, req.Options, req.By)
	}
	if !errors.Is(err, session.ErrLocked) {
		return retention.Report{}, err
	}
	token, err := daemonToken(cfg, "prune")
	if err != nil {
		return retention.Report{}, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return retention.Report{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, pruneTimeout)
	defer cancel()
	resp, err := httpd.Call(ctx, socketPath(cfg), http.MethodPost, prunePath, token, bytes.NewReader(body))
	if err != nil {
		return retention.Report{}, fmt.Errorf("a running tunebot holds %s, and asking it to prune failed: %w", path, err)
	}
	defer resp.Body.Close()
	var rep retention.Report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return rep, fmt.Errorf("reading the daemon's report: %w", err)
	}
	return rep, nil
}

// pruneHandler prunes for `tunebot prune` while the daemon holds the data file; the audit
// (and so the daemon's log, through actionLog) says who pruned what: the user the kernel
// says is at the socket's other end, not the request's by, which anyone can write.
func pruneHandler(p *retention.Pruner, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req pruneRequest
		if !decodeSocketRequest(w, r, "a prune request", &req) {
			return
		}
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(pruneTimeout))
		rep, err := p.Run(r.Context(), req.Options, socketCaller(r))
		var invalid *session.InvalidError
		switch {
		case errors.As(err, &invalid):
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		case err != nil:
			log.Error("pruning for tunebot prune", "err", err)
			http.Error(w, "pruning failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	})
}

// printPruneReport says what a prune did, or would do, a session a line.
func printPruneReport(w io.Writer, rep retention.Report) {
	o := rep.Options
	would := ""
	if o.DryRun {
		would = "would be "
	}
	what := "curves kept"
	switch o.Curves {
	case session.CurvesDownsample:
		what = fmt.Sprintf("curves %sthinned to %d points", would, o.Points)
	case session.CurvesDrop:
		what = "curves " + would + "dropped"
	}
	if o.RunDirs {
		what += ", run dirs and charts " + would + "deleted (each preset's policy and checkpoint kept)"
	}
	fmt.Fprintf(w, "sessions that ended before %s (older than %s), except the newest %d and any unfinished one: %s\n",
		rep.Cutoff.Format("2006-01-02"), retention.Age(o.OlderThan), o.KeepLast, what)
	for _, s := range rep.Sessions {
		fmt.Fprintf(w, "  %s  %-12s %-10s ended %s  curves %s → %s  files %s",
			session.Short(s.ID), s.RunName, s.State, s.Ended.Format("2006-01-02"), session.Bytes(s.CurvesBefore), session.Bytes(s.CurvesAfter), session.Bytes(s.RunDirBytes))
		if len(s.Kept) > 0 {
			fmt.Fprintf(w, "  kept: %s", strings.Join(s.Kept, ", "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%d session(s): curves %s → %s, %s of files %sdeleted; ", len(rep.Sessions), session.Bytes(rep.CurvesBefore),
		session.Bytes(rep.CurvesAfter), session.Bytes(rep.RunDirBytes), would)
	switch {
	case o.DryRun:
		fmt.Fprintf(w, "data file %s, %s of it free pages. Nothing was changed (--dry-run).\n", session.Bytes(rep.FileBefore), session.Bytes(rep.Free))
		fmt.Fprintln(w, wouldFree(rep))
	case rep.Compacted:
		fmt.Fprintf(w, "data file %s → %s (compacted; the copy passed its consistency check) in %s.\n",
			session.Bytes(rep.FileBefore), session.Bytes(rep.FileAfter), rep.Took.Round(time.Millisecond))
	default:
		fmt.Fprintf(w, "data file %s, not compacted, in %s.\n", session.Bytes(rep.FileAfter), rep.Took.Round(time.Millisecond))
	}
}

// wouldFree says how much disk space a dry run's prune would give back: the files it
// deletes, and with compaction the data file's free pages and the curves it thins.
func wouldFree(rep retention.Report) string {
	file := int64(0)
	if rep.Options.Compact {
		file = rep.Free + max(rep.CurvesBefore-rep.CurvesAfter, 0)
	}
	return fmt.Sprintf("It would free about %s on disk: %s of files and up to %s of the data file.",
		session.Bytes(rep.RunDirBytes+file), session.Bytes(rep.RunDirBytes), session.Bytes(file))
}
