package bot

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"tunebot/session"
)

// Subcommands of preset and schedule.
var (
	presetSubs   = []Verb{"show", "list", "export", "import"}
	scheduleSubs = []Verb{"add", "list", "remove"}
)

// MaxSpec caps a cron spec's length; real ones are under 40 characters.
const MaxSpec = 100

// parseOps parses the preset, import, policy, apply and schedule commands. text is the
// whole command as typed, for the parts that are not words (JSON, a quoted cron spec).
func parseOps(c Command, args []string, text string, space *session.Space) (Command, error) {
	name := func(usage string) (string, error) {
		if len(args) != 1 {
			return "", session.Userf(nil, "usage: %s", usage)
		}
		if !session.ValidName(args[0]) {
			return "", session.Userf(nil, "%q is not a preset name (letters, digits, _ . - only, starting with a letter or digit)", Truncate(args[0], 40))
		}
		return args[0], nil
	}
	var err error
	switch c.Verb {
	case VerbPolicy:
		c.Preset, err = name("policy PRESET (uploads the best trial's policy.onnx)")
	case VerbApply:
		if len(args) == 1 && strings.EqualFold(args[0], "rollback") {
			return Command{}, session.Userf(nil, "rollback is a command of its own: /tune rollback")
		}
		c.Preset, err = name("apply PRESET (shows the diff, then asks to confirm)")
	case VerbImport:
		if len(args) == 0 {
			return Command{}, session.Userf(nil, "usage: import NAME followed by the preset's JSON (the file /tune export gives), e.g. in a ``` code block")
		}
		if !session.ValidName(args[0]) {
			return Command{}, session.Userf(nil, "%q is not a preset name (letters, digits, _ . - only, starting with a letter or digit)", Truncate(args[0], 40))
		}
		c.Preset = args[0]
		c.Data = unfence(afterWords(text, 2))
		if c.Data == "" {
			return Command{}, session.Userf(nil, "import %s needs the preset's JSON in the same message, after the name (the file /tune export gives, e.g. in a ``` code block)", c.Preset)
		}
	case VerbPreset:
		return parsePreset(c, args, text, space)
	case VerbSchedule:
		return parseSchedule(c, args, text)
	}
	if err != nil {
		return Command{}, err
	}
	return c, nil
}

func parsePreset(c Command, args []string, text string, space *session.Space) (Command, error) {
	const usage = "usage: preset show NAME, or preset list"
	if len(args) == 0 {
		return Command{}, session.Userf(nil, "%s", usage)
	}
	sub := Verb(strings.ToLower(args[0]))
	switch sub {
	case "list":
		if len(args) > 1 {
			return Command{}, session.Userf(nil, "preset list takes no arguments")
		}
		return Command{Verb: VerbPresets, Rung: -1}, nil
	case "show":
		if len(args) != 2 {
			return Command{}, session.Userf(nil, "usage: preset show NAME")
		}
		if !session.ValidName(args[1]) {
			return Command{}, session.Userf(nil, "%q is not a preset name (letters, digits, _ . - only, starting with a letter or digit)", Truncate(args[1], 40))
		}
		c.Sub, c.Preset = string(sub), args[1]
		return c, nil
	case "export", "import":
		// "preset export X" reads as naturally as "export X": the same command.
		return parseVerb(Verb(sub), args[1:], afterWords(text, 1), space)
	}
	return Command{}, session.Userf(nil, "unknown preset subcommand %q%s; %s", Truncate(args[0], 40), didYouMean(string(sub), presetSubs), usage)
}

func parseSchedule(c Command, args []string, text string) (Command, error) {
	const usage = `usage: schedule add "<cron>" [if_busy=skip|wait] <start args>, schedule list, schedule remove ID`
	if len(args) == 0 {
		return Command{}, session.Userf(nil, "%s", usage)
	}
	sub := Verb(strings.ToLower(args[0]))
	c.Sub = string(sub)
	switch sub {
	case "list":
		if len(args) > 1 {
			return Command{}, session.Userf(nil, "schedule list takes no arguments")
		}
		return c, nil
	case "remove":
		if len(args) != 2 {
			return Command{}, session.Userf(nil, "usage: schedule remove ID (schedule list shows the ids)")
		}
		if !idRE.MatchString(args[1]) {
			return Command{}, session.Userf(nil, "%q is not a schedule id (schedule list shows them)", Truncate(args[1], 40))
		}
		c.ID = args[1]
		return c, nil
	case "add":
		return parseScheduleAdd(c, afterWords(text, 2))
	}
	return Command{}, session.Userf(nil, "unknown schedule subcommand %q%s; %s", Truncate(args[0], 40), didYouMean(string(sub), scheduleSubs), usage)
}

// closingQuote maps an opening quote to the ones that may close it. Chat clients turn
// straight quotes into curly ones as people type, so those count too.
var closingQuote = map[rune]string{'"': `"”“`, '“': `”"“`, '\'': `'’`, '‘': `’'`}

// scheduleAddExample ends schedule add's messages about its form.
const scheduleAddExample = `e.g. schedule add "0 2 * * *" mode=approval trials=12`

