package store

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"tunebot/session"
)

// PutChatRef records where something lives on a chat platform (a session's root message,
// the thread of a session, a proposal card's message), so a later update edits that
// message and a reply in a thread finds its session, across restarts.
func (d *DB) PutChatRef(ctx context.Context, platform, key, value string) error {
	if platform == "" || key == "" {
		return fmt.Errorf("chat ref needs a platform and a key")
	}
	return d.update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketChatRefs).Put(chatRefKey(platform, key), []byte(value))
	})
}

// ChatRef returns what PutChatRef recorded, or an error wrapping session.ErrNotFound.
func (d *DB) ChatRef(ctx context.Context, platform, key string) (string, error) {
	var out string
	err := d.view(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketChatRefs).Get(chatRefKey(platform, key))
		if v == nil {
			return fmt.Errorf("chat ref %s %q: %w", platform, key, session.ErrNotFound)
		}
		out = string(v)
		return nil
	})
	return out, err
}

func chatRefKey(platform, key string) []byte {
	return append(append([]byte(platform), 0), key...)
}
