// Package preset exports, imports, lists and shows the immutable named reward
// configurations a session saves, and finds the policy file a preset's trial produced.
//
// Everything here returns results and errors a chat or CLI front end prints as they are:
// *session.UserError and *session.InvalidError carry the message a person sees.
//
// Why a package of its own: three front ends share it (the chat handler, the `tunebot
// preset` command and the applier of apply/, docs/design.md §8), so it belongs to none of
// them; and what it does (write and read preset files, list and show presets as text, find
// a trial's policy file) is what people ask for between sessions, not a step of the tuning
// loop session/ runs. It needs only session and the standard library.
package preset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"tunebot/session"
)

// MaxImportBytes bounds an imported file: a full configuration is well under 2 KiB, so
// anything near this is not one.
const MaxImportBytes = 64 << 10

// Store is what presets need of tunebot's store.
type Store interface {
	session.PresetStore
	session.AuditLog
}

// CheckName refuses a preset name outside session.NamePattern, the rule run names follow,
// because a preset name also names a git branch, a file on export and a trainer argument.
func CheckName(name string) error {
	if !session.ValidName(name) {
		return session.Userf(nil, "preset name %q is not allowed: use 1–64 letters, digits, '_', '.' or '-', starting with a letter or digit", clip(name, 80))
	}
	if name == "." || name == ".." {
		return session.Userf(nil, "preset name %q is not allowed", name)
	}
	return nil
}

// Export returns the preset as the exact file --reward-config takes: the full
// configuration {"weights": {...}, "params": {...}}, indented, keys sorted, with a
// trailing newline. The same preset always yields the same bytes.
func Export(p session.Preset) []byte {
	c := p.Config.Clone() // Clone makes nil maps empty, so the file never says null
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	// encoding/json sorts map keys and formats floats in their shortest round-tripping form.
	if err := enc.Encode(c); err != nil {
		panic("encoding a reward configuration cannot fail: " + err.Error())
	}
	return buf.Bytes()
}

// Import validates data as a reward configuration of space, task's, and saves it as preset
// name for task, recorded as imported (no session) and approved by by. The file may be an export (every
// scalar) or name only a few: the rest are the space's defaults (Space.Complete). Every
// problem with the file is named at once. A taken name is refused: presets are immutable.
func Import(ctx context.Context, st Store, space *session.Space, task, name string, data []byte, by session.Actor) (session.Preset, error) {
	if err := CheckName(name); err != nil {
		return session.Preset{}, err
	}
	if len(data) > MaxImportBytes {
		return session.Preset{}, session.Userf(nil, "preset file is %d bytes; a reward configuration is at most %d", len(data), MaxImportBytes)
	}
	partial, err := session.DecodeConfig(data)
	if err != nil {
		return session.Preset{}, err
	}
	cfg, err := space.Complete(partial)
	if err != nil {
		return session.Preset{}, err
	}
	p := session.Preset{
		Name:      name,
		Task:      task,
		Config:    cfg,
		Approvers: []string{by.String()},
		CreatedAt: time.Now().UTC(),
	}
	if err := st.SavePreset(ctx, p); err != nil {
		if errors.Is(err, session.ErrExists) {
			return session.Preset{}, session.Userf(session.ErrExists, "preset %s already exists; presets are immutable, pick another name", name)
		}
		return session.Preset{}, fmt.Errorf("saving preset %s: %w", name, err)
	}
	if err := st.Append(ctx, session.AuditEntry{
		Time: p.CreatedAt, Kind: "preset_imported", Actor: by,
		Detail: map[string]any{"preset": name, "task": task, "bytes": len(data)},
	}); err != nil {
		// The preset is saved; a lost audit line must not make the caller think otherwise.
		return p, fmt.Errorf("preset %s is saved, but auditing its import failed: %w", name, err)
	}
	return p, nil
}

// Get returns preset name, with a user-facing error when there is none.
func Get(ctx context.Context, st session.PresetStore, name string) (session.Preset, error) {
	if err := CheckName(name); err != nil {
		return session.Preset{}, err
	}
	p, err := st.Preset(ctx, name)
	if errors.Is(err, session.ErrNotFound) {
		// Each surface says where the list is, in its own words (PresetsHint).
		return p, session.Userf(session.ErrNotFound, "preset %s does not exist", name)
	}
	if err != nil {
		return p, fmt.Errorf("loading preset %s: %w", name, err)
	}
	return p, nil
}

// WithListHint adds to Get's "does not exist" where the presets are listed (hint: the
// surface's words, "/tune presets" in chat, "tunebot preset list" at the shell); any other
// error is returned as it is.
func WithListHint(err error, hint string) error {
	if !errors.Is(err, session.ErrNotFound) {
		return err
	}
	msg, _ := session.UserMessage(err)
	return session.Userf(err, "%s; %s lists them", msg, hint)
}

// Imported reports whether p came from a file rather than a session.
func Imported(p session.Preset) bool { return p.SessionID == "" }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
