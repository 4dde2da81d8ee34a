package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSecretReachesNoJobThroughTheConfig: a secret is found by value, as the decoder reads
// the file (after YAML aliases and ${NAME} expansion), in every value that leaves tunebot:
// through an alias into the trainer's argv, into session.run_name (which becomes
// {run_name} and preset names) and into executor.slurm.account (an #SBATCH line), whether
// named, copied by another variable or pasted. config check and run refuse each with the
// key and line, and never show the value (issue 27).
func TestSecretReachesNoJobThroughTheConfig(t *testing.T) {
	const value = "sigsecret-0123456789"
	vars := map[string]string{"SLACK_SIGNING_SECRET": value, "COPY": value}
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"through a YAML alias into trainer.train",
			"chat:\n  slack:\n    channel: &s \"${SLACK_SIGNING_SECRET}\"\ntrainer:\n  train: [\"{tunebot}\", sim-train, *s, \"{reward_config}\", \"{iterations}\"]\n",
			[]string{"line 6: trainer.train[2]: ${SLACK_SIGNING_SECRET} (written on line 4, used here through a YAML alias) would put the secret SLACK_SIGNING_SECRET on the trainer's command line",
				"line 4: chat.slack.channel: ${SLACK_SIGNING_SECRET} would put the secret SLACK_SIGNING_SECRET into the requests tunebot sends to chat and push services",
				`line 4: chat.slack.channel: "${SLACK_SIGNING_SECRET}" is not a channel ID`}},
		{"run_name", "session:\n  run_name: ${SLACK_SIGNING_SECRET}\n",
			[]string{"line 3: session.run_name: ${SLACK_SIGNING_SECRET} would put the secret SLACK_SIGNING_SECRET into the settings every session stores"}},
		{"run_name copied by another variable", "session:\n  run_name: ${COPY}\n",
			[]string{"line 3: session.run_name: holds the value of the secret SLACK_SIGNING_SECRET"}},
		{"executor.slurm.account", "executor:\n  slurm:\n    account: ${SLACK_SIGNING_SECRET}\n",
			[]string{"line 4: executor.slurm.account: ${SLACK_SIGNING_SECRET} would put the secret SLACK_SIGNING_SECRET into every batch script's #SBATCH lines"}},
		{"executor.slurm.qos pasted", "executor:\n  slurm:\n    qos: " + value + "\n",
			[]string{"line 4: executor.slurm.qos: holds the value of the secret SLACK_SIGNING_SECRET"}},
		{"a task's space file", "reward_spaces:\n  Task-A:\n    file: ${SLACK_SIGNING_SECRET}\n",
			[]string{"line 4: reward_spaces.Task-A.file: ${SLACK_SIGNING_SECRET} would put the secret SLACK_SIGNING_SECRET into the reward space every session of its task stores",
				"line 4: reward_spaces.Task-A.file: "}},
		{"a merge key into trainer", "x: &t {python: \"${SLACK_SIGNING_SECRET}\"}\ntrainer:\n  <<: *t\n",
			[]string{"trainer.python: ${SLACK_SIGNING_SECRET} (written on line 2, used here through a YAML alias)", "line 2: x is not a setting",
				"line 2: x.python: ${SLACK_SIGNING_SECRET} would put the secret SLACK_SIGNING_SECRET into what tunebot sends, stores or shows"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, t.TempDir(), "data_dir: data\n"+tc.yaml)
			code, stdout, stderr := runTunebot(t, "", vars, "config", "check", "--config", cfg)
			if code != 1 || strings.Contains(stdout+stderr, value) {
				t.Errorf("exit %d, output shows the value: %v\n%s", code, strings.Contains(stdout+stderr, value), stderr)
			}
			_, problems, _ := strings.Cut(stderr, "\n")
			var only string // the problems, less warnings (a chat section not enabled)
			for _, l := range strings.Split(problems, "\n") {
				if strings.HasPrefix(l, "  - ") {
					only += l + "\n"
				}
			}
			wantLines(t, only, "  - ", tc.want...)
		})
	}
	// run refuses to start as config check does (bounded: a daemon that starts is the failure).
	cfg := writeConfig(t, t.TempDir(), "data_dir: data\nservice: {addr: \"off\"}\nsession: {fallback: true}\n"+
		"chat:\n  slack:\n    channel: &s \"${SLACK_SIGNING_SECRET}\"\ntrainer:\n  train: [\"{tunebot}\", sim-train, *s, \"{reward_config}\", \"{iterations}\"]\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := exec.CommandContext(ctx, tunebotBin, "run", "--config", cfg)
	run.Env = append(os.Environ(), "SLACK_SIGNING_SECRET="+value)
	out, err := run.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("tunebot run started with the secret on the trainer's command line:\n%s", out)
	}
	if err == nil || strings.Contains(string(out), value) || !strings.Contains(string(out), "trainer.train[2]: ${SLACK_SIGNING_SECRET}") {
		t.Errorf("run: %v\n%s", err, out)
	}
	// A variable that holds no secret goes anywhere, and a chat channel may name one.
	cfg = writeConfig(t, t.TempDir(), "data_dir: data\nsession:\n  run_name: ${RN}\nexecutor:\n  slurm:\n    account: ${RN}\nchat:\n  slack:\n    enabled: false\n    channel: ${SLACK_CHANNEL}\n")
	if code, _, stderr := runTunebot(t, "", map[string]string{"RN": "go2-run", "SLACK_CHANNEL": "C0123456789"}, "config", "check", "--config", cfg); code != 0 {
		t.Errorf("variables that are no secret: exit %d\n%s", code, stderr)
	}
}

