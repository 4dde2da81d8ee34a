package bot

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"tunebot/session"
)

// Verb is what a command asks for.
type Verb string

// Verbs of the /tune command and of thread replies (docs/design.md §6).
const (
	VerbStart   Verb = "start"
	VerbStatus  Verb = "status"
	VerbPause   Verb = "pause"
	VerbResume  Verb = "resume"
	VerbCancel  Verb = "cancel"
	VerbBest    Verb = "best"
	VerbPresets Verb = "presets"
	VerbExport  Verb = "export"
	VerbChart   Verb = "chart"
	VerbClip    Verb = "clip" // clip TRIAL[@RUNG] (or TRIAL RUNG): a trial's clip, posted
	VerbAgent   Verb = "agent"
	VerbHelp    Verb = "help"
	VerbApprove Verb = "approve"
	VerbReject  Verb = "reject"
	VerbEdit    Verb = "edit"

	// Presets, reversible apply and schedules (issue 8).
	VerbPreset   Verb = "preset"   // preset show NAME | preset list
	VerbImport   Verb = "import"   // import NAME <JSON>
	VerbPolicy   Verb = "policy"   // policy PRESET: the best trial's policy.onnx
	VerbApply    Verb = "apply"    // apply PRESET: diff, then confirm
	VerbRollback Verb = "rollback" // rollback: revert the last apply, after a confirm
	VerbSchedule Verb = "schedule" // schedule add "<cron>" <start args> | list | remove ID
	// VerbDashboard asks for a one-time sign-in link to the monitoring page (issue 15).
	VerbDashboard Verb = "dashboard"
	// VerbWhy answers with a proposal's whole evidence, of which its card shows the three
	// strongest pieces: "why 4" (a bare "why": the newest proposal).
	VerbWhy Verb = "why"
	// VerbPrefer answers "which walks better?": "prefer 8 over 5 [note]", or "prefer
	// neither [note]" for the card that waits (issue 23).
	VerbPrefer Verb = "prefer"
	// VerbGo, VerbPromote and VerbDrop steer a waiting promotion plan: "go", "promote 8"
	// (replaces the lowest planned trial), "drop 5" (the next in rank takes its place).
	VerbGo      Verb = "go"
	VerbPromote Verb = "promote"
	VerbDrop    Verb = "drop"
	// VerbComment is a thread reply that is no command: ignored politely.
	VerbComment Verb = "comment"
)

var (
	slashVerbs = []Verb{VerbStart, VerbStatus, VerbPause, VerbResume, VerbCancel, VerbBest, VerbPresets, VerbExport, VerbChart, VerbClip, VerbAgent, VerbHelp,
		VerbPreset, VerbImport, VerbPolicy, VerbApply, VerbRollback, VerbSchedule, VerbDashboard, VerbWhy}
	replyVerbs = []Verb{VerbApprove, VerbReject, VerbEdit, VerbPause, VerbResume, VerbCancel, VerbStatus, VerbWhy,
		VerbPrefer, VerbGo, VerbPromote, VerbDrop}
)

// MaxCommand caps a command's length; longer text is refused before it is read further.
const MaxCommand = 4000

// Command is a parsed /tune command or thread reply. Parsing is pure: nothing is looked
// up or executed, and no text is ever passed to a shell.
type Command struct {
	Verb     Verb
	Start    []Override // start: the settings given
	Feedback string     // reject: why, verbatim
	// Proposal is the number (Seq) of the proposal a decision or why names ("approve 4"); 0
	// when it names none, which is only clear while one proposal waits (issue 14).
	Proposal int
	Edits    []Assignment // edit: term=value assignments over the proposal's patch
	Preset   string       // export, preset show, import, policy, apply
	Trial    int          // chart, clip, promote, drop; prefer: the trial that walks better
	Rung     int          // chart, clip: -1 means the trial's highest rung
	// Other is the trial prefer says walks worse; Neither marks "prefer neither" (can't
	// tell, the waiting card), Note the note after either.
	Other   int
	Neither bool
	Note    string
	Tags    []string // chart: the tags to draw, none for the standard report
	Text    string   // comment: the text

	Sub  string // preset: show or list; schedule: add, list or remove
	Data string // import: the configuration's JSON as given (code fences and curly quotes undone)
	// Schedule add: the cron spec as given between quotes, the start arguments (checked
	// like /tune start's, also kept in Start) as the text a scheduled start parses, and the
	// if_busy policy ("" takes the configured default).
	Spec   string
	Args   string
	IfBusy string
	ID     string // schedule remove: the entry's id
}

