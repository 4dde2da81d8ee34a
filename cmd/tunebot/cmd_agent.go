package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"tunebot/advisor"
)

func init() {
	register("agent", "agent test --config FILE: check the DeepSeek advisor", runAgent)
}

// runAgent reports whether the advisor is configured and makes one live round trip. The key
// is read from the environment only and never printed, even when a server echoes it.
func runAgent(ctx context.Context, e *env, args []string) int {
	const usage = `usage: tunebot agent test [--config FILE]

Says whether the DeepSeek advisor is configured (DEEPSEEK_API_KEY) and makes one live call.`
	if _, code, ok := subcommand(e, "agent", usage, []string{"test"}, args); !ok {
		return code
	}
	fs := flagSet(e, "agent test", usage)
	path := fs.String("config", "", "config file (YAML); the embedded defaults when empty")
	cfg, code, ok := parseConfigFlags(e, fs, args[1:], path)
	if !ok {
		return code
	}
	key := e.getenv("DEEPSEEK_API_KEY")
	redact := func(s string) string {
		if key == "" {
			return s
		}
		return strings.ReplaceAll(s, key, "[redacted]")
	}
	fmt.Fprintln(e.stdout, "DeepSeek advisor")
	if key == "" {
		fmt.Fprintln(e.stdout, "  configured: no (DEEPSEEK_API_KEY is not set)")
	} else {
		fmt.Fprintln(e.stdout, "  configured: yes (DEEPSEEK_API_KEY is set)")
	}
	fmt.Fprintf(e.stdout, "  base URL:   %s\n", redact(cfg.Advisor.BaseURL))
	fmt.Fprintf(e.stdout, "  model:      %s\n", redact(cfg.Advisor.Model))
	if key == "" {
		fmt.Fprintln(e.stdout, "  live test:  skipped: set DEEPSEEK_API_KEY in the environment to use the advisor")
		return 1
	}
	ds, err := advisor.NewDeepSeek(deepSeekConfig(cfg.Advisor), key, nil, nil)
	if err != nil {
		fmt.Fprintf(e.stdout, "  live test:  not run: %s\n", redact(err.Error()))
		return 1
	}
	res, err := ds.Test(ctx)
	if err != nil || !res.OK {
		msg := res.Error
		if msg == "" && err != nil {
			msg = err.Error()
		}
		fmt.Fprintf(e.stdout, "  live test:  FAILED after %s: %s\n", res.Latency.Round(time.Millisecond), redact(msg))
		return 1
	}
	fmt.Fprintf(e.stdout, "  live test:  ok: %s answered in %s\n", redact(res.Model), res.Latency.Round(time.Millisecond))
	return 0
}
