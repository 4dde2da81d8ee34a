package bot_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/bot"
	"tunebot/bot/bottest"
	"tunebot/session"
	"tunebot/store"
)

func openStore(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

type fixture struct {
	db   *store.DB
	eng  *session.Engine
	h    *bot.Handler
	sid  string
	prop session.Proposal
}

var (
	alice = session.Actor{ID: "U1", Name: "alice"}
	bob   = session.Actor{ID: "U2", Name: "bob"}
	eve   = session.Actor{ID: "U666", Name: "eve"}
)

// newFixture stores a paused approval session with a pending proposal and trials 0 and 1,
// and wires a handler to the real engine and store.
func newFixture(t testing.TB, charts bot.ChartFunc) *fixture {
	t.Helper()
	ctx := context.Background()
	db := openStore(t)
	sp := session.DefaultSpace()
	eng, err := session.NewEngine(session.EngineConfig{Store: db, Trainer: bottest.NoTrainer{}, Sampler: bottest.NoAdvisor{}, Space: sp, SessionsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	s := fixtureSession()
	s.State = session.StatePaused
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, tr := range fixtureTrials()[:3] {
		tr.SessionID = s.ID
		if err := db.PutTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	p := fixtureProposal()
	p.Base = fixtureTrials()[2].RewardConfig
	if err := db.PutProposal(ctx, p); err != nil {
		t.Fatal(err)
	}
	h := bot.NewHandler(bot.HandlerConfig{Engine: eng, Store: db, Space: sp, Charts: charts,
		Allow: bot.AllowList{
			{Platform: "slack", Users: []string{"U1"}},
			{Platform: "slack", Roles: []string{"S-ops"}, Permissions: []bot.Permission{bot.PermDecide}},
		}})
	return &fixture{db: db, eng: eng, h: h, sid: s.ID, prop: p}
}

func (f *fixture) reply(who session.Actor, text string, roles ...string) bot.Reply {
	return f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: who, Roles: roles, Channel: "C1", Thread: "T1",
		SessionID: f.sid, Kind: bot.KindReply, Text: text})
}

func (f *fixture) proposalState(t *testing.T) session.Proposal {
	t.Helper()
	ps, err := f.db.Proposals(context.Background(), f.sid)
	if err != nil || len(ps) != 1 {
		t.Fatalf("proposals: %v %v", ps, err)
	}
	return ps[0]
}

func TestAllowList(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		name    string
		who     session.Actor
		roles   []string
		text    string
		refused bool
	}{
		{"anyone may read status", eve, nil, "status", false},
		{"stranger may not approve", eve, nil, "approve", true},
		{"stranger may not pause", eve, nil, "pause", true},
		{"stranger may not cancel", eve, nil, "cancel", true},
		{"stranger may not resume", eve, nil, "resume", true},
		{"role holder may not cancel", bob, []string{"S-ops"}, "cancel", true},
		{"a role of another platform grants nothing", eve, []string{"U1"}, "reject no", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.reply(tc.who, tc.text, tc.roles...)
			refused := strings.Contains(r.Text, "not allowed")
			if refused != tc.refused {
				t.Fatalf("reply %+v; refused=%v, want %v", r, refused, tc.refused)
			}
			if refused && !r.Private {
				t.Error("a refusal must be private")
			}
		})
	}
	audit, err := f.db.Audit(context.Background(), f.sid)
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, e := range audit {
		if e.Kind == "refused" {
			refused = append(refused, e.Actor.ID+" "+e.Detail["command"].(string)+" "+e.Actor.Where)
		}
	}
	want := []string{"U666 approve C1/T1", "U666 pause C1/T1", "U666 cancel C1/T1", "U666 resume C1/T1", "U2 cancel C1/T1", "U666 reject C1/T1"}
	if diff := cmp.Diff(want, refused); diff != "" {
		t.Errorf("refusal audit (-want +got):\n%s", diff)
	}
	if p := f.proposalState(t); p.State != session.ProposalPending {
		t.Errorf("a refused person changed the proposal: %s", p.State)
	}
	// A role holder may decide.
	r := f.reply(bob, "reject try a gentler pose change", "S-ops")
	if r.Private || !strings.Contains(r.Text, "rejected by bob") {
		t.Fatalf("role holder's reject: %+v", r)
	}
}

