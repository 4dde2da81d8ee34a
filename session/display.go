package session

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
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
// inside the terminal) is "the terminal" anywhere else, and a chat user carries the
// platform ("ann (slack)").
func ActorLabel(a Actor) string {
	switch {
	case a.Platform == "console":
		return "the terminal"
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
