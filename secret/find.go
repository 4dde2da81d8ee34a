package secret

import (
	"maps"
	"os"
	"slices"
	"strings"
)

// Known returns tunebot's secrets by name: those set in environ ("NAME=value" entries) and
// those in dir, systemd's $CREDENTIALS_DIRECTORY ("" reads none). It is what Holds looks
// for: a secret's value, however it got into a text (a ${NAME}, a YAML alias, a variable
// that copies it, a name typed in chat), and not only a reference to it.
func Known(environ []string, dir string) map[string]string {
	out := map[string]string{}
	for _, n := range Names {
		if v := credential(dir, n); v != "" {
			out[n] = v
		}
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && IsEnv(k) && v != "" {
			out[k] = v
		}
	}
	return out
}

// ProcessKnown returns the secrets of this process: Known of its environment and its
// systemd credentials.
func ProcessKnown() map[string]string {
	return Known(os.Environ(), os.Getenv("CREDENTIALS_DIRECTORY"))
}

// Holds returns the name of a secret of known whose value s holds, "" when it holds none.
// A value shorter than MinLen is not looked for, as Redactor does not redact it: a real
// token is far longer, and "1" or "true" is in every text. Names are tried in order, so
// the answer does not depend on the map's.
func Holds(s string, known map[string]string) string {
	for _, n := range slices.Sorted(maps.Keys(known)) {
		if v := known[n]; len(v) >= MinLen && strings.Contains(s, v) {
			return n
		}
	}
	return ""
}
