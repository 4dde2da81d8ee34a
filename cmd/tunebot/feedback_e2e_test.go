package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// proposedNames reads the names a proposal card's "proposed change" table lists, from the
// terminal's text after offset from.
func proposedNames(t *testing.T, text string, seq int) []string {
	t.Helper()
	_, card, ok := strings.Cut(text, fmt.Sprintf("== proposal %d for trial", seq))
	if !ok {
		t.Fatalf("no card of proposal %d:\n%s", seq, text)
	}
	_, table, _ := strings.Cut(card, "proposed change:\n")
	var names []string
	for i, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "    ") {
			break
		}
		f := strings.Fields(line)
		if i < 2 { // the header and its rule
			continue
		}
		if f[0] == "param" {
			f = f[1:]
		}
		names = append(names, f[0])
	}
	if len(names) == 0 {
		t.Fatalf("proposal %d's card lists no change:\n%s", seq, card)
	}
	return names
}

// A person at the terminal rejects the sampler's first proposal with "do not touch" and the
// names it moved: the reply says what it read, and no later proposal of the session moves
// any of them (the sampler, asked the same question again, would otherwise repeat most of
// its first patch). The terminal speaks as a terminal: no buttons, no thread.
func TestRejectFeedbackBindsTheSamplerInTheTerminal(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
data_dir: data
session:
  trial_count: 4
  rungs: [20, 40, 60]
`)
	tm := startTune(t, []string{"DEEPSEEK_API_KEY="}, "tune", "--config", cfg, "--mode", "approval", "--fallback", "--json")
	human, typed := tm.human, tm.typed
	waitFor(t, "proposal 1", 60*time.Second, func() bool { return strings.Contains(human.String(), "type: approve 1 ") })
	frozen := proposedNames(t, human.String(), 1)
	typed("reject that moved too much: do not touch " + strings.Join(frozen, ", "))
	read := "» read: keep " + strings.Join(frozen, "; keep ") + ". Every proposer keeps to this for the rest of the session."
	waitFor(t, "the reply to the reject", 20*time.Second, func() bool { return strings.Contains(human.String(), read) })
	for seq := 2; seq <= 4; seq++ {
		waitFor(t, fmt.Sprintf("proposal %d", seq), 60*time.Second, func() bool { return strings.Contains(human.String(), fmt.Sprintf("type: approve %d ", seq)) })
		if seq == 2 {
			typed("why 2")
			waitFor(t, "the why answer", 20*time.Second, func() bool { return strings.Contains(human.String(), "== why proposal 2 for trial") })
		}
		typed(fmt.Sprintf("approve %d", seq))
	}
	// Approval mode: each rung's promotion plan waits for a person's go (issue 23).
	for rung := 1; rung <= 2; rung++ {
		tm.see(fmt.Sprintf("the promotion plan of rung %d", rung), fmt.Sprintf("promotion review for rung %d:", rung))
		typed("go")
	}
	sum := tm.exit()
	checkReadmeOutline(t, tm.stdout.String()) // a rejected proposal, and approved ones: edited null
	if len(sum.Proposals) != 4 || sum.Proposals[0].State != "rejected" {
		t.Fatalf("proposals %+v, want the rejected one and three more", sum.Proposals)
	}
	for _, p := range sum.Proposals[1:] {
		for _, name := range frozen {
			_, w := p.Patch.Weights[name]
			_, pm := p.Patch.Params[name]
			if w || pm {
				t.Errorf("proposal %d %v moves %s, which the person asked to keep", p.Seq, p.Patch, name)
			}
		}
	}
	text := human.String()
	// The session's line, then what to type (once the session started: a refused start
	// prints no banner, issue 35 item 9).
	if first, rest, _ := strings.Cut(text, "\n"); !strings.HasPrefix(first, "session ") || !strings.HasPrefix(rest, "tunebot reads commands here: type help") {
		t.Errorf("the terminal does not start with the session and what to type:\n%.300s", text)
	}
	for _, chat := range []*regexp.Regexp{regexp.MustCompile(`\[Approve\]`), regexp.MustCompile(`reply in this thread`), regexp.MustCompile(`/tune help`)} {
		if chat.MatchString(text) {
			t.Errorf("the terminal prints chat wording %q", chat)
		}
	}
}
