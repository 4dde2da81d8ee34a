// Package secret knows which of tunebot's environment variables are secrets. It keeps them
// out of the environment of every subprocess tunebot starts (trainer, apply's test command
// and git with its hooks) and redacts their values from text bound for chat or a log: a
// child that finds a key some other way and prints it still does not publish it.
package secret

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Names are the secret variables tunebot reads (README: "Secrets come from the
// environment only"). IsEnv also counts every SLACK_* variable.
var Names = []string{
	"DEEPSEEK_API_KEY", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET",
	"DISCORD_BOT_TOKEN", "NTFY_TOKEN", "TUNEBOT_WEBHOOK_URL", "RAY_AUTH_TOKEN",
}

// IsEnv reports whether an environment variable is one of tunebot's secrets, which no
// subprocess needs and so none sees.
func IsEnv(name string) bool {
	return slices.Contains(Names, name) || strings.HasPrefix(name, "SLACK_")
}

// CredentialsDirectory is the variable systemd names the daemon's credentials directory
// by (LoadCredential=): a child that inherits it reads every key in it.
const CredentialsDirectory = "CREDENTIALS_DIRECTORY"

// Strip returns environ ("NAME=value" entries) without tunebot's secrets and without a way
// to them: CREDENTIALS_DIRECTORY, and every variable whose value holds that directory's
// path (a file in it, or a list naming it), whether environ or this process names it.
// Every subprocess tunebot starts (trainer jobs, local or Slurm, apply's tests, git) gets
// its environment through here.
func Strip(environ []string) []string {
	dirs := credentialDirs(environ)
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if IsEnv(k) || k == CredentialsDirectory || namesAny(v, dirs) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// credentialDirs are the credentials directories environ and this process name, each as
// written and cleaned.
func credentialDirs(environ []string) []string {
	var dirs []string
	add := func(d string) {
		if d == "" || d == "/" {
			return
		}
		dirs = append(dirs, d, filepath.Clean(d))
	}
	add(os.Getenv(CredentialsDirectory))
	for _, kv := range environ {
		if k, v, _ := strings.Cut(kv, "="); k == CredentialsDirectory {
			add(v)
		}
	}
	return dirs
}

// namesAny reports whether v holds any of dirs.
func namesAny(v string, dirs []string) bool {
	for _, d := range dirs {
		if strings.Contains(v, d) {
			return true
		}
	}
	return false
}

// Values returns the values of the secret variables in environ.
func Values(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && IsEnv(k) && v != "" {
			out = append(out, v)
		}
	}
	return out
}

// MinLen is the shortest value redacted: a real token or URL is far longer, and hiding
// every "1" or "true" in a text would garble it without protecting anything.
const MinLen = 8

// Mask replaces a secret value in redacted text.
const Mask = "[redacted]"

// Redactor replaces secret values in text. The zero value and nil redact nothing.
type Redactor struct {
	r       *strings.Replacer
	longest int // the longest form it masks, in bytes
}

// NewRedactor returns a redactor of values (those shorter than MinLen are ignored). Each
// value is also redacted as JSON and Go quoting would escape it, so a log handler that
// quotes an attribute does not let it through.
func NewRedactor(values ...string) *Redactor {
	var forms []string
	for _, v := range values {
		if len(v) < MinLen {
			continue
		}
		forms = append(forms, v)
		if j, err := json.Marshal(v); err == nil {
			forms = append(forms, string(j[1:len(j)-1]))
		}
		q := strconv.Quote(v)
		forms = append(forms, q[1:len(q)-1])
	}
	if len(forms) == 0 {
		return &Redactor{}
	}
	// Longest first, so that a secret containing another is masked whole.
	slices.SortFunc(forms, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	forms = slices.Compact(forms)
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Mask)
	}
	return &Redactor{r: strings.NewReplacer(pairs...), longest: len(forms[0])}
}

// Longest is the length in bytes of the longest text it masks (0 for none): a reader that
// cuts a text from a longer one reads this much more before the cut and masks the whole, so
// the cut never keeps part of a secret.
func (x *Redactor) Longest() int {
	if x == nil {
		return 0
	}
	return x.longest
}

// Process returns the redactor of this process's secrets: those in its environment and
// its systemd credentials ($CREDENTIALS_DIRECTORY), the only places they come from.
func Process() *Redactor {
	return NewRedactor(append(Values(os.Environ()), CredentialValues(os.Getenv("CREDENTIALS_DIRECTORY"))...)...)
}

// String returns s with every secret value replaced by Mask.
func (x *Redactor) String(s string) string {
	if x == nil || x.r == nil {
		return s
	}
	return x.r.Replace(s)
}

// Writer returns a writer that redacts each Write before passing it to w. A log handler
// writes each record in one call, so a secret is never split between two writes.
func (x *Redactor) Writer(w io.Writer) io.Writer {
	if x == nil || x.r == nil {
		return w
	}
	return redactingWriter{w: w, x: x}
}

type redactingWriter struct {
	w io.Writer
	x *Redactor
}

func (rw redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(rw.w, rw.x.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Active reports whether x has any value to redact.
func (x *Redactor) Active() bool { return x != nil && x.r != nil }

// JSON returns the JSON document buf with every secret value replaced by Mask, for a
// boundary that writes JSON (the store, --json). The encoded bytes are redacted as text
// (each value's JSON-escaped form is one of the redactor's), which keeps every key in its
// place; should that leave no valid JSON (a value matched across a quote, or as a
// number), every string of the decoded document, keys included, is redacted instead.
func (x *Redactor) JSON(buf []byte) ([]byte, error) {
	if !x.Active() {
		return buf, nil
	}
	s := string(buf)
	out := x.String(s)
	if out == s {
		return buf, nil
	}
	if json.Valid([]byte(out)) {
		return []byte(out), nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("redacting a JSON document: %w", err)
	}
	b, err := json.Marshal(x.value(v))
	if err != nil {
		return nil, fmt.Errorf("redacting a JSON document: %w", err)
	}
	return b, nil
}

// value redacts every string of a decoded JSON value, keys included, and every number
// that is a secret's digits, which becomes the string Mask: kept as a number, it would be
// written back as it was.
func (x *Redactor) value(v any) any {
	switch t := v.(type) {
	case string:
		return x.String(t)
	case json.Number:
		if m := x.String(t.String()); m != t.String() {
			return m
		}
		return t
	case []any:
		for i := range t {
			t[i] = x.value(t[i])
		}
		return t
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[x.String(k)] = x.value(e)
		}
		return out
	}
	return v
}

// TooShort names each of tunebot's credentials (Names) that getenv gives a value shorter
// than MinLen: no real token is, and such a value could not be masked where it leaves
// (it would be in every text). Each problem names the variable, never its value.
func TooShort(getenv func(string) string) []string {
	var probs []string
	for _, n := range Names {
		if v := getenv(n); v != "" && len(v) < MinLen {
			probs = append(probs, fmt.Sprintf("%s is set to a value shorter than %d characters: a real one is far longer, and one this short could not be kept out of what tunebot writes; set the real value (in the environment or its systemd credential)", n, MinLen))
		}
	}
	return probs
}
