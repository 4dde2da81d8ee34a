package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/session"
)

// runBin runs the built binary with args in dir and returns its exit code and streams.
func runBin(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(tunebotBin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var xe *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &xe):
		return xe.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("running tunebot %v: %v", args, err)
	return 0, "", ""
}

// Every subcommand's --help (and -h, and help COMMAND) prints its usage with its flags on
// stdout and exits 0, as is the convention of command-line tools (issue 20, item 12).
func TestEveryCommandHasHelp(t *testing.T) {
	dir := t.TempDir()
	// a flag each usage must name, besides the usage line
	flags := map[string]string{"tune": "-trials", "demo": "-data-dir", "run": "-resume", "config": "--config", "preset": "--data-dir",
		"apply": "-yes", "backup": "-config", "dashboard": "--config", "doctor": "-config", "events": "--json", "proposal": "--base",
		"agent": "--config", "sim-train": "-run-dir", "sim-eval": "-checkpoint", "version": "", "prune": "-older-than", "space": "-task"}
	for _, name := range commandNames() {
		want, ok := flags[name]
		if !ok {
			t.Errorf("command %s: add the flag its usage must show to this test", name)
		}
		for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {"help", name}} {
			code, stdout, stderr := runBin(t, dir, args...)
			if code != 0 || !strings.HasPrefix(stdout, "usage: tunebot "+name) || !strings.Contains(stdout, want) || stderr != "" {
				t.Errorf("tunebot %s: exit %d, stdout %q, stderr %q; want exit 0 and its usage naming %q on stdout", strings.Join(args, " "), code, stdout, stderr, want)
			}
		}
	}
	// A command whose usage is printed before its flags are parsed shows them too (issue 28,
	// item 14).
	for _, args := range [][]string{{"events", "--help"}, {"preset", "--help"}, {"help", "events"}} {
		code, stdout, _ := runBin(t, dir, args...)
		if code != 0 || !strings.Contains(stdout, "flags:\n") || !strings.Contains(stdout, "-json") && !strings.Contains(stdout, "-data-dir") {
			t.Errorf("tunebot %s: exit %d, stdout %q; want exit 0 and its flags", strings.Join(args, " "), code, stdout)
		}
	}
	// A subcommand's own --help shows its flags.
	for _, args := range [][]string{{"config", "check", "--help"}, {"preset", "show", "--help"}, {"agent", "test", "-h"}, {"proposal", "check", "--help"}, {"dashboard", "link", "--help"}, {"dashboard", "rotate", "--help"}} {
		code, stdout, _ := runBin(t, dir, args...)
		if code != 0 || !strings.Contains(stdout, "flags:\n") || !strings.Contains(stdout, "-config") {
			t.Errorf("tunebot %s: exit %d, stdout %q; want exit 0 and its flags", strings.Join(args, " "), code, stdout)
		}
	}
}

