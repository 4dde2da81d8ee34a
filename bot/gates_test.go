package bot_test

import (
	"strings"
	"testing"

	"tunebot/bot"
	"tunebot/session"
	"tunebot/session/sessiontest"
)

// field is the value of the first field labelled label among c's blocks, "" when none.
func field(c bot.Card, label string) string {
	for _, b := range c.Blocks {
		for _, f := range b.Fields {
			if f.Label == label {
				return f.Value
			}
		}
	}
	return ""
}

// A trial that scores highest against rung 0's baseline but fails the tracking gate against
// the baseline trained as long: its card, its phone line and the summary's table say it is
// not eligible and why, and the summary's result is the trial that shipped (issue 35, item 2).
func TestCardsJudgeGatesAtEqualTraining(t *testing.T) {
	s, trials := sessiontest.GateLadder()
	at := func(num, rung int) session.Trial {
		for _, tr := range trials {
			if tr.Number == num && tr.Rung == rung {
				return tr
			}
		}
		t.Fatalf("no trial %d @ rung %d", num, rung)
		return session.Trial{}
	}
	control := at(0, 2)
	want := "no: tracking is 5.6% worse than the baseline @ rung 2 (limit 5%)"
	if got := field(bot.TrialCard(bot.TrialInput{Session: s, Trial: at(5, 2), Control: &control}), "eligible"); got != want {
		t.Errorf("trial 5 @ rung 2's card says eligible %q, want %q", got, want)
	}
	if got := field(bot.TrialCard(bot.TrialInput{Session: s, Trial: at(4, 2), Control: &control}), "eligible"); got != "yes" {
		t.Errorf("trial 4 @ rung 2's card says eligible %q, want yes", got)
	}
	five := at(5, 2)
	push, _ := bot.PushCard(bot.PushInput{Event: session.Event{Kind: session.EventTrialFinished, Session: s, Trial: &five}, Trials: trials})
	if text := bot.PushText(push); !strings.Contains(text, "trial 5 @ rung 2") || !strings.Contains(text, "not eligible") {
		t.Errorf("phone line %q, want trial 5 @ rung 2 not eligible", text)
	}
	sum := bot.SummaryCard(bot.SummaryInput{Session: s, Trials: trials})
	if got := field(sum, "result"); !strings.HasPrefix(got, "trial 4 @ rung 2 scores ") || got != s.Result.Headline() {
		t.Errorf("summary result %q, want the headline about trial 4 @ rung 2 %q", got, s.Result.Headline())
	}
	rung2 := 0
	for _, b := range sum.Blocks {
		if b.Table == nil {
			continue
		}
		for _, row := range b.Table.Rows {
			if row[1] != "2" {
				continue
			}
			rung2++
			wantElig, star := "yes", row[0] == "4 ★"
			if strings.HasPrefix(row[0], "5") {
				wantElig, star = "no", true
			}
			if row[len(row)-1] != wantElig || (strings.HasPrefix(row[0], "4") && !star) || strings.Contains(row[0], "5 ★") {
				t.Errorf("summary row %q: want trial 4 ★ eligible, trial 5 not eligible, the baseline eligible", row)
			}
		}
	}
	if rung2 != 3 {
		t.Errorf("the summary's table has %d rows at rung 2, want trials 4 and 5 and the baseline", rung2)
	}
}

// When nothing beat the baseline, the root card's "best" is the baseline (the starred
// trial), not the tuned trial it beat (issue 35, item 8: "best −0.144 (trial 1)").
func TestRootCardBestIsTheBaselineWhenItStands(t *testing.T) {
	s, trials := sessiontest.GateLadder()
	s.BestTrial, s.Preset, s.Outcome = 0, "", session.OutcomeNoImprovement
	c, _ := session.Compare(s, trials)
	s.Result = &c
	got := field(bot.RootCard(bot.RootInput{Session: s, Trials: trials}), "best")
	if !strings.HasPrefix(got, "the baseline (trial 0 @ rung 2): no tuned trial beat it") {
		t.Errorf("root card's best %q, want the baseline first", got)
	}
}
