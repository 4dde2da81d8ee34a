package bot_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/bot"
	"tunebot/session"
)

// withClip gives t a recorded GIF clip with a poster frame.
func withClip(t session.Trial) session.Trial {
	t.Clip = &session.Clip{File: session.File{Path: fmt.Sprintf("trial-%03d-rung-%d/clip.gif", t.Number, t.Rung), Size: 9, SHA256: "x"},
		Format: session.ClipGIF, Width: 320, Height: 180, Frames: 62, Seconds: 4.96,
		Poster: &session.File{Path: fmt.Sprintf("trial-%03d-rung-%d/clip-poster.png", t.Number, t.Rung)}}
	return t
}

// fakeClips serves "GIF89a <trial>" (or "PNG <trial>" as its poster) for any trial with a
// clip, and records what it read.
type fakeClips struct{ read []string }

func (f *fakeClips) get(t session.Trial, poster bool) ([]byte, string, error) {
	if t.Clip == nil {
		return nil, "", errors.New("no clip")
	}
	what := "GIF89a"
	if poster {
		what = "PNG"
	}
	f.read = append(f.read, fmt.Sprintf("%s %d@%d", what, t.Number, t.Rung))
	return []byte(fmt.Sprintf("%s %d@%d", what, t.Number, t.Rung)), "/data/sessions/" + t.Clip.Path, nil
}

func TestTrialReportCarriesItsClipBesideTheCharts(t *testing.T) {
	s := fixtureSession()
	trials := fixtureTrials()[:3]
	trials[2] = withClip(trials[2])
	trials[1].ClipNote = "clip refused: truncated GIF: it ends after 3 frames without its trailer"
	clips := &fakeClips{}
	r := &bot.Renderer{Records: trialsOnly(trials), Space: session.DefaultSpace(), Clips: clips.get,
		Charts: func(context.Context, session.Session, session.Trial, []string) ([]bot.Attachment, error) {
			return []bot.Attachment{{Name: "curves.png", Title: "curves", Data: []byte("png")}}, nil
		}}

	out := r.Render(context.Background(), session.Event{Kind: session.EventTrialFinished, Session: s, Trial: &trials[2]}, "slack")
	var got []string
	for _, b := range out.Thread[0].Blocks {
		for _, a := range b.Attachments {
			got = append(got, fmt.Sprintf("%s %s %q %s", a.Name, a.ContentType, a.Data, a.Kind()))
		}
	}
	want := []string{`trial-002-rung-0.gif image/gif "GIF89a 2@0" clip`, `curves.png  "png" chart`}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("trial report attachments (-want +got):\n%s", d)
	}
	if text := bot.RenderText(out.Thread[0], nil); !strings.Contains(text, "[clip] trial 2 @ rung 0 · 5.0 s: /data/sessions/trial-002-rung-0/clip.gif") {
		t.Errorf("the text report does not name the clip's file:\n%s", text)
	}

	// A refused clip is said in the report; no clip is looked for.
	out = r.Render(context.Background(), session.Event{Kind: session.EventTrialFinished, Session: s, Trial: &trials[1]}, "slack")
	if text := bot.RenderText(out.Thread[0], nil); !strings.Contains(text, "clip refused: truncated GIF") || strings.Contains(text, "[clip]") {
		t.Errorf("the report of a trial whose clip was refused:\n%s", text)
	}
}

