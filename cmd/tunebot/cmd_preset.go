package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"tunebot/preset"
	"tunebot/session"
)

func init() {
	register("preset", "preset list | show NAME | export NAME [-o FILE] | import NAME FILE: the saved configurations", runPreset)
}

const presetUsage = `usage: tunebot preset list [--config FILE]
       tunebot preset show NAME [--config FILE]
       tunebot preset export NAME [-o FILE] [--config FILE]   (the file --reward-config takes)
       tunebot preset import NAME FILE [--config FILE]        ('-' reads stdin)`

// cliActor is the person at the terminal, for the audit.
func cliActor(e *env) session.Actor {
	name := e.getenv("USER")
	if name == "" {
		name = "cli"
	}
	return session.Actor{Platform: "cli", ID: name, Name: name}
}

func runPreset(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, presetUsage)
		return 2
	}
	sub := args[0]
	fs := flag.NewFlagSet("preset "+sub, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	cfgPath := fs.String("config", "", "config file (default: the built-in defaults)")
	out := fs.String("o", "", "export: write to FILE instead of stdout")
	// Flags may come before or after the operands.
	var operands []string
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		operands = append(operands, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	want := map[string]int{"list": 0, "show": 1, "export": 1, "import": 2}
	n, ok := want[sub]
	if !ok || len(operands) != n {
		fmt.Fprintln(e.stderr, presetUsage)
		return 2
	}
	if *out != "" && sub != "export" {
		fmt.Fprintln(e.stderr, "preset: -o applies to export only")
		return 2
	}
	cfg, db, ok := loadWithStore(e, *cfgPath, "preset")
	if !ok {
		return 1
	}
	defer db.Close()
	space := cfg.space()

	switch sub {
	case "list":
		ps, err := db.Presets(ctx)
		if err != nil {
			fmt.Fprintln(e.stderr, "preset list:", err)
			return 1
		}
		fmt.Fprint(e.stdout, preset.FormatList(ps))
	case "show":
		p, err := preset.Get(ctx, db, operands[0])
		if err != nil {
			return presetFail(e, err)
		}
		fmt.Fprint(e.stdout, preset.FormatShow(p, space))
	case "export":
		p, err := preset.Get(ctx, db, operands[0])
		if err != nil {
			return presetFail(e, err)
		}
		data := preset.Export(p)
		if *out == "" {
			_, _ = e.stdout.Write(data)
			return 0
		}
		if err := os.WriteFile(*out, data, 0o644); err != nil {
			fmt.Fprintf(e.stderr, "preset export: writing %s: %v\n", *out, err)
			return 1
		}
		fmt.Fprintf(e.stderr, "preset %s written to %s\n", p.Name, *out)
	case "import":
		data, err := readInput(e, operands[1])
		if err != nil {
			fmt.Fprintln(e.stderr, "preset import:", err)
			return 1
		}
		p, err := preset.Import(ctx, db, space, operands[0], data, cliActor(e))
		if err != nil {
			var ie *session.InvalidError
			if errors.As(err, &ie) {
				printProblemLines(e, operands[1], err)
				return 1
			}
			return presetFail(e, err)
		}
		fmt.Fprintf(e.stdout, "preset %s imported; start a session from it with preset=%s\n", p.Name, p.Name)
	}
	return 0
}

func presetFail(e *env, err error) int {
	fmt.Fprintln(e.stderr, "preset:", err)
	return 1
}
