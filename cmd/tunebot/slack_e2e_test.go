package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"tunebot/bot/slack/slacktest"
	"tunebot/session"
	"tunebot/store"
)

const (
	slackChannel = "CTUNE"
	slackAlice   = "UALICE" // allow-listed, starts the session
	slackBob     = "UBOB"   // notify_users
	slackEve     = "UEVE"   // not allowed anything
)

var actionRE = regexp.MustCompile(`"action_id":"(tune:[a-z-]+:[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]*)"`)

// slackRun drives one daemon against the fake Slack.
type slackRun struct {
	t    *testing.T
	fake *slacktest.Server
	ctx  context.Context
}

// wait waits for the first message (channel or thread, as edited now) that cond accepts.
func (r *slackRun) wait(what string, cond func(m *slacktest.Message) bool) slacktest.Message {
	r.t.Helper()
	var got slacktest.Message
	err := r.fake.Wait(r.ctx, func(st *slacktest.State) bool {
		for _, m := range st.Messages {
			if cond(m) {
				got = *m
				return true
			}
		}
		return false
	})
	if err != nil {
		r.dump()
		r.t.Fatalf("waiting for %s: %v", what, err)
	}
	return got
}

func (r *slackRun) dump() {
	st := r.fake.Snapshot()
	for _, m := range st.Messages {
		r.t.Logf("message %s thread=%s edits=%d: %s", m.TS, m.ThreadTS, m.Edits, m.Text)
	}
	for _, m := range st.Responses {
		r.t.Logf("response %s: %s", m.ResponseType, m.Text)
	}
	for _, m := range st.Ephemerals {
		r.t.Logf("ephemeral to %s: %s", m.User, m.Text)
	}
}

// send sends an envelope and returns its acknowledgement.
func (r *slackRun) send(typ string, payload map[string]any) slacktest.Ack {
	r.t.Helper()
	id, err := r.fake.Send(typ, payload)
	if err != nil {
		r.t.Fatalf("sending %s: %v", typ, err)
	}
	ack, err := r.fake.WaitAck(r.ctx, id)
	if err != nil {
		r.t.Fatalf("no ack for %s %s: %v", typ, id, err)
	}
	return ack
}

// response waits for a response_url answer containing want.
func (r *slackRun) response(want string) slacktest.Response {
	r.t.Helper()
	var got slacktest.Response
	if err := r.fake.Wait(r.ctx, func(st *slacktest.State) bool {
		for _, x := range st.Responses {
			if strings.Contains(x.Text, want) {
				got = x
				return true
			}
		}
		return false
	}); err != nil {
		r.dump()
		r.t.Fatalf("waiting for a response with %q: %v", want, err)
	}
	return got
}

// view waits for the modal opened with trigger.
func (r *slackRun) view(trigger string) slacktest.View {
	r.t.Helper()
	var got slacktest.View
	if err := r.fake.Wait(r.ctx, func(st *slacktest.State) bool {
		for _, v := range st.Views {
			if v.TriggerID == trigger {
				got = v
				return true
			}
		}
		return false
	}); err != nil {
		r.dump()
		r.t.Fatalf("no modal opened for %s: %v", trigger, err)
	}
	return got
}

// slackDaemon runs the daemon (tunebot run --config cfg, a subprocess, with the fake's
// tokens and env) against the fake Slack until it is connected over Socket Mode. stop ends
// it with SIGTERM and fails the test unless it exits cleanly; a test that fails first gets
// the daemon killed and its log.
func slackDaemon(ctx context.Context, t *testing.T, fake *slacktest.Server, cfg string, env ...string) (r *slackRun, stop func()) {
	t.Helper()
	cmd := exec.Command(tunebotBin, "run", "--config", cfg)
	cmd.Env = append(append(os.Environ(), "SLACK_BOT_TOKEN="+slacktest.BotToken, "SLACK_APP_TOKEN="+slacktest.AppToken), env...)
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Logf("daemon log:\n%s", log.String())
		}
	})
	if err := fake.WaitConnected(ctx); err != nil {
		t.Fatalf("the daemon never connected over Socket Mode: %v\n%s", err, log.String())
	}
	return &slackRun{t: t, fake: fake, ctx: ctx}, func() {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("daemon exit: %v\n%s", err, log.String())
		}
		exited = true
	}
}

