package discord_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
	"github.com/google/go-cmp/cmp"

	"tunebot/bot"
	"tunebot/bot/discord"
	"tunebot/bot/discord/discordtest"
	"tunebot/store"
)

func embedTotal(es []*discordgo.MessageEmbed) int {
	n := 0
	for _, e := range es {
		n += utf8.RuneCountInString(e.Title) + utf8.RuneCountInString(e.Description)
		for _, f := range e.Fields {
			n += utf8.RuneCountInString(f.Name) + utf8.RuneCountInString(f.Value)
		}
		if e.Footer != nil {
			n += utf8.RuneCountInString(e.Footer.Text)
		}
	}
	return n
}

func TestRenderKeepsEveryPartWithinDiscordLimits(t *testing.T) {
	png := func(n int) []byte { return make([]byte, n) }
	var many []bot.Attachment
	for i := range 23 {
		many = append(many, bot.Attachment{Name: "chart " + string(rune('a'+i)) + ".png", Title: "chart", Data: png(1 << 20)})
	}
	var fields []string
	for range 40 {
		fields = append(fields, "label", strings.Repeat("v", 1500))
	}
	var actions []bot.Action
	for i := range 30 {
		actions = append(actions, bot.Action{ID: bot.ActionID(bot.ButtonApprove, "s1", "p"+string(rune('a'+i))), Label: "b"})
	}
	rows := make([][]string, 400)
	for i := range rows {
		rows[i] = []string{"term", "1.0", "2.0", "×2.00"}
	}
	cases := []struct {
		name      string
		card      bot.Card
		wantParts int    // 0: any
		wantNote  string // a visible mark of what was shrunk or left out
	}{
		{"small", bot.Card{Title: "t", Blocks: []bot.Block{bot.Text("hello")}}, 1, ""},
		{"long title", bot.Card{Title: strings.Repeat("t", 400)}, 1, "…"},
		{"long untrusted text", bot.Card{Title: "t", Blocks: []bot.Block{bot.UntrustedText(strings.Repeat("word ", 3000), 0)}}, 0, ""},
		{"many long fields", bot.Card{Title: "t", Blocks: []bot.Block{bot.Fields(fields...)}}, 0, "…"},
		{"big table", bot.Card{Title: "t", Blocks: []bot.Block{{Kind: bot.BlockTable, Table: &bot.Table{Caption: "c", Columns: []string{"a", "b", "c", "d"}, Rows: rows}}}}, 0, "```"},
		{"23 one-MiB charts", bot.Card{Title: "t", Blocks: []bot.Block{{Kind: bot.BlockAttachments, Attachments: many}}}, 0, ""},
		{"oversized chart", bot.Card{Title: "t", Blocks: []bot.Block{{Kind: bot.BlockAttachments, Attachments: []bot.Attachment{{Name: "x.png", Data: png(11 << 20)}}}}}, 1, "over Discord's 10 MiB upload limit"},
		{"oversized clip", bot.Card{Title: "t", Blocks: []bot.Block{{Kind: bot.BlockAttachments, Attachments: []bot.Attachment{{Name: "trial-001-rung-0.mp4",
			ContentType: "video/mp4", Data: png(11 << 20), Link: "https://tune.example.com/sessions/s?trial=1@0"}}}}}, 1,
			"clip trial-001-rung-0.mp4 left out: 11.0 MiB is over Discord's 10 MiB upload limit; see it on the monitoring page: https://tune.example.com/sessions/s?trial=1@0"},
		{"30 buttons", bot.Card{Title: "t", Blocks: []bot.Block{{Kind: bot.BlockActions, Actions: actions}}}, 1, "5 buttons left out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parts := discord.Render(tc.card, discord.RenderOptions{})
			if tc.wantParts > 0 && len(parts) != tc.wantParts {
				t.Errorf("%d parts, want %d", len(parts), tc.wantParts)
			}
			var all strings.Builder
			files := 0
			for i, p := range parts {
				if utf8.RuneCountInString(p.Content) > discord.MaxContent || len(p.Embeds) > discord.MaxEmbeds || len(p.Embeds) == 0 ||
					embedTotal(p.Embeds) > discord.MaxEmbedTotal || len(p.Files) > discord.MaxFiles || len(p.Components) > discord.MaxRows {
					t.Errorf("part %d over a limit: content %d, embeds %d (total %d), files %d, rows %d", i,
						utf8.RuneCountInString(p.Content), len(p.Embeds), embedTotal(p.Embeds), len(p.Files), len(p.Components))
				}
				bytes := 0
				for _, f := range p.Files {
					bytes += len(f.Data)
				}
				if bytes > discord.DefaultMaxUpload {
					t.Errorf("part %d uploads %d bytes", i, bytes)
				}
				files += len(p.Files)
				for _, e := range p.Embeds {
					if utf8.RuneCountInString(e.Title) > discord.MaxEmbedTitle || utf8.RuneCountInString(e.Description) > discord.MaxEmbedDescription || len(e.Fields) > discord.MaxEmbedFields {
						t.Errorf("part %d: embed over its limits", i)
					}
					for _, f := range e.Fields {
						if utf8.RuneCountInString(f.Value) > discord.MaxFieldValue || utf8.RuneCountInString(f.Name) > discord.MaxFieldName {
							t.Errorf("part %d: field over its limits", i)
						}
					}
					all.WriteString(e.Title + e.Description)
					for _, f := range e.Fields {
						all.WriteString(f.Value)
					}
				}
				for _, row := range p.Components {
					if r, ok := row.(discordgo.ActionsRow); !ok || len(r.Components) > discord.MaxButtons {
						t.Errorf("part %d: a row of more than %d buttons", i, discord.MaxButtons)
					}
				}
			}
			if tc.name == "23 one-MiB charts" && files != 23 {
				t.Errorf("%d charts attached, want all 23 across the parts", files)
			}
			if tc.wantNote != "" && !strings.Contains(all.String(), tc.wantNote) {
				t.Errorf("no %q in the rendering", tc.wantNote)
			}
		})
	}
}

