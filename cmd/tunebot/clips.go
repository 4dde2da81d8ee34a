package main

import (
	"path/filepath"

	"tunebot/bot"
	"tunebot/dashboard"
	"tunebot/session"
	"tunebot/trainer"
)

// clips reads trials' clips from the run directories for chat, the console and the page
// (docs/design.md §4, §6), with the path checks of a policy download.
func (a *app) clips() bot.ClipFunc {
	dir := filepath.Join(a.cfg.DataDir, "sessions")
	return func(t session.Trial, poster bool) ([]byte, string, error) {
		return trainer.ReadClip(dir, t, poster)
	}
}

// clipFiles opens trials' clips for the page to stream (trainer.OpenClip).
func (a *app) clipFiles() dashboard.ClipOpener {
	dir := filepath.Join(a.cfg.DataDir, "sessions")
	return func(t session.Trial, poster bool) (dashboard.ClipFile, error) {
		f, err := trainer.OpenClip(dir, t, poster)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return f, nil
	}
}
