package bot

import (
	"context"
	"fmt"
	"strings"

	"tunebot/charts"
	"tunebot/session"
)

// SeriesReader is what chart rendering reads of the store; session.Store implements it.
type SeriesReader interface {
	Trials(ctx context.Context, sessionID string) ([]session.Trial, error)
	Series(ctx context.Context, key session.SeriesKey) ([]session.Point, error)
	SeriesTags(ctx context.Context, sessionID string, ref session.TrialRef) ([]string, error)
}

// StoreCharts returns the ChartFunc that draws a trial's report (charts.TrialReport) or,
// given tags, one training curve per tag against the baseline and the current best, from
// the series the store holds.
func StoreCharts(st SeriesReader) ChartFunc {
	return func(ctx context.Context, s session.Session, t session.Trial, tags []string) ([]Attachment, error) {
		trials, err := st.Trials(ctx, s.ID)
		if err != nil {
			return nil, fmt.Errorf("reading trials for charts: %w", err)
		}
		find := func(ref session.TrialRef) *session.Trial {
			for i := range trials {
				if trials[i].Ref() == ref {
					return &trials[i]
				}
			}
			return nil
		}
		series := func(ref session.TrialRef) map[string][]session.Point {
			names, err := st.SeriesTags(ctx, s.ID, ref)
			if err != nil {
				return nil
			}
			out := make(map[string][]session.Point, len(names))
			for _, tag := range names {
				if pts, err := st.Series(ctx, session.SeriesKey{SessionID: s.ID, Number: ref.Number, Rung: ref.Rung, Tag: tag}); err == nil {
					out[tag] = pts
				}
			}
			return out
		}
		baseline := find(session.TrialRef{Number: 0, Rung: 0})
		var best *session.Trial
		if ref, ok := charts.BestOf(trials); ok {
			best = find(ref)
		}
		meta := charts.Meta{SessionID: s.ID, Trial: t.Ref(), RunName: s.Settings.RunName}
		if len(tags) > 0 {
			var out []Attachment
			curve := func(tr *session.Trial, label, tag string) charts.Curve {
				if tr == nil || tr.Ref() == t.Ref() {
					return charts.Curve{}
				}
				pts, _ := st.Series(ctx, session.SeriesKey{SessionID: s.ID, Number: tr.Number, Rung: tr.Rung, Tag: tag})
				return charts.Curve{Label: label, Points: pts}
			}
			for _, tag := range tags {
				pts, err := st.Series(ctx, session.SeriesKey{SessionID: s.ID, Number: t.Number, Rung: t.Rung, Tag: tag})
				if err != nil {
					return nil, session.Userf(err, "trial %d @ rung %d has no curve %q", t.Number, t.Rung, tag)
				}
				bestLabel := ""
				if best != nil {
					bestLabel = fmt.Sprintf("best: trial %d @ rung %d", best.Number, best.Rung)
				}
				png, err := charts.TrainingCurves(meta, tag, charts.Curve{Label: fmt.Sprintf("trial %d", t.Number), Points: pts},
					curve(baseline, "", tag), curve(best, bestLabel, tag))
				if err != nil {
					return nil, fmt.Errorf("rendering %s: %w", tag, err)
				}
				name := charts.ImagePrefix(t.Ref()) + strings.NewReplacer("/", "-", ".", "-").Replace(tag) + ".png"
				out = append(out, Attachment{Name: name, Title: tag, PNG: png})
			}
			return out, nil
		}
		var parent *session.Trial
		if t.Parent != nil {
			parent = find(*t.Parent)
		}
		imgs, err := charts.TrialReport(charts.ReportInput{Meta: meta, Trial: t, Parent: parent, Baseline: baseline, Best: best,
			Series: series, Trials: trials, Settings: s.Settings})
		if err != nil {
			return nil, err
		}
		out := make([]Attachment, len(imgs))
		for i, im := range imgs {
			out[i] = Attachment{Name: im.Name, Title: im.Title, PNG: im.PNG}
		}
		return out, nil
	}
}
