package discord_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/bot/bottest"
	"tunebot/bot/discord"
	"tunebot/bot/discord/discordtest"
	"tunebot/session"
	"tunebot/store"
)

// TestSeveralPendingProposalsOverDiscord: with parallel trials (issue 14) three proposals
// wait at once. Each card is its own message in the session's thread with buttons naming
// its own proposal; a decision edits only its card (buttons disabled); a bare "approve"
// typed in the thread lists the waiting ones; a click on one card decides that proposal;
// the root message shows each running trial with its GPUs or Slurm job.
func TestSeveralPendingProposalsOverDiscord(t *testing.T) {
	ctx := context.Background()
	fake := discordtest.New(t, opsGuild, opsApp)
	db, err := store.Open(filepath.Join(t.TempDir(), "t.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sp := session.DefaultSpace()
	eng, err := session.NewEngine(session.EngineConfig{Store: db, Trainer: bottest.NoTrainer{}, Sampler: bottest.NoAdvisor{}, Space: sp, SessionsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	h := bot.NewHandler(bot.HandlerConfig{Engine: eng, Store: db, Space: sp, Allow: bot.AllowList{{Platform: discord.Platform, Users: []string{opsAlice.ID}}}})
	a, err := discord.New(discord.Config{Token: "test-token", ApplicationID: opsApp, GuildID: opsGuild, ChannelID: opsChannel, APIURL: fake.APIURL, Store: db, ThreadReplies: true})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(rctx, h) }()
	t.Cleanup(func() { cancel(); <-done })
	fake.Wait("the gateway connection", func() bool { return fake.ConnectedLocked() })

	st := session.DefaultSettings()
	st.Mode = session.ModeApproval
	st.Normalize()
	s := session.Session{ID: "d15c0000000000aa", State: session.StatePaused, Settings: st, Owner: session.Actor{Platform: discord.Platform, ID: opsAlice.ID, Name: "alice"},
		Base: sp.Defaults(), BestTrial: -1, CreatedAt: time.Now().UTC()}
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	trials := []session.Trial{
		{SessionID: s.ID, Number: 1, Iterations: 300, Progress: 30, State: session.TrialTraining, Source: "advisor", Proc: &session.Proc{Job: "train", GPUs: []int{2}}},
		{SessionID: s.ID, Number: 2, Iterations: 300, State: session.TrialTraining, Source: "advisor", Proc: &session.Proc{Job: "train", SlurmJob: "981", JobState: "PENDING", JobReason: "Priority"}},
	}
	for _, tr := range trials {
		if err := db.PutTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	var props []session.Proposal
	for _, seq := range []int{6, 7, 8} {
		p := session.Proposal{ID: fmt.Sprintf("d15c0000-p%02d", seq), SessionID: s.ID, Seq: seq, Number: seq, Base: sp.Defaults(),
			Patch: session.Patch{Weights: map[string]float64{"pose": 1 + float64(seq)/10}}, Confidence: 0.5, Source: "advisor",
			State: session.ProposalPending, CreatedAt: time.Now().UTC()}
		if err := db.PutProposal(ctx, p); err != nil {
			t.Fatal(err)
		}
		props = append(props, p)
	}
	deliver := func(id uint64, c bot.Card) {
		t.Helper()
		if err := a.Deliver(ctx, bot.Delivery{ID: id, Thread: s.ID, Key: c.Ref, Message: bot.Message{Session: s.ID, Card: c}}); err != nil {
			t.Fatalf("deliver %s: %v", c.Ref, err)
		}
	}
	deliver(1, bot.RootCard(bot.RootInput{Session: s, Trials: trials, Proposals: props}))
	for i, p := range props {
		deliver(uint64(2+i), bot.ProposalCard(p, sp, nil))
	}
	roots := fake.Messages(opsChannel)
	if len(roots) != 1 {
		t.Fatalf("%d channel messages, want the root only", len(roots))
	}
	rootText := messageText(roots[0].Content, roots[0].Embeds)
	for _, e := range roots[0].Embeds {
		for _, f := range e.Fields {
			rootText += f.Name + " " + f.Value + "\n"
		}
	}
	for _, want := range []string{
		"trial 1 @ rung 0 · training 30/300 (10%) · GPU 2",
		"trial 2 @ rung 0 · training 0/300 · Slurm job 981 PENDING (Priority)",
		"proposal 7 for trial 7: approve 7 · reject 7 <feedback>",
	} {
		if !strings.Contains(rootText, want) {
			t.Errorf("the root message lacks %q:\n%s", want, rootText)
		}
	}
	var thread string
	for th := range fake.Threads() {
		thread = th
	}
	cards := fake.Messages(thread)
	if len(cards) != 3 {
		t.Fatalf("%d messages in the thread, want 3 proposal cards", len(cards))
	}
	for i, p := range props {
		ids := buttons(cards[i].Components)
		if len(ids) != 4 {
			t.Errorf("proposal %d's card has buttons %v", p.Seq, ids)
		}
		for label, id := range ids {
			if _, sid, pid, err := bot.ParseActionID(id); err != nil || sid != s.ID || pid != p.ID {
				t.Errorf("proposal %d's %s button is %q", p.Seq, label, id)
			}
		}
	}
	said := func(what string, want string) {
		t.Helper()
		fake.Wait(what, func() bool {
			for _, m := range fake.MessagesLocked(thread) {
				if strings.Contains(messageText(m.Content, m.Embeds), want) {
					return true
				}
			}
			return false
		})
	}

	fake.Say(opsAlice, thread, "approve", false)
	said("the answer to a bare approve", "3 proposals wait: approve 6, approve 7 or approve 8")
	fake.Click(opsAlice, thread, cards[1].ID, bot.ActionID(bot.ButtonApprove, s.ID, props[1].ID))
	said("the click's answer", "proposal 7 approved by alice")
	fake.Say(opsAlice, thread, "reject 8 too much pose", false)
	said("the answer to reject 8", "proposal 8 rejected by alice")
	ps, err := db.Proposals(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if want := map[int]session.ProposalState{6: session.ProposalPending, 7: session.ProposalApproved, 8: session.ProposalRejected}[p.Seq]; p.State != want {
			t.Errorf("proposal %d is %s, want %s", p.Seq, p.State, want)
		}
	}
	// the decision's stamp edits proposal 7's card only, its buttons disabled
	deliver(5, bot.ProposalCard(ps[1], sp, nil))
	cards = fake.Messages(thread)
	for i, p := range props {
		m := cards[i]
		disabled := strings.Contains(fmt.Sprint(string(m.Components[0])), `"disabled":true`)
		if (m.Edits > 0) != (p.Seq == 7) || disabled != (p.Seq == 7) {
			t.Errorf("proposal %d's card: %d edits, buttons disabled %v", p.Seq, m.Edits, disabled)
		}
	}
}
