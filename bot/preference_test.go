package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/session"
)

func TestParsePreferAndReview(t *testing.T) {
	for _, tt := range []struct {
		text string
		want bot.Command
		err  string
	}{
		{"prefer 8 over 5", bot.Command{Verb: bot.VerbPrefer, Trial: 8, Other: 5}, ""},
		{"Prefer #8 over 5 trots; 5 hops on its hind legs", bot.Command{Verb: bot.VerbPrefer, Trial: 8, Other: 5, Note: "trots; 5 hops on its hind legs"}, ""},
		{"prefer neither both shuffle", bot.Command{Verb: bot.VerbPrefer, Neither: true, Note: "both shuffle"}, ""},
		{"prefer 8", bot.Command{}, "usage: prefer N over M"},
		{"prefer 8 over 8", bot.Command{}, "usage: prefer N over M"},
		{"go", bot.Command{Verb: bot.VerbGo}, ""},
		{"promote 8", bot.Command{Verb: bot.VerbPromote, Trial: 8}, ""},
		{"drop #5", bot.Command{Verb: bot.VerbDrop, Trial: 5}, ""},
		// plain words are people talking, not changes to the plan
		{"go team!", bot.Command{Verb: bot.VerbComment}, ""},
		{"drop it, it hops", bot.Command{Verb: bot.VerbComment}, ""},
		{"promote the new one", bot.Command{Verb: bot.VerbComment}, ""},
	} {
		c, err := bot.ParseReply(tt.text, session.DefaultSpace())
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, want an error with %q", tt.text, err, tt.err)
			}
			continue
		}
		if err != nil || c.Verb != tt.want.Verb || c.Trial != tt.want.Trial || c.Other != tt.want.Other || c.Neither != tt.want.Neither || c.Note != tt.want.Note {
			t.Errorf("%q: %+v %v, want %+v", tt.text, c, err, tt.want)
		}
	}
}

// seed adds an open A/B card (trial 2, the best, against the baseline) and, with review,
// a waiting promotion plan for rung 1 to the fixture's session.
func (f *fixture) seed(t *testing.T, review bool) {
	t.Helper()
	trials := fixtureTrials()
	_, err := f.db.UpdateSession(context.Background(), f.sid, func(s *session.Session) error {
		s.Preferences = []session.Preference{{Seq: 1, A: 2, B: 0, AConfig: trials[2].RewardConfig, BConfig: trials[0].RewardConfig, Asked: true, AskedAt: t0}}
		if review {
			s.Reviews = []session.Review{{Rung: 1, Planned: []int{2, 0}, Plan: []int{2, 0}, OpenedAt: t0, Until: time.Now().Add(time.Hour)}}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) click(who session.Actor, verb, id string, roles ...string) bot.Reply {
	return f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: who, Roles: roles, Kind: bot.KindAction, ActionID: bot.ActionID(verb, f.sid, id)})
}

// A click on A records one preference; a second click, by anyone, is refused as already
// decided and names who answered; a stranger may not answer; the note form adds a note to
// one's own answer (issue 23).
func TestPreferenceClick(t *testing.T) {
	f := newFixture(t, nil)
	f.seed(t, false)
	if r := f.reply(bob, "prefer neither"); !strings.Contains(r.Text, "not allowed") {
		t.Errorf("bob without his role: %+v", r)
	}
	if r := f.click(eve, bot.ButtonPreferA, bot.CardID(1)); !r.Private || !strings.Contains(r.Text, "not allowed to answer A/B cards") {
		t.Errorf("a stranger's click: %+v", r)
	}
	r := f.click(alice, bot.ButtonPreferA, bot.CardID(1))
	if r.Private || !strings.HasPrefix(r.Text, "alice: trial 2 walks better than the baseline (trial 0)") || !strings.Contains(r.Text, "leans its next proposals towards trial 2's configuration") {
		t.Fatalf("the click: %+v", r)
	}
	if r := f.click(bob, bot.ButtonPreferTie, bot.CardID(1), "S-ops"); !r.Private || !strings.Contains(r.Text, "already compared by alice") {
		t.Errorf("a second click: %+v", r)
	}
	if r := f.reply(bob, "prefer 0 over 2", "S-ops"); !r.Private || !strings.Contains(r.Text, "already compared by alice") {
		t.Errorf("a typed second answer: %+v", r)
	}
	r = f.click(alice, bot.ButtonPreferNote, bot.CardID(1))
	if r.Form == nil || r.Form.Inputs[0].ID != bot.FieldNote {
		t.Fatalf("the note button: %+v", r)
	}
	r = f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: alice, Kind: bot.KindSubmit, ActionID: r.Form.ActionID,
		Values: map[string]string{bot.FieldNote: "trots evenly; the baseline shuffles"}})
	if r.Private || !strings.Contains(r.Text, "“trots evenly; the baseline shuffles”") {
		t.Fatalf("the note: %+v", r)
	}
	s, _ := f.db.Session(context.Background(), f.sid)
	if p := s.Preferences[0]; p.Answer != session.AnswerA || p.Note != "trots evenly; the baseline shuffles" || p.By == nil || p.By.ID != alice.ID {
		t.Errorf("stored %+v", p)
	}
	if r := f.reply(alice, "prefer neither"); !r.Private || !strings.Contains(r.Text, "no A/B card waits") {
		t.Errorf("prefer neither without a card: %+v", r)
	}
}