// Assignment is one term=value of an edit. Remove (written term=-) takes the name out of
// the proposal's patch, so it keeps the value of the configuration being patched; to
// switch a term off write term=0.
type Assignment struct {
	Kind   string // "weight" or "param"
	Name   string
	Value  float64
	Remove bool
}

// Override is one key=value of /tune start, checked for type at parse time and applied
// by Command.Settings.
type Override struct {
	Key   string
	Raw   string
	apply func(*session.Settings)
}

// ParseCommand parses the text after /tune. Empty text is help.
func ParseCommand(text string, space *session.Space) (Command, error) {
	words, err := split(text)
	if err != nil {
		return Command{}, err
	}
	if len(words) == 0 {
		return Command{Verb: VerbHelp}, nil
	}
	v := Verb(strings.ToLower(words[0]))
	if !hasVerb(slashVerbs, v) {
		return Command{}, session.Userf(nil, "unknown command %q%s; try /tune help", Truncate(words[0], 40), didYouMean(string(v), slashVerbs))
	}
	return parseVerb(v, words[1:], text, space)
}

// IsCommandLine reports whether text starts with a /tune verb that is no thread reply
// ("help", "start trials=8", "best"): the terminal, which has no /tune, runs such a line as
// a command and every other line as a reply.
func IsCommandLine(text string) bool {
	words := strings.Fields(text)
	if len(words) == 0 {
		return false
	}
	v := Verb(strings.ToLower(words[0]))
	return hasVerb(slashVerbs, v) && !hasVerb(replyVerbs, v)
}

// ParseReply parses a reply in a session's thread. A reply that is no command is a
// Comment; one that looks like a misspelt command gets a "did you mean".
func ParseReply(text string, space *session.Space) (Command, error) {
	words, err := split(text)
	if err != nil {
		return Command{}, err
	}
	if len(words) == 0 {
		return Command{Verb: VerbComment, Text: text}, nil
	}
	first := strings.ToLower(words[0])
	v := Verb(first)
	if talk(v, words[1:]) {
		return Command{Verb: VerbComment, Text: text}, nil
	}
	if !hasVerb(replyVerbs, v) {
		if hasVerb(slashVerbs, v) && len(words) == 1 {
			return Command{}, session.Userf(nil, "%s is a /tune command, not a thread reply (replies: approve, reject <feedback>, edit term=value …, pause, resume, cancel, status)", v)
		}
		// A short message whose first word is one typo away from a verb is a command gone
		// wrong; anything else is people talking.
		if hint := didYouMean(first, replyVerbs); hint != "" && (len(words) == 1 || strings.Contains(words[1], "=") || utf8.RuneCountInString(first) >= 5 && session.EditDistance(first, string(closest(first, replyVerbs))) == 1) {
			return Command{}, session.Userf(nil, "unknown reply %q%s (replies: approve, reject <feedback>, edit term=value …, pause, resume, cancel, status)", Truncate(words[0], 40), hint)
		}
		return Command{Verb: VerbComment, Text: text}, nil
	}
	return parseVerb(v, words[1:], text, space)
}

func parseVerb(v Verb, args []string, text string, space *session.Space) (Command, error) {
	if space == nil {
		space = session.DefaultSpace()
	}
	c := Command{Verb: v, Rung: -1}
	noArgs := func() error {
		if len(args) > 0 {
			return session.Userf(nil, "%s takes no arguments (got %q)", v, Truncate(strings.Join(args, " "), 60))
		}
		return nil
	}
	switch v {
	case VerbApprove, VerbReject, VerbEdit, VerbWhy:
		c.Proposal, args, text = proposalPrefix(args, text)
	}
	switch v {
	case VerbApprove, VerbWhy:
		if len(args) > 0 {
			return Command{}, session.Userf(nil, "%s takes at most a proposal number, as in %s 4 (got %q)", v, v, Truncate(strings.Join(args, " "), 60))
		}
		return c, nil
	case VerbStatus, VerbPause, VerbResume, VerbCancel, VerbBest, VerbPresets, VerbAgent, VerbHelp, VerbRollback, VerbDashboard:
		return c, noArgs()
	case VerbPreset, VerbImport, VerbPolicy, VerbApply, VerbSchedule:
		return parseOps(c, args, text, space)
	case VerbReject:
		return parseReject(c, text)
	case VerbEdit:
		edits, err := ParseAssignments(strings.Join(args, " "), space, true)
		if err != nil {
			return Command{}, err
		}
		c.Edits = edits
		return c, nil
	case VerbExport:
		return parseExport(c, args)
	case VerbPrefer:
		return parsePrefer(c, args, text)
	case VerbGo:
		return c, nil
	case VerbPromote, VerbDrop:
		n, _ := trialNumber(args[0])
		c.Trial = n
		return c, nil
	case VerbChart:
		return parseChart(c, args)
	case VerbClip:
		return parseClip(c, args)
	case VerbStart:
		return parseStart(c, args)
	}
	return Command{}, session.Userf(nil, "unknown command %q", v)
}

