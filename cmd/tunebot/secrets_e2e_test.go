package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/trainer"
)

// leakyTrainer dumps its environment into $dump/env-<pid>, then, when $leak names a file,
// prints the key it holds (a .env the trainer found) on both streams and fails; else it
// trains with the built-in sim.
const leakyTrainer = `#!/bin/sh
dump=$1; leak=$2; shift 2
env > "$dump/env-$$"
if [ -n "$leak" ]; then
  key=$(cat "$leak")
  echo "wandb: logging in with $key"
  echo "Traceback: KeyError: $key" >&2
  exit 1
fi
exec "$@"
`

// leakyTune runs `tunebot tune --json` over leakyTrainer with SLACK_BOT_TOKEN=key only in
// a systemd credentials directory, and returns the data dir, the directory the trainer's
// environments were dumped in, and what tune printed (stdout, stderr).
func leakyTune(t *testing.T, key, leak string) (data, dump, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	creds, dump := filepath.Join(dir, "credentials"), filepath.Join(dir, "dump")
	for _, d := range []string{creds, dump} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(creds, "SLACK_BOT_TOKEN"), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "train.sh")
	if err := os.WriteFile(script, []byte(leakyTrainer), 0o755); err != nil {
		t.Fatal(err)
	}
	data = filepath.Join(dir, "data")
	argv := append([]string{script, dump, leak}, trainer.SimTrain...)
	cfg := writeConfig(t, dir, "data_dir: "+data+"\nservice: {addr: \"off\"}\ntrainer:\n  train: "+yamlList(argv)+
		"\nsession:\n  trial_count: 4\n  rungs: [50, 100, 150]\n  early_stop_patience: 4\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tunebotBin, "tune", "--config", cfg, "--fallback", "--json")
	cmd.Env = append(os.Environ(), "CREDENTIALS_DIRECTORY="+creds)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("tune did not end:\n%s", errb.String())
	}
	return data, dump, out.String(), errb.String()
}

// TestTrainerPrintedKeyNotInStoreBytes: a trainer that read a key from a file, printed it
// and exited 1 left the key, masked on the terminal and in tunebot.log, raw in the trial's
// and the session's reason, the log tail, --json and the store (4 copies) (issue 44, item
// 5). Through the built binary: the key is in no output and nowhere in the data file's
// bytes, and what was printed is shown masked.
func TestTrainerPrintedKeyNotInStoreBytes(t *testing.T) {
	const key = "xoxb-printed-by-the-trainer-0123456789"
	leak := filepath.Join(t.TempDir(), "found.env")
	if err := os.WriteFile(leak, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, _, stdout, stderr := leakyTune(t, key, leak)
	if !json.Valid([]byte(stdout)) || !strings.Contains(stdout, "[redacted]") {
		t.Errorf("--json is not one JSON document, or does not show the masked output:\n%s\n%s", stdout, stderr)
	}
	logFile, _ := os.ReadFile(filepath.Join(data, "tunebot.log"))
	db, err := os.ReadFile(filepath.Join(data, "tunebot.db"))
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{"--json": stdout, "the terminal": stderr, "tunebot.log": string(logFile), "the store's bytes": string(db)} {
		if n := strings.Count(text, "printed-by-the-trainer"); n > 0 {
			t.Errorf("%s holds the key %d times", where, n)
		}
	}
	if !strings.Contains(string(db), "[redacted]") {
		t.Error("the store holds no masked output: the trainer's failure was not stored")
	}
}

// TestCredentialsDirectoryNotInherited: with the daemon's keys only in systemd's
// credentials directory (the README's stronger set-up), every trainer job inherited
// CREDENTIALS_DIRECTORY and read the keys from it (issue 44, item 6). A job's environment,
// dumped by the trainer, holds neither the variable nor the directory's path.
func TestCredentialsDirectoryNotInherited(t *testing.T) {
	const key = "xoxb-credential-only-0123456789"
	_, dump, _, stderr := leakyTune(t, key, "")
	envs, _ := filepath.Glob(filepath.Join(dump, "env-*"))
	if len(envs) == 0 {
		t.Fatalf("no trainer job ran:\n%s", stderr)
	}
	for _, f := range envs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if env := string(b); strings.Contains(env, "CREDENTIALS_DIRECTORY") || strings.Contains(env, "credentials") || strings.Contains(env, key) || !strings.Contains(env, "PATH=") {
			t.Errorf("a trainer job's environment holds the credentials directory or the key (%s)", filepath.Base(f))
		}
	}
}

// TestBinaryTaggedSecretRefusedByTheBinary: `session.run_name: !!binary <base64 of the
// key>` passed config check and tune, the decoder keeping the key, which came out in
// preset names, the store and a git branch (issue 44, item 4). config check and tune
// refuse it naming the key and line, and never show the key.
func TestBinaryTaggedSecretRefusedByTheBinary(t *testing.T) {
	const key = "sk-binary-tagged-0123456789"
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "data_dir: "+filepath.Join(dir, "data")+"\nservice: {addr: \"off\"}\nsession:\n  trial_count: 4\n  run_name: !!binary "+
		base64.StdEncoding.EncodeToString([]byte(key))+"\n")
	for _, args := range [][]string{{"config", "check", "--config", cfg}, {"tune", "--config", cfg, "--fallback", "--json"}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, tunebotBin, args...)
		cmd.Env = append(os.Environ(), "DEEPSEEK_API_KEY="+key)
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil || strings.Contains(string(out), key) || !strings.Contains(string(out), "line 5: session.run_name: the tag !!binary is not accepted") {
			t.Errorf("%s: %v\n%s", args[0], err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "tunebot.db")); err == nil {
		t.Error("tune made a store: it started")
	}
}
