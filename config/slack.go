package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
)

// SlackConfig is the chat.slack section (issue 6). Tokens: SLACK_BOT_TOKEN, SLACK_APP_TOKEN
// (Socket Mode), SLACK_SIGNING_SECRET (HTTP mode), from the environment only.
type SlackConfig struct {
	Enabled     bool     `yaml:"enabled"`
	Mode        string   `yaml:"mode"`    // socket (default) or http
	APIURL      string   `yaml:"api_url"` // default https://slack.com/api/
	Channel     string   `yaml:"channel"`
	AllowUsers  []string `yaml:"allow_users"`
	AllowGroups []string `yaml:"allow_groups"`
	// ReadUsers and ReadGroups may read only; set either and nobody else in the workspace
	// may read (the read commands, /tune dashboard and the monitoring page).
	ReadUsers   []string `yaml:"read_users"`
	ReadGroups  []string `yaml:"read_groups"`
	NotifyUsers []string `yaml:"notify_users"`
	HTTPListen  string   `yaml:"http_listen"` // HTTP mode
	// AllowInsecureHTTP lets api_url be plain http:// to a host that is not this machine.
	AllowInsecureHTTP bool `yaml:"allow_insecure_http"`
}

func defaultSlackConfig() SlackConfig {
	return SlackConfig{Mode: "socket", APIURL: "https://slack.com/api/", HTTPListen: "127.0.0.1:3000"}
}

var (
	slackChannelID = regexp.MustCompile(`^[CGD][A-Z0-9]{2,20}$`)
	slackUserID    = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)
	slackGroupID   = regexp.MustCompile(`^S[A-Z0-9]{2,20}$`)
	// slackUserIDHint says what a user ID looks like and where to copy one: "U1" starts
	// like one, so "(U…)" alone explains nothing.
	slackUserIDHint = "a Slack member ID, like U0123ABCDE: U or W, then capital letters and digits, not a name (in Slack: the person's profile → ⋮ → Copy member ID)"
	// slackGroupIDHint is slackUserIDHint for a user group (allow_groups, read_groups).
	slackGroupIDHint = "a Slack user group ID, like S0123ABCDE: S, then capital letters and digits (in Slack: the group's ⋮ menu → Copy group ID)"
)

// problems validates the section, naming each bad field; an disabled section is still
// checked so a mistake shows before the day it is enabled.
func (c SlackConfig) problems() []string {
	probs := oneOf("chat.slack.mode", c.Mode, "socket", "http")
	if u, err := url.Parse(c.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		probs = append(probs, fmt.Sprintf("chat.slack.api_url: %q is not an http(s) URL", c.APIURL))
	} else if p := cleartext("chat.slack", "api_url", c.APIURL, c.AllowInsecureHTTP); p != "" {
		probs = append(probs, p)
	}
	if c.Enabled && c.Channel == "" {
		probs = append(probs, "chat.slack.channel: set the ID (C…) of the channel where sessions are posted")
	} else if c.Channel != "" && !slackChannelID.MatchString(c.Channel) {
		probs = append(probs, fmt.Sprintf("chat.slack.channel: %q is not a channel ID (C…, G…); copy it from the channel's details", c.Channel))
	}
	for _, list := range []struct {
		key string
		ids []string
		re  *regexp.Regexp
		eg  string
	}{{"allow_users", c.AllowUsers, slackUserID, slackUserIDHint}, {"notify_users", c.NotifyUsers, slackUserID, slackUserIDHint},
		{"allow_groups", c.AllowGroups, slackGroupID, slackGroupIDHint},
		{"read_users", c.ReadUsers, slackUserID, slackUserIDHint}, {"read_groups", c.ReadGroups, slackGroupID, slackGroupIDHint}} {
		for i, id := range list.ids {
			if !list.re.MatchString(id) {
				probs = append(probs, fmt.Sprintf("chat.slack.%s[%d]: %q is not %s", list.key, i, id, list.eg))
			}
		}
	}
	if c.Mode == "http" {
		if _, _, err := net.SplitHostPort(c.HTTPListen); err != nil {
			probs = append(probs, fmt.Sprintf("chat.slack.http_listen: %q is not host:port", c.HTTPListen))
		}
	}
	return probs
}
