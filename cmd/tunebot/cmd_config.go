package main

import (
	"context"
	"errors"
	"fmt"

	"tunebot/config"
	"tunebot/session"
)

func init() {
	register("config", "config check --config FILE: validate a config and name every bad field", runConfig)
}

const configUsage = `usage: tunebot config check --config FILE

Checks a config file and names every bad field, with its line or key path.`

func runConfig(ctx context.Context, e *env, args []string) int {
	if _, code, ok := subcommand(e, "config", configUsage, []string{"check"}, args); !ok {
		return code
	}
	fs := flagSet(e, "config check", configUsage)
	path := fs.String("config", "", "config file (YAML)")
	if code, ok := parseFlags(e, fs, args[1:]); !ok {
		return code
	}
	if *path == "" {
		return usageError(e, fs, "--config FILE is required")
	}
	if fs.NArg() > 0 {
		return usageError(e, fs, "unexpected argument %q", fs.Arg(0))
	}
	cfg, err := config.Load(*path, e.getenv)
	if err != nil {
		printProblems(e, err)
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(e.stderr, "warning: "+w)
	}
	if err != nil {
		return 1
	}
	fmt.Fprintf(e.stdout, "%s: ok\n", *path)
	if note := cfg.SharedNote(); note != "" {
		fmt.Fprintln(e.stdout, "note: "+note)
	}
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
