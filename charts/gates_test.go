package charts_test

import (
	"image/color"
	"testing"

	"tunebot/charts"
	"tunebot/session"
	"tunebot/session/sessiontest"
)

// bannerCount counts the pixels of colour c down the left edge of the chart's top quarter,
// where the evaluation chart's verdict banner is.
func bannerCount(l look, c color.RGBA) int {
	n := 0
	for y := 0; y < l.h/4; y++ {
		if near1(l, 60, y, c) {
			n++
		}
	}
	return n
}

func near1(l look, x, y int, c color.RGBA) bool {
	r, g, b, _ := l.img.At(x, y).RGBA()
	d := func(a uint32, b uint8) int { v := int(a>>8) - int(b); return v * v }
	return d(r, c.R)+d(g, c.G)+d(b, c.B) < 300
}

// The evaluation chart of a trial that fails the tracking gate only against the baseline
// trained as long says NOT eligible (its banner red), as the summary does; the trial that
// shipped has a green one (issue 35, item 2: the chart and the summary never disagree).
func TestObjectivesChartJudgesAsTheSummary(t *testing.T) {
	s, trials := sessiontest.GateLadder()
	find := func(num, rung int) *session.Trial {
		for i := range trials {
			if trials[i].Number == num && trials[i].Rung == rung {
				return &trials[i]
			}
		}
		t.Fatalf("no trial %d @ rung %d", num, rung)
		return nil
	}
	for _, tc := range []struct {
		num  int
		want color.RGBA
	}{{5, red}, {4, green}} {
		in := charts.ReportInput{Meta: charts.Meta{SessionID: s.ID}, Trial: *find(tc.num, 2), Baseline: find(0, 0), Control: find(0, 2),
			Trials: trials, Settings: s.Settings}
		imgs, err := charts.TrialReport(in)
		if err != nil {
			t.Fatal(err)
		}
		l := readable(t, imgs[0].Name, imgs[0].PNG)
		if imgs[0].Title != "Evaluation vs baseline @ rung 2" || bannerCount(l, tc.want) < 20 {
			t.Errorf("trial %d @ rung 2: %q, %d rows of its banner in the verdict's colour; want the summary's verdict (eligible %v)",
				tc.num, imgs[0].Title, bannerCount(l, tc.want), find(tc.num, 2).Eligible())
		}
	}
}
