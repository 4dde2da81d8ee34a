package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"tunebot/apply"
	"tunebot/bot"
	"tunebot/config"
	"tunebot/preset"
	"tunebot/session"
)

func init() {
	register("apply", "apply diff PRESET | apply PRESET --yes | apply rollback --yes: a preset as a commit in the trainer checkout", runApply)
}

const applyUsage = `usage: tunebot apply diff PRESET [--config FILE]     show what applying PRESET would change
       tunebot apply PRESET --yes [--partial] [--from-sim] [--unconfirmed] [--config FILE]
                                                      commit PRESET on branch <prefix>PRESET, gated by the tests;
                                                      refused when apply.edits cannot write all its values, unless
                                                      --partial (the commit says which were left out);
                                                      a preset of the built-in sim needs --from-sim;
                                                      one whose gain is within the noise (or was not
                                                      measured) needs --unconfirmed
       tunebot apply rollback --yes [--config FILE]   revert the last apply with a revert commit`

func runApply(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "apply", applyUsage)
	cfgPath := fs.String("config", "", "config file with an apply: section")
	yes := fs.Bool("yes", false, "really change the checkout (without it, apply only shows the diff)")
	fromSim := fs.Bool("from-sim", false, "apply a preset the built-in sim trainer made (refused without it)")
	unconfirmed := fs.Bool("unconfirmed", false, "apply a preset whose gain is within the noise or was not measured (refused without it)")
	partial := fs.Bool("partial", false, "commit the values apply.edits can write when it cannot write them all (refused without it)")
	operands, code, ok := parseInterleaved(e, fs, args)
	if !ok {
		return code
	}
	if len(operands) == 0 || len(operands) > 2 || (operands[0] == "diff") != (len(operands) == 2) {
		return usageError(e, fs, "give diff PRESET, PRESET or rollback")
	}
	req := applyRequest{Operands: operands, Yes: *yes, FromSim: *fromSim, Partial: *partial, Unconfirmed: *unconfirmed}
	cfg, err := config.Load(*cfgPath, e.getenv)
	if err != nil {
		printProblems(e, err)
		return 1
	}
	db, err := openStore(cfg)
	if errors.Is(err, session.ErrLocked) {
		return applyViaDaemon(ctx, e, cfg, *cfgPath, req) // the daemon (or a tune) holds the store: it applies
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "apply:", err)
		return 1
	}
	defer db.Close()
	if cfg.Apply.Repo == "" { // the config check refuses an apply section without repo
		where := "no --config FILE was given"
		if *cfgPath != "" {
			where = *cfgPath + " has no apply: section"
		}
		fmt.Fprintf(e.stderr, "apply is not configured: %s; set apply.repo (and its edits and test command), see config.example.yaml\n", where)
		return 1
	}
	ap, err := apply.New(cfg.Apply, cfg.SpaceOf(cfg.Apply.Task), db, slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		printProblems(e, err)
		return 1
	}
	ap.FromSim, ap.Partial, ap.Unconfirmed = *fromSim, *partial, *unconfirmed
	return applyOp(ctx, e.stdout, e.stderr, ap, db, req, cliActor(e))
}

// applyRequest is one tunebot apply command line: diff PRESET, PRESET or rollback, as the
// daemon's socket takes it too.
type applyRequest struct {
	Operands []string `json:"operands"`
	Yes      bool     `json:"yes"`
	FromSim  bool     `json:"from_sim"`
	Partial  bool     `json:"partial"`
	// Unconfirmed acknowledges a preset whose gain was not shown to clear the noise.
	Unconfirmed bool `json:"unconfirmed"`
}

