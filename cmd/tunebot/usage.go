package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"tunebot/config"
	"tunebot/session"
)

// The command-line conventions every subcommand keeps: -h or --help prints its usage with
// its flags on stdout and exits 0; a bad flag, a missing or unknown subcommand or operand
// prints the problem and the usage on stderr and exits 2.

// flagSet returns a subcommand's flag set; usage is its synopsis ("usage: tunebot tune
// [flags]" and what it does), which the usage prints above the flags.
func flagSet(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() { printUsage(fs.Output(), usage, fs) }
	return fs
}

func printUsage(w io.Writer, usage string, fs *flag.FlagSet) {
	fmt.Fprintln(w, usage)
	has := false
	fs.VisitAll(func(*flag.Flag) { has = true })
	if !has {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
}

// usageText is usage followed by fs's flags section, as -h prints it: for the commands
// that print their usage before any flag set parses (preset --help, events --help).
func usageText(usage string, fs *flag.FlagSet) string {
	var b bytes.Buffer
	printUsage(&b, usage, fs)
	return strings.TrimSuffix(b.String(), "\n")
}

// parseFlags parses args into fs. With ok false the command ends with code: 0 after -h or
// --help (the usage went to stdout), 2 after a bad flag (the error and the usage went to
// stderr).
func parseFlags(e *env, fs *flag.FlagSet, args []string) (code int, ok bool) {
	var msg bytes.Buffer
	fs.SetOutput(&msg)
	err := fs.Parse(args)
	fs.SetOutput(e.stderr)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(e.stdout)
		fs.Usage()
		fs.SetOutput(e.stderr)
		return 0, false
	}
	_, _ = e.stderr.Write(withFlagHint(fs, err, msg.Bytes()))
	return 2, false
}

// withFlagHint adds to the flag package's "flag provided but not defined: -bsae" the flag
// meant, " (did you mean --base?)", when one is close.
func withFlagHint(fs *flag.FlagSet, err error, msg []byte) []byte {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return msg
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	n, ok := session.Closest(strings.TrimLeft(name, "-"), names)
	if !ok {
		return msg
	}
	return bytes.Replace(msg, []byte(err.Error()), []byte(err.Error()+" (did you mean --"+n+"?)"), 1)
}

// parseInterleaved parses args whose flags may come before or after the operands
// ("preset show NAME --config FILE") and returns the operands, as parseFlags.
func parseInterleaved(e *env, fs *flag.FlagSet, args []string) (operands []string, code int, ok bool) {
	for rest := args; ; rest = fs.Args()[1:] {
		if code, ok := parseFlags(e, fs, rest); !ok {
			return nil, code, false
		}
		if fs.NArg() == 0 {
			return operands, 0, true
		}
		operands = append(operands, fs.Arg(0))
	}
}

// parseConfigFlags parses a command line of flags alone, --config among them (path), and
// loads that config. With ok false the command ends with code: as parseFlags, 2 after an
// operand (named), 1 after a bad config (each problem printed).
func parseConfigFlags(e *env, fs *flag.FlagSet, args []string, path *string) (cfg config.Config, code int, ok bool) {
	if code, ok := parseFlags(e, fs, args); !ok {
		return cfg, code, false
	}
	if fs.NArg() > 0 {
		return cfg, usageError(e, fs, "unexpected argument %q", fs.Arg(0)), false
	}
	cfg, err := config.Load(*path, e.getenv)
	if err != nil {
		printProblems(e, err)
		return cfg, 1, false
	}
	return cfg, 0, true
}

// dataDirFlag adds --data-dir to fs, as tune takes it; the func it returns points a loaded
// config at the directory given (without the flag, the config's data_dir stays).
func dataDirFlag(fs *flag.FlagSet) func(cfg *config.Config) {
	dir := fs.String("data-dir", "", "data directory (default: the config's data_dir), as tune's")
	return func(cfg *config.Config) {
		if *dir != "" {
			cfg.DataDir = *dir
		}
	}
}

// usageError says what is wrong with a command line, then the usage, on stderr: exit 2.
func usageError(e *env, fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "tunebot %s: %s\n\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return 2
}

// subcommand reads the subcommand of a command that has them (config check, preset show):
// ok with its name, or the command ends with code: 0 after help (the usage on stdout), 2
// when it is missing or unknown (named, with the one meant, and the usage on stderr).
func subcommand(e *env, cmd, usage string, subs []string, args []string) (sub string, code int, ok bool) {
	if len(args) == 0 {
		fmt.Fprintf(e.stderr, "tunebot %s: which one? %s\n\n%s\n", cmd, strings.Join(subs, ", "), usage)
		return "", 2, false
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(e.stdout, usage)
		return "", 0, false
	}
	if slices.Contains(subs, args[0]) {
		return args[0], 0, true
	}
	fmt.Fprintf(e.stderr, "tunebot %s: unknown subcommand %q%s\n\n%s\n", cmd, args[0], didYouMean(args[0], subs), usage)
	return "", 2, false
}

// didYouMean is " (did you mean X?)" for the name closest to word, "" for none close.
func didYouMean(word string, names []string) string { return session.DidYouMean(word, names) }
