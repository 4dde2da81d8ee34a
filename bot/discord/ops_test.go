package discord_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"tunebot/apply/applytest"

	"github.com/google/go-cmp/cmp"

	"tunebot/apply"
	"tunebot/bot"
	"tunebot/bot/bottest"
	"tunebot/bot/discord"
	"tunebot/bot/discord/discordtest"
	"tunebot/preset"
	"tunebot/schedule"
	"tunebot/session"
	"tunebot/store"
)

const (
	opsGuild   = "100000000000000001"
	opsApp     = "100000000000000002"
	opsChannel = "100000000000000003"
)

var (
	opsAlice = discordtest.User{ID: "200000000000000001", Name: "alice"} // may do anything
	opsBob   = discordtest.User{ID: "200000000000000002", Name: "bob"}   // may apply only
	opsEve   = discordtest.User{ID: "200000000000000003", Name: "eve"}   // may read only
)

// opsRig is the Discord adapter running against the fake, with a handler on a real store,
// a real Applier on a temporary trainer checkout and a real Scheduler.
type opsRig struct {
	fake        *discordtest.Fake
	db          *store.DB
	repo        string
	sessionsDir string
	p1          session.Preset
}

func newOpsRig(t *testing.T) *opsRig {
	t.Helper()
	ctx := context.Background()
	r := &opsRig{fake: discordtest.New(t, opsGuild, opsApp), sessionsDir: t.TempDir()}
	db, err := store.Open(filepath.Join(t.TempDir(), "t.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r.db = db
	sp := session.DefaultSpace()
	r.p1 = session.Preset{Name: "auto-tune-0123abcd", SessionID: "0123abcdef", Trial: session.TrialRef{Number: 5, Rung: 2},
		Config: sp.Defaults(), Score: 0.214, Task: "Unitree-Go2-Flat", CreatedAt: time.Now().UTC()}
	r.p1.Config.Weights["foot_slip"] = -0.5
	if err := db.SavePreset(ctx, r.p1); err != nil {
		t.Fatal(err)
	}

	r.repo = applytest.Repo(t)
	ap, err := apply.New(applytest.Config(r.repo, "true"), sp, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schedule.New(schedule.Options{Store: schedule.NewMemStore(), Starter: noStarter{}})
	if err != nil {
		t.Fatal(err)
	}
	h := bot.NewHandler(bot.HandlerConfig{Store: db, Space: sp, SessionsDir: r.sessionsDir, PolicyLimit: 1024, Applier: ap, Scheduler: sch,
		Allow: bot.AllowList{
			{Platform: discord.Platform, Users: []string{opsAlice.ID}},
			{Platform: discord.Platform, Users: []string{opsBob.ID}, Permissions: []bot.Permission{bot.PermApply}},
		}})
	a, err := discord.New(discord.Config{Token: "test-token", ApplicationID: opsApp, GuildID: opsGuild, ChannelID: opsChannel, APIURL: r.fake.APIURL, Store: db})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(rctx, h) }()
	t.Cleanup(func() { cancel(); <-done })
	r.fake.Wait("the gateway connection", func() bool { return r.fake.ConnectedLocked() })
	return r
}

type noStarter struct{}

func (noStarter) StartScheduled(context.Context, bot.ScheduleEntry) (string, error) {
	return "", nil
}

// channelMessage waits for a message in the channel whose text contains want.
func (r *opsRig) channelMessage(t *testing.T, want string) discordtest.Message {
	t.Helper()
	var got discordtest.Message
	r.fake.Wait("a channel message with "+want, func() bool {
		for _, m := range r.fake.MessagesLocked(opsChannel) {
			if strings.Contains(messageText(m.Content, m.Embeds), want) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// answer waits for an answer to the interaction tok (its callback, an edit of the deferred
// response or a follow-up) whose text contains want.
func (r *opsRig) answer(t *testing.T, tok, want string) discordtest.Callback {
	t.Helper()
	var got discordtest.Callback
	r.fake.Wait("an answer with "+want, func() bool {
		for _, c := range r.fake.CallbacksLocked(tok) {
			if c.Kind != "delete" && strings.Contains(messageText(c.Content, c.Embeds), want) {
				got = c
				return true
			}
		}
		return false
	})
	return got
}

func messageText(content string, es []discordtest.Embed) string {
	var b strings.Builder
	b.WriteString(content + "\n")
	for _, e := range es {
		b.WriteString(e.Title + "\n" + e.Description + "\n")
		if e.Image != nil {
			b.WriteString("image " + e.Image.URL + "\n")
		}
	}
	return b.String()
}

// buttons maps a message's button labels to their custom IDs.
func buttons(rows []json.RawMessage) map[string]string {
	out := map[string]string{}
	for _, row := range rows {
		var r struct {
			Components []struct {
				Label    string `json:"label"`
				CustomID string `json:"custom_id"`
			} `json:"components"`
		}
		_ = json.Unmarshal(row, &r)
		for _, b := range r.Components {
			out[b.Label] = b.CustomID
		}
	}
	return out
}

func TestExportAndPolicyAreFiles(t *testing.T) {
	r := newOpsRig(t)

	tok := r.fake.Slash(opsEve, opsChannel, "export", discordtest.Option{Name: "preset", Value: r.p1.Name})
	m := r.channelMessage(t, "the file --reward-config takes")
	if len(m.Files) != 1 {
		t.Fatalf("export message files %+v, want the preset's JSON", m.Files)
	}
	f := m.Files[0]
	if f.Name != r.p1.Name+".json" || f.ContentType != bot.ContentJSON || !bytes.Equal(f.Data, preset.Export(r.p1)) {
		t.Errorf("export file %q %q:\n%s\nwant the bytes of preset.Export:\n%s", f.Name, f.ContentType, f.Data, preset.Export(r.p1))
	}
	if strings.Contains(messageText(m.Content, m.Embeds), "attachment://") {
		t.Errorf("the JSON is shown as an image: %+v", m.Embeds)
	}
	r.fake.Wait("the deferred answer removed", func() bool {
		cb := r.fake.CallbacksLocked(tok)
		return len(cb) == 2 && cb[1].Kind == "delete"
	})

	// The policy of the preset's trial is uploaded as a file; one over the limit is named
	// by its path, privately.
	onnx := []byte("\x08\x07onnx-bytes")
	policy := bottest.PolicyTrial(t, r.db, r.sessionsDir, r.p1, onnx)
	r.fake.Slash(opsEve, opsChannel, "policy", discordtest.Option{Name: "preset", Value: r.p1.Name})
	m = r.channelMessage(t, "policy.onnx of preset "+r.p1.Name)
	if len(m.Files) != 1 || m.Files[0].Name != r.p1.Name+"-policy.onnx" || m.Files[0].ContentType != bot.ContentBinary || !bytes.Equal(m.Files[0].Data, onnx) {
		t.Errorf("policy files %+v", m.Files)
	}

	if err := os.WriteFile(policy, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	tok = r.fake.Slash(opsEve, opsChannel, "policy", discordtest.Option{Name: "preset", Value: r.p1.Name})
	c := r.answer(t, tok, "upload limit")
	if !strings.Contains(c.Content, policy) || len(c.Files) != 0 {
		t.Errorf("an oversized policy: %+v", c)
	}
}

func TestApplyConfirmOverDiscord(t *testing.T) {
	r := newOpsRig(t)
	tok := r.fake.Slash(opsAlice, opsChannel, "apply", discordtest.Option{Name: "preset", Value: r.p1.Name})
	card := r.answer(t, tok, "foot_slip: -0.25 → -0.5")
	if cb := r.fake.Callbacks(tok); cb[0].Flags != 64 {
		t.Errorf("the confirm card is not ephemeral: %+v", cb[0])
	}
	ids := buttons(card.Components)
	confirm := ids["Confirm apply"]
	if _, _, _, err := bot.ParseConfirmID(confirm); err != nil || ids["Cancel"] == "" {
		t.Fatalf("confirm card buttons %v", ids)
	}

	cases := []struct {
		who  discordtest.User
		want string
	}{
		{opsBob, "only the person who asked"}, // may apply, but did not ask
		{opsEve, "not allowed"},
	}
	for _, tc := range cases {
		tok := r.fake.Click(tc.who, opsChannel, "ephemeral", confirm)
		if c := r.answer(t, tok, tc.want); c.Flags != 64 {
			t.Errorf("%s's refusal is not ephemeral: %+v", tc.who.Name, c)
		}
	}
	if got := applytest.Git(t, r.repo, "for-each-ref", "--format=%(refname:short)", "refs/heads"); got != "main" {
		t.Fatalf("a refused click changed the checkout: %q", got)
	}

	r.fake.Click(opsAlice, opsChannel, "ephemeral", confirm)
	r.channelMessage(t, "applied by alice")
	if got := applytest.Git(t, r.repo, "show", "tunebot/"+r.p1.Name+":tasks/cfg.py"); !strings.Contains(got, `["foot_slip"].weight = -0.5`) {
		t.Errorf("the applied branch's file:\n%s", got)
	}
	tok = r.fake.Click(opsAlice, opsChannel, "ephemeral", confirm)
	r.answer(t, tok, "unknown or has expired")
}

func TestScheduleAndPresetsOverDiscord(t *testing.T) {
	r := newOpsRig(t)
	r.fake.Slash(opsAlice, opsChannel, "schedule add", discordtest.Option{Name: "cron", Value: "0 2 * * *"},
		discordtest.Option{Name: "args", Value: "mode=approval trials=8"}, discordtest.Option{Name: "if_busy", Value: "wait"})
	m := r.channelMessage(t, "added by alice")
	text := messageText(m.Content, m.Embeds)
	if !strings.Contains(text, `"0 2 * * *"`) || !strings.Contains(text, "mode=approval trials=8") || !strings.Contains(text, "busy: wait") {
		t.Errorf("schedule added: %s", text)
	}
	id := strings.Fields(strings.TrimPrefix(text, "schedule "))[0]

	tok := r.fake.Slash(opsEve, opsChannel, "schedule list")
	if c := r.answer(t, tok, id); !strings.Contains(messageText(c.Content, c.Embeds), "0 2 * * *") {
		t.Errorf("schedule list: %+v", c)
	}
	tok = r.fake.Slash(opsEve, opsChannel, "schedule remove", discordtest.Option{Name: "id", Value: id})
	r.answer(t, tok, "not allowed")
	r.fake.Slash(opsAlice, opsChannel, "schedule remove", discordtest.Option{Name: "id", Value: id})
	r.channelMessage(t, "schedule "+id+" removed by alice")

	tok = r.fake.Slash(opsAlice, opsChannel, "schedule add", discordtest.Option{Name: "cron", Value: `0 2" * * *`})
	r.answer(t, tok, "must not contain quotes")

	r.fake.Slash(opsAlice, opsChannel, "import", discordtest.Option{Name: "name", Value: "mine"},
		discordtest.Option{Name: "json", Value: string(preset.Export(r.p1))})
	r.channelMessage(t, "preset mine imported by alice")
	tok = r.fake.Slash(opsEve, opsChannel, "preset show", discordtest.Option{Name: "preset", Value: "mine"})
	r.answer(t, tok, "foot_slip")

	// Preset names are offered wherever a preset is asked for, also inside a group.
	for _, sub := range []string{"export", "policy", "apply", "preset show"} {
		tok := r.fake.Autocomplete(opsEve, opsChannel, sub, "preset", "MIN")
		r.fake.Wait(sub+" autocomplete", func() bool {
			cb := r.fake.CallbacksLocked(tok)
			return len(cb) == 1 && strings.Contains(string(cb[0].Data), `"mine"`) && !strings.Contains(string(cb[0].Data), r.p1.Name)
		})
	}
}

// TestImportFileOverDiscord imports presets from files uploaded with /tune import: the
// file /tune export gives is saved; everything else is refused privately, naming the
// problem, and saves nothing. No download carries the bot token.
func TestImportFileOverDiscord(t *testing.T) {
	r := newOpsRig(t)
	ctx := context.Background()
	exported := preset.Export(r.p1)
	file := func(a discordtest.Attachment) discordtest.Option { return discordtest.Option{Name: "file", Value: a} }
	cases := []struct {
		name    string
		user    discordtest.User // alice when empty
		opts    []discordtest.Option
		want    string // in the channel when saved, else in the private answer
		saved   bool
		fetches int // requests the fake served for the file
	}{
		{"the exported file", discordtest.User{}, []discordtest.Option{file(discordtest.Attachment{Filename: "auto.json", Data: exported})}, "imported by alice", true, 1},
		{"someone who may not import", opsEve, []discordtest.Option{file(discordtest.Attachment{Filename: "auto.json", Data: exported})}, "not allowed", false, 0},
		{"malformed JSON", discordtest.User{}, []discordtest.Option{file(discordtest.Attachment{Filename: "bad.json", Data: []byte(`{"weights": {`)})}, "malformed JSON", false, 1},
		{"an unknown term", discordtest.User{}, []discordtest.Option{file(discordtest.Attachment{Data: []byte(`{"weights": {"no_such_term": 1}}`)})}, "weights.no_such_term", false, 1},
		{"declared too big", discordtest.User{}, []discordtest.Option{file(discordtest.Attachment{Filename: "big.json", Data: exported, Size: 70 << 10})}, "file big.json is 71680 bytes; a preset file is at most 65536", false, 0},
		{"body too big", discordtest.User{}, []discordtest.Option{file(discordtest.Attachment{Filename: "big.json", Data: bytes.Repeat([]byte(" "), 64<<10+1), Size: 100})}, "file big.json is more than 65536 bytes", false, 1},
		{"another host", discordtest.User{}, []discordtest.Option{file(discordtest.Attachment{Filename: "p.json", URL: "https://files.example.net/p.json"})}, "not on Discord's CDN (https://files.example.net)", false, 0},
		{"plain http", discordtest.User{}, []discordtest.Option{file(discordtest.Attachment{Filename: "p.json", URL: "http://cdn.discordapp.com/attachments/1/2/p.json"})}, "not on Discord's CDN (http://cdn.discordapp.com)", false, 0},
		{"redirected on its own host", discordtest.User{}, []discordtest.Option{file(discordtest.Attachment{Filename: "moved.json", Data: exported, Redirect: "self"})}, "imported by alice", true, 2},
		{"redirected off the CDN", discordtest.User{}, []discordtest.Option{file(discordtest.Attachment{Filename: "away.json", Data: exported, Redirect: "https://files.example.net/away.json"})}, "redirected it off Discord's CDN", false, 1},
		{"HTTP 404", discordtest.User{}, []discordtest.Option{file(discordtest.Attachment{Filename: "gone.json", Data: exported, Status: 404})}, "answered HTTP 404 Not Found", false, 1},
		{"not UTF-8", discordtest.User{}, []discordtest.Option{file(discordtest.Attachment{Filename: "p.json", Data: []byte{0xff, 0xfe, '{', 0}})}, "file p.json is not UTF-8 text", false, 1},
		{"empty", discordtest.User{}, []discordtest.Option{file(discordtest.Attachment{Filename: "p.json", Data: []byte("\n")})}, "file p.json is empty", false, 1},
		{"no resolved attachment", discordtest.User{}, []discordtest.Option{file(discordtest.Attachment{Data: exported, Unresolved: true})}, "did not come with the command", false, 0},
		{"json and file", discordtest.User{}, []discordtest.Option{{Name: "json", Value: string(exported)}, file(discordtest.Attachment{Data: exported})}, "not both", false, 0},
		{"neither", discordtest.User{}, nil, "attach the .json file /tune export gave as file, or paste its JSON into json", false, 0},
	}
	for k, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("file-%d", k)
			before := len(r.fake.Downloads())
			user := tc.user
			if user.ID == "" {
				user = opsAlice
			}
			tok := r.fake.Slash(user, opsChannel, "import", append([]discordtest.Option{{Name: "name", Value: name}}, tc.opts...)...)
			if tc.saved {
				r.channelMessage(t, "preset "+name+" "+tc.want)
				p, err := r.db.Preset(ctx, name)
				if err != nil || !cmp.Equal(p.Config, r.p1.Config) {
					t.Errorf("saved preset %+v, %v; want the exported config %+v", p.Config, err, r.p1.Config)
				}
			} else {
				c := r.answer(t, tok, tc.want)
				if c.Kind != "edit" && c.Flags&64 == 0 {
					t.Errorf("the refusal is not private: %+v", c)
				}
				if _, err := r.db.Preset(ctx, name); !errors.Is(err, session.ErrNotFound) {
					t.Errorf("a refused import saved preset %s: %v", name, err)
				}
			}
			downloads := r.fake.Downloads()
			if got := len(downloads) - before; got != tc.fetches {
				t.Errorf("%d downloads, want %d", got, tc.fetches)
			}
			for _, d := range downloads {
				if d.Authorization != "" {
					t.Errorf("download of %s sent Authorization %q", d.Path, d.Authorization)
				}
			}
		})
	}
}