// applyOp runs req with ap (FromSim already set from req) on the presets of db, printing to
// stdout and stderr what the command prints, and returns its exit code; by is recorded as
// who applied or rolled back. The command runs it itself, or the daemon for it.
func applyOp(ctx context.Context, stdout, stderr io.Writer, ap *apply.Applier, db session.PresetStore, req applyRequest, by session.Actor) int {
	operands := req.Operands
	if operands[0] == "rollback" {
		return rollbackOp(ctx, stdout, stderr, ap, req, by)
	}
	name := operands[len(operands)-1]
	p, err := getPreset(ctx, db, name)
	if err != nil {
		fmt.Fprintln(stderr, "apply:", err)
		return 1
	}
	if err := preset.CheckApplicable(p, req.FromSim); err != nil && operands[0] != "diff" {
		fmt.Fprintln(stderr, "apply:", err) // a sim preset: refused before anything is shown as if it would run
		return 1
	}
	pv, err := ap.Diff(ctx, p)
	if err != nil {
		fmt.Fprintln(stderr, "apply:", err)
		return 1
	}
	printPreview(stdout, p.Name, pv)
	// Shown, but not committed unless acknowledged: a preset whose gain was not shown to
	// clear the noise (the diff says what an apply would ask).
	unconfirmed := preset.CheckConfirmed(p, req.Unconfirmed)
	if operands[0] == "diff" && unconfirmed != nil {
		fmt.Fprintln(stdout, "note:", unconfirmed)
	}
	if operands[0] == "diff" || len(pv.Changes) == 0 && (len(pv.Left) == 0 || req.Partial) {
		return 0 // a checkout that holds the preset already has nothing to commit, and that is fine
	}
	if len(pv.Left) > 0 && !req.Partial {
		fmt.Fprintf(stderr, "apply: preset %s cannot be applied whole (%d of its values above would not be written); add edits for them to apply.edits, or add --partial to commit the others (the commit says which were left out)\n", p.Name, len(pv.Left))
		return 1
	}
	if unconfirmed != nil {
		fmt.Fprintln(stderr, "apply:", unconfirmed)
		return 1
	}
	if !req.Yes {
		fmt.Fprintln(stdout, "add --yes to commit these changes")
		return 0
	}
	res, err := ap.Apply(ctx, p, by)
	if errors.Is(err, apply.ErrNothingToApply) {
		msg, _ := session.UserMessage(err)
		fmt.Fprintln(stdout, msg)
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "apply:", err)
		if res.TestOutputTail != "" {
			fmt.Fprintln(stderr, "test output (tail):\n"+res.TestOutputTail)
		}
		return 1
	}
	fmt.Fprintln(stdout, appliedLine(p, res))
	return 0
}

// appliedLine says what an apply of p committed: the whole preset or part of it, and for a
// preset of the built-in sim that its scores are the sim's, as the commit message says.
func appliedLine(p session.Preset, res bot.ApplyResult) string {
	line := fmt.Sprintf("preset %s committed as %s on branch %s (tests passed)", p.Name, res.Commit, res.Branch)
	if len(res.Left) > 0 {
		were := "were"
		if len(res.Left) == 1 {
			were = "was"
		}
		line = fmt.Sprintf("part of preset %s committed as %s on branch %s (tests passed); %d of its values %s left out, as the commit message says", p.Name, res.Commit, res.Branch, len(res.Left), were)
	}
	if p.Trainer == session.TrainerSim {
		line += "; it was " + preset.SimMade + ", as the commit message says"
	}
	return line
}

// rollbackOp reverts the last apply, or with no --yes says what it would revert.
func rollbackOp(ctx context.Context, stdout, stderr io.Writer, ap *apply.Applier, req applyRequest, by session.Actor) int {
	rec, err := ap.LastApply(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "apply rollback:", err)
		return 1
	}
	if !req.Yes {
		fmt.Fprintf(stdout, "would revert %s (preset %s) on branch %s; add --yes to do it\n", rec.Commit, rec.Preset, rec.Branch)
		return 0
	}
	res, err := ap.Rollback(ctx, rec, by)
	if err != nil {
		fmt.Fprintln(stderr, "apply rollback:", err)
		return 1
	}
	fmt.Fprintf(stdout, "reverted %s on %s as %s\n", res.Commit, res.Branch, res.Revert)
	return 0
}

// printPreview prints what applying preset name would change, then the values it would not
// write; an apply that would change nothing says so.
func printPreview(w io.Writer, name string, pv bot.ApplyPreview) {
	fmt.Fprint(w, bot.FormatChanges(pv.Changes))
	if len(pv.Changes) == 0 {
		fmt.Fprintf(w, "the trainer checkout already has every value of preset %s that apply.edits writes: there is nothing to commit\n", name)
	}
	fmt.Fprint(w, bot.FormatLeft(pv.Left))
}