func TestConcurrentApprovalsYieldOneDecision(t *testing.T) {
	f := newFixture(t, nil)
	f.h = bot.NewHandler(bot.HandlerConfig{Engine: f.eng, Store: f.db, Space: session.DefaultSpace(),
		Allow: bot.AllowList{{Platform: "slack", Users: []string{"U1", "U2"}}}})
	var wg sync.WaitGroup
	replies := make([]bot.Reply, 2)
	for i, who := range []session.Actor{alice, bob} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: who, Kind: bot.KindAction,
				ActionID: bot.ActionID(bot.ButtonApprove, f.sid, f.prop.ID)})
		}()
	}
	wg.Wait()
	var won, lost []bot.Reply
	for _, r := range replies {
		if strings.Contains(r.Text, "already approved by") {
			lost = append(lost, r)
		} else {
			won = append(won, r)
		}
	}
	if len(won) != 1 || len(lost) != 1 {
		t.Fatalf("want one decision and one clear answer, got %+v", replies)
	}
	p := f.proposalState(t)
	if p.State != session.ProposalApproved || p.Decision == nil {
		t.Fatalf("proposal %+v", p)
	}
	if !strings.Contains(lost[0].Text, "by "+p.Decision.By.Name) || !lost[0].Private {
		t.Errorf("second clicker's answer %+v does not name the first decider %s privately", lost[0], p.Decision.By.Name)
	}
	// A third click, later, gets the same answer.
	r := f.reply(alice, "approve")
	if !strings.Contains(r.Text, "already approved by "+p.Decision.By.Name) {
		t.Errorf("late click: %+v", r)
	}
}

func TestEditValidatedBeforeAnythingIsAccepted(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct{ text, want string }{
		{"edit pose=5", "weights.pose: 5 is outside its bounds"},
		{"edit pose=NaN", "not a decimal number"},
		{"edit pose=1e999", "not a finite number"},
		{"edit pose=- electrical_power=- foot_clearance.target_height=-", "empty patch"},
		{"edit track_linear_velocity=1.1 foot_slip=-0.3 stand_still=-1.2", "at most 4 scalars"},
	} {
		r := f.reply(alice, tc.text)
		if !strings.Contains(r.Text, tc.want) || !r.Private {
			t.Errorf("%q: reply %+v, want private error containing %q", tc.text, r, tc.want)
		}
		if p := f.proposalState(t); p.State != session.ProposalPending {
			t.Fatalf("%q changed the proposal to %s", tc.text, p.State)
		}
	}
	r := f.reply(alice, "edit electrical_power=- pose=1.1")
	if !strings.Contains(r.Text, "edited and approved by alice") {
		t.Fatalf("valid edit: %+v", r)
	}
	p := f.proposalState(t)
	want := session.Patch{Weights: map[string]float64{"pose": 1.1}, Params: map[string]float64{"foot_clearance.target_height": 0.12}}
	if diff := cmp.Diff(&want, p.Decision.Edited); diff != "" {
		t.Errorf("edited patch (-want +got):\n%s", diff)
	}
}

// TestEditOfAValueAtItsBaseIsNoChange (issue 43 item 6.4): changes are counted after
// merging, so an edit naming a value equal to the base's does not count toward the 4, and
// the answer says it was left as it was.
func TestEditOfAValueAtItsBaseIsNoChange(t *testing.T) {
	f := newFixture(t, nil)
	// pose and foot_clearance.target_height change (electrical_power is at the base's
	// value already); the edit adds two changes and body_ang_vel at its base's -0.05.
	r := f.reply(alice, "edit track_linear_velocity=1.1 foot_slip=-0.3 body_ang_vel=-0.05")
	if !strings.Contains(r.Text, "edited and approved by alice") || !strings.Contains(r.Text, "body_ang_vel = -0.05, electrical_power = -0.001 are their current values: left as they were") {
		t.Fatalf("edit with a value at its base: %+v", r)
	}
	want := session.Patch{Weights: map[string]float64{"pose": 1.25, "track_linear_velocity": 1.1, "foot_slip": -0.3},
		Params: map[string]float64{"foot_clearance.target_height": 0.12}}
	if diff := cmp.Diff(&want, f.proposalState(t).Decision.Edited); diff != "" {
		t.Errorf("edited patch (-want +got):\n%s", diff)
	}
}

