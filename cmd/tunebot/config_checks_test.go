package main

import (
	"strings"
	"testing"
)

// TestConfigCheckDuplicateKeyHidesNothing: a key set twice is named with both lines, and
// every other problem of the file is named with it; before, the decoder read nothing of
// a mapping with a duplicate, so one at the top hid every problem below (issue 28).
func TestConfigCheckDuplicateKeyHidesNothing(t *testing.T) {
	cfg := writeFile(t, "tunebot.yaml", "data_dir: d\ndata_dir: e\nlog:\n  level: loud\nsession:\n  run_name: a\n  run_name: \"b c\"\n  trial_count: 2\n")
	code, stdout, stderr := runTunebot(t, "", nil, "config", "check", "--config", cfg)
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	_, problems, _ := strings.Cut(stderr, "\n")
	wantLines(t, problems, "  - ",
		"line 2: data_dir is set twice (first on line 1)",
		`line 4: log.level: "loud" is not debug, info, warn or error`,
		"line 7: session.run_name is set twice (first on line 6)",
		`line 7: session.run_name: "b c" must match`, // the last setting is the one read
		"line 8: session.trial_count: 2 is outside 4–20")
}

// TestPruneHelpSaysKeepLastCountsFinished: prune's help says what --keep-last counts.
func TestPruneHelpSaysKeepLastCountsFinished(t *testing.T) {
	_, stdout, stderr := runTunebot(t, "", nil, "prune", "--help")
	if !strings.Contains(stdout+stderr, "never prune the newest N finished sessions (an unfinished one is never pruned, and not counted)") {
		t.Errorf("prune --help:\n%s%s", stdout, stderr)
	}
}
