package session

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The one vocabulary every surface shows (issue 28): the terminal and chat cards, the
// charts, and the page (through the JSON it serves) name a metric, a state or a
// reward-space name the same way. Machine-read output (--json, the API's keys, the
// command grammar) keeps the identifiers.

// MetricLabels are the metrics' display names.
var MetricLabels = map[string]string{
	MetricVelLinear: "lin. vel. error", MetricVelAngular: "ang. vel. error",
	MetricActionAcc: "action accel.", MetricOrientation: "orientation error",
	MetricFallRate: "fall rate", MetricFootSlip: "foot slip", MetricPower: "mech. power",
}

// MetricLabel is metric name's display name; an unknown metric shows as itself.
func MetricLabel(name string) string {
	if l, ok := MetricLabels[name]; ok {
		return l
	}
	return name
}

// StateLabel is a session state's display name: "awaiting approval", not the identifier
// "awaiting_approval".
func StateLabel(s State) string { return strings.ReplaceAll(string(s), "_", " ") }

// ParamLabel is a reward-space param's display name: "params.pose.x", the name the
// command grammar, the config and the validation messages use, so that a name read on
// one surface can be typed on another.
func ParamLabel(name string) string { return "params." + name }

// Label is the changed name as every diff shows it: a weight's name, a param's ParamLabel.
func (c Change) Label() string {
	if c.Kind == "param" {
		return ParamLabel(c.Name)
	}
	return c.Name
}

// ActorLabel is who did something, as a person reads it: the console's user (named "you"
// inside the terminal) is "the terminal" anywhere else, a command's user "bob at the
// command line" ("the command line" when $USER said nobody), and a chat user carries the
// platform ("ann (slack)").
func ActorLabel(a Actor) string {
	switch {
	case a.Platform == "console":
		return "the terminal"
	case a.Platform == "cli" && (a.ID == "" || a.ID == "cli"):
		return "the command line"
	case a.Platform == "cli":
		return a.String() + " at the command line"
	case a.Platform == "" || a.Platform == "system":
		return a.String()
	}
	return a.String() + " (" + a.Platform + ")"
}

// ResolveID finds the session a typed id names: the id itself, or the only id it is a
// prefix of (the 8-character id every surface prints). An ambiguous prefix is refused with
// the candidates named; none is ErrNotFound.
func ResolveID(ctx context.Context, st SessionStore, typed string) (string, error) {
	typed = strings.ToLower(strings.TrimSpace(typed))
	if typed == "" {
		return "", &UserError{Msg: "no session id given", Err: ErrNotFound}
	}
	if _, err := st.Session(ctx, typed); err == nil {
		return typed, nil
	} else if !errors.Is(err, ErrNotFound) {
		return "", err
	}
	// a prefix is rare (a person typed it), so reading the list is fine
	var found []string
	for cursor := ""; ; {
		page, next, err := st.RecentSessions(ctx, cursor, 500)
		if err != nil {
			return "", err
		}
		for _, s := range page {
			if strings.HasPrefix(s.ID, typed) {
				found = append(found, s.ID)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", &UserError{Msg: fmt.Sprintf("session %s does not exist", typed), Err: ErrNotFound}
	}
	sort.Strings(found)
	return "", &UserError{Msg: fmt.Sprintf("session id %s is ambiguous: it begins %s; type more of it", typed, strings.Join(found, ", ")), Err: ErrConflict}
}

// MaxTagBytes bounds the tag that names a curve: real trainers log tags of a few dozen
// bytes, while one of 256 KiB once made the store refuse a trial's whole batch of curves and
// filled the log with lines of 262 KB (issue 36).
const MaxTagBytes = 256

// TagProblem says why tag cannot name a stored curve or an extra metric (empty, not UTF-8,
// longer than MaxTagBytes, holding a character Printable removes or a line break), "" when
// it can. The event reader refuses such a tag when it meets it and the store when asked to
// keep one, each tag on its own, keeping the rest; a name is refused rather than rewritten,
// so two names never become one.
func TagProblem(tag string) string {
	switch {
	case tag == "":
		return "empty"
	case len(tag) > MaxTagBytes:
		return fmt.Sprintf("%d bytes, more than %d", len(tag), MaxTagBytes)
	case !utf8.ValidString(tag):
		return "not UTF-8"
	case strings.ContainsAny(tag, "\n\t") || Printable(tag) != tag:
		return "holds control or invisible format characters (escape sequences, bidi or zero-width marks)"
	}
	return ""
}

// quotePrefix is how many bytes of a name from a trainer QuoteShort quotes.
const quotePrefix = 40

// QuoteShort quotes a name a trainer wrote (a tag, a metric) for a log line or a message:
// at most its first 40 bytes, Go-quoted so control bytes and invalid UTF-8 show as escapes,
// and its length when it was cut, so a hostile name of megabytes costs a log line of a
// hundred bytes.
func QuoteShort(s string) string {
	if len(s) <= quotePrefix {
		return strconv.Quote(s)
	}
	cut := s[:quotePrefix]
	for i := 0; i < utf8.UTFMax && len(cut) > 0 && !utf8.ValidString(cut) && utf8.ValidString(s); i++ {
		cut = cut[:len(cut)-1] // no rune split in two when the whole is valid
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(cut), len(s))
}