func TestFormsRejectAndEdit(t *testing.T) {
	f := newFixture(t, nil)
	click := func(verb string, kind bot.InteractionKind, values map[string]string) bot.Reply {
		return f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: alice, Kind: kind,
			ActionID: bot.ActionID(verb, f.sid, f.prop.ID), Values: values})
	}
	r := click(bot.ButtonEdit, bot.KindAction, nil)
	if r.Form == nil || r.Form.Inputs[0].Value != "pose=1.25\nelectrical_power=-0.001\nfoot_clearance.target_height=0.12" {
		t.Fatalf("edit form %+v", r.Form)
	}
	r = click(bot.ButtonReject, bot.KindAction, nil)
	if r.Form == nil || r.Form.Inputs[0].ID != bot.FieldFeedback {
		t.Fatalf("reject form %+v", r.Form)
	}
	r = click(bot.ButtonReject, bot.KindSubmit, map[string]string{bot.FieldFeedback: "  "})
	if !strings.Contains(r.Text, "reject needs a reason") {
		t.Fatalf("empty feedback: %+v", r)
	}
	r = click(bot.ButtonEdit, bot.KindSubmit, map[string]string{bot.FieldPatch: "pose=9"})
	if !strings.Contains(r.Text, "outside its bounds") {
		t.Fatalf("bad edit form: %+v", r)
	}
	r = click(bot.ButtonEdit, bot.KindSubmit, map[string]string{bot.FieldPatch: "pose=1.1\nfoot_slip=-0.3"})
	if !strings.Contains(r.Text, "edited and approved by alice") {
		t.Fatalf("edit form: %+v", r)
	}
	want := session.Patch{Weights: map[string]float64{"pose": 1.1, "foot_slip": -0.3}, Params: map[string]float64{}}
	if diff := cmp.Diff(&want, f.proposalState(t).Decision.Edited); diff != "" {
		t.Errorf("edited patch (-want +got):\n%s", diff)
	}
	r = click(bot.ButtonReject, bot.KindSubmit, map[string]string{bot.FieldFeedback: "too late"})
	if !strings.Contains(r.Text, "already edited and approved by alice") {
		t.Errorf("reject after edit: %+v", r)
	}
}

func TestCommentsAndReadsAndForgedActions(t *testing.T) {
	f := newFixture(t, nil)
	if r := f.reply(eve, "looks good to me 👍"); !r.Empty() {
		t.Errorf("a comment got a reply: %+v", r)
	}
	if r := f.reply(eve, "aprove"); !strings.Contains(r.Text, "did you mean approve?") || !r.Private {
		t.Errorf("typo: %+v", r)
	}
	r := f.reply(eve, "status")
	if r.Card == nil || !strings.Contains(bot.RenderText(*r.Card, nil), "paused") {
		t.Errorf("status: %+v", r)
	}
	r = f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: alice, Kind: bot.KindAction, ActionID: "tune:approve:../../x:p"})
	if !strings.Contains(r.Text, "malformed action") {
		t.Errorf("forged action: %+v", r)
	}
	r = f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: alice, Kind: bot.KindAction, ActionID: bot.ActionID(bot.ButtonApprove, "nosuchsession", "p")})
	if !strings.Contains(r.Text, "does not exist") {
		t.Errorf("unknown session: %+v", r)
	}
	r = f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: eve, Kind: bot.KindCommand, Text: "start trials=99"})
	if !strings.Contains(r.Text, "not allowed") {
		t.Errorf("stranger start: %+v", r)
	}
	r = f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: alice, Kind: bot.KindCommand, Text: "start trials=99 mode=x"})
	if !strings.Contains(r.Text, "trial_count: 99 is outside 4–20") || !strings.Contains(r.Text, "mode:") {
		t.Errorf("bad start: %+v", r)
	}
	r = f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: alice, Kind: bot.KindCommand, Text: "start fallback=true"})
	if !strings.Contains(r.Text, "busy") {
		t.Errorf("second start: %+v", r)
	}
}

