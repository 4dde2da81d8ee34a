// Command tunebot tunes the reward weights of a legged-robot locomotion policy and is
// operated from a terminal or from chat. See README.md.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"tunebot/secret"
)

// env is what a subcommand may touch of the outside world, so tests can run commands
// in-process with their own streams.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// redact is the process's redactor (secret.Process), built once at start: stdout and
	// stderr already pass through it, and writeJSON uses it to keep --json valid JSON.
	redact *secret.Redactor
}

type command struct {
	summary string
	run     func(ctx context.Context, e *env, args []string) int
}

// commands is filled by each cmd_*.go file's init, so every subcommand lives in its own file.
var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, e *env, args []string) int) {
	if _, dup := commands[name]; dup {
		panic("command registered twice: " + name)
	}
	commands[name] = command{summary: summary, run: run}
}

func main() { os.Exit(run()) }

func run() int {
	// Before anything reads a secret: other processes of this user, the trainer among
	// them, must not read them from /proc (docs/design.md §4).
	if err := protectProcess(); err != nil {
		fmt.Fprintf(os.Stderr, "tunebot: cannot keep its secrets from other processes of this user: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Secrets come from the environment or, under systemd's LoadCredential=, from files.
	getenv := secret.WithCredentials(os.Getenv, os.Getenv(secret.CredentialsDirectory))
	// Every line the CLI prints (preset list and show, errors, summaries) leaves through
	// the one redactor.
	redact := secret.Process()
	return dispatch(ctx, &env{stdin: os.Stdin, stdout: redact.Writer(os.Stdout), stderr: redact.Writer(os.Stderr), getenv: getenv, redact: redact}, os.Args[1:])
}

// dispatch runs the subcommand args name. Bare tunebot is a usage error (exit 2, the usage
// on stderr); help, -h and --help print it on stdout and exit 0, and "help COMMAND" is
// COMMAND --help (an unknown COMMAND is a usage error naming it).
func dispatch(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if _, ok := commands[args[1]]; !ok {
				fmt.Fprintf(e.stderr, "tunebot help: unknown command %q%s; tunebot help lists the commands\n", args[1], didYouMean(args[1], commandNames()))
				return 2
			}
			return dispatch(ctx, e, []string{args[1], "--help"})
		}
		usage(e.stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "tunebot: unknown command %q%s; tunebot help lists the commands\n", args[0], didYouMean(args[0], commandNames()))
		return 2
	}
	return c.run(ctx, e, args[1:])
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: tunebot <command> [flags]   (tunebot <command> --help: its flags)\n\ncommands:")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-14s %s\n", n, commands[n].summary)
	}
}

// writeJSON is the CLI's one JSON encoder (--json, proposal check): v indented, tunebot's
// secrets masked in every string, the document still JSON.
func writeJSON(e *env, v any) error {
	buf, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if buf, err = e.redact.JSON(buf); err != nil {
		return err
	}
	_, err = e.stdout.Write(append(buf, '\n'))
	return err
}
