package main

import (
	slackbot "tunebot/bot/slack"
)

func init() {
	registerChat("slack", func(d chatDeps) (chatAdapter, error) {
		c := d.cfg.Chat.Slack
		if !c.Enabled {
			return nil, nil
		}
		ad, err := slackbot.New(slackbot.Config{
			Mode: c.Mode, APIURL: c.APIURL, Channel: c.Channel,
			AllowUsers: c.AllowUsers, AllowGroups: c.AllowGroups, ReadUsers: c.ReadUsers, ReadGroups: c.ReadGroups,
			NotifyUsers: c.NotifyUsers, HTTPListen: c.HTTPListen,
			BotToken:      d.env.getenv("SLACK_BOT_TOKEN"),
			AppToken:      d.env.getenv("SLACK_APP_TOKEN"),
			SigningSecret: d.env.getenv("SLACK_SIGNING_SECRET"),
			Refs:          d.db, Logger: d.log,
		})
		if err != nil {
			return nil, err
		}
		if len(c.AllowUsers) == 0 && len(c.AllowGroups) == 0 {
			d.log.Warn("chat.slack has no allow_users or allow_groups: everyone may read, nobody may start or decide from Slack")
		}
		return ad, nil
	})
}