// proposalPrefix takes a leading proposal number ("4" or "#4") off a decision's or why's
// words: it returns the number (0: none), the other words, and text (which starts with the
// verb) from the number on, so that what follows the first word is what follows both.
func proposalPrefix(args []string, text string) (int, []string, string) {
	if len(args) > 0 {
		if n, ok := proposalNumber(args[0]); ok {
			return n, args[1:], afterFirstWord(text)
		}
	}
	return 0, args, text
}

// parseReject reads a rejection's feedback, the rest of text: it is required, and at most
// session.MaxFeedback characters, as it goes verbatim into the advisor's prompt.
func parseReject(c Command, text string) (Command, error) {
	c.Feedback = strings.TrimSpace(afterFirstWord(text))
	if c.Feedback == "" {
		return Command{}, session.Userf(nil, "reject needs a reason: reject <feedback>, or reject N <feedback> for proposal N (%s)", RejectHint)
	}
	if n := utf8.RuneCountInString(c.Feedback); n > session.MaxFeedback {
		return Command{}, session.Userf(nil, "feedback is %d characters; at most %d", n, session.MaxFeedback)
	}
	return c, nil
}

// parseExport reads export's one argument, a preset name.
func parseExport(c Command, args []string) (Command, error) {
	if len(args) != 1 {
		return Command{}, session.Userf(nil, "usage: export PRESET (one preset name)")
	}
	if !session.ValidName(args[0]) {
		return Command{}, session.Userf(nil, "%q is not a preset name (letters, digits, _ . - only, starting with a letter or digit)", Truncate(args[0], 40))
	}
	c.Preset = args[0]
	return c, nil
}

// talk reports whether a reply that starts with go, promote or drop is people talking
// ("go team", "drop it") rather than a change to the promotion plan: those verbs are plain
// words, so only their exact forms ("go", "promote 8", "drop 5") are commands.
func talk(v Verb, args []string) bool {
	switch v {
	case VerbGo:
		return len(args) > 0
	case VerbPromote, VerbDrop:
		_, ok := trialNumber(strings.Join(args, " "))
		return !ok
	}
	return false
}

// trialNumber reads a trial's number: "8" or "#8".
func trialNumber(w string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(w, "#"))
	if err != nil || n < 0 || n > 999 || strings.HasPrefix(w, "+") {
		return 0, false
	}
	return n, true
}

// PreferUsage is how to answer "which walks better?" by typing.
const PreferUsage = "prefer N over M [note] (trial N walks better than trial M), or prefer neither [note] for the card that waits (can't tell)"

// parsePrefer reads "prefer 8 over 5 [note]" and "prefer neither [note]".
func parsePrefer(c Command, args []string, text string) (Command, error) {
	rest := strings.TrimSpace(afterFirstWord(text))
	switch {
	case len(args) >= 1 && strings.EqualFold(args[0], "neither"):
		c.Neither, c.Note = true, strings.TrimSpace(afterFirstWord(rest))
	case len(args) >= 3 && strings.EqualFold(args[1], "over"):
		a, ok1 := trialNumber(args[0])
		b, ok2 := trialNumber(args[2])
		if !ok1 || !ok2 || a == b {
			return Command{}, session.Userf(nil, "usage: %s", PreferUsage)
		}
		c.Trial, c.Other = a, b
		for range 3 {
			rest = strings.TrimSpace(afterFirstWord(rest))
		}
		c.Note = rest
	default:
		return Command{}, session.Userf(nil, "usage: %s", PreferUsage)
	}
	if n := utf8.RuneCountInString(c.Note); n > session.MaxFeedback {
		return Command{}, session.Userf(nil, "the note is %d characters; at most %d", n, session.MaxFeedback)
	}
	return c, nil
}

