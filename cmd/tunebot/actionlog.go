package main

import (
	"context"
	"log/slog"

	"tunebot/session"
	"tunebot/store"
)

// actionLog is the store with every action a person (or tunebot acting on its own) takes
// on a session also written to the log at info level: who, on which platform, did what.
// Every such action is audited, whoever carries it out (the engine for start, decisions,
// pause, resume and cancel; apply for apply and rollback; the chat handler for refusals
// and schedules), so the audit log's Append is the one place that sees them all
// (docs/design.md §6, §7).
type actionLog struct {
	*store.DB // embedded whole, so the store's optional interfaces stay visible
	log       *slog.Logger
}

var _ session.Store = actionLog{}

// Append records e, then logs it when it is an action.
func (a actionLog) Append(ctx context.Context, e session.AuditEntry) error {
	err := a.DB.Append(ctx, e)
	logAction(ctx, a.log, e)
	return err
}

// actionMessages are the audit kinds that are actions, with their log message.
var actionMessages = map[string]string{
	"session_started":  "session started",
	"pause":            "session paused",
	"paused":           "session paused",
	"resume":           "session resumed",
	"cancel":           "session cancelled",
	"apply":            "preset applied",
	"rollback":         "apply rolled back",
	"refused":          "action refused",
	"schedule_added":   "schedule added",
	"schedule_removed": "schedule removed",
	"prune":            "old sessions pruned",
}

// actionDetails are the detail fields worth a log line; the rest (full settings, a
// reject's feedback text, patches) stays in the audit log.
var actionDetails = []string{"action", "seq", "mode", "from", "reason", "preset", "branch", "commit",
	"revert_commit", "reverted", "command", "permission", "schedule", "spec", "sessions", "file_before", "file_after", "compacted"}

func logAction(ctx context.Context, log *slog.Logger, e session.AuditEntry) {
	msg, ok := actionMessages[e.Kind]
	if e.Kind == "decision" {
		msg, ok = "proposal decided", true
		switch e.Detail["action"] {
		case session.ActionApprove:
			msg = "proposal approved"
		case session.ActionReject:
			msg = "proposal rejected"
		case session.ActionEdit:
			msg = "proposal edited and approved"
		}
	}
	if e.Kind == "apply" && e.Detail["reverted"] == true {
		msg = "preset apply undone" // its tests failed or a step did: the checkout is as it was
	}
	if !ok {
		return
	}
	attrs := []slog.Attr{slog.String("user", e.Actor.String()), slog.String("user_id", e.Actor.ID), slog.String("platform", e.Actor.Platform)}
	if e.Actor.Where != "" {
		attrs = append(attrs, slog.String("where", e.Actor.Where))
	}
	if e.SessionID != "" {
		attrs = append(attrs, slog.String("session", e.SessionID))
	}
	if st, ok := e.Detail["settings"].(session.Settings); ok {
		attrs = append(attrs, slog.String("mode", st.Mode), slog.Int("trials", st.TrialCount))
	}
	for _, k := range actionDetails {
		if v, ok := e.Detail[k]; ok && v != "" && v != nil {
			attrs = append(attrs, slog.Any(k, v))
		}
	}
	log.LogAttrs(ctx, slog.LevelInfo, msg, attrs...)
}
