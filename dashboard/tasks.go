package dashboard

import "tunebot/session"

// spaceOf is task's reward space: Options.SpaceOf's when several tasks are configured,
// else the one Space.
func (s *Server) spaceOf(task string) *session.Space {
	if s.opt.SpaceOf != nil {
		if sp := s.opt.SpaceOf(task); sp != nil {
			return sp
		}
	}
	return s.opt.Space
}
