package bot_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/session"
)

// addParallel stores what a session with parallel trials has (issue 14): running trials on
// local GPUs and in Slurm, and proposals 4 and 5 waiting beside the fixture's proposal 3.
func addParallel(t *testing.T, f *fixture) []session.Proposal {
	t.Helper()
	ctx := context.Background()
	for _, tr := range []session.Trial{
		{Number: 3, Rung: 0, Iterations: 300, Progress: 120, State: session.TrialTraining, Source: "advisor", Proc: &session.Proc{PID: 10, Job: "train", GPUs: []int{0, 1}}},
		{Number: 4, Rung: 0, Iterations: 300, State: session.TrialTraining, Source: "advisor", Proc: &session.Proc{Job: "train", SlurmJob: "1234", JobState: "PENDING", JobReason: "Resources"}},
		{Number: 2, Rung: 1, Iterations: 900, StartIter: 300, Progress: 450, State: session.TrialTraining, Source: "edit", Proc: &session.Proc{Job: "train", SlurmJob: "1230", JobState: "RUNNING", Node: "node1"}},
	} {
		tr.SessionID = f.sid
		if err := f.db.PutTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	out := []session.Proposal{f.prop}
	for _, seq := range []int{4, 5} {
		p := f.prop
		p.ID, p.Seq, p.Number = fmt.Sprintf("1a2b3c4d-p%02d", seq), seq, seq+1
		if err := f.db.PutProposal(ctx, p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func (f *fixture) states(t *testing.T) map[int]session.ProposalState {
	t.Helper()
	ps, err := f.db.Proposals(context.Background(), f.sid)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]session.ProposalState{}
	for _, p := range ps {
		out[p.Seq] = p.State
	}
	return out
}

// TestSeveralPendingProposals: with three proposals waiting, a bare decision is never
// guessed; a numbered one or a button decides exactly its proposal.
func TestSeveralPendingProposals(t *testing.T) {
	f := newFixture(t, nil)
	props := addParallel(t, f)
	pending := func(want ...int) {
		t.Helper()
		got := []int{}
		for seq, st := range f.states(t) {
			if st == session.ProposalPending {
				got = append(got, seq)
			}
		}
		if fmt.Sprint(sorted(got)) != fmt.Sprint(want) {
			t.Fatalf("pending proposals %v, want %v", sorted(got), want)
		}
	}
	for _, tc := range []struct{ text, want string }{
		{"approve", "3 proposals wait: approve 3, approve 4 or approve 5"},
		{"reject too timid", "3 proposals wait: reject 3 <feedback>, reject 4 <feedback> or reject 5 <feedback>"},
		{"edit pose=1.1", "3 proposals wait: edit 3 term=value …, edit 4 term=value … or edit 5 term=value …"},
		{"approve 9", "session 1a2b3c4d has no proposal 9; 3 proposals wait: approve 3, approve 4 or approve 5"},
	} {
		r := f.reply(alice, tc.text)
		if r.Text != tc.want || !r.Private {
			t.Errorf("%q: %+v, want %q", tc.text, r, tc.want)
		}
	}
	pending(3, 4, 5)

	if r := f.reply(alice, "approve 4"); r.Text != "proposal 4 approved by alice; "+session.PausedApprovalNote {
		t.Errorf("approve 4: %+v", r)
	}
	pending(3, 5)
	if r := f.reply(alice, "approve #4"); !strings.Contains(r.Text, "proposal 4 was already approved by alice") {
		t.Errorf("late approve 4: %+v", r)
	}
	// the buttons of proposal 5's card decide proposal 5, whatever else waits
	r := f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: alice, Kind: bot.KindAction,
		ActionID: bot.ActionID(bot.ButtonApprove, f.sid, props[2].ID)})
	if !strings.Contains(r.Text, "proposal 5 approved by alice") {
		t.Errorf("button of proposal 5: %+v", r)
	}
	pending(3)
	if r := f.reply(alice, "reject 9 why"); r.Text != "session 1a2b3c4d has no proposal 9; proposal 3 waits: reject 3 <feedback>" {
		t.Errorf("reject 9: %+v", r)
	}
	// one left: a bare decision is clear again
	if r := f.reply(alice, "edit pose=1.1"); !strings.Contains(r.Text, "proposal 3 edited and approved by alice") {
		t.Errorf("bare edit with one pending: %+v", r)
	}
	pending()
	if r := f.reply(alice, "approve"); !strings.Contains(r.Text, "proposal 5 was already approved by alice") {
		t.Errorf("bare approve with none pending names the newest: %+v", r)
	}
	if r := f.reply(alice, "approve 7"); r.Text != "session 1a2b3c4d has no proposal 7; none waits for a decision" {
		t.Errorf("approve 7: %+v", r)
	}
}

// TestRejectFormFeedbackStartingWithANumber: a reject form names its proposal by its
// button, so a number the feedback starts with stays feedback.
func TestRejectFormFeedbackStartingWithANumber(t *testing.T) {
	f := newFixture(t, nil)
	props := addParallel(t, f)
	r := f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: alice, Kind: bot.KindSubmit,
		ActionID: bot.ActionID(bot.ButtonReject, f.sid, props[1].ID), Values: map[string]string{bot.FieldFeedback: "2 terms at once is too much"}})
	if !strings.Contains(r.Text, "proposal 4 rejected by alice") {
		t.Fatalf("reject form of proposal 4: %+v", r)
	}
	ps, err := f.db.Proposals(context.Background(), f.sid)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Seq == 4 && (p.Decision == nil || p.Decision.Feedback != "2 terms at once is too much") {
			t.Errorf("feedback of proposal 4: %+v", p.Decision)
		}
		if p.Seq != 4 && p.State != session.ProposalPending {
			t.Errorf("proposal %d is %s", p.Seq, p.State)
		}
	}
}

