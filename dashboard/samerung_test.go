package dashboard_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"tunebot/session"
)

func samerungMetrics(k float64) session.Metrics {
	return session.Metrics{session.MetricVelLinear: 0.2 * k, session.MetricVelAngular: 0.3 * k, session.MetricActionAcc: 12 * k,
		session.MetricOrientation: 0.05 * k, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08 * k, session.MetricPower: 150}
}

// The leaderboard ranks within a rung, highest rung first, each trial against the baseline at
// its rung (recomputed from the metrics), and the session list's best says the same.
func TestLeaderboardRanksWithinARungAgainstItsBaseline(t *testing.T) {
	f := newFixture(t)
	st := session.DefaultSettings()
	const id = "5a3e5a3e5a3e5a3e"
	score := func(base, m session.Metrics) *session.Score {
		sc, err := session.Scorer{Baseline: base, Weights: st.Objective, Floors: st.Floors}.Score(m)
		if err != nil {
			t.Fatal(err)
		}
		return &sc
	}
	b0 := samerungMetrics(1)
	tr := func(num, rung int, k float64) session.Trial {
		m := samerungMetrics(k)
		return session.Trial{SessionID: id, Number: num, Rung: rung, Iterations: st.Rungs[rung], State: session.TrialCompleted, Metrics: m, Score: score(b0, m)}
	}
	// At rung 1 trial 4 beats the rung-1 baseline; trial 3 scored higher at rung 0, and
	// trial 5 at rung 2 has no baseline there: it is against rung 0, trained less.
	trials := []session.Trial{tr(0, 0, 1), tr(3, 0, 0.9), tr(4, 0, 0.95), tr(0, 1, 0.8), tr(3, 1, 0.85), tr(4, 1, 0.75), tr(4, 2, 0.7)}
	s := session.Session{ID: id, State: session.StateCancelled, Settings: st, BestTrial: 4, BestRung: 2, CreatedAt: t0, UpdatedAt: t0}
	if c, ok := session.Compare(s, trials); ok {
		s.Result = &c
	}
	storeBeside(t, f, s, trials)
	c := f.signIn(t, eve)
	v := decode(t, c.get("/api/sessions/"+id))
	// Issue 35 item 9: the ladder counts the baseline carried along apart from the slots.
	for _, x := range v["ladder"].([]any) {
		r := x.(map[string]any)
		want := map[float64]struct {
			filled  float64
			carried bool
		}{0: {3, false}, 1: {2, true}, 2: {1, false}}[r["rung"].(float64)]
		if r["filled"] != want.filled || r["baseline_carried"] != want.carried {
			t.Errorf("ladder rung %v: filled %v, baseline carried %v; want %v, %v", r["rung"], r["filled"], r["baseline_carried"], want.filled, want.carried)
		}
	}
	var order []string
	for _, x := range v["trials"].([]any) {
		m := x.(map[string]any)
		vs := m["versus"].(map[string]any)
		order = append(order, fmtRef(m["number"], m["rung"], vs["control_rung"]))
	}
	want := []string{"4@2 vs 0", "4@1 vs 1", "0@1 vs 1", "3@1 vs 1", "3@0 vs 0", "4@0 vs 0", "0@0 vs 0"}
	if len(order) != len(want) {
		t.Fatalf("leaderboard %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("leaderboard %v, want %v: highest rung first, within a rung by the score against its baseline", order, want)
		}
	}
	got := v["trials"].([]any)[1].(map[string]any)["versus"].(map[string]any)["score"].(float64)
	if w := score(trials[3].Metrics, trials[5].Metrics).Total; math.Abs(got-w) > 1e-9 {
		t.Errorf("trial 4 @ rung 1 against the rung-1 baseline: %v, want %v", got, w)
	}
	for _, r := range decode(t, c.get("/api/sessions"))["sessions"].([]any) {
		row := r.(map[string]any)
		if row["id"] != id {
			continue
		}
		bv, _ := row["best_versus"].(map[string]any)
		if bv == nil || bv["trial"] != 4.0 || bv["rung"] != 1.0 || bv["control_rung"] != 1.0 || math.Abs(bv["score"].(float64)-got) > 1e-9 {
			t.Errorf("the list's best %v, want trial 4 @ rung 1 against the baseline @ rung 1 (%v)", bv, got)
		}
	}
}

