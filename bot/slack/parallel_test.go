package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/bot/bottest"
	slackbot "tunebot/bot/slack"
	"tunebot/bot/slack/slacktest"
	"tunebot/session"
	"tunebot/store"
)

// parallelSession is a paused approval session of parallel trials (issue 14): three
// trials running (two GPUs locally, a Slurm job pending, one running on a node) and
// proposals 3, 4 and 5 waiting at once.
func parallelSession(t *testing.T, db *store.DB) (session.Session, []session.Trial, []session.Proposal) {
	t.Helper()
	ctx := context.Background()
	sp := session.DefaultSpace()
	st := session.DefaultSettings()
	st.Mode = session.ModeApproval
	st.Normalize()
	s := session.Session{ID: "5e55100000000000", State: session.StatePaused, Settings: st, Owner: session.Actor{Platform: "slack", ID: "UALICE", Name: "alice"},
		Base: sp.Defaults(), BestTrial: -1, CreatedAt: time.Now().UTC()}
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	trials := []session.Trial{
		{SessionID: s.ID, Number: 0, Rung: 0, Iterations: 300, State: session.TrialCompleted, Source: "baseline", RewardConfig: sp.Defaults()},
		{SessionID: s.ID, Number: 1, Rung: 0, Iterations: 300, Progress: 150, State: session.TrialTraining, Source: "advisor", Proc: &session.Proc{Job: "train", GPUs: []int{0, 1}}},
		{SessionID: s.ID, Number: 2, Rung: 0, Iterations: 300, State: session.TrialTraining, Source: "advisor", Proc: &session.Proc{Job: "train", SlurmJob: "1234", JobState: "PENDING", JobReason: "Resources"}},
		{SessionID: s.ID, Number: 3, Rung: 0, Iterations: 300, Progress: 300, State: session.TrialEvaluating, Source: "advisor", Proc: &session.Proc{Job: "evaluate", SlurmJob: "1235", JobState: "RUNNING", Node: "node1"}},
	}
	for _, tr := range trials {
		if err := db.PutTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	var props []session.Proposal
	for _, seq := range []int{3, 4, 5} {
		p := session.Proposal{ID: fmt.Sprintf("5e551000-p%02d", seq), SessionID: s.ID, Seq: seq, Number: seq + 1, Base: sp.Defaults(),
			Patch: session.Patch{Weights: map[string]float64{"pose": 1 + float64(seq)/10}}, Rationale: fmt.Sprintf("idea %d", seq),
			Confidence: 0.5, Source: "advisor", State: session.ProposalPending, CreatedAt: time.Now().UTC()}
		if err := db.PutProposal(ctx, p); err != nil {
			t.Fatal(err)
		}
		props = append(props, p)
	}
	return s, trials, props
}

// TestSeveralPendingProposalsOverSlack: three proposal cards are three messages in the
// session's thread, each with buttons naming its own proposal; a decision edits only its
// own card; a bare "approve" in the thread lists the waiting ones; a click on one card's
// button decides that proposal. The root message lists the running trials and what waits.
func TestSeveralPendingProposalsOverSlack(t *testing.T) {
	var eng *session.Engine
	r := newRigWith(t, slackbot.ModeSocket, func(db *store.DB, ad *slackbot.Adapter) bot.HandlerConfig {
		var err error
		eng, err = session.NewEngine(session.EngineConfig{Store: db, Trainer: bottest.NoTrainer{}, Sampler: bottest.NoAdvisor{}, Space: session.DefaultSpace(), SessionsDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Shutdown(context.Background()) })
		return bot.HandlerConfig{Engine: eng, Store: db, Space: session.DefaultSpace(), Allow: ad.Grants(), Logger: testLogger()}
	})
	s, trials, props := parallelSession(t, r.db)
	deliver := func(c bot.Card) {
		t.Helper()
		if err := r.ad.Deliver(r.ctx, bot.Delivery{ID: 1, Thread: s.ID, Key: c.Ref, Message: bot.Message{Session: s.ID, Card: c}}); err != nil {
			t.Fatalf("deliver %s: %v", c.Ref, err)
		}
	}
	sp := session.DefaultSpace()
	deliver(bot.RootCard(bot.RootInput{Session: s, Trials: trials, Proposals: props}))
	for _, p := range props {
		deliver(bot.ProposalCard(p, sp, nil))
	}
	st := r.fake.Snapshot()
	if len(st.Messages) != 4 {
		t.Fatalf("%d messages, want the root and 3 proposal cards", len(st.Messages))
	}
	root := st.Messages[0]
	for _, want := range []string{
		"trial 1 @ rung 0 · training 150/300 (50%) · GPUs 0,1",
		"trial 2 @ rung 0 · training 0/300 · Slurm job 1234 PENDING (Resources)",
		"trial 3 @ rung 0 · evaluating · Slurm job 1235 RUNNING on node1",
		`proposal 4 for trial 5: approve 4 · reject 4 \u0026lt;feedback\u0026gt;`, // escaped for mrkdwn, then JSON
	} {
		if !strings.Contains(root.Blocks, want) {
			t.Errorf("the root message lacks %q:\n%s", want, root.Blocks)
		}
	}
	cards := map[string]*slacktest.Message{}
	for i, p := range props {
		m := st.Messages[i+1]
		if m.ThreadTS != root.TS {
			t.Errorf("proposal %d's card is not in the session's thread: %+v", p.Seq, m)
		}
		ids := buttons(t, m.Blocks)
		for label, id := range ids {
			_, sid, pid, err := bot.ParseActionID(id)
			if err != nil || sid != s.ID || pid != p.ID {
				t.Errorf("proposal %d's %s button is %q", p.Seq, label, id)
			}
		}
		if len(ids) != 4 {
			t.Errorf("proposal %d's card has buttons %v", p.Seq, ids)
		}
		cards[p.ID] = m
	}

	// a bare approve in the thread is not guessed
	if _, err := r.fake.Send("events_api", r.fake.Reply("UALICE", "CTUNE", root.TS, "approve")); err != nil {
		t.Fatal(err)
	}
	r.waitSaid(t, "3 proposals wait: approve 3, approve 4 or approve 5")
	// the Approve button of proposal 4's card decides proposal 4
	if _, err := r.fake.Send("interactive", r.fake.Click("UALICE", cards[props[1].ID], bot.ActionID(bot.ButtonApprove, s.ID, props[1].ID))); err != nil {
		t.Fatal(err)
	}
	r.waitSaid(t, "proposal 4 approved by")
	// "approve 5" in the thread decides proposal 5
	if _, err := r.fake.Send("events_api", r.fake.Reply("UALICE", "CTUNE", root.TS, "approve 5")); err != nil {
		t.Fatal(err)
	}
	r.waitSaid(t, "proposal 5 approved by")
	ps, err := r.db.Proposals(r.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if want := map[int]session.ProposalState{3: session.ProposalPending, 4: session.ProposalApproved, 5: session.ProposalApproved}[p.Seq]; p.State != want {
			t.Errorf("proposal %d is %s, want %s", p.Seq, p.State, want)
		}
	}
	// the decision's stamp edits proposal 4's card only
	deliver(bot.ProposalCard(ps[1], sp, nil))
	st = r.fake.Snapshot()
	for i, p := range props {
		m := st.Messages[i+1]
		stamped := !strings.Contains(m.Blocks, `"type":"actions"`)
		if edited := m.Edits > 0; edited != (p.Seq == 4) || stamped != (p.Seq == 4) {
			t.Errorf("proposal %d's card: %d edits, stamped %v:\n%s", p.Seq, m.Edits, stamped, m.Blocks)
		}
	}
}

// waitSaid waits for a message, ephemeral message or response whose text has want.
func (r *rig) waitSaid(t *testing.T, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 15*time.Second) // a bound for a hang, not a measurement
	defer cancel()
	err := r.fake.Wait(ctx, func(st *slacktest.State) bool {
		var all []string
		for _, m := range st.Messages {
			all = append(all, m.Text+m.Blocks)
		}
		for _, m := range st.Ephemerals {
			all = append(all, m.Text+m.Blocks)
		}
		for _, x := range st.Responses {
			all = append(all, x.Text+x.Blocks)
		}
		for _, s := range all {
			if strings.Contains(s, want) {
				return true
			}
		}
		return false
	})
	if err != nil {
		js, _ := json.Marshal(r.fake.Snapshot())
		t.Fatalf("nothing said %q: %v; fake has %s", want, err, js)
	}
}
