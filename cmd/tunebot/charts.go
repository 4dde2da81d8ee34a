package main

import (
	"context"
	"fmt"
	"strings"

	"tunebot/bot"
	"tunebot/charts"
	"tunebot/session"
)

// seriesReader is what chart rendering reads of the store; session.Store implements it.
type seriesReader interface {
	Trials(ctx context.Context, sessionID string) ([]session.Trial, error)
	Series(ctx context.Context, key session.SeriesKey) ([]session.Point, error)
	SeriesTags(ctx context.Context, sessionID string, ref session.TrialRef) ([]string, error)
}

// storeCharts returns the bot.ChartFunc that draws a trial's report (charts.TrialReport) or,
// given tags, one training curve per tag against the baseline and the current best, from
// the series the store holds.
func storeCharts(st seriesReader) bot.ChartFunc {
	return func(ctx context.Context, s session.Session, t session.Trial, tags []string) ([]bot.Attachment, error) {
		trials, err := st.Trials(ctx, s.ID)
		if err != nil {
			return nil, fmt.Errorf("reading trials for charts: %w", err)
		}
		kin := kinOf(s.Settings, trials, t)
		meta := charts.Meta{SessionID: s.ID, Trial: t.Ref(), RunName: s.Settings.RunName}
		curve := func(ref session.TrialRef, tag string) ([]session.Point, error) {
			return lineage(ctx, st, s.ID, ref, tag)
		}
		if len(tags) > 0 {
			return curveCharts(meta, t, tags, kin, curve)
		}
		return reportCharts(ctx, st, s, t, trials, kin, meta, curve)
	}
}

// trialKin are the trials a trial's charts compare it with; nil when there is none.
type trialKin struct {
	baseline, best, parent, control *session.Trial
}

// kinOf finds t's kin in trials: the baseline (trial 0 at rung 0), the session's best
// (charts.BestRanked, by the figure every surface ranks with), t's parent, and its control:
// the baseline trained again at t's rung above 0, once that training finished.
func kinOf(st session.Settings, trials []session.Trial, t session.Trial) trialKin {
	find := func(ref session.TrialRef) *session.Trial {
		for i := range trials {
			if trials[i].Ref() == ref {
				return &trials[i]
			}
		}
		return nil
	}
	k := trialKin{baseline: find(session.TrialRef{Number: 0, Rung: 0})}
	if ref, ok := charts.BestRanked(st, trials); ok {
		k.best = find(ref)
	}
	if t.Parent != nil {
		k.parent = find(*t.Parent)
	}
	if t.Rung > 0 {
		if b := find(session.TrialRef{Number: 0, Rung: t.Rung}); b != nil && b.Trained {
			k.control = b
		}
	}
	return k
}

// curveCharts draws one training curve per tag, t's against the baseline's and the best's
// (each left out when it is t itself); a tag t has no curve of is the person's mistake.
func curveCharts(meta charts.Meta, t session.Trial, tags []string, kin trialKin, curve func(session.TrialRef, string) ([]session.Point, error)) ([]bot.Attachment, error) {
	other := func(tr *session.Trial, label, tag string) charts.Curve {
		if tr == nil || tr.Ref() == t.Ref() {
			return charts.Curve{}
		}
		pts, _ := curve(tr.Ref(), tag)
		return charts.Curve{Label: label, Points: pts}
	}
	bestLabel := ""
	if kin.best != nil {
		bestLabel = fmt.Sprintf("best: trial %d @ rung %d", kin.best.Number, kin.best.Rung)
	}
	var out []bot.Attachment
	for _, tag := range tags {
		pts, err := curve(t.Ref(), tag)
		if err != nil {
			return nil, session.Userf(err, "trial %d @ rung %d has no curve %q", t.Number, t.Rung, tag)
		}
		png, err := charts.TrainingCurves(meta, tag, charts.Curve{Label: fmt.Sprintf("trial %d", t.Number), Points: pts},
			other(kin.baseline, "", tag), other(kin.best, bestLabel, tag))
		if err != nil {
			return nil, fmt.Errorf("rendering %s: %w", tag, err)
		}
		name := charts.ImagePrefix(t.Ref()) + strings.NewReplacer("/", "-", ".", "-").Replace(tag) + ".png"
		out = append(out, bot.Attachment{Name: name, Title: tag, Data: png})
	}
	return out, nil
}

