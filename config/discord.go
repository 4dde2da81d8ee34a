package config

import (
	"fmt"
	"net/url"
	"regexp"

	"tunebot/bot/discord"
)

// DiscordConfig is the chat.discord section (issue 7). Token: DISCORD_BOT_TOKEN, from the
// environment only.
type DiscordConfig struct {
	Enabled       bool     `yaml:"enabled"`
	ApplicationID string   `yaml:"application_id"`
	GuildID       string   `yaml:"guild_id"`
	ChannelID     string   `yaml:"channel_id"`
	AllowUsers    []string `yaml:"allow_users"`
	AllowRoles    []string `yaml:"allow_roles"`
	// ReadUsers and ReadRoles may read only; set either and nobody else in the guild may
	// read (the read commands, /tune dashboard and the monitoring page).
	ReadUsers   []string `yaml:"read_users"`
	ReadRoles   []string `yaml:"read_roles"`
	NotifyUsers []string `yaml:"notify_users"`
	APIURL      string   `yaml:"api_url"` // default https://discord.com/api/v9
	// ThreadReplies enables approve/reject/edit typed in a session thread, which needs the
	// privileged message-content intent.
	ThreadReplies bool `yaml:"thread_replies"`
	// AllowInsecureHTTP lets api_url be plain http:// to a host that is not this machine.
	AllowInsecureHTTP bool `yaml:"allow_insecure_http"`
}

func defaultDiscordConfig() DiscordConfig {
	return DiscordConfig{APIURL: discord.DefaultAPIURL}
}

var discordID = regexp.MustCompile(`^[0-9]{15,20}$`)

// problems validates the section: every bad field is named. IDs are checked only when
// the section is enabled, so a half-filled disabled section does not stop tunebot.
func (c DiscordConfig) problems() []string {
	if !c.Enabled {
		return nil
	}
	var probs []string
	for _, f := range []struct{ key, v string }{{"application_id", c.ApplicationID}, {"guild_id", c.GuildID}, {"channel_id", c.ChannelID}} {
		if !discordID.MatchString(f.v) {
			probs = append(probs, fmt.Sprintf("chat.discord.%s: %q is not a Discord ID (15–20 digits; turn on Developer Mode and use Copy ID)", f.key, f.v))
		}
	}
	for _, l := range []struct {
		key string
		ids []string
	}{{"allow_users", c.AllowUsers}, {"allow_roles", c.AllowRoles}, {"read_users", c.ReadUsers}, {"read_roles", c.ReadRoles}, {"notify_users", c.NotifyUsers}} {
		for _, id := range l.ids {
			if !discordID.MatchString(id) {
				probs = append(probs, fmt.Sprintf("chat.discord.%s: %q is not a Discord ID (15–20 digits)", l.key, id))
			}
		}
	}
	if len(c.AllowUsers) == 0 && len(c.AllowRoles) == 0 {
		probs = append(probs, "chat.discord: allow_users and allow_roles are both empty, so nobody could start or decide anything; list user or role IDs")
	}
	if u, err := url.Parse(c.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		probs = append(probs, fmt.Sprintf("chat.discord.api_url: %q is not an http(s) URL", c.APIURL))
	} else if p := cleartext("chat.discord", "api_url", c.APIURL, c.AllowInsecureHTTP); p != "" {
		probs = append(probs, p)
	}
	return probs
}
