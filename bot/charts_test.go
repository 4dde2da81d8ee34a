package bot_test

import (
	"bytes"
	"context"
	"image/png"
	"math"
	"strings"
	"testing"

	"tunebot/bot"
	"tunebot/session"
)

func TestStoreCharts(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	s := fixtureSession()
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	trials := fixtureTrials()[:3]
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
	f := bot.StoreCharts(db)
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
