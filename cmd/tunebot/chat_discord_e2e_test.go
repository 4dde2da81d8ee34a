package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/bot/discord/discordtest"
	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer"
)

const (
	dGuild   = "100000000000000001"
	dApp     = "100000000000000002"
	dChannel = "100000000000000003"
	dOpsRole = "300000000000000001"
	dCarol   = "200000000000000004"
)

var (
	alice   = discordtest.User{ID: "200000000000000001", Name: "alice"}
	bob     = discordtest.User{ID: "200000000000000002", Name: "bob", Roles: []string{dOpsRole}}
	mallory = discordtest.User{ID: "200000000000000003", Name: "mallory"}
)

func simArgv(tmpl []string) string {
	out := make([]string, len(tmpl))
	for i, a := range tmpl {
		b, _ := json.Marshal(strings.ReplaceAll(a, "{tunebot}", tunebotBin))
		out[i] = string(b)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// buttonsOf maps a message's button labels to their custom IDs and disabled flags.
func buttonsOf(m discordtest.Message) (ids map[string]string, disabled map[string]bool) {
	ids, disabled = map[string]string{}, map[string]bool{}
	for _, row := range m.Components {
		var r struct {
			Components []struct {
				Label    string `json:"label"`
				CustomID string `json:"custom_id"`
				Disabled bool   `json:"disabled"`
			} `json:"components"`
		}
		_ = json.Unmarshal(row, &r)
		for _, b := range r.Components {
			ids[b.Label], disabled[b.Label] = b.CustomID, b.Disabled
		}
	}
	return ids, disabled
}

// threadMessage waits for the first message of thread that cond accepts.
func threadMessage(fake *discordtest.Fake, thread, what string, cond func(m discordtest.Message) bool) discordtest.Message {
	var got discordtest.Message
	fake.Wait(what, func() bool {
		for _, m := range fake.MessagesLocked(thread) {
			if cond(m) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

func title(m discordtest.Message) string {
	if len(m.Embeds) == 0 {
		return ""
	}
	return m.Embeds[0].Title
}

func allText(m discordtest.Message) string {
	var b strings.Builder
	b.WriteString(m.Content + "\n")
	for _, e := range m.Embeds {
		b.WriteString(e.Title + "\n" + e.Description + "\n")
		for _, f := range e.Fields {
			b.WriteString(f.Name + ": " + f.Value + "\n")
		}
	}
	return b.String()
}

// TestDiscordApprovalSession drives a whole approval-mode session from a fake Discord
// through the real daemon: slash start, proposal buttons, an unauthorised click, an edit
// form with a bad value then a good one, a rejection with feedback, approval by a thread
// reply from a role holder, a gateway drop with resume, pause and resume, a click whose
// interaction token expired, and cancel; then every outbox item must have been delivered.
func TestDiscordApprovalSession(t *testing.T) {
	fake := discordtest.New(t, dGuild, dApp)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, `
data_dir: `+filepath.Join(dir, "data")+`
log: {level: debug}
service: {addr: "off"}
trainer:
  train: `+simArgv(trainer.SimTrain)+`
  evaluate: `+simArgv(trainer.SimEvaluate)+`
session:
  trial_count: 4
  rungs: [20, 40, 60]
chat:
  discord:
    enabled: true
    application_id: "`+dApp+`"
    guild_id: "`+dGuild+`"
    channel_id: "`+dChannel+`"
    allow_users: ["`+alice.ID+`"]
    allow_roles: ["`+dOpsRole+`"]
    notify_users: ["`+dCarol+`"]
    api_url: "`+fake.APIURL+`"
    thread_replies: true
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	exit := make(chan int, 1)
	go func() {
		exit <- dispatch(ctx, &env{stdin: strings.NewReader(""), stdout: logs, stderr: logs, getenv: func(k string) string {
			if k == "DISCORD_BOT_TOKEN" {
				return "test-token"
			}
			return ""
		}}, []string{"run", "--config", cfgPath})
	}()
	defer func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("daemon log:\n%s\n%s", logs.String(), fake)
		}
	}()

	fake.Wait("IDENTIFY", func() bool { return fake.ConnectedLocked() })
	if intents, _, _ := fake.Gateway(); len(intents) != 1 || intents[0] != 1|1<<9|1<<15 {
		t.Fatalf("identify intents %v, want guilds|guild messages|message content", intents)
	}
	var cmds []struct {
		Name    string `json:"name"`
		Options []struct {
			Name string `json:"name"`
		} `json:"options"`
	}
	if err := json.Unmarshal(fake.Commands(), &cmds); err != nil || len(cmds) != 1 || cmds[0].Name != "tune" || len(cmds[0].Options) < 10 {
		t.Fatalf("registered commands: %s (%v)", fake.Commands(), err)
	}

	// Preset autocomplete answers with choices (none saved yet).
	tok := fake.Autocomplete(alice, dChannel, "start", "preset", "")
	fake.Wait("autocomplete", func() bool { cb := fake.CallbacksLocked(tok); return len(cb) == 1 && cb[0].Type == 8 })

	// Someone not allowed cannot start; the refusal is private.
	tok = fake.Slash(mallory, dChannel, "start", discordtest.Option{Name: "mode", Value: "approval"})
	fake.Wait("refused start", func() bool {
		cb := fake.CallbacksLocked(tok)
		return len(cb) == 2 && cb[0].Type == 5 && cb[0].Flags == 64 && cb[1].Kind == "edit" && strings.Contains(cb[1].Content, "not allowed")
	})

	tok = fake.Slash(alice, dChannel, "start", discordtest.Option{Name: "mode", Value: "approval"},
		discordtest.Option{Name: "fallback", Value: true}, discordtest.Option{Name: "trials", Value: 4.0},
		discordtest.Option{Name: "rungs", Value: "20,40,60"})
	fake.Wait("public start message", func() bool {
		for _, m := range fake.MessagesLocked(dChannel) {
			if strings.Contains(m.Content, "started by alice") {
				return true
			}
		}
		return false
	})
	fake.Wait("deferred answer removed", func() bool {
		cb := fake.CallbacksLocked(tok)
		return len(cb) == 2 && cb[1].Kind == "delete"
	})

	var thread string
	fake.Wait("session thread", func() bool {
		for th := range fake.ThreadsLocked() {
			thread = th
		}
		return thread != ""
	})
	root := fake.Messages(dChannel)
	var rootMsg discordtest.Message
	for _, m := range root {
		if m.ID == thread {
			rootMsg = m
		}
	}
	if !strings.HasPrefix(title(rootMsg), "tunebot session ") {
		t.Fatalf("root message %+v", rootMsg)
	}

	// proposal waits for the pending proposal card number n in the thread.
	proposal := func(n int) discordtest.Message {
		t.Helper()
		var got discordtest.Message
		prefix := "proposal " + string(rune('0'+n)) + " "
		fake.Wait(prefix+"card", func() bool {
			for _, m := range fake.MessagesLocked(thread) {
				if strings.HasPrefix(title(m), prefix) {
					got = m
					return true
				}
			}
			return false
		})
		return got
	}
	card := func(id string) discordtest.Message {
		for _, m := range fake.Messages("") {
			if m.ID == id {
				return m
			}
		}
		t.Fatalf("no message %s", id)
		return discordtest.Message{}
	}
	threadSays := func(what string, cond func(m discordtest.Message) bool) discordtest.Message {
		t.Helper()
		return threadMessage(fake, thread, what, cond)
	}

	p1 := proposal(1)
	ids, _ := buttonsOf(p1)
	if len(ids) != 4 || !strings.HasPrefix(ids["Approve"], "tune:approve:") {
		t.Fatalf("proposal buttons %v", ids)
	}
	if !strings.Contains(p1.Content, "<@"+alice.ID+">") || !strings.Contains(p1.Content, "<@"+dCarol+">") ||
		p1.Allowed == nil || len(p1.Allowed.Parse) != 0 || len(p1.Allowed.Users) != 2 {
		t.Errorf("proposal mentions %q allowed %+v, want owner and notify user pinged, nothing else", p1.Content, p1.Allowed)
	}

	// An unauthorised click is refused privately and changes nothing.
	tok = fake.Click(mallory, thread, p1.ID, ids["Approve"])
	fake.Wait("private refusal", func() bool {
		cb := fake.CallbacksLocked(tok)
		return len(cb) == 2 && cb[0].Type == 6 && cb[1].Kind == "followup" && cb[1].Flags == 64 && strings.Contains(cb[1].Content, "not allowed")
	})

	// Edit opens a modal of term=value inputs; a bad value is refused, nothing runs.
	tok = fake.Click(alice, thread, p1.ID, ids["Edit"])
	var modal struct {
		CustomID   string `json:"custom_id"`
		Components []struct {
			Components []struct {
				CustomID string `json:"custom_id"`
				Value    string `json:"value"`
			} `json:"components"`
		} `json:"components"`
	}
	fake.Wait("edit modal", func() bool { cb := fake.CallbacksLocked(tok); return len(cb) == 1 && cb[0].Type == 9 })
	if err := json.Unmarshal(fake.Callbacks(tok)[0].Data, &modal); err != nil || modal.CustomID != ids["Edit"] || len(modal.Components) != 4 {
		t.Fatalf("edit modal %s (%v)", fake.Callbacks(tok)[0].Data, err)
	}
	first := modal.Components[0].Components[0]
	if first.CustomID != "patch.1" || !strings.Contains(first.Value, "=") {
		t.Fatalf("edit modal's first input %+v", first)
	}
	tok = fake.Submit(alice, thread, ids["Edit"], map[string]string{"patch.1": "pose=abc"})
	fake.Wait("edit refused", func() bool {
		cb := fake.CallbacksLocked(tok)
		return len(cb) == 2 && cb[1].Kind == "followup" && cb[1].Flags == 64 && strings.Contains(cb[1].Content, "edit refused")
	})
	if _, dis := buttonsOf(card(p1.ID)); dis["Approve"] {
		t.Fatal("a refused edit decided the proposal")
	}
	// A valid edit: keep only the first proposed change.
	tok = fake.Submit(alice, thread, ids["Edit"], map[string]string{"patch.1": first.Value})
	threadSays("edit decision", func(m discordtest.Message) bool {
		return strings.Contains(m.Content, "proposal 1 edited and approved by alice")
	})
	fake.Wait("proposal 1 stamped", func() bool {
		for _, m := range fake.MessagesLocked(thread) {
			if m.ID == p1.ID {
				_, dis := buttonsOf(m)
				return dis["Approve"] && strings.Contains(allText(m), "edited and approved by alice")
			}
		}
		return false
	})

	// A 429 on the next post is retried after the delay Discord names.
	fake.RateLimitNext(1)

	// Reject with feedback through the modal.
	p2 := proposal(2)
	ids, _ = buttonsOf(p2)
	tok = fake.Click(alice, thread, p2.ID, ids["Reject"])
	fake.Wait("reject modal", func() bool { cb := fake.CallbacksLocked(tok); return len(cb) == 1 && cb[0].Type == 9 })
	const feedback = "less foot slip, please"
	fake.Submit(alice, thread, ids["Reject"], map[string]string{"feedback": feedback})
	threadSays("reject decision", func(m discordtest.Message) bool { return strings.Contains(m.Content, "proposal 2 rejected by alice") })

	// Approve by a thread reply from someone holding the allowed role; a bot saying the
	// same is ignored.
	p3 := proposal(3)
	fake.Say(discordtest.User{ID: "200000000000000009", Name: "otherbot"}, thread, "approve", true)
	said := fake.Say(bob, thread, "approve", false)
	threadSays("thread-reply approval", func(m discordtest.Message) bool {
		return m.ReplyTo == said && strings.Contains(m.Content, "proposal 3 approved by bob")
	})
	_ = p3

	// The gateway drops mid-session: discordgo resumes and the events sent meanwhile arrive.
	fake.Drop()
	said = fake.Say(alice, thread, "pause", false)
	threadSays("pause after the resume", func(m discordtest.Message) bool { return m.ReplyTo == said && strings.Contains(m.Content, "session") })
	if _, resumes, beats := fake.Gateway(); resumes < 1 || beats < 2 {
		t.Errorf("gateway resumes %d heartbeats %d, want a resume and heartbeats on both connections", resumes, beats)
	}
	tok = fake.Slash(alice, thread, "resume")
	threadSays("resume", func(m discordtest.Message) bool {
		return strings.Contains(m.Content, "by alice") && (strings.Contains(m.Content, "resumed") || strings.Contains(m.Content, "withdrawn"))
	})

	// A click whose interaction Discord no longer knows still decides, and the answer is a
	// fresh message in the thread.
	p4 := proposal(4)
	ids, _ = buttonsOf(p4)
	fake.ExpireNext()
	fake.Click(alice, thread, p4.ID, ids["Approve"])
	threadSays("fresh message for a stale click", func(m discordtest.Message) bool { return strings.Contains(m.Content, "proposal 4 approved by alice") })

	fake.Slash(alice, dChannel, "cancel")
	threadSays("summary", func(m discordtest.Message) bool { return strings.Contains(title(m), "cancelled") })
	fake.Wait("root shows cancelled", func() bool {
		for _, m := range fake.MessagesLocked(dChannel) {
			if m.ID == thread {
				return strings.Contains(title(m), "cancelled")
			}
		}
		return false
	})

	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("daemon exit %d", code)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("daemon did not stop")
	}

	db, err := store.Open(filepath.Join(dir, "data", "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bg := context.Background()
	if due, err := db.Due(bg, "discord", time.Now().Add(48*time.Hour), 100); err != nil || len(due) != 0 {
		t.Errorf("undelivered outbox items: %d (%v)", len(due), err)
	}
	all, err := db.Sessions(bg)
	if err != nil || len(all) != 1 {
		t.Fatalf("sessions %v %v", all, err)
	}
	s := all[0]
	if s.Owner.Platform != "discord" || s.Owner.ID != alice.ID || s.State != session.StateCancelled {
		t.Errorf("session owner %+v state %s", s.Owner, s.State)
	}
	// Each trial report in the thread carries the trial's clip as an attachment, the file
	// its evaluation wrote, byte for byte (issue 21).
	trials, err := db.Trials(bg, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	reported := 0
	for _, tr := range trials {
		if tr.State != session.TrialCompleted {
			continue
		}
		if tr.Clip == nil {
			t.Errorf("trial %d has no clip: %s", tr.Number, tr.ClipNote)
			continue
		}
		onDisk, err := os.ReadFile(filepath.Join(dir, "data", "sessions", s.ID, tr.Clip.Path))
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("trial-%03d-rung-%d.gif", tr.Number, tr.Rung)
		found := false
		for _, m := range fake.Messages(thread) {
			if !strings.HasPrefix(title(m), fmt.Sprintf("trial %d @ rung %d", tr.Number, tr.Rung)) {
				continue
			}
			for _, f := range m.Files {
				found = found || f.Name == name && f.ContentType == "image/gif" && bytes.Equal(f.Data, onDisk)
			}
		}
		if !found {
			t.Errorf("trial %d's report in the thread does not carry its clip %s", tr.Number, name)
		}
		reported++
	}
	if reported < 3 {
		t.Errorf("%d completed trials with reports, want at least 3", reported)
	}
	ps, err := db.Proposals(bg, s.ID)
	if err != nil || len(ps) < 4 {
		t.Fatalf("proposals %d %v", len(ps), err)
	}
	if d := ps[1].Decision; ps[1].State != session.ProposalRejected || d == nil || d.Feedback != feedback || d.By.ID != alice.ID {
		t.Errorf("proposal 2: %s %+v, want rejected by alice with the feedback (the next proposal request reads it from here)", ps[1].State, d)
	}
	if d := ps[0].Decision; d == nil || d.Action != session.ActionEdit || d.Edited == nil {
		t.Errorf("proposal 1 decision %+v, want an edit", d)
	}
	audit, err := db.Audit(bg, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var refused, decisions int
	for _, e := range audit {
		switch {
		case e.Kind == "refused" && e.Actor.ID == mallory.ID && e.Actor.Platform == "discord":
			refused++
		case e.Kind == "decision" && e.Actor.Platform == "discord" && e.Actor.Where != "":
			decisions++
		}
	}
	if refused != 1 || decisions != 4 {
		t.Errorf("audit: %d refusals by mallory, %d decisions from Discord; want 1 and 4", refused, decisions)
	}
}
