package bot

import "tunebot/session"

// spaceOf is task's reward space: HandlerConfig.SpaceOf's when the daemon tunes several
// tasks, else the one Space.
func (h *Handler) spaceOf(task string) *session.Space {
	if h.cfg.SpaceOf != nil {
		if sp := h.cfg.SpaceOf(task); sp != nil {
			return sp
		}
	}
	return h.cfg.Space
}

// importSpace is the task an imported preset is recorded for and the space it is completed
// in: the default task's. With several tasks and none the default there is no telling which
// robot the file is for.
func (h *Handler) importSpace() (string, *session.Space, error) {
	if h.cfg.SpaceOf == nil {
		return h.cfg.Defaults.Task, h.cfg.Space, nil
	}
	if sp := h.cfg.SpaceOf(h.cfg.Defaults.Task); sp != nil {
		return h.cfg.Defaults.Task, sp, nil
	}
	return "", nil, session.Userf(session.ErrConflict, "several tasks are configured and session.task names no default, so an imported preset fits none: set session.task in the config")
}