// reportCharts draws t's report (charts.TrialReport) with its kin and every series the
// store holds for a trial (a tag whose curve cannot be read is left out).
func reportCharts(ctx context.Context, st seriesReader, s session.Session, t session.Trial, trials []session.Trial, kin trialKin,
	meta charts.Meta, curve func(session.TrialRef, string) ([]session.Point, error)) ([]bot.Attachment, error) {
	series := func(ref session.TrialRef) map[string][]session.Point {
		names, err := st.SeriesTags(ctx, s.ID, ref)
		if err != nil {
			return nil
		}
		out := make(map[string][]session.Point, len(names))
		for _, tag := range names {
			if pts, err := curve(ref, tag); err == nil {
				out[tag] = pts
			}
		}
		return out
	}
	imgs, err := charts.TrialReport(charts.ReportInput{Meta: meta, Trial: t, Parent: kin.parent, Baseline: kin.baseline, Control: kin.control,
		Best: kin.best, Series: series, Trials: trials, Settings: s.Settings})
	if err != nil {
		return nil, err
	}
	out := make([]bot.Attachment, len(imgs))
	for i, im := range imgs {
		out[i] = bot.Attachment{Name: im.Name, Title: im.Title, Data: im.PNG}
	}
	return out, nil
}

// finalCharts is the summary's chart port (bot.FinalChartFunc): of the best trial's report
// drawn by draw, the score and progress charts, named final-*.png beside the trial reports
// (docs/design.md §6).
func finalCharts(draw bot.ChartFunc) bot.FinalChartFunc {
	return func(ctx context.Context, s session.Session, t session.Trial) ([]bot.Attachment, error) {
		atts, err := draw(ctx, s, t, nil)
		if err != nil {
			return nil, err
		}
		var out []bot.Attachment
		prefix := charts.ImagePrefix(t.Ref())
		for _, a := range atts {
			switch a.Name {
			case prefix + "scores.png", prefix + "progress.png":
				a.Name = "final-" + strings.TrimPrefix(a.Name, prefix)
				a.Title += " (after the final re-evaluation)"
				out = append(out, a)
			}
		}
		return out, nil
	}
}

// lineage returns the curve of tag for trial ref. A promoted trial resumed its own
// checkpoint of the rung below, so its curve is the segments of rungs 0..r of its number,
// one after the other: a rung-2 report shows how the trial got there, not only its last
// stretch. It fails when ref's own rung has no such curve.
func lineage(ctx context.Context, st seriesReader, sessionID string, ref session.TrialRef, tag string) ([]session.Point, error) {
	var out []session.Point
	for r := 0; r <= ref.Rung; r++ {
		pts, err := st.Series(ctx, session.SeriesKey{SessionID: sessionID, Number: ref.Number, Rung: r, Tag: tag})
		if err != nil {
			if r == ref.Rung {
				return nil, err
			}
			continue // a lower rung without this tag
		}
		out = appendAfter(out, pts)
	}
	return out, nil
}

// appendAfter continues pts with next, a resumed run's segment, which starts where pts
// ended (a resumed run may log its checkpoint's iteration again; that point is dropped). A
// segment that starts before pts ends counts its steps from its own start (a wall-clock
// tag) and replaces pts.
func appendAfter(pts, next []session.Point) []session.Point {
	if len(pts) == 0 || len(next) == 0 {
		return append(pts, next...)
	}
	last := pts[len(pts)-1].Step
	switch {
	case next[0].Step > last:
		return append(pts, next...)
	case next[0].Step == last:
		return append(pts, next[1:]...)
	}
	return append([]session.Point(nil), next...)
}
