package dashboard_test

import (
	"strings"
	"testing"

	"tunebot/bot"
	"tunebot/session/sessiontest"
)

// One ranking everywhere (issue 43, item 3): the page's ladder and its best-vs-baseline row,
// and the chat's trials table, put first the trial with the highest figure against the
// baseline trained as long, the figure their column shows, where the score against rung 0's
// baseline would put the other first.
func TestThePageRanksByTheEqualTrainingFigure(t *testing.T) {
	f := newFixture(t)
	s, trials := sessiontest.RankLadder()
	storeBeside(t, f, s, trials)
	v := decode(t, f.signIn(t, eve).get("/api/sessions/"+s.ID))
	rung1 := v["ladder"].([]any)[1].(map[string]any)["trials"].([]any)
	first := rung1[0].(map[string]any)
	if first["number"] != 1.0 || first["best"] != true || first["rank_score"].(float64) <= rung1[1].(map[string]any)["rank_score"].(float64) {
		t.Errorf("the ladder's rung 1 starts with %v, want trial 1, the best, by its figure", first)
	}
	for _, x := range v["comparison"].([]any) {
		if c := x.(map[string]any); c["rung"] == 1.0 && c["best"].(map[string]any)["number"] != 1.0 {
			t.Errorf("the page's best of rung 1 is trial %v, want 1", c["best"].(map[string]any)["number"])
		}
	}
	for _, row := range bot.TrialsTable(trials, s).Rows {
		if strings.HasSuffix(row[0], "★") != (row[0] == "1 ★" && row[1] == "1") {
			t.Errorf("table row %q: the star belongs to trial 1 @ rung 1 alone", row)
		}
	}
}
