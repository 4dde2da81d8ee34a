package bot_test

import (
	"strings"
	"testing"

	"tunebot/bot"
	"tunebot/session"
	"tunebot/session/sessiontest"
)

// A session whose gain is within the noise says so where people read it: the phone's line,
// the summary's outcome and its title, with the preset it saved marked so (issue 43, item 2).
func TestWithinTheNoiseIsSaidEverywhere(t *testing.T) {
	s, trials := sessiontest.GateLadder()
	s.Outcome = session.OutcomeWithinNoise
	push, ok := bot.PushCard(bot.PushInput{Event: session.Event{Kind: session.EventSessionFinished, Session: s}, Trials: trials})
	text := bot.PushText(push)
	if !ok || !strings.Contains(text, "(within_noise): the gain is within the noise") || !strings.Contains(text, "preset "+s.Preset+" saved, marked so") ||
		!strings.Contains(text, "on fresh seeds "+session.SeedRange(s.Settings.FinalEvalSeeds)) {
		t.Errorf("phone line %q, want the outcome, the marked preset and the fresh seeds' verdict", text)
	}
	sum := bot.SummaryCard(bot.SummaryInput{Session: s, Trials: trials})
	if got := field(sum, "outcome"); !strings.HasPrefix(got, "within_noise: the gain is within the noise") || !strings.Contains(got, "saved as preset "+s.Preset+", marked so: apply asks you to acknowledge it") {
		t.Errorf("summary outcome %q", got)
	}
	if !strings.Contains(sum.Title, "succeeded (within_noise)") {
		t.Errorf("summary title %q, want the outcome in it", sum.Title)
	}
}
