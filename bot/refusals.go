package bot

import (
	"context"
	"fmt"
	"time"

	"tunebot/session"
)

// RefusalWindow is how long refusals of one person and command are counted in one audit
// entry: a flood of refused clicks (or a script) is one line a minute with its count, so it
// neither grows the store nor pushes everything else off the session's timeline.
const RefusalWindow = time.Minute

// auditRefusal records a refusal once per actor, command and RefusalWindow, with a count.
func (h *Handler) auditRefusal(ctx context.Context, e session.AuditEntry) {
	e.Kind, e.Time = "refused", time.Now().UTC()
	key := fmt.Sprintf("%s\x00%s\x00%v", e.Actor.Platform, e.Actor.ID, e.Detail["command"])
	if err := session.AppendCounted(ctx, h.cfg.Store, e, key, RefusalWindow); err != nil {
		h.log.Error("writing audit entry", "kind", e.Kind, "err", err)
	}
}
