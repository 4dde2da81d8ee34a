package console_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/bot/bottest"
	"tunebot/bot/console"
	"tunebot/secret"
	"tunebot/session"
	"tunebot/store"
)

// syncBuffer is an io.Writer safe to read while the console writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func setup(t *testing.T) (*store.DB, *session.Engine, session.Session, session.Proposal, session.Trial) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sp := session.DefaultSpace()
	eng, err := session.NewEngine(session.EngineConfig{Store: db, Trainer: bottest.NoTrainer{}, Space: sp, SessionsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	st := session.DefaultSettings()
	st.Mode = session.ModeApproval
	st.Normalize()
	s := session.Session{ID: "feedc0de00112233", State: session.StatePaused, Settings: st, Owner: console.User, Base: sp.Defaults(), BestTrial: -1, CreatedAt: time.Now()}
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	tr := session.Trial{SessionID: s.ID, Number: 0, Rung: 0, Iterations: 300, State: session.TrialCompleted, Source: "baseline", RewardConfig: sp.Defaults(),
		Score: &session.Score{Eligible: true, Objectives: map[string]float64{}}}
	if err := db.PutTrial(ctx, tr); err != nil {
		t.Fatal(err)
	}
	p := session.Proposal{ID: "feedc0de-p01", SessionID: s.ID, Seq: 1, Number: 1, Base: sp.Defaults(), State: session.ProposalPending,
		Patch: session.Patch{Weights: map[string]float64{"pose": 1.5}}, Rationale: "more pose <!channel>", Source: "advisor", CreatedAt: time.Now()}
	if err := db.PutProposal(ctx, p); err != nil {
		t.Fatal(err)
	}
	return db, eng, s, p, tr
}

func TestConsoleRendersEventsAndSavesCharts(t *testing.T) {
	db, eng, s, p, tr := setup(t)
	out := &syncBuffer{}
	dir := t.TempDir()
	c := console.New(console.Config{Out: out, Dir: dir, Engine: eng, Store: db, Space: session.DefaultSpace(), Verbose: true,
		Charts: func(context.Context, session.Session, session.Trial, []string) ([]bot.Attachment, error) {
			return []bot.Attachment{{Name: "../../t000-r0-reward.png", Title: "Mean episode reward", Data: []byte("\x89PNG fake")}}, nil
		}})
	half := tr
	half.State, half.Progress = session.TrialTraining, 150
	for _, e := range []session.Event{
		{Kind: session.EventSessionStarted, Session: s, Text: "started"},
		{Kind: session.EventTrialProgress, Session: s, Trial: &half},
		{Kind: session.EventTrialProgress, Session: s, Trial: &half}, // same tenth: not printed again
		{Kind: session.EventTrialFinished, Session: s, Trial: &tr},
		{Kind: session.EventProposalReady, Session: s, Proposal: &p},
	} {
		c.Notify(context.Background(), e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	path := filepath.Join(dir, "feedc0de", "t000-r0-reward.png")
	for _, want := range []string{"== tunebot session feedc0de · paused ==", "[██████████░░░░░░░░░░] 50% (150/300)", "== trial 0 @ rung 0: +0.000 vs baseline @ rung 0 ==",
		"[chart] Mean episode reward: " + path, "== proposal 1 for trial 1", "<\u200b!channel>",
		"type: approve 1 · reject 1 <feedback> · edit 1 term=value … (approves it as edited) · pause · cancel · status"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// A terminal has neither buttons nor a thread.
	for _, chat := range []string{"[Approve]", "reply in this thread", "/tune"} {
		if strings.Contains(text, chat) {
			t.Errorf("the terminal prints chat wording %q:\n%s", chat, text)
		}
	}
	if strings.Count(text, "50% (150/300)") != 1 {
		t.Errorf("progress printed more than once per tenth:\n%s", text)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "\x89PNG fake" {
		t.Errorf("chart file: %q %v", b, err)
	}
}

// Without Verbose the terminal is a page: a finished trial is one line and one naming its
// clip's file (its charts still saved, the clip left where it is), an automatic approval
// says nothing, and a proposal that waits for a person is shown whole.
func TestConsoleIsAPageByDefault(t *testing.T) {
	db, eng, s, p, tr := setup(t)
	tr.Clip = &session.Clip{File: session.File{Path: "trial-000-rung-0/clip.gif"}, Format: session.ClipGIF, Seconds: 5}
	clip := "/data/sessions/" + s.ID + "/trial-000-rung-0/clip.gif"
	out := &syncBuffer{}
	dir := t.TempDir()
	c := console.New(console.Config{Out: out, Dir: dir, Engine: eng, Store: db, Space: session.DefaultSpace(),
		Charts: func(context.Context, session.Session, session.Trial, []string) ([]bot.Attachment, error) {
			return []bot.Attachment{{Name: "t000-r0-reward.png", Title: "Mean episode reward", Data: []byte("\x89PNG fake")}}, nil
		},
		Clips: func(session.Trial, bool) ([]byte, string, error) { return []byte("GIF89a"), clip, nil }})
	auto := p
	auto.State, auto.Decision = session.ProposalApproved, &session.Decision{Action: session.ActionApprove, By: session.System, At: time.Now()}
	for _, e := range []session.Event{
		{Kind: session.EventSessionStarted, Session: s, Text: "session feedc0de started by you"},
		{Kind: session.EventTrialStarted, Session: s, Trial: &tr, Text: "trial 0 @ rung 0 started (300 iterations)"},
		{Kind: session.EventTrialFinished, Session: s, Trial: &tr, Text: "trial 0 @ rung 0: score +0.000 vs baseline @ rung 0"},
		{Kind: session.EventDecision, Session: s, Proposal: &auto},
		{Kind: session.EventProposalReady, Session: s, Proposal: &p},
	} {
		c.Notify(context.Background(), e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"] trial 0 @ rung 0: score +0.000 vs baseline @ rung 0\n  [clip] trial 0 @ rung 0 (baseline) · 5.0 s: " + clip + "\n",
		"== proposal 1 for trial 1", "type: approve 1"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	for _, noise := range []string{"[chart]", "objectives (improvement", "started (300", "approved by tunebot", "== tunebot session"} {
		if strings.Contains(text, noise) {
			t.Errorf("the page prints %q:\n%s", noise, text)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "feedc0de", "t000-r0-reward.png")); err != nil {
		t.Errorf("the trial's chart was not saved: %v", err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "feedc0de", "*.gif")); len(files) != 0 {
		t.Errorf("the clip was copied to the reports: %v", files)
	}
}

func TestConsoleCommandsFromInput(t *testing.T) {
	db, eng, s, _, _ := setup(t)
	out := &syncBuffer{}
	in := strings.NewReader("hello there\nedit pose=NaN\nhelp\ndashboard\napprove\n")
	c := console.New(console.Config{Out: out, In: in, Dir: t.TempDir(), Engine: eng, Store: db, Space: session.DefaultSpace()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	for !strings.Contains(out.String(), "proposal 1 approved by you") {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ps, err := db.Proposals(context.Background(), s.ID)
	if err != nil || ps[0].State != session.ProposalApproved || ps[0].Decision.By.Platform != "console" {
		t.Fatalf("proposal %+v %v", ps, err)
	}
	text := out.String()
	for _, want := range []string{console.Intro + "\n", "» not a command: type help", `» edit refused:`, `pose: "NaN" is not a decimal number`,
		"to decide a proposal: approve",
		// a foreground session (tune) lists no daemon command, and names them (issue 28)
		"come with the daemon: tunebot run", "» the monitoring page (dashboard) comes with the daemon (tunebot run --config FILE)"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// help is typed as it is, and answered in the terminal's words.
	for _, chat := range []string{"is a /tune command, not a thread reply", "/tune start", "in a session thread", "    start [mode=approval]", "service.addr"} {
		if strings.Contains(text, chat) {
			t.Errorf("the terminal answers help with chat wording %q:\n%s", chat, text)
		}
	}
}

// TestConsoleParallelTrialsAndSeveralProposals: with parallel trials (issue 14) the
// terminal's status shows each running trial with its GPUs or Slurm job and every waiting
// proposal; a bare approve with several waiting lists them; approve N decides proposal N.
func TestConsoleParallelTrialsAndSeveralProposals(t *testing.T) {
	db, eng, s, p, _ := setup(t)
	ctx := context.Background()
	for _, tr := range []session.Trial{
		{SessionID: s.ID, Number: 1, Iterations: 300, Progress: 90, State: session.TrialTraining, Source: "advisor", Proc: &session.Proc{Job: "train", GPUs: []int{3}}},
		{SessionID: s.ID, Number: 2, Iterations: 300, Progress: 300, State: session.TrialEvaluating, Source: "advisor", Proc: &session.Proc{Job: "evaluate", SlurmJob: "4242", JobState: "RUNNING", Node: "gpu7"}},
	} {
		if err := db.PutTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	more := []session.Proposal{p, p}
	for i := range more {
		more[i].ID, more[i].Seq, more[i].Number = fmt.Sprintf("feedc0de-p%02d", i+2), i+2, i+3
		if err := db.PutProposal(ctx, more[i]); err != nil {
			t.Fatal(err)
		}
	}
	out := &syncBuffer{}
	in := strings.NewReader("status\napprove\napprove 2\n")
	c := console.New(console.Config{Out: out, In: in, Dir: t.TempDir(), Engine: eng, Store: db, Space: session.DefaultSpace()})
	c.Notify(ctx, session.Event{Kind: session.EventProposalReady, Session: s, Proposal: &more[1]})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- c.Run(rctx) }()
	for !strings.Contains(out.String(), "proposal 2 approved by you") {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"running now (2):\n• trial 1 @ rung 0 · training 90/300 (30%) · GPU 3\n• trial 2 @ rung 0 · evaluating · Slurm job 4242 RUNNING on gpu7\n",
		"waiting for a decision (3):\n• proposal 1 for trial 1: approve 1 · reject 1 <feedback>\n• proposal 2 for trial 3: approve 2 · reject 2 <feedback>\n• proposal 3 for trial 4: approve 3 · reject 3 <feedback>\n",
		"» 3 proposals wait: approve 1, approve 2 or approve 3\n",
		"type: approve 3 · reject 3 <feedback> · edit 3 term=value …",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	ps, err := db.Proposals(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ps {
		if (x.State == session.ProposalApproved) != (x.Seq == 2) {
			t.Errorf("proposal %d is %s", x.Seq, x.State)
		}
	}
}

// TestConsoleClipCommand: `clip N` typed in tune's terminal (the console's own handler)
// names the trial's clip file, as /tune clip posts it in chat (issue 21).
func TestConsoleClipCommand(t *testing.T) {
	db, eng, s, _, tr := setup(t)
	tr.Clip = &session.Clip{File: session.File{Path: "trial-000-rung-0/clip.gif"}, Format: session.ClipGIF, Seconds: 5}
	if err := db.PutTrial(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	clip := "/data/sessions/" + s.ID + "/trial-000-rung-0/clip.gif"
	out := &syncBuffer{}
	c := console.New(console.Config{Out: out, In: strings.NewReader("clip 0\n"), Dir: t.TempDir(), Engine: eng, Store: db, Space: session.DefaultSpace(),
		Clips: func(session.Trial, bool) ([]byte, string, error) { return []byte("GIF89a"), clip, nil }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	for !strings.Contains(out.String(), "» ") && !strings.Contains(out.String(), "[clip]") {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if text := out.String(); !strings.Contains(text, "  [clip] trial 0 @ rung 0 (baseline) · 5.0 s: "+clip+"\n") {
		t.Errorf("clip 0 in the terminal:\n%s", text)
	}
}

// TestConsoleRedactsSecrets: the terminal masks tunebot's secrets as chat and the page do
// (Config.Redact): a failed trial's card quotes its reason and log tail, the trainer's
// words, and the daemon's terminal is often its service's journal.
func TestConsoleRedactsSecrets(t *testing.T) {
	const key = "sk-planted-deepseek-0123456789"
	db, eng, s, _, tr := setup(t)
	out := &syncBuffer{}
	c := console.New(console.Config{Out: out, Dir: t.TempDir(), Engine: eng, Store: db, Space: session.DefaultSpace(), Verbose: true,
		Redact: secret.NewRedactor(key)})
	failed := tr
	failed.Number, failed.State, failed.Score = 1, session.TrialFailed, nil
	failed.Reason = "train job failed: exit status 1; train.log ends: using key " + key
	failed.LogTail = "Traceback (most recent call last):\nRuntimeError: bad key " + key + "\n"
	c.Notify(context.Background(), session.Event{Kind: session.EventTrialFinished, Session: s, Trial: &failed})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if text := out.String(); strings.Contains(text, key) || !strings.Contains(text, "using key "+secret.Mask) || !strings.Contains(text, "bad key "+secret.Mask) {
		t.Errorf("the terminal quotes the key, or not the masked reason and log:\n%s", text)
	}
}

// A session heard of as running again (a resume) gets the charts of its finished trials
// drawn again where they are missing under the reports directory, as a full disk leaves
// them; those still there are left as they are, and a paused session draws nothing
// (issue 43, item 7.2).
func TestConsoleRedrawsLostChartsOnResume(t *testing.T) {
	tests := []struct {
		name    string
		state   session.State
		pausing bool              // running, but pausing once its jobs end (a full disk pauses so)
		want    map[string]string // file → content after
	}{
		{"resumed", session.StateRunning, false, map[string]string{"t000-r0-reward.png": "kept", "t000-r0-scores.png": "drawn"}},
		{"paused", session.StatePaused, false, map[string]string{"t000-r0-reward.png": "kept", "t000-r0-scores.png": ""}},
		{"pausing", session.StateRunning, true, map[string]string{"t000-r0-reward.png": "kept", "t000-r0-scores.png": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, eng, s, _, _ := setup(t)
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "feedc0de"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "feedc0de", "t000-r0-reward.png"), []byte("kept"), 0o644); err != nil {
				t.Fatal(err)
			}
			c := console.New(console.Config{Out: &syncBuffer{}, Dir: dir, Engine: eng, Store: db, Space: session.DefaultSpace(),
				Charts: func(context.Context, session.Session, session.Trial, []string) ([]bot.Attachment, error) {
					return []bot.Attachment{{Name: "t000-r0-reward.png", Data: []byte("drawn")}, {Name: "t000-r0-scores.png", Data: []byte("drawn")}}, nil
				},
				ReportNames: func(ref session.TrialRef) []string {
					return []string{fmt.Sprintf("t%03d-r%d-reward.png", ref.Number, ref.Rung), fmt.Sprintf("t%03d-r%d-scores.png", ref.Number, ref.Rung)}
				}})
			s.State, s.PauseAsked = tt.state, tt.pausing
			c.Notify(context.Background(), session.Event{Kind: session.EventSessionUpdated, Session: s, Text: "resumed by you"})
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := c.Run(ctx); err != nil {
				t.Fatal(err)
			}
			for name, want := range tt.want {
				b, _ := os.ReadFile(filepath.Join(dir, "feedc0de", name))
				if string(b) != want {
					t.Errorf("%s holds %q, want %q", name, b, want)
				}
			}
		})
	}
}

// A chart that panics while a resume draws a trial's lost charts again is logged and
// skipped, as it is when a trial finishes: a trial whose charts once panicked has none
// saved, so every resume of its session would draw them again and end tunebot.
func TestConsoleRedrawSurvivesAPanickingChart(t *testing.T) {
	db, eng, s, _, _ := setup(t)
	dir := t.TempDir()
	c := console.New(console.Config{Out: &syncBuffer{}, Dir: dir, Engine: eng, Store: db, Space: session.DefaultSpace(),
		Charts: func(context.Context, session.Session, session.Trial, []string) ([]bot.Attachment, error) {
			panic("a degenerate series")
		},
		ReportNames: func(ref session.TrialRef) []string {
			return []string{fmt.Sprintf("t%03d-r%d-scores.png", ref.Number, ref.Rung)}
		}})
	s.State = session.StateRunning
	c.Notify(context.Background(), session.Event{Kind: session.EventSessionUpdated, Session: s, Text: "resumed by you"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "feedc0de", "t000-r0-scores.png")); err == nil {
		t.Error("a chart that panicked was saved")
	}
}

// TestReportsLinkRefused: a link planted for the reports directory, or for a session's
// charts directory in it, is never followed: no chart lands in the directory it names
// (issue 44 item 3, where 80 charts did), and the session's own charts directory stays a
// directory of tunebot's user.
func TestReportsLinkRefused(t *testing.T) {
	for _, planted := range []string{"reports", "reports/feedc0de"} {
		t.Run(planted, func(t *testing.T) {
			db, eng, s, _, tr := setup(t)
			base, theirs := t.TempDir(), t.TempDir()
			dir := filepath.Join(base, "reports")
			if planted != "reports" {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(theirs, filepath.Join(base, planted)); err != nil {
				t.Fatal(err)
			}
			c := console.New(console.Config{Out: &syncBuffer{}, Dir: dir, Engine: eng, Store: db, Space: session.DefaultSpace(), Verbose: true,
				Charts: func(context.Context, session.Session, session.Trial, []string) ([]bot.Attachment, error) {
					return []bot.Attachment{{Name: "t000-r0-reward.png", Title: "Mean episode reward", Data: []byte("\x89PNG fake")}}, nil
				}})
			c.Notify(context.Background(), session.Event{Kind: session.EventTrialFinished, Session: s, Trial: &tr})
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := c.Run(ctx); err != nil {
				t.Fatal(err)
			}
			var found []string
			filepath.WalkDir(theirs, func(path string, d fs.DirEntry, err error) error {
				if path != theirs {
					found = append(found, path)
				}
				return nil
			})
			if len(found) > 0 {
				t.Errorf("charts written through the planted %s link: %v", planted, found)
			}
		})
	}
}