func actionOf(t *testing.T, m slacktest.Message, verb string) string {
	t.Helper()
	for _, a := range actionRE.FindAllStringSubmatch(m.Blocks, -1) {
		if strings.HasPrefix(a[1], "tune:"+verb+":") {
			return a[1]
		}
	}
	t.Fatalf("message %s has no %s button: %s", m.TS, verb, m.Blocks)
	return ""
}

// TestSlackApprovalSession runs the real daemon (tunebot run, a subprocess) against a fake
// Slack over Socket Mode and a fake DeepSeek, and operates a whole approval-mode session
// from "Slack": /tune start, proposals with buttons, an Edit modal refused per field then
// accepted, a Reject modal whose feedback reaches the advisor's next prompt, a thread-reply
// approve, a stranger's click, Slack down for a while, pause and resume, and cancel.
func TestSlackApprovalSession(t *testing.T) {
	ds := &fakeDeepSeek{}
	dsSrv := httptest.NewServer(ds)
	defer dsSrv.Close()
	fake := slacktest.New()
	defer fake.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
data_dir: data
log: {level: debug}
service: {addr: "off"}
session:
  trial_count: 4
  rungs: [20, 40, 60]
advisor:
  base_url: %s
chat:
  slack:
    enabled: true
    api_url: %s
    channel: %s
    allow_users: [%s]
    notify_users: [%s]
`, dsSrv.URL, fake.URL, slackChannel, slackAlice, slackBob))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, stop := slackDaemon(ctx, t, fake, cfg, "DEEPSEEK_API_KEY="+testKey)

	// /tune start: acknowledged with nothing, the start announced in the channel.
	ack := r.send("slash_commands", fake.Slash(slackAlice, slackChannel, "start mode=approval trials=4 rungs=20,40,60"))
	if len(ack.Payload) != 0 && string(ack.Payload) != "null" {
		t.Errorf("slash ack carries %s", ack.Payload)
	}
	if res := r.response("started by"); res.ResponseType != "in_channel" {
		t.Errorf("the start is answered %s, want in_channel", res.ResponseType)
	}
	root := r.wait("the root message", func(m *slacktest.Message) bool { return m.Channel == slackChannel && m.ThreadTS == "" })
	inThread := func(m *slacktest.Message) bool { return m.ThreadTS == root.TS }
	pending := func(seq int) func(m *slacktest.Message) bool {
		return func(m *slacktest.Message) bool {
			return inThread(m) && strings.Contains(m.Text, fmt.Sprintf("proposal %d for", seq)) && strings.Contains(m.Blocks, "tune:approve:")
		}
	}
	decided := func(seq int, word string) func(m *slacktest.Message) bool {
		return func(m *slacktest.Message) bool {
			return inThread(m) && strings.Contains(m.Text, fmt.Sprintf("proposal %d for", seq)) && !strings.Contains(m.Blocks, "tune:approve:") && strings.Contains(m.Blocks, word)
		}
	}

	// Proposal 1: its buttons, and the owner and notify_users mentioned.
	p1 := r.wait("proposal 1", pending(1))
	for _, want := range []string{"<@" + slackAlice + ">", "<@" + slackBob + ">", `"style":"primary"`, `"style":"danger"`} {
		if !strings.Contains(p1.Blocks+p1.Text, want) {
			t.Errorf("proposal card lacks %s: %s", want, p1.Blocks)
		}
	}
	// Edit: the modal, then an out-of-bounds value refused in the modal.
	click := fake.Click(slackAlice, &p1, actionOf(t, p1, "edit"))
	r.send("interactive", click)
	v := r.view(click["trigger_id"].(string))
	if len(v.BlockIDs) < 4 || !strings.Contains(v.JSON, "foot_gait.period=") {
		t.Fatalf("edit modal: %+v", v)
	}
	ack = r.send("interactive", fake.Submit(slackAlice, v, map[string]string{"patch_0": "foot_gait.period=0.95"}))
	var errs struct {
		Action string            `json:"response_action"`
		Errors map[string]string `json:"errors"`
	}
	if err := json.Unmarshal(ack.Payload, &errs); err != nil || errs.Action != "errors" || !strings.Contains(errs.Errors["patch_0"], "foot_gait.period") {
		t.Fatalf("out-of-bounds edit ack %s (%v); want the error on patch_0", ack.Payload, err)
	}
	if m := r.wait("proposal 1 still pending", func(m *slacktest.Message) bool { return m.TS == p1.TS }); !strings.Contains(m.Blocks, "tune:approve:") {
		t.Fatal("a refused edit decided the proposal")
	}
	// A valid edit, with a change added on the second line: the modal closes, the stamp
	// replaces the buttons.
	ack = r.send("interactive", fake.Submit(slackAlice, v, map[string]string{"patch_0": "foot_gait.period=0.45", "patch_1": "foot_slip=-0.3"}))
	if len(ack.Payload) != 0 && string(ack.Payload) != "null" {
		t.Fatalf("valid edit ack %s", ack.Payload)
	}
	r.wait("proposal 1 stamped", decided(1, "edited and approved"))

	// Proposal 2: Reject with feedback through the modal.
	p2 := r.wait("proposal 2", pending(2))
	click = fake.Click(slackAlice, &p2, actionOf(t, p2, "reject"))
	r.send("interactive", click)
	v = r.view(click["trigger_id"].(string))
	const feedback = "keep the gait period, try less slip please"
	ack = r.send("interactive", fake.Submit(slackAlice, v, map[string]string{"feedback": feedback}))
	if len(ack.Payload) != 0 && string(ack.Payload) != "null" {
		t.Fatalf("reject ack %s", ack.Payload)
	}
	r.wait("proposal 2 stamped", decided(2, "rejected"))

	// Proposal 3: the advisor was told; a thread reply approves it.
	p3 := r.wait("proposal 3", pending(3))
	ds.mu.Lock()
	told := strings.Contains(ds.bodies[len(ds.bodies)-1], "less slip please")
	ds.mu.Unlock()
	if !told {
		t.Error("the reject feedback is not in the advisor's next prompt")
	}
	// Slack goes down while trial 2 trains: the session carries on, nothing is lost.
	r.send("events_api", fake.Reply(slackAlice, slackChannel, root.TS, "approve"))
	r.wait("proposal 3 stamped", decided(3, "approved"))
	fake.SetDown(true)
	select {
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
	}
	fake.SetDown(false)
	if fake.Failed() == 0 {
		t.Error("nothing was tried while Slack was down: the outage tested nothing")
	}
	// A comment in the thread is ignored without noise.
	r.send("events_api", fake.Reply(slackBob, slackChannel, root.TS, "nice curves!"))

	p4 := r.wait("proposal 4", pending(4))
	r.wait("trial 2's report", func(m *slacktest.Message) bool {
		return inThread(m) && strings.HasPrefix(m.Text, "trial 2 @ rung 0")
	})
	// A stranger's click is refused privately and changes nothing.
	r.send("interactive", fake.Click(slackEve, &p4, actionOf(t, p4, "approve")))
	if res := r.response("not allowed"); res.ResponseType != "ephemeral" {
		t.Errorf("refusal sent %s", res.ResponseType)
	}
	// Pause from the button, resume from /tune, cancel from the thread.
	r.send("interactive", fake.Click(slackAlice, &p4, actionOf(t, p4, "pause")))
	r.wait("root shows paused", func(m *slacktest.Message) bool { return m.TS == root.TS && strings.Contains(m.Text, "paused") })
	r.send("slash_commands", fake.Slash(slackAlice, slackChannel, "resume"))
	r.wait("root no longer paused", func(m *slacktest.Message) bool { return m.TS == root.TS && !strings.Contains(m.Text, "paused") })
	r.send("events_api", fake.Reply(slackAlice, slackChannel, root.TS, "cancel"))
	r.wait("the summary", func(m *slacktest.Message) bool { return inThread(m) && strings.Contains(m.Text, "cancelled") })
	// /tune clip posts a trial's clip where it was asked, for everyone there.
	r.send("slash_commands", fake.Slash(slackBob, slackChannel, "clip 1"))
	if res := r.response("trial 1 @ rung 0"); res.ResponseType != "in_channel" {
		t.Errorf("/tune clip answered %s, want in_channel", res.ResponseType)
	}
	asked := func() bool {
		for _, u := range fake.Snapshot().Uploads {
			if u.ThreadTS == "" && u.Name == "trial-001-rung-0.gif" {
				return true
			}
		}
		return false
	}
	for !asked() && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}

	stop()

	st := fake.Snapshot()
	if len(st.BadTokens) > 0 {
		t.Errorf("calls with the wrong token: %v", st.BadTokens)
	}
	for _, o := range st.Origins {
		if o != "https://api.slack.com" {
			t.Errorf("websocket Origin %q", o)
		}
	}
	var reports, uploads int
	for _, m := range st.Messages {
		if m.ThreadTS != "" && m.ThreadTS != root.TS {
			t.Errorf("message outside the session thread: %s", m.Text)
		}
		if strings.HasPrefix(m.Text, "trial ") && m.ThreadTS == root.TS {
			reports++
		}
		if strings.Contains(m.Text, "nice curves") {
			t.Error("a comment was answered")
		}
	}
	clips := map[string][]byte{} // name → bytes, of the clips in the thread
	askedClip := false
	for _, u := range st.Uploads {
		if u.ThreadTS == "" && u.Channel == slackChannel && u.Name == "trial-001-rung-0.gif" {
			askedClip = true // /tune clip 1, in the channel it was asked in
			continue
		}
		if u.ThreadTS != root.TS || u.Channel != slackChannel {
			t.Errorf("chart %s uploaded to %s/%s, want the session thread", u.Name, u.Channel, u.ThreadTS)
		}
		if strings.HasSuffix(u.Name, ".gif") {
			clips[u.Name] = u.Data
		}
		uploads++
	}
	if reports < 3 || uploads < 3 {
		t.Errorf("%d trial reports and %d charts in the thread; want the reports of trials 0–2 with their charts", reports, uploads)
	}
	if !askedClip {
		t.Error("/tune clip 1 uploaded no clip to the channel")
	}
	for _, e := range st.Ephemerals {
		if strings.Contains(e.Text, "nice curves") {
			t.Error("a comment was answered privately")
		}
	}

	db, err := store.Open(filepath.Join(dir, "data", "tunebot.db"), store.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, err := db.Sessions(context.Background())
	if err != nil || len(all) != 1 {
		t.Fatalf("sessions %v %v", all, err)
	}
	s := all[0]
	if s.State != session.StateCancelled || s.Owner.ID != slackAlice || s.Owner.Platform != "slack" {
		t.Errorf("session %s owned by %+v", s.State, s.Owner)
	}
	ps, _ := db.Proposals(context.Background(), s.ID)
	if len(ps) < 4 || ps[1].Decision == nil || ps[1].Decision.Feedback != feedback {
		t.Errorf("proposal 2's decision does not carry the feedback: %+v", ps)
	}
	trials, _ := db.Trials(context.Background(), s.ID)
	// Each trial report carries its clip in the thread: the file the trial's evaluation
	// wrote, byte for byte (issue 21).
	for _, tr := range trials {
		if tr.State != session.TrialCompleted {
			continue
		}
		name := fmt.Sprintf("trial-%03d-rung-%d.gif", tr.Number, tr.Rung)
		if tr.Clip == nil {
			t.Errorf("trial %d has no clip: %s", tr.Number, tr.ClipNote)
			continue
		}
		onDisk, err := os.ReadFile(filepath.Join(dir, "data", "sessions", s.ID, tr.Clip.Path))
		if err != nil || !bytes.HasPrefix(clips[name], []byte("GIF89a")) || !bytes.Equal(clips[name], onDisk) {
			t.Errorf("trial %d's clip %s: %d bytes in the thread, %d on disk (%v)", tr.Number, name, len(clips[name]), len(onDisk), err)
		}
	}
	for _, tr := range trials {
		if tr.Number == 1 && tr.Rung == 0 {
			if got := tr.RewardConfig.Params["foot_gait.period"]; got != 0.45 {
				t.Errorf("trial 1 ran foot_gait.period=%v, want the edited 0.45", got)
			}
			if got := tr.RewardConfig.Weights["foot_slip"]; got != -0.3 {
				t.Errorf("trial 1 ran foot_slip=%v, want the added -0.3", got)
			}
		}
	}
	audit, _ := db.Audit(context.Background(), s.ID)
	refused := false
	for _, a := range audit {
		if a.Kind == "refused" && a.Actor.ID == slackEve {
			refused = true
		}
	}
	if !refused {
		t.Error("the stranger's click is not audited")
	}
	if p4s := ps[3]; p4s.ID == "" || p4s.Decision != nil && p4s.Decision.By.ID == slackEve {
		t.Errorf("the stranger decided proposal 4: %+v", p4s)
	}
	_ = p3
}
