package bot

import (
	"context"
	"errors"
	"fmt"

	"tunebot/session"
)

// RefStore persists where things live on chat platforms; *store.DB implements it.
type RefStore interface {
	PutChatRef(ctx context.Context, platform, key, value string) error
	ChatRef(ctx context.Context, platform, key string) (string, error)
}

// Refs is one platform's view of the chat refs: a session's root message, the thread that
// belongs to a session, a card's message, so an adapter edits in place and finds the
// session of a reply, across restarts.
type Refs struct {
	Store    RefStore
	Platform string
}

// Get returns the value recorded under key, and false when there is none.
func (r Refs) Get(ctx context.Context, key string) (string, bool, error) {
	v, err := r.Store.ChatRef(ctx, r.Platform, key)
	if errors.Is(err, session.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading chat ref %s: %w", key, err)
	}
	return v, true, nil
}

// Put records value under key.
func (r Refs) Put(ctx context.Context, key, value string) error {
	if err := r.Store.PutChatRef(ctx, r.Platform, key, value); err != nil {
		return fmt.Errorf("recording chat ref %s: %w", key, err)
	}
	return nil
}