func parseScheduleAdd(c Command, rest string) (Command, error) {
	if rest == "" {
		return Command{}, session.Userf(nil, "schedule add needs a cron spec in quotes and the start arguments, %s", scheduleAddExample)
	}
	spec, rest, err := cronSpec(rest)
	if err != nil {
		return Command{}, err
	}
	c.Spec = spec
	if n := len([]rune(c.Spec)); n > MaxSpec {
		return Command{}, session.Userf(nil, "the cron spec is %d characters; at most %d", n, MaxSpec)
	}
	words := strings.Fields(spacedEquals.ReplaceAllString(rest, "="))
	if len(words) > 0 && strings.EqualFold(words[0], string(VerbStart)) {
		words = words[1:] // "schedule add "…" start trials=8" says what it means
	}
	startArgs, ifBusy, err := ifBusyArg(words, c.IfBusy)
	if err != nil {
		return Command{}, err
	}
	c.IfBusy = ifBusy
	parsed, err := parseStart(Command{Verb: VerbStart}, startArgs)
	if err != nil {
		var ie *session.InvalidError
		if errors.As(err, &ie) {
			return Command{}, &session.InvalidError{What: "schedule refused: its start arguments", Problems: ie.Problems}
		}
		return Command{}, err
	}
	c.Start, c.Args = parsed.Start, strings.Join(startArgs, " ")
	if len(c.Args) > MaxScheduleArgs {
		return Command{}, session.Userf(nil, "start arguments are %d characters; at most %d", len(c.Args), MaxScheduleArgs)
	}
	return c, nil
}

// cronSpec splits the cron spec off the front of rest (not empty) and returns it and what
// follows: a spec in quotes (straight or curly), a descriptor (@daily; "@every 2h" takes
// its duration along), or five leading words without '=', a spec that lost its quotes on
// the way.
func cronSpec(rest string) (spec, after string, err error) {
	first := []rune(rest)[0]
	switch closers, quoted := closingQuote[first]; {
	case quoted:
		body := rest[len(string(first)):]
		end := strings.IndexAny(body, closers)
		if end < 0 {
			return "", "", session.Userf(nil, "the cron spec's closing quote is missing, %s", scheduleAddExample)
		}
		_, size := firstRune(body[end:])
		return strings.TrimSpace(body[:end]), body[end+size:], nil
	case first == '@':
		words := strings.Fields(rest)
		n := 1
		if strings.EqualFold(words[0], "@every") && len(words) > 1 {
			n = 2
		}
		return strings.Join(words[:n], " "), afterWords(rest, n), nil
	default:
		words := strings.Fields(rest)
		n := 0
		for n < len(words) && !strings.Contains(words[n], "=") && !strings.EqualFold(words[n], string(VerbStart)) {
			n++
		}
		if n != 5 {
			return "", "", session.Userf(nil, "put the cron spec in quotes: five fields \"minute hour day-of-month month day-of-week\" or a descriptor like @daily, %s", scheduleAddExample)
		}
		return strings.Join(words[:5], " "), afterWords(rest, 5), nil
	}
}

// ifBusyArg takes the if_busy=skip|wait argument out of a schedule's words (once at most;
// ifBusy is one given before) and returns the rest, the start's arguments.
func ifBusyArg(words []string, ifBusy string) (startArgs []string, _ string, _ error) {
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if ok && strings.EqualFold(k, "if_busy") {
			if ifBusy != "" {
				return nil, "", session.Userf(nil, "if_busy given twice")
			}
			ifBusy = strings.ToLower(v)
			if ifBusy != ScheduleSkip && ifBusy != ScheduleWait {
				return nil, "", session.Userf(nil, "if_busy=%s: must be %s or %s (what a scheduled start does when another session holds the GPU)", Truncate(v, 20), ScheduleSkip, ScheduleWait)
			}
			continue
		}
		startArgs = append(startArgs, w)
	}
	return startArgs, ifBusy, nil
}

func firstRune(s string) (rune, int) {
	for _, r := range s {
		return r, len(string(r))
	}
	return 0, 0
}

// afterWords returns text without its first n words (words as strings.Fields sees them),
// trimmed.
func afterWords(text string, n int) string {
	t := text
	for i := 0; i < n; i++ {
		t = strings.TrimLeftFunc(t, unicode.IsSpace)
		j := strings.IndexFunc(t, unicode.IsSpace)
		if j < 0 {
			return ""
		}
		t = t[j:]
	}
	return strings.TrimSpace(t)
}

// unfence undoes what chat does to a pasted file: a ``` code block (with or without a
// language tag), `inline code`, and the curly quotes clients put in place of straight ones
// (a reward configuration has only names and numbers, so no quote in it is meant curly).
func unfence(s string) string {
	s = strings.TrimSpace(s)
	switch {
	case len(s) >= 6 && strings.HasPrefix(s, "```") && strings.HasSuffix(s, "```"):
		s = strings.TrimSpace(s[3 : len(s)-3])
		if len(s) >= 4 && strings.EqualFold(s[:4], "json") {
			s = s[4:]
		}
	case len(s) >= 2 && strings.HasPrefix(s, "`") && strings.HasSuffix(s, "`"):
		s = s[1 : len(s)-1]
	}
	return strings.TrimSpace(strings.NewReplacer("“", `"`, "”", `"`, "„", `"`, "″", `"`).Replace(s))
}

// describe names a command for messages: "apply", "schedule add".
func (c Command) describe() string {
	if c.Sub != "" {
		return fmt.Sprintf("%s %s", c.Verb, c.Sub)
	}
	return string(c.Verb)
}
