package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/bot/discord/discordtest"
	"tunebot/bot/slack/slacktest"
	"tunebot/store"
	"tunebot/trainer"
)

// noteOfCard is the note a person adds to their answer through the card's form.
const noteOfCard = "trial 1 trots; the baseline shuffles its hind feet"

// TestSlackPreferenceCard runs the daemon against the fake Slack and a fake DeepSeek
// (issue 23): when trial 1 finishes above the baseline, "Which walks better?" appears in the
// session thread with both trials' clips uploaded into it; a click on A records the
// preference and stamps the card, a second click is refused as already decided, Add a note
// opens a modal whose note reaches DeepSeek's next request.
func TestSlackPreferenceCard(t *testing.T) {
	ds := &fakeDeepSeek{script: prefsScript}
	dsSrv := httptest.NewServer(ds)
	defer dsSrv.Close()
	fake := slacktest.New()
	defer fake.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
data_dir: data
service: {addr: "off"}
advisor:
  base_url: %s
chat:
  slack:
    enabled: true
    api_url: %s
    channel: %s
    allow_users: [%s]
`, dsSrv.URL, fake.URL, slackChannel, slackAlice))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r, stop := slackDaemon(ctx, t, fake, cfg, "DEEPSEEK_API_KEY="+testKey)
	r.send("slash_commands", fake.Slash(slackAlice, slackChannel, "start mode=approval trials=5 rungs=20,40,60"))
	root := r.wait("the root message", func(m *slacktest.Message) bool { return m.Channel == slackChannel && m.ThreadTS == "" })
	inThread := func(m *slacktest.Message) bool { return m.ThreadTS == root.TS }
	r.wait("proposal 1", func(m *slacktest.Message) bool { return inThread(m) && strings.Contains(m.Text, "proposal 1 for") })
	r.send("events_api", fake.Reply(slackAlice, slackChannel, root.TS, "approve"))

	card := r.wait("the A/B card", func(m *slacktest.Message) bool {
		return inThread(m) && strings.Contains(m.Text, "Which walks better? A: trial 1 · B: trial 0") && strings.Contains(m.Blocks, "tune:prefer-a:")
	})
	if !strings.Contains(card.Blocks, "trial 1 @ rung 0 · 5.0 s") || !strings.Contains(card.Blocks, "trial 0 @ rung 0 (baseline) · 5.0 s") {
		t.Errorf("the card does not name both clips: %s", card.Blocks)
	}
	// Both clips are in the thread for the card (each trial's report uploaded it once before).
	clips := func(st *slacktest.State) map[string]int {
		n := map[string]int{}
		for _, u := range st.Uploads {
			if u.ThreadTS == root.TS && bytes.HasPrefix(u.Data, []byte("GIF89a")) {
				n[u.Name]++
			}
		}
		return n
	}
	if err := fake.Wait(ctx, func(st *slacktest.State) bool {
		n := clips(st)
		return n["trial-001-rung-0.gif"] == 2 && n["trial-000-rung-0.gif"] == 2
	}); err != nil {
		t.Fatalf("the card's clips were not uploaded into the thread: %v (%v)", func() map[string]int { st := fake.Snapshot(); return clips(&st) }(), err)
	}

	r.send("interactive", fake.Click(slackAlice, &card, actionOf(t, card, "prefer-a")))
	stamped := r.wait("the card answered", func(m *slacktest.Message) bool {
		return m.TS == card.TS && !strings.Contains(m.Blocks, "tune:prefer-a:") && strings.Contains(m.Blocks, "answered by")
	})
	if !strings.Contains(stamped.Blocks, "trial 1 walks better than the baseline (trial 0)") {
		t.Errorf("the stamped card: %s", stamped.Blocks)
	}
	// A second click on the card as it was (a phone that has not refreshed) is refused.
	r.send("interactive", fake.Click(slackAlice, &card, actionOf(t, card, "prefer-b")))
	if res := r.response("already compared by"); res.ResponseType != "ephemeral" {
		t.Errorf("the second click was answered %s", res.ResponseType)
	}
	// Add a note: the modal, then the note.
	click := fake.Click(slackAlice, &stamped, actionOf(t, stamped, "prefer-note"))
	r.send("interactive", click)
	v := r.view(click["trigger_id"].(string))
	r.send("interactive", fake.Submit(slackAlice, v, map[string]string{"note": noteOfCard}))
	r.wait("the note on the card", func(m *slacktest.Message) bool {
		return m.TS == card.TS && strings.Contains(m.Blocks, "shuffles its hind feet")
	})
	ds.mu.Lock()
	asked := ds.calls
	ds.mu.Unlock()

	// The next proposal's request carries the note.
	approveUntil := func(seq int) {
		r.wait(fmt.Sprintf("proposal %d", seq), func(m *slacktest.Message) bool {
			return inThread(m) && strings.Contains(m.Text, fmt.Sprintf("proposal %d for", seq)) && strings.Contains(m.Blocks, "tune:approve:")
		})
	}
	for seq := 2; ; seq++ {
		ds.mu.Lock()
		n := ds.calls
		ds.mu.Unlock()
		if n > asked {
			break
		}
		approveUntil(seq)
		r.send("events_api", fake.Reply(slackAlice, slackChannel, root.TS, fmt.Sprintf("approve %d", seq)))
		if seq > 4 {
			t.Fatal("no DeepSeek request after the note")
		}
		approveUntil(seq + 1)
	}
	ds.mu.Lock()
	if !strings.Contains(ds.bodies[asked], "shuffles its hind feet") {
		t.Errorf("DeepSeek's request after the note lacks it")
	}
	ds.mu.Unlock()
	r.send("events_api", fake.Reply(slackAlice, slackChannel, root.TS, "cancel"))
	r.wait("the summary", func(m *slacktest.Message) bool { return inThread(m) && strings.Contains(m.Text, "cancelled") })
	stop()
	db, err := store.Open(filepath.Join(dir, "data", "tunebot.db"), store.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, err := db.Sessions(context.Background())
	if err != nil || len(all) != 1 {
		t.Fatalf("sessions %v %v", all, err)
	}
	var answered int
	for _, p := range all[0].Preferences {
		if p.Decided() {
			answered++
			if p.A != 1 || p.Answer != "a" || p.Note != noteOfCard || p.By == nil || p.By.ID != slackAlice || p.By.Platform != "slack" {
				t.Errorf("stored preference %+v", p)
			}
		}
	}
	if answered != 1 {
		t.Errorf("%d answers stored, want the one click's: %+v", answered, all[0].Preferences)
	}
}

// TestDiscordPreferenceCard is the same at Discord's wire: the card in the session thread
// with both clips attached, a click that records one preference and edits the card, a
// second click refused privately, and the note's modal.
func TestDiscordPreferenceCard(t *testing.T) {
	ds := &fakeDeepSeek{script: prefsScript}
	dsSrv := httptest.NewServer(ds)
	defer dsSrv.Close()
	fake := discordtest.New(t, dGuild, dApp)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, `
data_dir: `+filepath.Join(dir, "data")+`
service: {addr: "off"}
advisor:
  base_url: `+dsSrv.URL+`
trainer:
  train: `+simArgv(trainer.SimTrain)+`
  evaluate: `+simArgv(trainer.SimEvaluate)+`
chat:
  discord:
    enabled: true
    application_id: "`+dApp+`"
    guild_id: "`+dGuild+`"
    channel_id: "`+dChannel+`"
    allow_users: ["`+alice.ID+`"]
    api_url: "`+fake.APIURL+`"
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	exit := make(chan int, 1)
	go func() {
		exit <- dispatch(ctx, &env{stdin: strings.NewReader(""), stdout: logs, stderr: logs, getenv: func(k string) string {
			switch k {
			case "DISCORD_BOT_TOKEN":
				return "test-token"
			case "DEEPSEEK_API_KEY":
				return testKey
			}
			return ""
		}}, []string{"run", "--config", cfgPath})
	}()
	defer func() {
		cancel()
		<-exit
		if t.Failed() {
			t.Logf("daemon log:\n%s\n%s", logs.String(), fake)
		}
	}()
	fake.Wait("IDENTIFY", func() bool { return fake.ConnectedLocked() })
	fake.Slash(alice, dChannel, "start", discordtest.Option{Name: "mode", Value: "approval"},
		discordtest.Option{Name: "trials", Value: 5.0}, discordtest.Option{Name: "rungs", Value: "20,40,60"})
	var thread string
	fake.Wait("session thread", func() bool {
		for th := range fake.ThreadsLocked() {
			thread = th
		}
		return thread != ""
	})
	threadHas := func(what string, cond func(m discordtest.Message) bool) discordtest.Message {
		t.Helper()
		return threadMessage(fake, thread, what, cond)
	}
	p1 := threadHas("proposal 1", func(m discordtest.Message) bool { return strings.HasPrefix(title(m), "proposal 1 ") })
	ids, _ := buttonsOf(p1)
	fake.Click(alice, thread, p1.ID, ids["Approve"])

	card := threadHas("the A/B card", func(m discordtest.Message) bool {
		return strings.HasPrefix(title(m), "Which walks better? A: trial 1 · B: trial 0")
	})
	ids, _ = buttonsOf(card)
	if !strings.HasPrefix(ids["A: trial 1"], "tune:prefer-a:") || !strings.HasPrefix(ids["B: trial 0"], "tune:prefer-b:") || ids["Can't tell"] == "" {
		t.Fatalf("the card's buttons %v", ids)
	}
	var files []string
	for _, f := range card.Files {
		files = append(files, f.Name)
	}
	if !strings.Contains(strings.Join(files, " "), "trial-001-rung-0.gif") || !strings.Contains(strings.Join(files, " "), "trial-000-rung-0.gif") {
		t.Errorf("the card carries files %v, want both trials' clips", files)
	}
	tok := fake.Click(alice, thread, card.ID, ids["A: trial 1"])
	fake.Wait("the card answered", func() bool {
		for _, m := range fake.MessagesLocked(thread) {
			if m.ID == card.ID {
				b, _ := buttonsOf(m)
				return b["A: trial 1"] == "" && strings.Contains(allText(m), "answered by alice") && b["Add a note"] != ""
			}
		}
		return false
	})
	_ = tok
	tok = fake.Click(alice, thread, card.ID, ids["B: trial 0"])
	fake.Wait("the second click refused privately", func() bool {
		for _, cb := range fake.CallbacksLocked(tok) {
			if cb.Flags == 64 && strings.Contains(cb.Content, "already compared by alice") {
				return true
			}
		}
		return false
	})
	var noteID string
	for _, m := range fake.Messages(thread) {
		if m.ID == card.ID {
			b, _ := buttonsOf(m)
			noteID = b["Add a note"]
		}
	}
	tok = fake.Click(alice, thread, card.ID, noteID)
	fake.Wait("the note's modal", func() bool { cb := fake.CallbacksLocked(tok); return len(cb) == 1 && cb[0].Type == 9 })
	fake.Submit(alice, thread, noteID, map[string]string{"note": noteOfCard})
	threadHas("the note on the card", func(m discordtest.Message) bool {
		return m.ID == card.ID && strings.Contains(allText(m), "shuffles its hind feet")
	})
	fake.Slash(alice, dChannel, "cancel")
	threadHas("summary", func(m discordtest.Message) bool { return strings.Contains(title(m), "cancelled") })
}