var tagRE = regexp.MustCompile(`^[A-Za-z0-9_./-]{1,128}$`)

func parseChart(c Command, args []string) (Command, error) {
	if len(args) == 0 {
		return Command{}, session.Userf(nil, "usage: chart TRIAL[@RUNG] [TAG...], e.g. chart 3 or chart 3@1 Train/mean_reward")
	}
	num, rung, hasRung := strings.Cut(args[0], "@")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > 999 {
		return Command{}, session.Userf(nil, "chart: %q is not a trial number", Truncate(args[0], 40))
	}
	c.Trial = n
	if hasRung {
		r, err := strconv.Atoi(rung)
		if err != nil || r < 0 || r > 9 {
			return Command{}, session.Userf(nil, "chart: %q is not a rung", Truncate(rung, 20))
		}
		c.Rung = r
	}
	if len(args)-1 > 8 {
		return Command{}, session.Userf(nil, "chart: at most 8 tags (got %d)", len(args)-1)
	}
	var bad []string
	for _, tag := range args[1:] {
		if !tagRE.MatchString(tag) {
			bad = append(bad, Truncate(tag, 40))
			continue
		}
		c.Tags = append(c.Tags, tag)
	}
	if len(bad) > 0 {
		return Command{}, session.Userf(nil, "chart: not a tag name: %q (letters, digits, _ . / - only)", bad)
	}
	return c, nil
}

