package secret

import (
	"os"
	"path/filepath"
	"strings"
)

// WithCredentials returns a getenv that, for a secret of Names missing from the
// environment, reads the file of that name in dir: systemd's $CREDENTIALS_DIRECTORY, filled
// by LoadCredential=NAME:PATH. Such a secret is never in tunebot's environment, so no
// child inherits it and /proc/<pid>/environ does not hold it. dir "" reads nothing.
func WithCredentials(getenv func(string) string, dir string) func(string) string {
	if dir == "" {
		return getenv
	}
	return func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return credential(dir, name)
	}
}

// CredentialValues returns the secrets in dir, for a Redactor.
func CredentialValues(dir string) []string {
	if dir == "" {
		return nil
	}
	var out []string
	for _, n := range Names {
		if v := credential(dir, n); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// credential reads dir/name for a name of Names; a missing or unreadable file is no value
// (the component that needs it then says it is not set).
func credential(dir, name string) string {
	if !IsEnv(name) || strings.ContainsAny(name, `/\`) {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return strings.TrimRight(string(b), "\r\n")
}