func TestSummaryLeadsWithTheBestClipBesideTheBaselines(t *testing.T) {
	s := fixtureSession()
	s.State, s.Preset, s.BestTrial, s.BestRung = session.StateSucceeded, "auto-tune-1a2b3c4d", 2, 1
	trials := fixtureTrials()[:3]
	for i := range trials {
		trials[i] = withClip(trials[i])
	}
	// the baseline and trial 2 carried to rung 1: the best is shown beside the control
	base1, best1 := withClip(trials[0]), withClip(trials[2])
	base1.Rung, best1.Rung = 1, 1
	base1, best1 = withClip(base1), withClip(best1)
	trials = append(trials, base1, best1)
	clips := &fakeClips{}
	r := &bot.Renderer{Records: trialsOnly(trials), Space: session.DefaultSpace(), Clips: clips.get,
		TrialURL: func(id string, n, r int) string { return fmt.Sprintf("https://tune.example/%s/%d@%d", id, n, r) }}
	out := r.Render(context.Background(), session.Event{Kind: session.EventSessionFinished, Session: s}, "discord")
	if len(out.Thread) != 2 || out.Thread[0].Kind != "clips" || out.Thread[1].Kind != "summary" {
		t.Fatalf("thread cards %v, want the clips first, then the summary", kinds(out.Thread))
	}
	var names []string
	for _, b := range out.Thread[0].Blocks {
		for _, a := range b.Attachments {
			names = append(names, a.Name+" "+a.Link)
		}
	}
	want := []string{"trial-002-rung-1.gif https://tune.example/1a2b3c4d5e6f7a8b/2@1", "trial-000-rung-1.gif https://tune.example/1a2b3c4d5e6f7a8b/0@1"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("summary clips (-want +got):\n%s", d)
	}
	text := bot.RenderText(out.Thread[0], nil)
	for _, w := range []string{"best: trial 2 @ rung 1", "baseline: trial 0 @ rung 1"} {
		if !strings.Contains(text, w) {
			t.Errorf("the clips card does not say %q:\n%s", w, text)
		}
	}

	// Without a clip, the side says why.
	trials[3].Clip, trials[3].ClipNote = nil, "no clip: the trainer wrote none"
	r.Records = trialsOnly(trials)
	out = r.Render(context.Background(), session.Event{Kind: session.EventSessionFinished, Session: s}, "discord")
	if text := bot.RenderText(out.Thread[0], nil); !strings.Contains(text, "baseline: trial 0 @ rung 1") || !strings.Contains(text, "no clip: the trainer wrote none") {
		t.Errorf("a side without a clip:\n%s", text)
	}
}

func kinds(cs []bot.Card) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Kind)
	}
	return out
}

func TestPushCardIsOnePhoneLine(t *testing.T) {
	s := fixtureSession()
	trials := fixtureTrials()
	tr := withClip(trials[2])
	poster := &bot.Attachment{Name: "trial-002-rung-0.png", Data: []byte("PNG"), ContentType: bot.ContentPNG}
	tests := []struct {
		name string
		e    session.Event
		want string
	}{
		{"eligible", session.Event{Kind: session.EventTrialFinished, Session: s, Trial: &tr}, "trial 2 @ rung 0: +0.123 vs baseline @ rung 0 · eligible · 3/12 done"},
		{"not eligible", session.Event{Kind: session.EventTrialFinished, Session: s, Trial: &trials[1]}, "trial 1 @ rung 0: +0.050 vs baseline @ rung 0 · not eligible · 3/12 done"},
		{"failed", session.Event{Kind: session.EventTrialFinished, Session: s, Trial: &session.Trial{Number: 4, State: session.TrialFailed, Reason: "train job failed: exit status 3"}},
			"trial 4 @ rung 0 failed: exit status 3 · 3/12 done"},
		{"proposal", session.Event{Kind: session.EventProposalReady, Session: s, Proposal: func() *session.Proposal { p := fixtureProposal(); return &p }()},
			"proposal 3 for trial 4 waits for your decision: 3 changes · DeepSeek's confidence: 62 %"},
		{"promotion plan", session.Event{Kind: session.EventReview, Session: s, Review: &session.Review{Rung: 1, Plan: []int{2, 0}, Until: t0.Add(15 * time.Minute)}},
			"promotions to rung 1 wait for your go (or go ahead at 09:41 UTC): trial 2 and the baseline go to 900 iterations"},
	}
	// above rung 0: against the baseline at the same rung, recomputed from the metrics, or
	// rung 0's, said so, before the baseline got there
	base1 := session.Trial{Number: 0, Rung: 1, State: session.TrialCompleted, Score: scored(0.3, true), Metrics: fixtureMetrics(0.7)}
	rung1 := session.Trial{Number: 2, Rung: 1, State: session.TrialCompleted, Score: scored(0.25, true), Metrics: fixtureMetrics(0.75)}
	tests = append(tests, struct {
		name string
		e    session.Event
		want string
	}{"rung 1 before its baseline", session.Event{Kind: session.EventTrialFinished, Session: s, Trial: &rung1},
		"trial 2 @ rung 1: +0.250 vs baseline @ rung 0, trained less · eligible · 3/12 done"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := bot.PushCard(bot.PushInput{Event: tc.e, Trials: trials, Poster: poster, Link: "https://tune.example/t"})
			if !ok {
				t.Fatal("no push card")
			}
			if got := strings.TrimSpace(bot.PushText(c)); got != tc.want {
				t.Errorf("line %q, want %q", got, tc.want)
			}
			if c.Link != "https://tune.example/t" || c.Title != "session 1a2b3c4d" {
				t.Errorf("link %q, title %q", c.Link, c.Title)
			}
		})
	}
	unimproved := s
	unimproved.State, unimproved.Outcome, unimproved.BestTrial = session.StateSucceeded, session.OutcomeNoImprovement, 0
	c, _ := bot.PushCard(bot.PushInput{Event: session.Event{Kind: session.EventSessionFinished, Session: unimproved}, Trials: trials})
	if got, want := strings.TrimSpace(bot.PushText(c)), "session 1a2b3c4d succeeded (no_improvement): nothing beat the defaults; they stand"; got != want {
		t.Errorf("nothing beat the baseline: line %q, want %q", got, want)
	}
	c, _ = bot.PushCard(bot.PushInput{Event: session.Event{Kind: session.EventTrialFinished, Session: s, Trial: &rung1}, Trials: append(trials[:3:3], base1, rung1)})
	if got, want := strings.TrimSpace(bot.PushText(c)), "trial 2 @ rung 1: -0.057 vs baseline @ rung 1 · eligible · 3/12 done"; got != want {
		t.Errorf("rung 1 with its baseline: line %q, want %q", got, want)
	}
	if _, ok := bot.PushCard(bot.PushInput{Event: session.Event{Kind: session.EventTrialProgress, Session: s}}); ok {
		t.Error("a progress event buzzes a phone")
	}
	// An automatic session's plan goes ahead by itself: nothing waits for anyone.
	auto := s
	auto.Settings.Mode = session.ModeAutomatic
	if _, ok := bot.PushCard(bot.PushInput{Event: session.Event{Kind: session.EventReview, Session: auto, Review: &session.Review{Rung: 1, Plan: []int{2, 0}}}}); ok {
		t.Error("an automatic session's plan buzzes a phone")
	}
}