func sorted(xs []int) []int {
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if xs[j] < xs[i] {
				xs[i], xs[j] = xs[j], xs[i]
			}
		}
	}
	return xs
}

// TestStatusListsRunningTrialsAndPendingProposals: /tune status and a thread's "status"
// show every running trial with its GPUs or Slurm job, and every waiting proposal.
func TestStatusListsRunningTrialsAndPendingProposals(t *testing.T) {
	f := newFixture(t, nil)
	addParallel(t, f)
	if _, err := f.db.UpdateSession(context.Background(), f.sid, func(s *session.Session) error {
		s.State = session.StateRunning
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, in := range []bot.Interaction{
		{Platform: "slack", User: eve, Kind: bot.KindCommand, Text: "status"},
		{Platform: "slack", User: eve, Kind: bot.KindReply, SessionID: f.sid, Text: "status"},
	} {
		r := f.h.Do(context.Background(), in)
		if r.Card == nil {
			t.Fatalf("%s status: %+v", in.Kind, r)
		}
		text := bot.RenderText(*r.Card, nil)
		want := "running now (3):\n" +
			"• trial 2 @ rung 1 · training 450/900 (50%) · Slurm job 1230 RUNNING on node1\n" +
			"• trial 3 @ rung 0 · training 120/300 (40%) · GPUs 0,1\n" +
			"• trial 4 @ rung 0 · training 0/300 · Slurm job 1234 PENDING (Resources)\n" +
			"waiting for a decision (3):\n" +
			"• proposal 3 for trial 4: approve 3 · reject 3 <feedback>\n" +
			"• proposal 4 for trial 5: approve 4 · reject 4 <feedback>\n" +
			"• proposal 5 for trial 6: approve 5 · reject 5 <feedback>\n"
		if !strings.Contains(text, want) {
			t.Errorf("%s status:\n%s\nwant it to contain:\n%s", in.Kind, text, want)
		}
		if r.Card.Ref != "" {
			t.Errorf("status card ref %q: a status is a fresh message, never the root", r.Card.Ref)
		}
	}
}

// TestNotifierKeepsOneCardPerPendingProposal: three proposals waiting at once are three
// outbox items keyed by their own card refs (each its own message and buttons); a decision
// replaces only its own proposal's undelivered card; the root card lists what waits.
func TestNotifierKeepsOneCardPerPendingProposal(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	s := fixtureSession()
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	var props []session.Proposal
	for _, seq := range []int{3, 4, 5} {
		p := fixtureProposal()
		p.ID, p.Seq, p.Number = fmt.Sprintf("1a2b3c4d-p%02d", seq), seq, seq+1
		if err := db.PutProposal(ctx, p); err != nil {
			t.Fatal(err)
		}
		props = append(props, p)
	}
	n := bot.NewNotifier(bot.NotifierConfig{Queue: db, Renderer: &bot.Renderer{Records: db, Space: session.DefaultSpace()}, Platforms: []string{"slack"}})
	for i := range props {
		n.Notify(ctx, session.Event{Kind: session.EventProposalReady, Session: s, Proposal: &props[i]})
	}
	decided := props[1]
	decided.State, decided.Decision = session.ProposalApproved, &session.Decision{Action: "approve", By: alice, At: t0}
	if err := db.PutProposal(ctx, decided); err != nil {
		t.Fatal(err)
	}
	n.Notify(ctx, session.Event{Kind: session.EventDecision, Session: s, Proposal: &decided})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := n.Run(cctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	var root bot.Card
	items, err := db.Due(ctx, "slack", time.Now(), 0)
	for ; err == nil && len(items) > 0; items, err = db.Due(ctx, "slack", time.Now(), 0) {
		for _, it := range items {
			db.Delivered(ctx, it.ID)
			m, err := bot.DecodeMessage(it.Body)
			if err != nil {
				t.Fatal(err)
			}
			if m.Card.Kind == "root" {
				root = m.Card
				continue
			}
			desc := it.Key
			for _, b := range m.Card.Blocks {
				for _, a := range b.Actions {
					_, _, pid, _ := bot.ParseActionID(a.ID)
					if pid != strings.TrimPrefix(it.Key, "s/"+s.ID+"/proposal/") {
						t.Errorf("card %s carries a button of proposal %s", it.Key, pid)
					}
				}
				if b.Kind == bot.BlockActions {
					desc += " buttons"
				}
				if b.Kind == bot.BlockStamp {
					desc += " stamped"
				}
			}
			got = append(got, desc)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"s/1a2b3c4d5e6f7a8b/proposal/1a2b3c4d-p03 buttons",
		"s/1a2b3c4d5e6f7a8b/proposal/1a2b3c4d-p04 stamped",
		"s/1a2b3c4d5e6f7a8b/proposal/1a2b3c4d-p05 buttons",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("proposal cards in the outbox:\n%q\nwant\n%q", got, want)
	}
	text := bot.RenderText(root, nil)
	if !strings.Contains(text, "waiting for a decision (2):\n• proposal 3 for trial 4: approve 3 · reject 3 <feedback>\n• proposal 5 for trial 6: approve 5 · reject 5 <feedback>\n") {
		t.Errorf("root card:\n%s", text)
	}
}

func TestRunningLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    session.Trial
		want string
	}{
		{"one GPU", session.Trial{Number: 3, Iterations: 300, Progress: 299, State: session.TrialTraining, Proc: &session.Proc{Job: "train", GPUs: []int{2}}},
			"trial 3 @ rung 0 · training 299/300 (99%) · GPU 2"},
		{"resumed from a checkpoint", session.Trial{Number: 3, Rung: 1, Iterations: 900, StartIter: 300, State: session.TrialTraining, Proc: &session.Proc{Job: "train", GPUs: []int{0, 1, 2, 3}}},
			"trial 3 @ rung 1 · training 300/900 (33%) · GPUs 0,1,2,3"},
		{"evaluating by state", session.Trial{Number: 4, Iterations: 300, Progress: 300, State: session.TrialEvaluating},
			"trial 4 @ rung 0 · evaluating"},
		{"Slurm without a state yet", session.Trial{Number: 5, Iterations: 300, State: session.TrialTraining, Proc: &session.Proc{SlurmJob: "77"}},
			"trial 5 @ rung 0 · training 0/300 · Slurm job 77"},
		{"Slurm pending, no reason", session.Trial{Number: 5, Iterations: 300, State: session.TrialTraining, Proc: &session.Proc{SlurmJob: "77", JobState: "PENDING", JobReason: "None"}},
			"trial 5 @ rung 0 · training 0/300 · Slurm job 77 PENDING"},
		{"Slurm completing keeps its node", session.Trial{Number: 5, Iterations: 300, Progress: 300, State: session.TrialTraining, Proc: &session.Proc{SlurmJob: "77", JobState: "COMPLETING", Node: "n[1-2]"}},
			"trial 5 @ rung 0 · training 300/300 (100%) · Slurm job 77 COMPLETING on n[1-2]"},
		// what squeue prints is outside text: no markup or mention reaches a chat
		{"Slurm words are inert", session.Trial{Number: 6, State: session.TrialTraining, Proc: &session.Proc{SlurmJob: "8", JobState: "PENDING", JobReason: "<!channel> *x* `y`"}},
			"trial 6 @ rung 0 · training · Slurm job 8 PENDING (_channel_x_y_)"},
		{"Ray running on its node", session.Trial{Number: 7, Iterations: 300, Progress: 150, State: session.TrialTraining, Proc: &session.Proc{RayJob: "tunebot-1a2b3c4d-t007-r0-train", JobState: "RUNNING", Node: "10.0.0.5"}},
			"trial 7 @ rung 0 · training 150/300 (50%) · Ray job tunebot-1a2b3c4d-t007-r0-train RUNNING on 10.0.0.5"},
		{"Ray pending", session.Trial{Number: 7, Iterations: 300, State: session.TrialTraining, Proc: &session.Proc{RayJob: "tunebot-1a2b3c4d-t007-r0-train", JobState: "PENDING"}},
			"trial 7 @ rung 0 · training 0/300 · Ray job tunebot-1a2b3c4d-t007-r0-train PENDING"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bot.RunningLine(tc.t); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestRunningLinesOrderCurrentAndCap(t *testing.T) {
	var trials []session.Trial
	for n := 20; n >= 1; n-- {
		trials = append(trials, session.Trial{Number: n, Iterations: 100, State: session.TrialTraining, Proc: &session.Proc{GPUs: []int{n % 8}}})
	}
	trials = append(trials, session.Trial{Number: 30, State: session.TrialCompleted}, session.Trial{Number: 31, State: session.TrialInterrupted})
	cur := trials[len(trials)-3] // trial 1, with newer progress than stored and no job of its own
	cur.Progress, cur.Proc = 50, nil
	lines := bot.RunningLines(trials, &cur)
	if len(lines) != bot.MaxRunningLines+1 || lines[bot.MaxRunningLines] != "… and 8 more" {
		t.Fatalf("lines %q", lines)
	}
	if lines[0] != "trial 1 @ rung 0 · training 50/100 (50%) · GPU 1" || !strings.HasPrefix(lines[1], "trial 2 @") {
		t.Errorf("first lines %q", lines[:2])
	}
}
