package main

import (
	"context"
	"log/slog"

	"tunebot/bot"
	"tunebot/config"
	"tunebot/store"
)

// chatAdapter is one chat platform of the daemon: it delivers outbox items (bot.Sink) and
// turns the platform's interactions into bot.Handler calls.
type chatAdapter interface {
	bot.Sink
	// Platform is the adapter's name in the outbox and the allow-list ("slack", "discord").
	Platform() string
	// Grants is who may start, decide, pause, resume and cancel from this platform.
	Grants() bot.AllowList
	// NotifyUsers are mentioned, besides a session's owner, when a trial finishes, a
	// decision waits or a session ends.
	NotifyUsers() []string
	// Roles are the roles (user groups) user holds now, read from the platform (cached
	// briefly), for the monitoring page's allow-list checks; none when they cannot be read.
	Roles(ctx context.Context, user string) []string
	// Run connects and serves interactions until ctx ends.
	Run(ctx context.Context, h *bot.Handler) error
}

// chatDeps is what an adapter factory may use.
type chatDeps struct {
	cfg config.Config
	env *env
	db  *store.DB
	log *slog.Logger
}

// chatFactory builds an adapter from the config; it returns nil, nil when its platform is
// not enabled.
type chatFactory func(chatDeps) (chatAdapter, error)

// chatFactories is filled by each chat_*.go file's init, one file per platform.
var chatFactories = map[string]chatFactory{}

func registerChat(name string, f chatFactory) {
	if _, dup := chatFactories[name]; dup {
		panic("chat platform registered twice: " + name)
	}
	chatFactories[name] = f
}
