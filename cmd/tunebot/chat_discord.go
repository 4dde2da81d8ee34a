package main

// DiscordConfig is the chat.discord section (issue 7). Token: DISCORD_BOT_TOKEN, from the
// environment only.
type DiscordConfig struct {
	Enabled       bool     `yaml:"enabled"`
	ApplicationID string   `yaml:"application_id"`
	GuildID       string   `yaml:"guild_id"`
	ChannelID     string   `yaml:"channel_id"`
	AllowUsers    []string `yaml:"allow_users"`
	AllowRoles    []string `yaml:"allow_roles"`
	NotifyUsers   []string `yaml:"notify_users"`
	APIURL        string   `yaml:"api_url"` // default https://discord.com/api/v9
	// ThreadReplies enables approve/reject/edit typed in a session thread, which needs the
	// privileged message-content intent.
	ThreadReplies bool `yaml:"thread_replies"`
}

func defaultDiscordConfig() DiscordConfig {
	return DiscordConfig{APIURL: "https://discord.com/api/v9"}
}

// problems validates the section; the Discord adapter's work fills it in.
func (c DiscordConfig) problems() []string { return nil }
