package dashboard

import (
	"context"
	"errors"
	"net/http"

	"tunebot/bot"
	"tunebot/session"
)

// resolveID lets a request name its session by a unique prefix of the id, such as the 8
// characters every surface prints: the handlers then see the whole id. An ambiguous prefix
// is refused with the sessions it could mean.
func (s *Server) resolveID(ctx context.Context, r *http.Request) error {
	typed := r.PathValue("id")
	if typed == "" {
		return nil
	}
	id, err := session.ResolveID(ctx, s.opt.Store, typed)
	switch {
	case errors.Is(err, session.ErrNotFound):
		return notFound("session %s does not exist", bot.Truncate(typed, 40))
	case errors.Is(err, session.ErrConflict):
		msg, _ := session.UserMessage(err)
		return &problem{http.StatusConflict, msg}
	case err != nil:
		return err
	}
	r.SetPathValue("id", id)
	return nil
}

// isNotFound says whether err is resolveID's answer for an id no session has.
func isNotFound(err error) bool {
	var p *problem
	return errors.As(err, &p) && p.status == http.StatusNotFound
}
