package config_test

import (
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/config"
	"tunebot/session"
)

// TestBinaryTaggedSecretRefused: `session.run_name: !!binary <base64 of the key>` passed the
// secret scan, which read the base64 text, while the decoder kept the key decoded, and it
// came out in preset names, the store and a git branch (issue 44, item 4). Every tag under
// which the decoder keeps something other than the text is refused, naming key and line, in
// the config and in a space file; the plain tags are read as before.
func TestBinaryTaggedSecretRefused(t *testing.T) {
	const key = "sk-binary-0123456789"
	b64 := base64.StdEncoding.EncodeToString([]byte(key))
	getenv := func(k string) string {
		if k == "DEEPSEEK_API_KEY" {
			return key
		}
		return ""
	}
	for _, tc := range []struct{ name, yaml, space, want string }{
		{"run_name", "session:\n  run_name: !!binary " + b64 + "\n", "", "line 3: session.run_name: the tag !!binary is not accepted"},
		{"branch_prefix", "apply:\n  branch_prefix: !!binary " + b64 + "\n", "", "line 3: apply.branch_prefix: the tag !!binary is not accepted"},
		{"a reward_spaces key", "reward_spaces:\n  !!binary " + b64 + ":\n    file: s.yaml\n", "reward_space: {}\n", "line 3: reward_spaces (a key of it): the tag !!binary is not accepted"},
		{"a local tag", "session:\n  run_name: !secret x\n", "", "line 3: session.run_name: the tag !secret is not accepted"},
		{"a space file", "reward_spaces:\n  Task-A:\n    file: s.yaml\n",
			"reward_space:\n  terms:\n    track:\n      weight: 1.0\n      note: !!binary " + b64 + "\n",
			"reward_spaces.Task-A.file: s.yaml line 5: reward_space.terms.track.note: the tag !!binary is not accepted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.space != "" {
				writeFile(t, filepath.Join(dir, "s.yaml"), tc.space)
			}
			_, err := config.Load(writeFile(t, filepath.Join(dir, "tunebot.yaml"), "data_dir: data\n"+tc.yaml), getenv)
			var ie *session.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("Load = %v, want the tag refused", err)
			}
			found := false
			for _, p := range ie.Problems {
				found = found || strings.Contains(p, tc.want)
			}
			if !found || strings.Contains(err.Error(), key) {
				t.Errorf("no problem says %q, or the key is shown:\n%s", tc.want, strings.Join(ie.Problems, "\n"))
			}
		})
	}
	cfg, err := config.Load(writeFile(t, filepath.Join(t.TempDir(), "tunebot.yaml"),
		"data_dir: !!str data\nsession:\n  run_name: !!str go2\n  trial_count: !!int 6\n  fallback: !!bool true\n"), getenv)
	if err != nil || cfg.Session.RunName != "go2" || cfg.Session.TrialCount != 6 {
		t.Errorf("plain tags: %v, %+v", err, cfg.Session)
	}
}

// TestShortSecretRefused: a credential shorter than 8 characters cannot be masked where it
// leaves (it would be in every text), so the config that would run with it is refused,
// naming the variable and never its value; a channel's SLACK_ variable may be short.
func TestShortSecretRefused(t *testing.T) {
	env := map[string]string{"DEEPSEEK_API_KEY": "s3cr3t", "SLACK_CHANNEL": "C1"}
	getenv := func(k string) string { return env[k] }
	for _, path := range []string{"", writeFile(t, filepath.Join(t.TempDir(), "tunebot.yaml"), "data_dir: data\n")} {
		_, err := config.Load(path, getenv)
		if err == nil || !strings.Contains(err.Error(), "DEEPSEEK_API_KEY is set to a value shorter than 8 characters") || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("Load(%q) = %v", path, err)
		}
	}
	env["DEEPSEEK_API_KEY"] = "sk-long-enough-key"
	if _, err := config.Load("", getenv); err != nil {
		t.Errorf("a key of a real length: %v", err)
	}
}