// Wrong command lines exit 2 and say what is wrong in the words of a shell.
func TestCommandLineMistakes(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args       []string
		code       int
		stderr     string
		emptyStdin bool
	}{
		{nil, 2, "usage: tunebot <command>", true},
		{[]string{"tuen"}, 2, `tunebot: unknown command "tuen" (did you mean tune?); tunebot help lists the commands`, true},
		{[]string{"config", "chek", "--config", "x.yaml"}, 2, `tunebot config: unknown subcommand "chek" (did you mean check?)`, true},
		{[]string{"config"}, 2, "tunebot config: which one? check", true},
		{[]string{"preset", "shwo", "x"}, 2, `unknown subcommand "shwo" (did you mean show?)`, true},
		{[]string{"tune", "--trails", "5"}, 2, "flag provided but not defined: -trails", true},
		{[]string{"tune", "now"}, 2, `tunebot tune: unexpected argument "now"`, true},
		{[]string{"version", "--json"}, 2, "flag provided but not defined: -json", true},
		{[]string{"prune", "--dry-rn"}, 2, "flag provided but not defined: -dry-rn", true},
		{[]string{"dashboard", "rotat"}, 2, `tunebot dashboard: unknown subcommand "rotat" (did you mean rotate?)`, true},
		// issue 28, item 14: a bad --trials or --mode is one usage error naming the flag
		{[]string{"tune", "--trials", "0", "--fallback"}, 2, "tunebot tune: --trials 0 is outside 4–20", true},
		{[]string{"tune", "--trials", "-3", "--fallback"}, 2, "tunebot tune: --trials -3 is outside 4–20", true},
		{[]string{"tune", "--mode", "approve", "--fallback"}, 2, `tunebot tune: --mode "approve" is not automatic or approval (did you mean approval?)`, true},
		{[]string{"tune", "--from-start", "best", "--fallback"}, 2, "tunebot tune: --from-start says where a session built on another starts: give --from SESSION too", true},
		{[]string{"tune", "--from", "ab12", "--from-start", "latest", "--fallback"}, 2, `tunebot tune: --from-start "latest" is not best or defaults`, true},
		{[]string{"tune", "--from", "ab12", "--resume"}, 2, "tunebot tune: --from starts a new session", true},
		{[]string{"help", "nosuch"}, 2, `tunebot help: unknown command "nosuch"`, true},
		{[]string{"help", "tuen"}, 2, `unknown command "tuen" (did you mean tune?)`, true},
	} {
		code, stdout, stderr := runBin(t, dir, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) || tc.emptyStdin && stdout != "" {
			t.Errorf("tunebot %v: exit %d, stdout %q, stderr %q; want exit %d and %q on stderr", tc.args, code, stdout, stderr, tc.code, tc.stderr)
		}
	}
	if code, stdout, _ := runBin(t, dir, "help"); code != 0 || !strings.Contains(stdout, "  tune ") {
		t.Errorf("tunebot help: exit %d, %q", code, stdout)
	}
	if _, _, stderr := runBin(t, dir, "tune", "--trials", "-3", "--fallback"); strings.Contains(stderr, "promote") {
		t.Errorf("tune --trials -3 blames the promote list derived from it:\n%s", stderr)
	}
}

// preset takes --data-dir like tune, and a missing preset is answered with the shell's
// command that lists them, not chat's.
func TestPresetCommandsTakeDataDir(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "elsewhere")
	full := session.DefaultSpace().Defaults()
	full.Weights["pose"] = 1.5
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	patch := writeFile(t, "p.json", string(b))
	if code, _, stderr := runBin(t, dir, "preset", "import", "mine", patch, "--data-dir", data); code != 0 {
		t.Fatalf("preset import --data-dir: exit %d: %s", code, stderr)
	}
	if code, stdout, stderr := runBin(t, dir, "preset", "list", "--data-dir", data); code != 0 || !strings.Contains(stdout, "mine") {
		t.Errorf("preset list --data-dir: exit %d, %q %q", code, stdout, stderr)
	}
	if code, stdout, _ := runBin(t, dir, "preset", "show", "--data-dir", data, "mine"); code != 0 || !strings.Contains(stdout, "pose") {
		t.Errorf("preset show --data-dir: exit %d, %q", code, stdout)
	}
	code, _, stderr := runBin(t, dir, "preset", "show", "nope", "--data-dir", data)
	if code != 1 || !strings.Contains(stderr, "preset nope does not exist; tunebot preset list lists them") || strings.Contains(stderr, "/tune") || strings.Contains(stderr, "`presets`") {
		t.Errorf("preset show nope: exit %d, %q; want the shell's words", code, stderr)
	}
}

// Config problems name their key once and say what a good value looks like (issue 20, item
// 15): "U1" starts like a Slack member ID, so "(U…)" explained nothing, and the service's
// address was "service: service address …".
func TestConfigCheckSaysWhatAGoodValueIs(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
data_dir: data
service: {addr: "0.0.0.0:9464"}
chat:
  slack: {enabled: true, channel: C0123ABC, allow_users: [U1], allow_groups: [ops]}
`)
	code, _, stderr := runBin(t, dir, "config", "check", "--config", cfg)
	for _, want := range []string{
		`chat.slack.allow_users[0]: "U1" is not a Slack member ID, like U0123ABCDE: U or W, then capital letters and digits, not a name (in Slack: the person's profile → ⋮ → Copy member ID)`,
		`chat.slack.allow_groups[0]: "ops" is not a Slack user group ID, like S0123ABCDE`,
		`  - line 3: service.addr: "0.0.0.0:9464" listens on 0.0.0.0, not loopback`,
	} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("config check: exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
	if strings.Contains(stderr, "service: service") || strings.Contains(stderr, "(U…)") {
		t.Errorf("config check still says it twice or not at all:\n%s", stderr)
	}
}
