package discord

import (
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"tunebot/bot"
)

// TestAddAttachments: what Discord can carry is attached (charts numbered, files under
// their own names); an empty file or one over the upload limit becomes a note instead.
func TestAddAttachments(t *testing.T) {
	const limit = 1 << 20
	big := make([]byte, limit+1)
	cases := []struct {
		name               string
		a                  bot.Attachment
		wantChart, wantDoc string
		wantNote           string
	}{
		{"a chart", bot.Attachment{Name: "curves", Data: []byte{1}}, "01-curves.png", "", ""},
		{"a file", bot.Attachment{Name: "best.json", Data: []byte("{}"), ContentType: "application/json"}, "", "best.json", ""},
		{"a clip at the limit", bot.Attachment{Name: "walk.mp4", Data: big[:limit], ContentType: "video/mp4"}, "", "walk.mp4", ""},
		{"an empty file", bot.Attachment{Name: "best.json", ContentType: "application/json"}, "", "", "file best.json is missing its content"},
		{"a clip over the limit", bot.Attachment{Name: "walk.mp4", Data: big, ContentType: "video/mp4"}, "", "", "clip walk.mp4 left out: 1.0 MiB is over Discord's 1 MiB upload limit"},
		{"over the limit, with a link", bot.Attachment{Name: "c", Data: big, Link: "https://t.example/s/1"}, "", "", "chart c left out: 1.0 MiB is over Discord's 1 MiB upload limit; see it on the monitoring page: https://t.example/s/1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := body{main: &discordgo.MessageEmbed{}}
			notes := out.addAttachments([]bot.Attachment{c.a}, limit)
			if got := strings.Join(notes, "|"); got != c.wantNote {
				t.Errorf("notes = %q, want %q", got, c.wantNote)
			}
			if got := names(out.charts); got != c.wantChart {
				t.Errorf("charts = %q, want %q", got, c.wantChart)
			}
			if got := names(out.docs); got != c.wantDoc {
				t.Errorf("docs = %q, want %q", got, c.wantDoc)
			}
		})
	}
}

func names(as []bot.Attachment) string {
	var out []string
	for _, a := range as {
		out = append(out, a.Name)
	}
	return strings.Join(out, "|")
}

// TestWithDefaults: what a Discord configuration must hold, and what it gets when left out.
func TestWithDefaults(t *testing.T) {
	type anyStore struct{ Store }
	ok := Config{Token: "x", ApplicationID: "1", GuildID: "2", ChannelID: "3", Store: anyStore{}}
	cases := []struct {
		name    string
		mut     func(*Config)
		wantAPI string
		wantErr string
	}{
		{"the defaults", func(*Config) {}, DefaultAPIURL, ""},
		{"an API URL's trailing slash", func(c *Config) { c.APIURL = "http://127.0.0.1:9/api/" }, "http://127.0.0.1:9/api", ""},
		{"no token", func(c *Config) { c.Token = "" }, "", "no bot token (set DISCORD_BOT_TOKEN)"},
		{"no store", func(c *Config) { c.Store = nil }, "", "no store"},
		{"an application id that is no ID", func(c *Config) { c.ApplicationID = "tunebot" }, "", `application_id "tunebot" is not a Discord ID`},
		{"no channel", func(c *Config) { c.ChannelID = "" }, "", `channel_id "" is not a Discord ID`},
		{"an API URL without a host", func(c *Config) { c.APIURL = "https:///api" }, "", "is not an http(s) URL"},
		{"an API URL of another scheme", func(c *Config) { c.APIURL = "ws://discord.com" }, "", "is not an http(s) URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.mut(&cfg)
			got, to, err := withDefaults(cfg)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil || to.String() != c.wantAPI {
				t.Fatalf("withDefaults = %v, %v; want the API at %s", to, err, c.wantAPI)
			}
			if got.MaxUpload != DefaultMaxUpload || got.RolesTTL != DefaultRolesTTL || got.Logger == nil || got.Transport == nil {
				t.Errorf("defaults not filled in: %+v", got)
			}
		})
	}
}
