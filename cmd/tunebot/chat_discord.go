package main

import (
	"context"
	"fmt"

	"tunebot/bot"
	"tunebot/bot/discord"
	"tunebot/config"
)

func init() {
	registerChat(discord.Platform, newDiscordChat)
}

// discordChat is the daemon's Discord adapter: the bot/discord adapter plus who may act
// and who is mentioned.
type discordChat struct {
	*discord.Adapter
	cfg config.DiscordConfig
}

func newDiscordChat(d chatDeps) (chatAdapter, error) {
	c := d.cfg.Chat.Discord
	if !c.Enabled {
		return nil, nil
	}
	token := d.env.getenv("DISCORD_BOT_TOKEN")
	if token == "" {
		return nil, fmt.Errorf("chat.discord is enabled but DISCORD_BOT_TOKEN is not set")
	}
	a, err := discord.New(discord.Config{
		Token: token, ApplicationID: c.ApplicationID, GuildID: c.GuildID, ChannelID: c.ChannelID,
		APIURL: c.APIURL, ThreadReplies: c.ThreadReplies, Store: d.db, Logger: d.log,
	})
	if err != nil {
		return nil, err
	}
	return &discordChat{Adapter: a, cfg: c}, nil
}

func (c *discordChat) Platform() string { return discord.Platform }

func (c *discordChat) Grants() bot.AllowList {
	return bot.Grants(discord.Platform, c.cfg.AllowUsers, c.cfg.AllowRoles, c.cfg.ReadUsers, c.cfg.ReadRoles)
}

func (c *discordChat) NotifyUsers() []string { return c.cfg.NotifyUsers }

func (c *discordChat) Run(ctx context.Context, h *bot.Handler) error { return c.Adapter.Run(ctx, h) }
