package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSlackConfigProblemsNameTheField(t *testing.T) {
	good := defaultSlackConfig()
	good.Enabled, good.Channel, good.AllowUsers, good.AllowGroups = true, "C0123ABC", []string{"U0123ABC"}, []string{"S0123ABC"}
	for _, tc := range []struct {
		name string
		edit func(c *SlackConfig)
		want []string // field names, in order
	}{
		{"defaults, disabled", func(c *SlackConfig) { *c = defaultSlackConfig() }, nil},
		{"a good section", func(c *SlackConfig) {}, nil},
		{"http mode", func(c *SlackConfig) { c.Mode = "http" }, nil},
		{"unknown mode", func(c *SlackConfig) { c.Mode = "rtm" }, []string{"chat.slack.mode"}},
		{"api url", func(c *SlackConfig) { c.APIURL = "slack.com/api" }, []string{"chat.slack.api_url"}},
		{"enabled without a channel", func(c *SlackConfig) { c.Channel = "" }, []string{"chat.slack.channel"}},
		{"channel name instead of ID", func(c *SlackConfig) { c.Channel = "#tuning" }, []string{"chat.slack.channel"}},
		{"user names", func(c *SlackConfig) {
			c.AllowUsers = []string{"U0123ABC", "alice"}
			c.NotifyUsers = []string{"@bob"}
		},
			[]string{"chat.slack.allow_users[1]", "chat.slack.notify_users[0]"}},
		{"group handle", func(c *SlackConfig) { c.AllowGroups = []string{"@ops"} }, []string{"chat.slack.allow_groups[0]"}},
		{"bad listen address in http mode", func(c *SlackConfig) { c.Mode, c.HTTPListen = "http", "3000" }, []string{"chat.slack.http_listen"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			var got []string
			for _, p := range c.problems() {
				field, _, _ := strings.Cut(p, ":")
				got = append(got, field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s\n%v", diff, c.problems())
			}
		})
	}
}