// parseClip reads clip TRIAL[@RUNG] or clip TRIAL RUNG.
func parseClip(c Command, args []string) (Command, error) {
	usage := "usage: clip TRIAL [RUNG], e.g. clip 3 or clip 3 1 (also 3@1)"
	if len(args) == 0 || len(args) > 2 || len(args) == 2 && strings.Contains(args[0], "@") {
		return Command{}, session.Userf(nil, "%s", usage)
	}
	num, rung, hasRung := strings.Cut(args[0], "@")
	if len(args) == 2 {
		rung, hasRung = args[1], true
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > 999 {
		return Command{}, session.Userf(nil, "clip: %q is not a trial number; %s", Truncate(num, 40), usage)
	}
	c.Trial = n
	if hasRung {
		r, err := strconv.Atoi(rung)
		if err != nil || r < 0 || r > 9 {
			return Command{}, session.Userf(nil, "clip: %q is not a rung; %s", Truncate(rung, 20), usage)
		}
		c.Rung = r
	}
	return c, nil
}

// numberRE is the only number syntax accepted from chat: decimal, optional exponent. No
// hex floats, underscores, Inf or NaN.
var numberRE = regexp.MustCompile(`^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d{1,3})?$`)

// ParseNumber parses a finite decimal number strictly.
func ParseNumber(s string) (float64, error) {
	if !numberRE.MatchString(s) {
		return 0, fmt.Errorf("%q is not a decimal number", Truncate(s, 30))
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a finite number", Truncate(s, 30))
	}
	return v, nil
}

var spacedEquals = regexp.MustCompile(`\s*=\s*`)

// ParseAssignments parses "term=value ..." (also one per line, as an edit form sends it).
// Names are weights (term names) or params (dotted names), optionally prefixed "weights."
// or "params."; with allowRemove, "term=-" removes the name from the patch. Every bad
// assignment is named.
func ParseAssignments(text string, space *session.Space, allowRemove bool) ([]Assignment, error) {
	text = spacedEquals.ReplaceAllString(strings.TrimSpace(text), "=")
	var out []Assignment
	var probs []string
	seen := map[string]bool{}
	for _, tok := range strings.FieldsFunc(text, func(r rune) bool {
		return r == ' ' || r == '\n' || r == '\t' || r == ',' || r == ';' || r == '\r' || r == '\u00a0' || r == '\u3000'
	}) {
		name, raw, ok := strings.Cut(tok, "=")
		if !ok {
			probs = append(probs, fmt.Sprintf("%q: expected term=value", Truncate(tok, 40)))
			continue
		}
		name = strings.ToLower(name)
		a := Assignment{Name: strings.TrimPrefix(strings.TrimPrefix(name, "weights."), "params.")}
		if _, ok := space.Term(a.Name); ok && !strings.HasPrefix(name, "params.") {
			a.Kind = "weight"
		} else if _, ok := space.Param(a.Name); ok && !strings.HasPrefix(name, "weights.") {
			a.Kind = "param"
		} else {
			probs = append(probs, fmt.Sprintf("%q: unknown term%s", Truncate(name, 40), suggestName(a.Name, space)))
			continue
		}
		if seen[a.Name] {
			probs = append(probs, fmt.Sprintf("%s: given twice", a.Name))
			continue
		}
		seen[a.Name] = true
		switch {
		case raw == "-" && allowRemove:
			a.Remove = true
		case raw == "-":
			probs = append(probs, fmt.Sprintf("%s: give a value (to leave it unchanged, leave it out)", a.Name))
			continue
		case strings.EqualFold(raw, "off"):
			probs = append(probs, fmt.Sprintf("%s=off: write %s=0 to switch the term off, or %s=- to drop it from the patch", a.Name, a.Name, a.Name))
			continue
		default:
			v, err := ParseNumber(raw)
			if err != nil {
				probs = append(probs, a.Name+": "+err.Error())
				continue
			}
			a.Value = v
		}
		out = append(out, a)
	}
	if len(probs) > 0 {
		return nil, &session.InvalidError{What: "edit refused", Problems: probs}
	}
	if len(out) == 0 {
		return nil, session.Userf(nil, "edit needs at least one term=value, e.g. edit pose=1.2 foot_slip=-0.3 (term=- drops a term from the patch)")
	}
	return out, nil
}

// ApplyEdits merges assignments over patch and returns the complete patch that will run.
func ApplyEdits(patch session.Patch, edits []Assignment) session.Patch {
	out := patch.Clone()
	for _, a := range edits {
		m := out.Weights
		if a.Kind == "param" {
			m = out.Params
		}
		if a.Remove {
			delete(m, a.Name)
		} else {
			m[a.Name] = a.Value
		}
	}
	return out
}

// PatchText is a patch as the assignments an edit form starts from, one per line.
func PatchText(p session.Patch, space *session.Space) string {
	var lines []string
	for _, name := range space.Names() {
		if v, ok := p.Weights[name]; ok {
			lines = append(lines, name+"="+Num(v))
		} else if v, ok := p.Params[name]; ok {
			lines = append(lines, name+"="+Num(v))
		}
	}
	return strings.Join(lines, "\n")
}

func suggestName(name string, space *session.Space) string {
	best, bestD := "", 4
	for _, n := range space.Names() {
		if d := session.EditDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// startKeys maps every start key (and its aliases) to how it is parsed.
var startKeys = map[string]string{
	"mode": "mode", "trials": "trial_count", "trial_count": "trial_count", "preset": "preset",
	"fallback": "fallback", "rungs": "rungs", "gpus": "gpus", "seed": "seed", "patience": "early_stop_patience",
	"early_stop_patience": "early_stop_patience", "name": "run_name", "run_name": "run_name", "task": "task",
	"num_envs": "num_envs", "envs": "num_envs", "eval_num_envs": "eval_num_envs", "eval_steps": "eval_steps",
	"control": "control", "promote": "promote", "from": "from", "start": "from_start", "from_start": "from_start",
}

func parseStart(c Command, args []string) (Command, error) {
	var probs []string
	seen := map[string]bool{}
	for _, a := range args {
		k, raw, ok := strings.Cut(a, "=")
		k = strings.ToLower(k)
		field, known := startKeys[k]
		switch {
		case !ok:
			probs = append(probs, fmt.Sprintf("%q: expected key=value", Truncate(a, 40)))
			continue
		case !known:
			keys := make([]string, 0, len(startKeys))
			for key := range startKeys {
				keys = append(keys, key)
			}
			sort.Strings(keys)
			probs = append(probs, fmt.Sprintf("%s: unknown setting%s", Truncate(k, 40), session.DidYouMean(k, keys)))
			continue
		case seen[field]:
			probs = append(probs, fmt.Sprintf("%s: given twice", field))
			continue
		}
		seen[field] = true
		o, err := startOverride(field, raw)
		if err != nil {
			probs = append(probs, field+": "+err.Error())
			continue
		}
		o.Key, o.Raw = field, raw
		c.Start = append(c.Start, o)
	}
	if len(probs) > 0 {
		return Command{}, &session.InvalidError{What: "start refused", Problems: probs}
	}
	return c, nil
}

var (
	wholeRE    = regexp.MustCompile(`^[+-]?\d{1,10}$`)
	listItemRE = regexp.MustCompile(`^\d{1,7}$`)
)

// wholeNumber reads a start setting that is a whole number of at most 10 digits.
func wholeNumber(raw string) (int, error) {
	if !wholeRE.MatchString(raw) {
		return 0, fmt.Errorf("%q is not a whole number", Truncate(raw, 30))
	}
	return strconv.Atoi(raw)
}

// wholeNumbers reads a start setting that is a comma-separated list of whole numbers of at
// most 7 digits (rungs, GPU ids).
func wholeNumbers(raw string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(raw, ",") {
		if !listItemRE.MatchString(p) {
			return nil, fmt.Errorf("%q is not a comma-separated list of whole numbers", Truncate(raw, 40))
		}
		n, _ := strconv.Atoi(p)
		out = append(out, n)
	}
	return out, nil
}

func startOverride(field, raw string) (Override, error) {
	var o Override
	switch field {
	case "mode":
		m := strings.ToLower(raw)
		o.apply = func(s *session.Settings) { s.Mode = m }
	case "task", "run_name", "preset":
		if !session.ValidName(raw) {
			return o, fmt.Errorf("%q must match %s (a name starts with a letter or digit)", Truncate(raw, 40), session.NamePattern)
		}
		o.apply = map[string]func(*session.Settings){
			"task":     func(s *session.Settings) { s.Task = raw },
			"run_name": func(s *session.Settings) { s.RunName = raw },
			"preset":   func(s *session.Settings) { s.Preset = raw },
		}[field]
	case "from":
		if !session.ValidName(raw) {
			return o, fmt.Errorf("%q is not a session id (its first characters are enough)", Truncate(raw, 40))
		}
		o.apply = func(s *session.Settings) { s.From = raw }
	case "from_start":
		return fromStartOverride(raw)
	case "fallback", "control":
		b, err := strconv.ParseBool(strings.ToLower(raw))
		if err != nil {
			return o, fmt.Errorf("%q is not true or false", Truncate(raw, 30))
		}
		if field == "fallback" {
			o.apply = func(s *session.Settings) { s.Fallback = b }
		} else {
			o.apply = func(s *session.Settings) { s.Control = b }
		}
	default:
		return numberOverride(field, raw)
	}
	return o, nil
}

// numberOverride is the override of a field that holds whole numbers: a list of them
// (rungs, gpus, promote) or one.
func numberOverride(field, raw string) (Override, error) {
	var o Override
	switch field {
	case "rungs", "gpus", "promote":
		xs, err := wholeNumbers(raw)
		if err != nil {
			return o, err
		}
		o.apply = map[string]func(*session.Settings){
			"rungs":   func(s *session.Settings) { s.Rungs = xs },
			"gpus":    func(s *session.Settings) { s.GPUs = xs },
			"promote": func(s *session.Settings) { s.Promote = xs },
		}[field]
	default:
		n, err := wholeNumber(raw)
		if err != nil {
			return o, err
		}
		o.apply = map[string]func(*session.Settings){
			"trial_count":         func(s *session.Settings) { s.TrialCount = n },
			"seed":                func(s *session.Settings) { s.Seed = int64(n) },
			"early_stop_patience": func(s *session.Settings) { s.Patience = n },
			"num_envs":            func(s *session.Settings) { s.NumEnvs = n },
			"eval_num_envs":       func(s *session.Settings) { s.EvalNumEnvs = n },
			"eval_steps":          func(s *session.Settings) { s.EvalSteps = n },
		}[field]
	}
	return o, nil
}

// fromStartOverride is from_start=best|defaults, where a session built on another starts;
// another word is refused with the nearest of the two.
func fromStartOverride(raw string) (Override, error) {
	v := strings.ToLower(raw)
	if v != session.FromBest && v != session.FromDefaults {
		return Override{}, fmt.Errorf("%q is not %s or %s (where a session built on another starts)%s", Truncate(raw, 30), session.FromBest, session.FromDefaults,
			session.DidYouMean(v, []string{session.FromBest, session.FromDefaults}))
	}
	return Override{apply: func(s *session.Settings) { s.FromStart = v }}, nil
}

// Settings applies the start overrides to defaults and validates the result; the error
// names every bad field.
func (c Command) Settings(defaults session.Settings) (session.Settings, error) {
	s := defaults
	s.GPUs = append([]int(nil), defaults.GPUs...)
	s.Rungs = append([]int(nil), defaults.Rungs...)
	promoteGiven := false
	for _, o := range c.Start {
		o.apply(&s)
		promoteGiven = promoteGiven || o.Key == "promote"
	}
	if !promoteGiven {
		s.Promote = nil // it derives from trial_count
	}
	s.Normalize()
	if err := s.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// split checks the text's size and splits it into words on any Unicode space.
func split(text string) ([]string, error) {
	if n := utf8.RuneCountInString(text); n > MaxCommand {
		return nil, session.Userf(nil, "message is %d characters; commands are at most %d", n, MaxCommand)
	}
	if !utf8.ValidString(text) {
		return nil, session.Userf(nil, "message is not valid UTF-8")
	}
	return strings.Fields(spacedEquals.ReplaceAllString(text, "=")), nil
}

func afterFirstWord(text string) string {
	t := strings.TrimSpace(text)
	i := strings.IndexFunc(t, func(r rune) bool { return r == ' ' || r == '\n' || r == '\t' || r == '\u00a0' || r == '\u3000' })
	if i < 0 {
		return ""
	}
	return t[i:]
}

// proposalNumber reads a decision's proposal number: "4" or "#4". A reject's feedback that
// starts with a bare number is read as naming a proposal (the answer then says which wait).
func proposalNumber(w string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(w, "#"))
	if err != nil || n < 1 || n > 9999 || strings.HasPrefix(w, "+") {
		return 0, false
	}
	return n, true
}

func hasVerb(vs []Verb, v Verb) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func closest(w string, vs []Verb) Verb {
	best, bestD := Verb(""), 3
	for _, v := range vs {
		if d := session.EditDistance(w, string(v)); d < bestD {
			best, bestD = v, d
		}
	}
	return best
}

func didYouMean(w string, vs []Verb) string {
	if v := closest(w, vs); v != "" {
		return " (did you mean " + string(v) + "?)"
	}
	return ""
}

// RejectHint says, wherever feedback is asked for, what tunebot does with it
// (session.ReadConstraints, session.FeedbackNote).
const RejectHint = "name a term or param with keep, lower or higher to bind every proposer for the rest of the session, e.g. “keep is_terminated, lower foot_slip”; the rest reaches only DeepSeek's next prompt"

// Help lists the commands. In chat each starts with /tune and decisions are replies in a
// session's thread; in the terminal (the console) every command is typed as it is.
func Help(terminal bool) string {
	cmd, decide := "/tune ", "in a session thread"
	apply := "/tune apply PRESET (shows the diff, then asks to confirm; needs apply) · rollback (reverts the last apply after a confirm; needs apply)"
	if terminal {
		cmd, decide = "", "to decide a proposal"
		apply = "apply and rollback need a confirm button: in a shell, tunebot apply diff PRESET, then tunebot apply PRESET --yes"
	}
	return strings.Join([]string{
		cmd + "start [mode=approval] [task=TASK] [trials=N] [preset=NAME] [fallback=true] [rungs=a,b,c] [gpus=0,1] [seed=N] [patience=N] [name=RUN] [num_envs=N] [eval_steps=N] [control=false] [from=SESSION [start=best|defaults]]",
		cmd + "status · pause · resume · cancel · best · presets · export PRESET · chart TRIAL[@RUNG] [TAG...] · clip TRIAL [RUNG] (its policy walking) · agent · dashboard (a private sign-in link to the monitoring page) · help",
		cmd + "preset show NAME · policy PRESET (the best trial's policy.onnx) · import NAME <JSON, e.g. in a code block> (needs start)",
		apply,
		cmd + `schedule add "<cron>" [if_busy=skip|wait] <start args> (needs start) · schedule list · schedule remove ID (needs start)`,
		decide + ": approve · reject <feedback> · edit term=value … (approves the edited patch at once; term=- drops it from the patch, term=0 switches it off) · why (the proposal's whole evidence) · pause · resume · cancel · status",
		"which walks better? " + PreferUsage,
		"a promotion plan that waits: " + session.ReviewReplies,
		"a reject's feedback that names a term or param binds every proposer for the rest of the session: reject keep is_terminated, lower foot_slip",
		"when several proposals wait, name one by its number: approve 4 · reject 4 <feedback> · edit 4 term=value … · why 4",
	}, "\n")
}