// TestConfigCheckShowsNoExpandedValue: a problem about a value ${NAME} filled in shows the
// value as written, never as expanded, since the variable may hold a secret: session.task
// given a signing secret (too short to be looked for by value, and refused for that by
// name) does not print it.
func TestConfigCheckShowsNoExpandedValue(t *testing.T) {
	vars := map[string]string{"SLACK_SIGNING_SECRET": "s3cr3t", "LEVEL": "loud-hidden", "WAIT": "twelve-hidden"}
	cfg := writeConfig(t, t.TempDir(), "data_dir: data\nlog:\n  level: ${LEVEL}\nsession:\n  task: \"${SLACK_SIGNING_SECRET}\"\ntrainer:\n  job_timeout: ${WAIT}\n")
	code, stdout, stderr := runTunebot(t, "", vars, "config", "check", "--config", cfg)
	if code != 1 || strings.Contains(stdout+stderr, "s3cr3t") || strings.Contains(stdout+stderr, "hidden") {
		t.Errorf("exit %d, an expanded value is shown:\n%s", code, stderr)
	}
	_, problems, _ := strings.Cut(stderr, "\n")
	wantLines(t, problems, "  - ",
		`line 3: log.level: "${LEVEL}" is not debug, info, warn or error`,
		"line 5: session.task: ${SLACK_SIGNING_SECRET} would put the secret SLACK_SIGNING_SECRET",
		`line 5: session.task: "${SLACK_SIGNING_SECRET}" is not supported`,
		`line 7: trainer.job_timeout: "${WAIT}" is not a duration`,
		"SLACK_SIGNING_SECRET is set to a value shorter than 8 characters")
}

