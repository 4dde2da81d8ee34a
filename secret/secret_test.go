package secret_test

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tunebot/secret"
)

func TestStripAndValues(t *testing.T) {
	env := []string{"PATH=/bin", "DEEPSEEK_API_KEY=sk-1234567890", "SLACK_SOMETHING_NEW=abc", "NTFY_TOKEN=", "HOME=/root",
		"TUNEBOT_WEBHOOK_URL=https://hooks.example/T0/B0/xyz", "DISCORD_BOT_TOKEN=dtok", "DEEPSEEK_BASE=x"}
	if diff := cmp.Diff([]string{"PATH=/bin", "HOME=/root", "DEEPSEEK_BASE=x"}, secret.Strip(env)); diff != "" {
		t.Errorf("Strip (-want +got):\n%s", diff)
	}
	want := []string{"sk-1234567890", "abc", "https://hooks.example/T0/B0/xyz", "dtok"}
	if diff := cmp.Diff(want, secret.Values(env)); diff != "" {
		t.Errorf("Values (-want +got):\n%s", diff)
	}
}

func TestRedactor(t *testing.T) {
	const key = "sk-abc123456789"
	const url = `https://hooks.example/T0/B0/x"y\z`
	x := secret.NewRedactor(key, url, "short", key+"-longer")
	for _, tc := range []struct{ in, want string }{
		{"key " + key + " end", "key [redacted] end"},
		{"both " + key + "-longer", "both [redacted]"}, // the longer secret masked whole
		{"posting to " + url, "posting to [redacted]"},
		{"short is too short to be a secret", "short is too short to be a secret"},
		{"nothing here", "nothing here"},
	} {
		if got := x.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var nilx *secret.Redactor
	if nilx.String(key) != key || nilx.Active() || secret.NewRedactor().Active() || !x.Active() {
		t.Error("a nil or empty redactor must redact nothing and say so")
	}

	// Log handlers quote and escape attribute values: the escaped forms are masked too.
	for name, h := range map[string]func(*strings.Builder) slog.Handler{
		"text": func(b *strings.Builder) slog.Handler { return slog.NewTextHandler(x.Writer(b), nil) },
		"json": func(b *strings.Builder) slog.Handler { return slog.NewJSONHandler(x.Writer(b), nil) },
	} {
		var b strings.Builder
		slog.New(h(&b)).Info("calling "+url, "err", "401 for key "+key, "url", url)
		out := b.String()
		if strings.Contains(out, "sk-abc") || strings.Contains(out, "hooks.example") || strings.Count(out, secret.Mask) != 3 {
			t.Errorf("%s log line not redacted: %s", name, out)
		}
		if name == "json" && !json.Valid([]byte(out)) {
			t.Errorf("redacted JSON line is not JSON: %s", out)
		}
	}
}

func TestWithCredentials(t *testing.T) {
	dir := t.TempDir()
	for name, v := range map[string]string{"DEEPSEEK_API_KEY": "sk-from-credential\n", "SLACK_BOT_TOKEN": "xoxb-from-credential", "HOME": "/not/a/secret"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"SLACK_BOT_TOKEN": "xoxb-from-env"}
	getenv := secret.WithCredentials(func(k string) string { return env[k] }, dir)
	for name, want := range map[string]string{
		"DEEPSEEK_API_KEY": "sk-from-credential", // the file, its newline dropped
		"SLACK_BOT_TOKEN":  "xoxb-from-env",      // the environment wins
		"NTFY_TOKEN":       "",                   // neither
		"HOME":             "",                   // not a secret: never read from the directory
	} {
		if got := getenv(name); got != want {
			t.Errorf("getenv(%s) = %q, want %q", name, got, want)
		}
	}
	if diff := cmp.Diff([]string{"sk-from-credential", "xoxb-from-credential"}, secret.CredentialValues(dir)); diff != "" {
		t.Errorf("CredentialValues (-want +got):\n%s", diff)
	}
	if secret.CredentialValues("") != nil || secret.WithCredentials(func(string) string { return "x" }, "")("NTFY_TOKEN") != "x" {
		t.Error("no directory: nothing read, the environment as it is")
	}
}

// TestHolds: a text holds a secret when it holds its value, found by value whatever put it
// there; values too short to be a token are not looked for, as Redactor does not mask them.
func TestHolds(t *testing.T) {
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "NTFY_TOKEN"), []byte("tk_credential_value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	known := secret.Known([]string{"PATH=/bin", "SLACK_SIGNING_SECRET=sigsecret-0123456789", "SLACK_X=short", "DEEPSEEK_API_KEY="}, creds)
	if diff := cmp.Diff(map[string]string{"SLACK_SIGNING_SECRET": "sigsecret-0123456789", "SLACK_X": "short", "NTFY_TOKEN": "tk_credential_value"}, known); diff != "" {
		t.Errorf("Known (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ in, want string }{
		{"--name=sigsecret-0123456789-t001-r0", "SLACK_SIGNING_SECRET"},
		{"#SBATCH --account=tk_credential_value", "NTFY_TOKEN"},
		{"a short value is in every text", ""},
		{"/bin", ""},
	} {
		if got := secret.Holds(tc.in, known); got != tc.want {
			t.Errorf("Holds(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestCredentialsDirectoryNotInherited: under systemd's LoadCredential= the keys are files
// in $CREDENTIALS_DIRECTORY; a child that inherits the variable, or another that names a
// file in the directory, reads them (issue 44, item 6). Strip removes both.
func TestCredentialsDirectoryNotInherited(t *testing.T) {
	const dir = "/run/credentials/tunebot.service"
	t.Setenv(secret.CredentialsDirectory, "/run/credentials/other.service")
	env := []string{"PATH=/bin", "CREDENTIALS_DIRECTORY=" + dir, "KEY_FILE=" + dir + "/DEEPSEEK_API_KEY",
		"SEARCH=/opt:" + dir + "/", "OTHER=/run/credentials/other.service/NTFY_TOKEN", "HOME=/home/ann", "CREDS_NOTE=/run/credentials"}
	if diff := cmp.Diff([]string{"PATH=/bin", "HOME=/home/ann", "CREDS_NOTE=/run/credentials"}, secret.Strip(env)); diff != "" {
		t.Errorf("Strip (-want +got):\n%s", diff)
	}
}

// TestRedactorJSONStaysValid: a JSON document redacted at a boundary (the store, --json)
// keeps no secret in any form and stays JSON, even when a value is matched across a quote
// or as a number.
func TestRedactorJSONStaysValid(t *testing.T) {
	const key, quoted, digits = "sk-json-0123456789", `ab","cd0123`, "987654321012"
	x := secret.NewRedactor(key, quoted, digits)
	for _, doc := range []any{
		map[string]any{"reason": "exit status 1; train.log ends: " + key, key: 1},
		map[string]any{"a": "ab", "b": "cd0123", "c": quoted},
		map[string]any{"n": json.Number(digits), "s": digits},
	} {
		in, _ := json.Marshal(doc)
		out, err := x.JSON(in)
		if err != nil || !json.Valid(out) {
			t.Fatalf("JSON(%s) = %s, %v", in, out, err)
		}
		if strings.Contains(string(out), key) || strings.Contains(string(out), digits) {
			t.Errorf("JSON(%s) = %s keeps a secret as written", in, out)
		}
		var back map[string]any
		_ = json.Unmarshal(out, &back)
		for k, v := range back {
			if s, ok := v.(string); ok && (strings.Contains(s, key) || strings.Contains(s, quoted) || strings.Contains(s, digits)) || strings.Contains(k, key) {
				t.Errorf("JSON(%s) = %s keeps a secret", in, out)
			}
		}
	}
	plain := []byte(`{"a": "nothing here"}`)
	if out, _ := x.JSON(plain); string(out) != string(plain) {
		t.Errorf("a document with no secret changed: %s", out)
	}
}

// TestShortSecretRefused: a credential shorter than MinLen cannot be masked where it
// leaves, so it is refused where it is configured, naming the variable, never the value.
func TestShortSecretRefused(t *testing.T) {
	env := map[string]string{"DEEPSEEK_API_KEY": "test", "SLACK_BOT_TOKEN": "xoxb-long-enough", "SLACK_CHANNEL": "C1"}
	probs := secret.TooShort(func(k string) string { return env[k] })
	if len(probs) != 1 || !strings.HasPrefix(probs[0], "DEEPSEEK_API_KEY is set to a value shorter than 8 characters") || strings.Contains(probs[0], "test") {
		t.Errorf("TooShort = %q", probs)
	}
}