func TestRenderStampDisablesTheButtons(t *testing.T) {
	c := bot.Card{Ref: "s/sess1/proposal/prop1", Kind: "proposal", Title: "proposal 1", Blocks: []bot.Block{
		{Kind: bot.BlockStamp, Stamp: &bot.Stamp{By: "alice", Action: "rejected", At: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), Feedback: "*less* slip"}}}}
	p := discord.Render(c, discord.RenderOptions{})[0]
	if len(p.Components) != 1 {
		t.Fatalf("rows %d", len(p.Components))
	}
	for _, b := range p.Components[0].(discordgo.ActionsRow).Components {
		if !b.(discordgo.Button).Disabled {
			t.Errorf("button %+v still enabled after the decision", b)
		}
	}
	if d := p.Embeds[0].Description; !strings.Contains(d, "rejected by alice at 2026-01-02 03:04 UTC") || !strings.Contains(d, `\*less\* slip`) {
		t.Errorf("stamp %q", d)
	}
}

func TestCommandText(t *testing.T) {
	opt := func(name string, v any) *discordgo.ApplicationCommandInteractionDataOption {
		return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Value: v}
	}
	sub := func(name string, o ...*discordgo.ApplicationCommandInteractionDataOption) discordgo.ApplicationCommandInteractionData {
		return discordgo.ApplicationCommandInteractionData{Name: "tune", Options: []*discordgo.ApplicationCommandInteractionDataOption{
			{Name: name, Type: discordgo.ApplicationCommandOptionSubCommand, Options: o}}}
	}
	group := func(g, name string, o ...*discordgo.ApplicationCommandInteractionDataOption) discordgo.ApplicationCommandInteractionData {
		return discordgo.ApplicationCommandInteractionData{Name: "tune", Options: []*discordgo.ApplicationCommandInteractionDataOption{
			{Name: g, Type: discordgo.ApplicationCommandOptionSubCommandGroup, Options: []*discordgo.ApplicationCommandInteractionDataOption{
				{Name: name, Type: discordgo.ApplicationCommandOptionSubCommand, Options: o}}}}}
	}
	fileOpt := func(id string) *discordgo.ApplicationCommandInteractionDataOption {
		return &discordgo.ApplicationCommandInteractionDataOption{Name: "file", Type: discordgo.ApplicationCommandOptionAttachment, Value: id}
	}
	// resolved adds the attachments Discord sends with an attachment option.
	resolved := func(d discordgo.ApplicationCommandInteractionData, ids ...string) discordgo.ApplicationCommandInteractionData {
		d.Resolved = &discordgo.ApplicationCommandInteractionDataResolved{Attachments: map[string]*discordgo.MessageAttachment{}}
		for _, id := range ids {
			d.Resolved.Attachments[id] = &discordgo.MessageAttachment{ID: id, Filename: "mine.json", URL: "https://cdn.discordapp.com/attachments/1/" + id + "/mine.json"}
		}
		return d
	}
	cases := []struct {
		in   discordgo.ApplicationCommandInteractionData
		want string
		err  string
		file string // the attachment CommandFile finds; its text is appended to want
	}{
		{sub("start", opt("mode", "approval"), opt("trials", 4.0), opt("fallback", true)), "start mode=approval trials=4 fallback=true", "", ""},
		{sub("start", opt("from", "ab12cd"), opt("start", "defaults")), "start from=ab12cd start=defaults", "", ""},
		{sub("export", opt("preset", "auto-tune-1234")), "export auto-tune-1234", "", ""},
		{sub("chart", opt("trial", "3@1"), opt("tags", "Train/a  Train/b")), "chart 3@1 Train/a Train/b", "", ""},
		{sub("clip", opt("trial", "3@1")), "clip 3@1", "", ""},
		{sub("status"), "status", "", ""},
		{sub("why", opt("proposal", 3.0)), "why 3", "", ""},
		{sub("why"), "why", "", ""},
		{sub("start", opt("name", "two words")), "", "must be one word", ""},
		{sub("policy", opt("preset", "p1")), "policy p1", "", ""},
		{sub("apply", opt("preset", "p1")), "apply p1", "", ""},
		{sub("rollback"), "rollback", "", ""},
		{sub("import", opt("name", "mine"), opt("json", "{\n  \"weights\": {}\n}")), "import mine {\n  \"weights\": {}\n}", "", ""},
		{resolved(sub("import", opt("name", "mine"), fileOpt("77")), "77"), "import mine", "", "77"},
		{resolved(sub("import", opt("name", "mine"), opt("json", "{}"), fileOpt("77")), "77"), "", "not both", ""},
		{sub("import", opt("name", "mine")), "", "attach the .json file", ""},
		{resolved(sub("import", opt("name", "mine"), fileOpt("77")), "78"), "import mine", "", "missing"},
		{group("preset", "show", opt("preset", "p1")), "preset show p1", "", ""},
		{group("preset", "list"), "preset list", "", ""},
		{group("schedule", "add", opt("cron", "0 2 * * *"), opt("args", "mode=approval trials=8"), opt("if_busy", "skip")),
			`schedule add "0 2 * * *" if_busy=skip mode=approval trials=8`, "", ""},
		{group("schedule", "add", opt("cron", "@daily")), `schedule add "@daily"`, "", ""},
		{group("schedule", "add", opt("cron", "0 2 * * *”")), "", "must not contain quotes", ""},
		{group("schedule", "list"), "schedule list", "", ""},
		{group("schedule", "remove", opt("id", "1a2b3c4d")), "schedule remove 1a2b3c4d", "", ""},
	}
	for _, tc := range cases {
		got, err := discord.CommandText(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("got %q, %v; want %q", got, err, tc.want)
		}
		att, err := discord.CommandFile(tc.in)
		switch {
		case tc.file == "missing":
			if err == nil || !strings.Contains(err.Error(), "did not come with the command") {
				t.Errorf("%q: an attachment id without its attachment: %v, %v", got, att, err)
			}
			continue
		case tc.file == "":
			if att != nil || err != nil {
				t.Errorf("%q: CommandFile %+v, %v; want none", got, att, err)
			}
		case err != nil || att == nil || att.ID != tc.file:
			t.Errorf("%q: CommandFile %+v, %v; want attachment %s", got, att, err, tc.file)
		default:
			got += "\n" + `{"weights": {}}` // the file's text, as the adapter appends it
		}
		if _, err := bot.ParseCommand(got, nil); err != nil {
			t.Errorf("%q does not parse: %v", got, err)
		}
	}
}