func TestClipCommandPostsTheClip(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	trials, _ := f.db.Trials(ctx, f.sid)
	for _, tr := range trials {
		if tr.Number == 2 {
			if err := f.db.PutTrial(ctx, withClip(tr)); err != nil {
				t.Fatal(err)
			}
		}
		if tr.Number == 1 {
			tr.ClipNote = "no clip: the trainer wrote none"
			if err := f.db.PutTrial(ctx, tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	clips := &fakeClips{}
	h := bot.NewHandler(bot.HandlerConfig{Engine: f.eng, Store: f.db, Space: session.DefaultSpace(), Clips: clips.get,
		Allow: bot.AllowList{{Platform: "slack", Users: []string{"U1"}}}})
	do := func(text string) bot.Reply {
		return h.Do(ctx, bot.Interaction{Platform: "slack", User: bob, Channel: "C1", Kind: bot.KindCommand, Text: text})
	}
	for _, text := range []string{"clip 2", "clip 2 0", "clip 2@0"} {
		r := do(text)
		if r.Private || r.Card == nil {
			t.Fatalf("%s: %+v, want a card for everyone in the channel", text, r)
		}
		var names []string
		for _, b := range r.Card.Blocks {
			for _, a := range b.Attachments {
				names = append(names, a.Name+" "+string(a.Data))
			}
		}
		if strings.Join(names, ",") != "trial-002-rung-0.gif GIF89a 2@0" {
			t.Errorf("%s attached %v", text, names)
		}
	}
	for text, want := range map[string]string{
		"clip 1":   "trial 1 @ rung 0 of session 1a2b3c4d has no clip to show: no clip: the trainer wrote none",
		"clip 9":   "session 1a2b3c4d has no trial 9",
		"clip x":   `clip: "x" is not a trial number`,
		"clip 2 z": `clip: "z" is not a rung`,
		"clip":     "usage: clip TRIAL [RUNG]",
	} {
		if r := do(text); !r.Private || !strings.Contains(r.Text, want) {
			t.Errorf("%s: %+v, want a private %q", text, r, want)
		}
	}
}