// TestEveryConfigStringIsScannedForSecrets: every string of the configuration is scanned
// for tunebot's secrets, not a list of keys: chat.ntfy.topic: "tb-${SLACK_BOT_TOKEN}" (the
// daemon sent PUT /tb-xoxb-… to the push server) and advisor.model: "m-${DEEPSEEK_API_KEY}"
// (the key went into every advisor request, the store's audit and the page), copied by
// another variable, pasted, reached through an alias, written as a key, or in a space file
// reward_spaces names. config check refuses each with its key and line and never shows the
// value; run and tune refuse to start, and the fake push server and fake DeepSeek hear
// nothing (issue 36).
func TestEveryConfigStringIsScannedForSecrets(t *testing.T) {
	const bot, key = "xoxb-0123456789-bot", "sk-deepseek-0123456789"
	vars := map[string]string{"SLACK_BOT_TOKEN": bot, "DEEPSEEK_API_KEY": key, "COPY": key}
	var heard atomic.Int32
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { heard.Add(1) }))
	defer fake.Close()
	attacks := "chat:\n  ntfy:\n    server: " + fake.URL + "\n    topic: \"tb-${SLACK_BOT_TOKEN}\"\nadvisor:\n  base_url: " + fake.URL + "\n  model: \"m-${DEEPSEEK_API_KEY}\"\n"
	for _, tc := range []struct {
		name, yaml, space string
		want              []string
	}{
		{"the two attacks", attacks, "", []string{
			"line 5: chat.ntfy.topic: ${SLACK_BOT_TOKEN} would put the secret SLACK_BOT_TOKEN into the requests tunebot sends to chat and push services",
			"line 8: advisor.model: ${DEEPSEEK_API_KEY} would put the secret DEEPSEEK_API_KEY into every request to the advisor and the audit"}},
		{"copied by another variable", "advisor:\n  model: m-${COPY}\n", "", []string{
			"line 3: advisor.model: holds the value of the secret DEEPSEEK_API_KEY"}},
		{"pasted into a URL", "chat:\n  ntfy:\n    server: https://push.example/" + bot + "\n    topic: tb\n", "", []string{
			"line 4: chat.ntfy.server: holds the value of the secret SLACK_BOT_TOKEN"}},
		{"through an alias", "log: {format: &m \"${DEEPSEEK_API_KEY}\"}\nadvisor:\n  model: *m\n", "", []string{
			"line 2: log.format: ${DEEPSEEK_API_KEY} would put the secret DEEPSEEK_API_KEY",
			"line 4: advisor.model: ${DEEPSEEK_API_KEY} (written on line 2, used here through a YAML alias) would put"}},
		{"a key", "reward_spaces:\n  " + bot + ":\n    file: s.yaml\n", "reward_space: {}\n", []string{
			"line 3: reward_spaces (a key of it): holds the value of the secret SLACK_BOT_TOKEN"}},
		{"a space file", "reward_spaces:\n  Task-A:\n    file: s.yaml\n",
			"reward_space:\n  terms:\n    track:\n      weight: 1.0\n      note: \"see " + key + "\"\n", []string{
				"line 4: reward_spaces.Task-A.file: s.yaml line 5: reward_space.terms.track.note: holds the value of the secret DEEPSEEK_API_KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.space != "" {
				if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(tc.space), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg := writeConfig(t, dir, "data_dir: data\n"+tc.yaml)
			code, stdout, stderr := runTunebot(t, "", vars, "config", "check", "--config", cfg)
			if code != 1 || strings.Contains(stdout+stderr, bot) || strings.Contains(stdout+stderr, key) {
				t.Errorf("exit %d, or the output shows a value:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, "  - "+w) {
					t.Errorf("no problem says %q:\n%s", w, stderr)
				}
			}
		})
	}
	// run and tune refuse the attacks before any request.
	cfg := writeConfig(t, t.TempDir(), "data_dir: data\nservice: {addr: \"off\"}\nsession: {fallback: true}\n"+attacks)
	for _, args := range [][]string{{"run", "--config", cfg}, {"tune", "--config", cfg, "--trials", "4"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, tunebotBin, args...)
		cmd.Env = append(os.Environ(), "SLACK_BOT_TOKEN="+bot, "DEEPSEEK_API_KEY="+key)
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("tunebot %s started with a secret in the ntfy topic and the model:\n%s", args[0], out)
		}
		cancel()
		if err == nil || strings.Contains(string(out), bot) || strings.Contains(string(out), key) ||
			!strings.Contains(string(out), "chat.ntfy.topic: ${SLACK_BOT_TOKEN}") || !strings.Contains(string(out), "advisor.model: ${DEEPSEEK_API_KEY}") {
			t.Errorf("%s: %v\n%s", args[0], err, out)
		}
	}
	if n := heard.Load(); n != 0 {
		t.Errorf("the fake push server and DeepSeek heard %d requests", n)
	}
}
