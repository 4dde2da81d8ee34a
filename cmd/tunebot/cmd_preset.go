package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"tunebot/config"
	"tunebot/disk"
	"tunebot/preset"
	"tunebot/session"
)

func init() {
	register("preset", "preset list | show NAME | export NAME [-o FILE] | import NAME FILE: the saved configurations", runPreset)
}

const presetUsage = `usage: tunebot preset list [--config FILE] [--data-dir DIR]
       tunebot preset show NAME [--config FILE] [--data-dir DIR]
       tunebot preset export NAME [-o FILE] [--config FILE] [--data-dir DIR]   (the file --reward-config takes)
       tunebot preset import NAME FILE [--task TASK] [--config FILE] [--data-dir DIR]
                                  ('-' reads stdin; TASK: one of the config's tasks, default session.task)`

// cliActor is the person at the terminal, for the audit.
func cliActor(e *env) session.Actor {
	name := e.getenv("USER")
	if name == "" {
		name = "cli"
	}
	return session.Actor{Platform: "cli", ID: name, Name: name}
}

func runPreset(ctx context.Context, e *env, args []string) int {
	want := map[string]int{"list": 0, "show": 1, "export": 1, "import": 2}
	fs := flagSet(e, "preset", presetUsage)
	cfgPath := fs.String("config", "", "config file (default: the built-in defaults)")
	useDataDir := dataDirFlag(fs)
	out := fs.String("o", "", "export: write to FILE instead of stdout")
	task := fs.String("task", "", "import: the task the file's values are for (default: session.task; needed when several tasks have no default)")
	sub, code, ok := subcommand(e, "preset", usageText(presetUsage, fs), []string{"list", "show", "export", "import"}, args)
	if !ok {
		return code
	}
	fs.Init("preset "+sub, flag.ContinueOnError)
	operands, code, ok := parseInterleaved(e, fs, args[1:])
	if !ok {
		return code
	}
	if n := want[sub]; len(operands) != n {
		return usageError(e, fs, "%s takes %d operand(s), got %d", sub, n, len(operands))
	}
	if *out != "" && sub != "export" {
		return usageError(e, fs, "-o applies to export only")
	}
	if *task != "" && sub != "import" {
		return usageError(e, fs, "--task applies to import only")
	}
	book, spaceOf, closeBook, ok := openPresets(e, *cfgPath, useDataDir)
	if !ok {
		return 1
	}
	defer closeBook()
	return presetOp(ctx, e, book, spaceOf, sub, operands, presetFlags{out: *out, task: *task})
}

// presetFlags are the flags of one subcommand: export's -o FILE ("" for stdout), import's
// --task ("" for the default).
type presetFlags struct{ out, task string }

// presetOp runs subcommand sub of tunebot preset on book with its flags.
func presetOp(ctx context.Context, e *env, book presetBook, spaceOf func(task string) *session.Space, sub string, operands []string, fl presetFlags) int {
	out := fl.out
	switch sub {
	case "list":
		ps, err := book.list(ctx)
		if err != nil {
			fmt.Fprintln(e.stderr, "preset list:", err)
			return 1
		}
		fmt.Fprint(e.stdout, preset.FormatList(ps))
	case "show":
		p, err := book.get(ctx, operands[0])
		if err != nil {
			return presetFail(e, err)
		}
		fmt.Fprint(e.stdout, preset.FormatShow(p, showSpace(spaceOf, p)))
	case "export":
		p, err := book.get(ctx, operands[0])
		if err != nil {
			return presetFail(e, err)
		}
		data := preset.Export(p)
		if out == "" {
			_, _ = e.stdout.Write(data)
			return 0
		}
		if err := disk.WriteFile(out, data, 0o644); err != nil { // whole or not at all
			fmt.Fprintf(e.stderr, "preset export: writing %s: %v\n", out, err)
			return 1
		}
		fmt.Fprintf(e.stderr, "preset %s written to %s\n", p.Name, out)
	case "import":
		data, err := readInput(e, operands[1])
		if err != nil {
			fmt.Fprintln(e.stderr, "preset import:", err)
			return 1
		}
		p, err := book.importFile(ctx, operands[0], fl.task, data)
		if err != nil {
			var ie *session.InvalidError
			if errors.As(err, &ie) {
				printProblemLines(e, operands[1], err)
				return 1
			}
			return presetFail(e, err)
		}
		fmt.Fprintf(e.stdout, "preset %s imported; start a session from it with tunebot tune --preset %s (in chat: /tune start preset=%s)\n", p.Name, p.Name, p.Name)
		if note := preset.RoundedNote(data, p.Config); note != "" {
			fmt.Fprintln(e.stdout, note)
		}
	}
	return 0
}

// showSpace is the space a preset is shown against: its task's, else the default one.
func showSpace(spaceOf func(task string) *session.Space, p session.Preset) *session.Space {
	if sp := spaceOf(p.Task); sp != nil {
		return sp
	}
	return session.DefaultSpace()
}

// openPresets opens the presets of the config's data dir (or --data-dir): the store when no
// daemon holds it, else the running daemon's socket, so the command works either way. ok
// false means the problem is printed and the exit is 1; the func closes what was opened.
func openPresets(e *env, cfgPath string, useDataDir func(*config.Config)) (presetBook, func(task string) *session.Space, func(), bool) {
	cfg, err := config.Load(cfgPath, e.getenv)
	if err != nil {
		printProblems(e, err)
		return nil, nil, nil, false
	}
	useDataDir(&cfg)
	db, err := openStore(cfg)
	if err == nil {
		return storeBook{db: db, cfg: cfg, by: cliActor(e)}, cfg.SpaceOf, func() { db.Close() }, true
	}
	if errors.Is(err, session.ErrLocked) {
		book, derr := newDaemonBook(cfg)
		if derr == nil {
			return book, cfg.SpaceOf, func() {}, true
		}
		err = derr
	}
	fmt.Fprintln(e.stderr, "preset:", err)
	return nil, nil, nil, false
}

// getPreset is preset.Get, a missing preset answered with where the shell lists them.
func getPreset(ctx context.Context, db session.PresetStore, name string) (session.Preset, error) {
	p, err := preset.Get(ctx, db, name)
	return p, preset.WithListHint(err, "tunebot preset list")
}

func presetFail(e *env, err error) int {
	fmt.Fprintln(e.stderr, "preset:", err)
	return 1
}
