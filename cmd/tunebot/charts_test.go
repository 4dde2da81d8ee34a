package main

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/session"
	"tunebot/store"
)

func TestStoreCharts(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, trials := chartFixture()
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	for i, tr := range trials {
		tr.SessionID = s.ID
		tr.Metrics = session.Metrics{"velocity_error_linear": 0.2, "velocity_error_angular": 0.3, "action_acceleration": 12, "orientation_error": 0.05, "fall_rate": 0.01, "foot_slip": 0.08, "mechanical_power": 150}
		if err := db.PutTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
		var pts []session.Point
		for k := range 300 {
			pts = append(pts, session.Point{Step: int64(k), Value: float64(i+1) * (1 - math.Exp(-float64(k)/80))})
		}
		if err := db.PutSeries(ctx, session.SeriesKey{SessionID: s.ID, Number: tr.Number, Rung: 0, Tag: "Train/mean_reward"}, pts); err != nil {
			t.Fatal(err)
		}
	}
	f := storeCharts(db)
	trials[2].SessionID = s.ID
	atts, err := f(ctx, s, trials[2], nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(atts) < 3 {
		t.Fatalf("%d charts in a trial report", len(atts))
	}
	for _, a := range atts {
		img, err := png.Decode(bytes.NewReader(a.Data))
		if err != nil || img.Bounds().Dx() < 400 || !strings.HasPrefix(a.Name, "t002-r0-") || a.Title == "" {
			t.Errorf("chart %s %q: %v", a.Name, a.Title, err)
		}
	}
	atts, err = f(ctx, s, trials[2], []string{"Train/mean_reward"})
	if err != nil || len(atts) != 1 || atts[0].Name != "t002-r0-Train-mean_reward.png" {
		t.Fatalf("tag chart: %v %+v", err, atts)
	}
	if _, err := f(ctx, s, trials[2], []string{"Nope/x"}); err == nil || !strings.Contains(err.Error(), `no curve "Nope/x"`) {
		t.Errorf("unknown tag: %v", err)
	}
}

// chartFixture is a running session whose best is trial 2 @ rung 0, with three scored trials.
func chartFixture() (session.Session, []session.Trial) {
	st := session.DefaultSettings()
	st.Normalize()
	base := session.DefaultSpace().Defaults()
	c1 := session.Merge(base, session.Patch{Weights: map[string]float64{"pose": 1.5}})
	c2 := session.Merge(c1, session.Patch{Weights: map[string]float64{"action_rate_l2": -0.1}})
	score := func(total float64) *session.Score {
		return &session.Score{Total: total, Eligible: true, Objectives: map[string]float64{
			"tracking": 0.12, "smoothness": -0.034, "stability": 0.2, "falls": 0, "slip": 0.051, "energy": -0.5}}
	}
	s := session.Session{ID: "1a2b3c4d5e6f7a8b", State: session.StateRunning, Settings: st, Base: base,
		BestTrial: 2, BestRung: 0, BestScore: 0.1234}
	return s, []session.Trial{
		{Number: 0, Iterations: 300, State: session.TrialCompleted, Source: "baseline", RewardConfig: base, Score: score(0)},
		{Number: 1, Iterations: 300, State: session.TrialCompleted, Source: "advisor", RewardConfig: c1, Parent: &session.TrialRef{Number: 0}, Score: score(0.05)},
		{Number: 2, Iterations: 300, State: session.TrialCompleted, Source: "edit", RewardConfig: c2, Parent: &session.TrialRef{Number: 1}, Score: score(0.1234)},
	}
}

// The summary's charts are the best trial's score and progress charts drawn again, under
// their own names, so they agree with the summary; the report's other charts stay out.
func TestFinalChartsAreTheScoreAndProgressCharts(t *testing.T) {
	s, _ := chartFixture()
	var drawn []session.TrialRef
	draw := func(_ context.Context, _ session.Session, tr session.Trial, tags []string) ([]bot.Attachment, error) {
		if tags != nil {
			t.Errorf("final charts asked for tags %v, want the report", tags)
		}
		drawn = append(drawn, tr.Ref())
		var out []bot.Attachment
		for _, n := range []string{"objectives", "reward", "scores", "progress"} {
			out = append(out, bot.Attachment{Name: "t002-r0-" + n + ".png", Title: n, Data: []byte(n)})
		}
		return out, nil
	}
	atts, err := finalCharts(draw)(context.Background(), s, session.Trial{Number: 2})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range atts {
		names = append(names, a.Name+"="+string(a.Data)+"="+a.Title)
	}
	want := "final-scores.png=scores=scores (after the final re-evaluation),final-progress.png=progress=progress (after the final re-evaluation)"
	if strings.Join(names, ",") != want || len(drawn) != 1 || drawn[0] != (session.TrialRef{Number: 2}) {
		t.Errorf("final charts %v drawn for %v, want %s", names, drawn, want)
	}
	failing := func(context.Context, session.Session, session.Trial, []string) ([]bot.Attachment, error) {
		return nil, errors.New("no series")
	}
	if _, err := finalCharts(failing)(context.Background(), s, session.Trial{Number: 2}); err == nil {
		t.Error("a failed report drew final charts")
	}
}