func newAdapter(t *testing.T, f *discordtest.Fake, channel string) (*discord.Adapter, *store.DB) {
	t.Helper()
	db, err := store.Open(t.TempDir()+"/t.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	a, err := discord.New(discord.Config{Token: "test-token", ApplicationID: f.App, GuildID: f.Guild, ChannelID: channel, APIURL: f.APIURL, Store: db})
	if err != nil {
		t.Fatal(err)
	}
	return a, db
}

func delivery(id uint64, c bot.Card, key string) bot.Delivery {
	return bot.Delivery{ID: id, Thread: "sess1", Key: key, Message: bot.Message{Session: "sess1", Card: c}}
}

func TestDeliverMapsDiscordErrorsForTheDispatcher(t *testing.T) {
	ctx := context.Background()
	f := discordtest.New(t, "1", "2")
	a, _ := newAdapter(t, f, "3")
	root := bot.Card{Ref: "s/sess1/root", Kind: "root", Session: "sess1", Title: "tunebot session sess1 · running"}
	if err := a.Deliver(ctx, delivery(1, root, root.Ref)); err != nil {
		t.Fatal(err)
	}
	notice := bot.NoticeCard("sess1", "s/sess1/notice/1", "hello", nil)

	f.RateLimitNext(1)
	err := a.Deliver(ctx, delivery(2, notice, ""))
	var ra *bot.RetryAfterError
	if !errors.As(err, &ra) || ra.After < 200*time.Millisecond {
		t.Errorf("429: %v, want a RetryAfter of at least Discord's retry_after", err)
	}
	if err := a.Deliver(ctx, delivery(2, notice, "")); err != nil {
		t.Errorf("after the 429: %v", err)
	}

	// Editing the root in place does not post a second one.
	root.Title = "tunebot session sess1 · paused"
	if err := a.Deliver(ctx, delivery(3, root, root.Ref)); err != nil {
		t.Fatal(err)
	}
	if ms := f.Messages("3"); len(ms) != 1 || ms[0].Edits != 1 || ms[0].Embeds[0].Title != root.Title {
		t.Errorf("root messages %+v, want one, edited", ms)
	}
	if len(f.Threads()) != 1 {
		t.Errorf("threads %v", f.Threads())
	}

	// A channel the bot may not post in can never succeed.
	b, _ := newAdapter(t, f, "5")
	f.Forbid("5")
	root2 := bot.Card{Ref: "s/sess2/root", Kind: "root", Session: "sess2", Title: "x"}
	var perm *bot.PermanentError
	if err := b.Deliver(ctx, bot.Delivery{ID: 9, Thread: "sess2", Key: root2.Ref, Message: bot.Message{Card: root2}}); !errors.As(err, &perm) {
		t.Errorf("403: %v, want permanent", err)
	}
	// An unknown channel neither.
	c, _ := newAdapter(t, f, "9999")
	if err := c.Deliver(ctx, bot.Delivery{ID: 10, Thread: "sess3", Key: "r", Message: bot.Message{Card: bot.Card{Kind: "root", Title: "x"}}}); !errors.As(err, &perm) {
		t.Errorf("unknown channel: %v, want permanent", err)
	}
}

func TestNewRefusesWhatCannotWork(t *testing.T) {
	db, err := store.Open(t.TempDir()+"/t.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ok := discord.Config{Token: "x", ApplicationID: "1", GuildID: "2", ChannelID: "3", Store: db}
	cases := []struct {
		mut  func(*discord.Config)
		want string
	}{
		{func(c *discord.Config) { c.Token = "" }, "DISCORD_BOT_TOKEN"},
		{func(c *discord.Config) { c.GuildID = "general" }, "guild_id"},
		{func(c *discord.Config) { c.APIURL = "ftp://x" }, "api_url"},
	}
	for _, tc := range cases {
		c := ok
		tc.mut(&c)
		if _, err := discord.New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want it to name %q", err, tc.want)
		}
	}
	if _, err := discord.New(ok); err != nil {
		t.Errorf("valid config: %v", err)
	}
	if discord.Intents(false) != discordgo.IntentGuilds || discord.Intents(true)&discordgo.IntentMessageContent == 0 {
		t.Error("intents: message content must be asked for only with thread replies")
	}
}

// TestCommandsFitDiscord checks /tune against what Discord accepts when registering it
// (https://discord.com/developers/docs/interactions/application-commands): names, lengths,
// counts, required options first; and that every verb of the grammar is there.
func TestCommandsFitDiscord(t *testing.T) {
	name := regexp.MustCompile(`^[-_\p{Ll}\p{N}]{1,32}$`)
	cmds := discord.Commands()
	if len(cmds) != 1 || cmds[0].Name != "tune" {
		t.Fatalf("commands %+v", cmds)
	}
	var check func(path string, opts []*discordgo.ApplicationCommandOption)
	check = func(path string, opts []*discordgo.ApplicationCommandOption) {
		if len(opts) > 25 {
			t.Errorf("%s: %d options; at most 25", path, len(opts))
		}
		optional := false
		for _, o := range opts {
			p := path + " " + o.Name
			if !name.MatchString(o.Name) || o.Description == "" || utf8.RuneCountInString(o.Description) > 100 {
				t.Errorf("%s: bad name or description (%d runes)", p, utf8.RuneCountInString(o.Description))
			}
			if o.Required && optional {
				t.Errorf("%s: a required option after an optional one", p)
			}
			optional = optional || !o.Required && o.Type != discordgo.ApplicationCommandOptionSubCommand && o.Type != discordgo.ApplicationCommandOptionSubCommandGroup
			if o.Autocomplete && len(o.Choices) > 0 {
				t.Errorf("%s: autocomplete and choices together", p)
			}
			check(p, o.Options)
		}
	}
	check("/tune", cmds[0].Options)

	have := map[string]bool{}
	for _, o := range cmds[0].Options {
		have[o.Name] = true
		for _, s := range o.Options {
			if s.Type == discordgo.ApplicationCommandOptionSubCommand {
				have[o.Name+" "+s.Name] = true
			}
		}
	}
	for _, want := range []string{"start", "status", "export", "import", "policy", "apply", "rollback", "preset show", "schedule add", "schedule list", "schedule remove"} {
		if !have[want] {
			t.Errorf("/tune %s is not registered", want)
		}
	}
	// start builds on an earlier session: from, and start's two choices.
	startOpts := map[string][]string{}
	for _, o := range cmds[0].Options {
		if o.Name == "start" {
			for _, x := range o.Options {
				startOpts[x.Name] = []string{}
				for _, c := range x.Choices {
					startOpts[x.Name] = append(startOpts[x.Name], fmt.Sprint(c.Value))
				}
			}
		}
	}
	if _, ok := startOpts["from"]; !ok || fmt.Sprint(startOpts["start"]) != "[best defaults]" {
		t.Errorf("/tune start options %v: want from, and start with best and defaults", startOpts)
	}
	// import takes the preset as pasted JSON or as the exported file, both optional
	// (exactly one is checked when it runs), after its required name.
	var imp []string
	for _, o := range cmds[0].Options {
		if o.Name == "import" {
			for _, x := range o.Options {
				imp = append(imp, fmt.Sprintf("%s %d %v", x.Name, x.Type, x.Required))
			}
		}
	}
	if want := []string{"name 3 true", "json 3 false", "file 11 false"}; !cmp.Equal(imp, want) {
		t.Errorf("import options %q, want %q", imp, want)
	}
	// Registration overwrites the guild's list with this one at every start: the same
	// bytes each time, so a restart never adds or reorders anything.
	a, _ := json.Marshal(discord.Commands())
	b, _ := json.Marshal(discord.Commands())
	if !bytes.Equal(a, b) {
		t.Error("Commands() differs between calls")
	}
}

func TestRenderAttachesFilesAsFiles(t *testing.T) {
	data := []byte(`{"weights": {}}`)
	c := bot.Card{Title: "preset p1", Blocks: []bot.Block{bot.Text("p1.json is the file"), {Kind: bot.BlockAttachments, Attachments: []bot.Attachment{
		{Name: "p1.json", Title: "preset p1", Data: data, Size: len(data), ContentType: bot.ContentJSON},
		{Name: "big-policy.onnx", Title: "policy", Data: make([]byte, 11<<20), ContentType: bot.ContentBinary},
		{Name: "curves.png", Title: "curves", Data: []byte("png")},
	}}}}
	parts := discord.Render(c, discord.RenderOptions{})
	if len(parts) != 1 {
		t.Fatalf("%d parts", len(parts))
	}
	p := parts[0]
	var names []string
	for _, f := range p.Files {
		names = append(names, f.Name+" "+f.ContentType)
	}
	if want := []string{"01-curves.png ", "p1.json application/json"}; !cmp.Equal(names, want) {
		t.Errorf("files %q, want %q", names, want)
	}
	var text strings.Builder
	for _, e := range p.Embeds {
		text.WriteString(e.Description)
		if e.Image != nil {
			text.WriteString(" image:" + e.Image.URL)
		}
	}
	if strings.Contains(text.String(), "attachment://p1.json") {
		t.Errorf("the JSON file is embedded as an image: %s", text.String())
	}
	if !strings.Contains(text.String(), "file big-policy.onnx left out: 11.0 MiB is over Discord's 10 MiB upload limit") {
		t.Errorf("no note for the oversized file in %q", text.String())
	}
}
