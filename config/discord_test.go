package config

import (
	"strings"
	"testing"
)

func TestDiscordConfigProblemsNameEachField(t *testing.T) {
	good := DiscordConfig{Enabled: true, ApplicationID: "100000000000000002", GuildID: "100000000000000001",
		ChannelID: "100000000000000003", AllowUsers: []string{"200000000000000001"}, APIURL: "https://discord.com/api/v9"}
	cases := []struct {
		name string
		mut  func(*DiscordConfig)
		want []string
	}{
		{"good", func(*DiscordConfig) {}, nil},
		{"disabled and empty", func(c *DiscordConfig) { *c = DiscordConfig{} }, nil},
		{"bad ids", func(c *DiscordConfig) { c.GuildID, c.ChannelID = "general", "" },
			[]string{`chat.discord.guild_id: "general"`, `chat.discord.channel_id: ""`}},
		{"bad lists", func(c *DiscordConfig) { c.AllowRoles, c.NotifyUsers = []string{"@ops"}, []string{"bob"} },
			[]string{`chat.discord.allow_roles: "@ops"`, `chat.discord.notify_users: "bob"`}},
		{"nobody allowed", func(c *DiscordConfig) { c.AllowUsers = nil }, []string{"allow_users and allow_roles are both empty"}},
		{"api url", func(c *DiscordConfig) { c.APIURL = "discord.com" }, []string{"chat.discord.api_url"}},
	}
	for _, tc := range cases {
		c := good
		tc.mut(&c)
		got := c.problems()
		if len(got) != len(tc.want) {
			t.Errorf("%s: problems %q, want %d", tc.name, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: problem %q does not name %q", tc.name, got[i], w)
			}
		}
	}
}
