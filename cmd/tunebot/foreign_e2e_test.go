package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"tunebot/session"
	"tunebot/trainer"
)

// hostileOutputTrainer fails trial 1's training with output that hides text: U+202E (right-
// to-left override), U+200B (zero-width space), U+061C (Arabic letter mark) and escape
// sequences that retitle a terminal and clear it; every other job is the built-in sim's.
const hostileOutputTrainer = `#!/bin/sh
run_dir=$1; shift
case "$run_dir" in
*trial-001-rung-0)
	printf '\033]0;owned\007\033[2J\033[31mValueError\033[0m: bad \342\200\256mret\342\200\213 gait\330\234 end\n'
	exit 1;;
esac
exec "$@"
`

// TestTrainerBidiAndEscapesNotInJSONReason: a trainer whose failure output carries U+202E,
// U+200B, U+061C and escape sequences gave a reason with the zero-width and U+061C marks
// still in it (issue 44, table item 9: session.Printable stripped only 5 bidi characters).
// The built binary's `tune --json` reason holds no bidi or zero-width mark and no control
// character, and still says what the trainer wrote.
func TestTrainerBidiAndEscapesNotInJSONReason(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole session")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "train.sh")
	if err := os.WriteFile(script, []byte(hostileOutputTrainer), 0o755); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{script, "{run_dir}"}, trainer.SimTrain...)
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: \"off\"}\ntrainer:\n  train: %s\nsession:\n  trial_count: 4\n  fallback: true\n",
		filepath.Join(dir, "data"), yamlList(argv)))
	code, stdout, stderr := runBinEnv(t, nil, "tune", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("tune: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var sum summaryJSON
	lastJSON(t, stdout, &sum)
	failed := 0
	for _, tr := range sum.Trials {
		if tr.State != session.TrialFailed {
			continue
		}
		failed++
		const want = "train job failed: exit status 1; train.log ends: ]0;owned[2J[31mValueError[0m: bad mret gait end"
		if tr.Reason != want {
			t.Errorf("JSON: trial %d@%d's reason %q, want %q", tr.Number, tr.Rung, tr.Reason, want)
		}
		for _, r := range tr.Reason {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Errorf("JSON: trial %d's reason keeps %U", tr.Number, r)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d failed trials in the JSON, want 1", failed)
	}
	for _, r := range "\u202e\u200b\u061c\x1b" {
		if strings.ContainsRune(stderr, r) {
			t.Errorf("the terminal was sent %U", r)
		}
	}
}
