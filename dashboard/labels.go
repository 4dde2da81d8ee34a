package dashboard

import "tunebot/session"

// labels is the display vocabulary the page's script shows names in (session's table, the
// one the terminal, chat and charts use): metric names to display names.
func labels() map[string]any {
	return map[string]any{"metrics": session.MetricLabels}
}
