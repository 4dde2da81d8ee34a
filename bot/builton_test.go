package bot_test

import (
	"encoding/json"
	"strings"
	"testing"

	"tunebot/bot"
	"tunebot/session"
)

// The first proposal of a session built on another says so on its card, and the summary
// names the session it built on.
func TestCardsSayWhatTheSessionBuiltOn(t *testing.T) {
	sp := session.DefaultSpace()
	b := session.BuiltOn{Session: "ab12cd34ef56", Trials: 11, Weight: 0.5, Start: session.FromBest, Trial: 7}
	line := "builds on session ab12cd34: 11 trials, each weighted 0.5, starting from its best configuration (trial 7)"
	p := session.Proposal{ID: "x-p01", SessionID: "ab", Seq: 1, Number: 1, Base: sp.Defaults(), Source: session.SourceSampler,
		Patch: session.Patch{Weights: map[string]float64{"pose": 1}}, Summary: "Strengthens pose.", State: session.ProposalPending,
		BuiltOn: "this session " + b.Line()}
	if got := blocksText(t, bot.ProposalCard(p, sp, nil)); !strings.Contains(got, "this session "+line) {
		t.Errorf("the first card does not say %q:\n%s", line, got)
	}
	p.Seq, p.BuiltOn = 2, ""
	if got := blocksText(t, bot.ProposalCard(p, sp, nil)); strings.Contains(got, "builds on") {
		t.Errorf("a later card says it again:\n%s", got)
	}
	s := session.Session{ID: "ef", State: session.StateSucceeded, Settings: session.DefaultSettings(), BestTrial: -1, BuiltOn: &b}
	if got := blocksText(t, bot.SummaryCard(bot.SummaryInput{Session: s})); !strings.Contains(got, strings.TrimPrefix(line, "builds on ")) {
		t.Errorf("the summary does not name the session it built on:\n%s", got)
	}
}

// blocksText is every text and field of c, for a test to search.
func blocksText(t *testing.T, c bot.Card) string {
	t.Helper()
	b, err := json.Marshal(c.Blocks)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The answer to an edit names a param as the card's diff does, "params.x" (issue 43,
// item 7.12).
func TestEditedChangeNamesParamsAsTheCard(t *testing.T) {
	sp := session.DefaultSpace()
	edited := session.Patch{Params: map[string]float64{"foot_gait.period": 0.5}}
	p := session.Proposal{Base: sp.Defaults(), Patch: edited, Decision: &session.Decision{Action: session.ActionEdit, Edited: &edited}}
	if got, want := bot.EditedChange(p, sp), "it runs: params.foot_gait.period 0.6 → 0.5 (×0.83)"; got != want {
		t.Errorf("EditedChange = %q, want %q", got, want)
	}
}