// promote and drop change the waiting plan within the rules, Go starts it, and a late Go
// is refused naming who said go.
func TestReviewReplies(t *testing.T) {
	f := newFixture(t, nil)
	if r := f.reply(alice, "go"); !r.Private || !strings.Contains(r.Text, "no promotion plan waits") {
		t.Errorf("go without a plan: %+v", r)
	}
	f.seed(t, true)
	if r := f.reply(alice, "promote 1"); !r.Private || !strings.Contains(r.Text, "did not pass the gates") {
		t.Errorf("promoting an ineligible trial: %+v", r)
	}
	if r := f.reply(alice, "drop 0"); !r.Private || !strings.Contains(r.Text, "carried along as the control") {
		t.Errorf("dropping the control: %+v", r)
	}
	if r := f.reply(eve, "drop 2"); !r.Private || !strings.Contains(r.Text, "not allowed") {
		t.Errorf("a stranger's drop: %+v", r)
	}
	if r := f.reply(alice, "drop 2"); r.Private || !strings.Contains(r.Text, "alice dropped trial 2; no other trial passed the gates") {
		t.Errorf("drop 2: %+v", r)
	}
	if r := f.click(alice, bot.ButtonGo, bot.RungID(2)); !r.Private || !strings.Contains(r.Text, "no promotion plan for rung 2") {
		t.Errorf("a Go for another rung: %+v", r)
	}
	if r := f.click(alice, bot.ButtonGo, bot.RungID(1)); r.Private || !strings.Contains(r.Text, "alice said go: the baseline goes to 900 iterations") {
		t.Errorf("go: %+v", r)
	}
	if r := f.click(bob, bot.ButtonGo, bot.RungID(1), "S-ops"); !r.Private || !strings.Contains(r.Text, "have started (alice said go") {
		t.Errorf("a second go: %+v", r)
	}
	audit, _ := f.db.Audit(context.Background(), f.sid)
	n := 0
	for _, e := range audit {
		if e.Kind == "promotion_review" && e.Actor.ID == alice.ID {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d promotion review entries by alice in the audit, want 2 (drop, go)", n)
	}
}

func TestPreferenceAndReviewCardsGolden(t *testing.T) {
	s := fixtureSession()
	trials := fixtureTrials()
	card := session.Preference{Seq: 1, A: 2, B: 0, AConfig: trials[2].RewardConfig, BConfig: trials[0].RewardConfig, Asked: true, AskedAt: t0}
	clip := &bot.Attachment{Name: "trial-002-rung-0.gif", Title: "trial 2 @ rung 0 · 5.0 s", ContentType: "image/gif", Path: "/data/sessions/x/trial-002-rung-0/clip.gif"}
	in := bot.PreferenceInput{Session: s, Preference: card, A: &bot.ClipSide{Trial: trials[2], Label: "A", Clip: clip},
		B: &bot.ClipSide{Trial: trials[0], Label: "B"}, Charts: []bot.Attachment{{Name: "curves.png", Title: "training curves of trial 0"}}}
	answered := in
	answered.Preference.Answer, answered.Preference.Note, answered.Preference.By, answered.Preference.At = session.AnswerB, "the baseline trots; 2 hops", &bob, t0.Add(time.Minute)
	unadvised := answered // no advisor configured: no prompt is promised (issue 35, item 8)
	unadvised.NoAdvisor = true
	expired := in
	expired.Preference.Expired = true
	rv := session.Review{Rung: 1, Planned: []int{2, 1, 0}, Plan: []int{2, 3, 0}, OpenedAt: t0, Until: t0.Add(15 * time.Minute),
		Changes: []session.PlanChange{{Action: session.ReviewPromote, Trial: 3, Other: 1, By: alice, At: t0.Add(time.Minute)}}}
	done := rv
	done.Done, done.DoneAt, done.GoBy = true, t0.Add(2*time.Minute), &bob
	trials[3].State, trials[3].Score = session.TrialCompleted, scored(0.11, true)
	for _, tc := range []struct {
		name string
		card bot.Card
	}{
		{"preference", bot.PreferenceCard(in)},
		{"preference_answered", bot.PreferenceCard(answered)},
		{"preference_answered_no_advisor", bot.PreferenceCard(unadvised)},
		{"preference_expired", bot.PreferenceCard(expired)},
		{"review", bot.ReviewCard(s, rv, trials, []string{"U1"})},
		{"review_done", bot.ReviewCard(s, done, trials, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, "card_"+tc.name, bot.RenderText(tc.card, map[string]string{"curves.png": "out/1a2b3c4d/curves.png"}))
		})
	}
}

// An A/B card whose sides cannot both be read names B without scores: as the baseline
// when B is trial 0, as "the best so far" alone reads as a tuned trial.
func TestPreferenceCardWithoutScoresNamesTheBaseline(t *testing.T) {
	for _, tt := range []struct {
		b    int
		want string
	}{
		{0, "A is trial 2, which just finished; B is the baseline (trial 0), still the best so far."},
		{1, "A is trial 2, which just finished; B is the best so far, trial 1."},
	} {
		in := bot.PreferenceInput{Session: fixtureSession(), Preference: session.Preference{Seq: 1, A: 2, B: tt.b, Asked: true, AskedAt: t0}}
		if text := bot.RenderText(bot.PreferenceCard(in), nil); !strings.Contains(text, tt.want) {
			t.Errorf("B = trial %d: the card says\n%s\nwant %q", tt.b, text, tt.want)
		}
	}
}
