package main

// SlackConfig is the chat.slack section (issue 6). Tokens: SLACK_BOT_TOKEN, SLACK_APP_TOKEN
// (Socket Mode), SLACK_SIGNING_SECRET (HTTP mode), from the environment only.
type SlackConfig struct {
	Enabled     bool     `yaml:"enabled"`
	Mode        string   `yaml:"mode"`    // socket (default) or http
	APIURL      string   `yaml:"api_url"` // default https://slack.com/api/
	Channel     string   `yaml:"channel"`
	AllowUsers  []string `yaml:"allow_users"`
	AllowGroups []string `yaml:"allow_groups"`
	NotifyUsers []string `yaml:"notify_users"`
	HTTPListen  string   `yaml:"http_listen"` // HTTP mode
}

func defaultSlackConfig() SlackConfig {
	return SlackConfig{Mode: "socket", APIURL: "https://slack.com/api/", HTTPListen: "127.0.0.1:3000"}
}

// problems validates the section; the Slack adapter's work fills it in.
func (c SlackConfig) problems() []string { return nil }
