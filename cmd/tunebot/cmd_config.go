package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"tunebot/session"
)

func init() {
	register("config", "config check --config FILE: validate a config and name every bad field", runConfig)
}

func runConfig(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(e.stderr, "usage: tunebot config check --config FILE")
		return 2
	}
	fs := flag.NewFlagSet("config check", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	path := fs.String("config", "", "config file (YAML)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *path == "" {
		fmt.Fprintln(e.stderr, "config check: --config FILE is required")
		return 2
	}
	cfg, err := loadConfig(*path, e.getenv)
	if err != nil {
		printProblems(e, err)
	}
	for _, w := range cfg.warnings {
		fmt.Fprintln(e.stderr, "warning: "+w)
	}
	if err != nil {
		return 1
	}
	fmt.Fprintf(e.stdout, "%s: ok\n", *path)
	return 0
}

// printProblems writes an error to stderr, one problem per line when it names several.
func printProblems(e *env, err error) {
	var ie *session.InvalidError
	if errors.As(err, &ie) {
		fmt.Fprintln(e.stderr, ie.What+":")
		for _, p := range ie.Problems {
			fmt.Fprintln(e.stderr, "  - "+p)
		}
		return
	}
	fmt.Fprintln(e.stderr, err)
}