func fmtRef(num, rung, control any) string {
	return fmtInt(num) + "@" + fmtInt(rung) + " vs " + fmtInt(control)
}

func fmtInt(v any) string {
	f, _ := v.(float64)
	return string(rune('0' + int(f)))
}

// The page says which trainer made a preset, so a sim preset is not taken for a real one.
func TestPresetsSayWhichTrainerMadeThem(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := session.Preset{Name: "demo-5a3e5a3e", SessionID: "5a3e5a3e5a3e5a3e", Config: session.DefaultSpace().Defaults(), Task: "Unitree-Go2-Flat",
		Trainer: session.TrainerSim, CreatedAt: t0}
	if err := f.db.SavePreset(ctx, p); err != nil {
		t.Fatal(err)
	}
	c := f.signIn(t, eve)
	found := false
	for _, x := range decode(t, c.get("/api/presets"))["presets"].([]any) {
		if m := x.(map[string]any); m["name"] == p.Name {
			found = m["trainer"] == "sim"
		}
	}
	if !found {
		t.Error("the preset list does not say the sim made demo-5a3e5a3e")
	}
	one := decode(t, c.get("/api/presets/"+p.Name))["preset"].(map[string]any)
	if one["trainer"] != "sim" || one["trainer_text"] != session.TrainerText(session.TrainerSim) {
		t.Errorf("preset view %v, want trainer sim said in words", one)
	}
}

// TestPresetsShowTheGainOverTheDefaults (issue 35 item 4): the page's preset list and a
// preset's page show the one comparable figure under its heading, and what it was built on.
func TestPresetsShowTheGainOverTheDefaults(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := session.Preset{Name: "later-5a3e5a3e", SessionID: "5a3e5a3e5a3e5a3e", Trial: session.TrialRef{Number: 4, Rung: 2}, Score: 0.245,
		Config: session.DefaultSpace().Defaults(), Task: "Unitree-Go2-Flat", CreatedAt: t0, BuiltOn: "preset first-1a2b3c4d",
		Gain: &session.Gain{Score: 0.313, Rung: 2, Session: "1a2b3c4d1a2b3c4d"}}
	if err := f.db.SavePreset(ctx, p); err != nil {
		t.Fatal(err)
	}
	// the store lists by name; the page ranks by the gain (preset.ByGain, issue 43, item 7.10)
	older := session.Preset{Name: "aaa-1a2b3c4d", SessionID: "1a2b3c4d1a2b3c4d", Config: session.DefaultSpace().Defaults(), Task: "Unitree-Go2-Flat", CreatedAt: t0}
	if err := f.db.SavePreset(ctx, older); err != nil {
		t.Fatal(err)
	}
	c := f.signIn(t, eve)
	list := decode(t, c.get("/api/presets"))
	if first := list["presets"].([]any)[0].(map[string]any)["name"]; first != p.Name {
		t.Errorf("the page's preset list starts with %v, want %s, the one with a known gain", first, p.Name)
	}
	if list["gain_heading"] != "gain vs defaults (equal training)" {
		t.Errorf("the list's heading %v", list["gain_heading"])
	}
	found := false
	for _, x := range list["presets"].([]any) {
		if m := x.(map[string]any); m["name"] == p.Name {
			found = m["gain"] == "+0.313 @ rung 2" && m["built_on"] == "preset first-1a2b3c4d"
		}
	}
	if !found {
		t.Errorf("the preset list does not show %s's gain over the defaults and what it was built on: %v", p.Name, list["presets"])
	}
	one := decode(t, c.get("/api/presets/"+p.Name))["preset"].(map[string]any)
	if d, _ := one["gain_detail"].(string); !strings.HasPrefix(d, "+0.313 at rung 2 against the defaults trained as long (session 1a2b3c4d's baseline, which it builds on") {
		t.Errorf("preset view %v", one)
	}
}
