package dashboard

import (
	"context"
	"net/http"

	"tunebot/bot"
	"tunebot/session"
)

// withLabels adds to a view's JSON object, as "labels", the display vocabulary the page's
// script shows names in: session's table, the one the terminal, chat and charts use.
func withLabels(f readFunc) readFunc {
	return func(ctx context.Context, in bot.Interaction, r *http.Request) (any, error) {
		v, err := f(ctx, in, r)
		if m, ok := v.(map[string]any); ok && err == nil {
			m["labels"] = map[string]any{"metrics": session.MetricLabels}
		}
		return v, err
	}
}