func TestPanicBecomesErrorReply(t *testing.T) {
	f := newFixture(t, func(context.Context, session.Session, session.Trial, []string) ([]bot.Attachment, error) {
		panic("chart renderer exploded")
	})
	r := f.reply(eve, "status") // the handler still works before and after
	if r.Card == nil {
		t.Fatalf("status: %+v", r)
	}
	r = f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: eve, Kind: bot.KindCommand, Text: "chart 1", SessionID: f.sid})
	if !r.Private || !strings.Contains(r.Text, "internal error") || strings.Contains(r.Text, "exploded") {
		t.Fatalf("panic reply %+v", r)
	}
	if r := f.reply(eve, "status"); r.Card == nil {
		t.Fatalf("handler unusable after a panic: %+v", r)
	}
}

func TestHandleAcknowledgesBeforeSlowWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		f := newFixture(t, func(ctx context.Context, s session.Session, tr session.Trial, tags []string) ([]bot.Attachment, error) {
			<-release
			return []bot.Attachment{{Name: "x.png", Title: "x"}}, nil
		})
		got := make(chan bot.Reply, 1)
		ack, sent := f.h.Handle(context.Background(), bot.Interaction{Platform: "slack", User: eve, Kind: bot.KindCommand, Text: "chart 2", SessionID: f.sid},
			func(r bot.Reply) { got <- r })
		if ack.Text != "working on it…" || !ack.Working {
			t.Fatalf("ack %+v", ack)
		}
		close(release)
		// The work is done, but the acknowledgement has not gone out yet: the follow-up waits.
		synctest.Wait()
		select {
		case r := <-got:
			t.Fatalf("the follow-up %+v overtook its acknowledgement", r)
		default:
		}
		sent()
		r := <-got
		if r.Card == nil || r.Card.Blocks[0].Attachments[0].Name != "x.png" {
			t.Fatalf("follow-up %+v", r)
		}
		f.h.Wait()
		// Fast work is answered in the acknowledgement itself.
		if r, _ := f.h.Handle(context.Background(), bot.Interaction{Platform: "slack", User: eve, Kind: bot.KindReply, Text: "status", SessionID: f.sid}, nil); r.Card == nil || r.Working {
			t.Fatalf("fast ack %+v", r)
		}
	})
}

func TestDashboardLink(t *testing.T) {
	f := newFixture(t, nil)
	ask := func(h *bot.Handler) bot.Reply {
		return h.Do(context.Background(), bot.Interaction{Platform: "slack", User: eve, Roles: []string{"S-ops"}, Channel: "C1", Kind: bot.KindCommand, Text: "dashboard"})
	}
	if r := ask(f.h); !r.Private || !strings.Contains(r.Text, "monitoring page is off") {
		t.Errorf("without a page: %+v", r)
	}
	var got session.Actor
	h := bot.NewHandler(bot.HandlerConfig{Engine: f.eng, Store: f.db, Space: session.DefaultSpace(),
		Dashboard: func(who session.Actor) (string, time.Time, error) {
			got = who
			return "http://127.0.0.1:9464/signin?token=abc", time.Date(2026, 1, 1, 10, 5, 0, 0, time.UTC), nil
		}})
	r := ask(h)
	if !r.Private || !r.Sensitive || !strings.Contains(r.Text, "http://127.0.0.1:9464/signin?token=abc") || !strings.Contains(r.Text, "10:05") {
		t.Errorf("link reply %+v; want it private and sensitive, with the link and its expiry", r)
	}
	if got.Platform != "slack" || got.ID != eve.ID {
		t.Errorf("link for %+v; want eve on slack", got)
	}
}

// TestBidiAndZeroWidthStrippedFromChatText: feedback typed in Slack or Discord, in a thread
// reply or a form, with U+202E, U+200B, U+061C or an escape sequence was stored as typed and
// shown on cards, the page and the terminal (issue 44, table item 9). The handler passes
// every text a person sends through session.Printable as it enters.
func TestBidiAndZeroWidthStrippedFromChatText(t *testing.T) {
	f := newFixture(t, nil)
	r := f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: alice, Kind: bot.KindSubmit,
		ActionID: bot.ActionID(bot.ButtonReject, f.sid, f.prop.ID), Values: map[string]string{bot.FieldFeedback: "too \u202eshaky\u200b \u061cgait\x1b[2J\u2066"}})
	if !strings.Contains(r.Text, "rejected") {
		t.Fatalf("reject: %+v", r)
	}
	if got := f.proposalState(t).Decision.Feedback; got != "too shaky gait[2J" {
		t.Errorf("stored feedback %q, want %q", got, "too shaky gait[2J")
	}
}
