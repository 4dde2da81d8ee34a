package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"tunebot/config"
	"tunebot/session"
)

func init() {
	register("proposal", "proposal check [--base CONFIG.json] PATCH.json: validate a patch, print the merged config", runProposal)
}

func runProposal(ctx context.Context, e *env, args []string) int {
	const usage = `usage: tunebot proposal check [--base CONFIG.json] [--config FILE] [--task TASK] PATCH.json   ('-' reads stdin)

Checks a patch under the proposal rules: exit 0 and the merged configuration, or each problem.`
	if _, code, ok := subcommand(e, "proposal", usage, []string{"check"}, args); !ok {
		return code
	}
	fs := flagSet(e, "proposal check", usage)
	basePath := fs.String("base", "", "reward configuration the patch applies to, full or partial (merged over the defaults; default: the defaults)")
	cfgPath := fs.String("config", "", "config file whose reward_space to use (default: the built-in space)")
	task := fs.String("task", "", "the task whose reward space to use, one of the config's tasks (default: session.task)")
	if code, ok := parseFlags(e, fs, args[1:]); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(e, fs, "exactly one PATCH.json is needed")
	}
	cfg, err := config.Load(*cfgPath, e.getenv)
	if err != nil {
		printProblems(e, err)
		return 1
	}
	_, space, err := cfg.TaskFor(*task) // a task the config does not list is refused, not checked against another's space
	if err != nil {
		return usageError(e, fs, "%s", err)
	}
	base := space.Defaults()
	if *basePath != "" {
		raw, err := readInput(e, *basePath)
		if err != nil {
			fmt.Fprintln(e.stderr, err)
			return 1
		}
		partial, err := session.DecodeConfig(raw)
		if err == nil {
			base, err = space.Complete(partial) // a partial base is merged over the defaults
		}
		if err != nil {
			printProblemLines(e, "--base "+*basePath, err)
			return 1
		}
	}
	raw, err := readInput(e, fs.Arg(0))
	if err != nil {
		fmt.Fprintln(e.stderr, err)
		return 1
	}
	patch, err := session.DecodePatch(raw)
	if err == nil {
		var merged session.RewardConfig
		if merged, err = space.Validate(base, patch, nil); err == nil {
			_ = writeJSON(e, merged)
			return 0
		}
	}
	printProblemLines(e, fs.Arg(0), err)
	return 1
}

// printProblemLines prints each problem on its own line, prefixed by where it was found.
func printProblemLines(e *env, where string, err error) {
	var ie *session.InvalidError
	if errors.As(err, &ie) {
		for _, p := range ie.Problems {
			fmt.Fprintf(e.stderr, "%s: %s\n", where, p)
		}
		return
	}
	fmt.Fprintf(e.stderr, "%s: %v\n", where, err)
}

func readInput(e *env, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(io.LimitReader(e.stdin, 1<<20))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s does not exist", path)
		}
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return b, nil
}
