package charts

import (
	"fmt"
	"sort"

	"tunebot/session"
)

// Image is one rendered chart of a report.
type Image struct {
	Name  string // file name, unique within a session: t003-r0-reward.png
	Title string // a caption for the chat message
	PNG   []byte
}

// ReportInput is everything a trial report draws on.
type ReportInput struct {
	Meta     Meta // SessionID and RunName; Trial is taken from Trial
	Trial    session.Trial
	Parent   *session.Trial // the trial whose config it changed; nil for the baseline
	Baseline *session.Trial // the session's baseline trial
	// Control is the baseline trained as long as Trial (the same number of iterations, carried
	// along every rung); its curves stand for the baseline's so curves compare at equal
	// training. nil: the baseline's rung-0 curves.
	Control *session.Trial
	Best    *session.Trial // the current best; nil when there is none
	// Series returns a trial's curves by tag; nil or a nil map means none.
	Series   func(ref session.TrialRef) map[string][]session.Point
	Trials   []session.Trial // every trial of the session so far, for the score chart
	Settings session.Settings
	// Changed names the weights and params this trial changed from its parent
	// (foot_slip, foot_gait.period); nil computes it from the parent's configuration.
	Changed []string
}

// TrialReport renders every chart of a finished trial's report, most telling first:
// evaluation vs baseline, mean reward, score by trial, changed reward terms, terminations,
// episode length, session progress. It is pure and single-threaded; the caller runs it off
// the training path.
func TrialReport(in ReportInput) ([]Image, error) {
	meta := in.Meta
	meta.Trial = in.Trial.Ref()
	cs := curvesOf(in)
	self, base := cs.self, cs.base
	changed := in.Changed
	if changed == nil && in.Parent != nil {
		changed = changedNames(in.Parent.RewardConfig, in.Trial.RewardConfig)
	}

	objTitle, objectives := objectivesChart(meta, in)

	prefix := ImagePrefix(in.Trial.Ref())
	var out []Image
	add := func(name, title string, render func() ([]byte, error)) error {
		png, err := render()
		if err != nil {
			return fmt.Errorf("rendering the %s chart of %s: %w", name, in.Trial.Ref(), err)
		}
		out = append(out, Image{Name: prefix + name + ".png", Title: title, PNG: png})
		return nil
	}
	curve := func(tag string) func() ([]byte, error) {
		return func() ([]byte, error) {
			return TrainingCurves(meta, tag, Curve{Label: cs.trialLabel, Points: self[tag]},
				Curve{Label: cs.baseLabel, Points: base[tag]}, Curve{Label: cs.bestLabel, Points: cs.best[tag]})
		}
	}
	steps := []struct {
		name, title string
		render      func() ([]byte, error)
	}{
		{"objectives", objTitle, objectives},
		{"reward", "Mean episode reward vs baseline and best", curve(TagMeanReward)},
		{"scores", "Score by trial and rung", func() ([]byte, error) {
			var ref *session.TrialRef
			if in.Best != nil {
				r := in.Best.Ref()
				ref = &r
			}
			return ScoresVs(meta, in.Settings, in.Trials, ref)
		}},
		{"terms", "Reward terms changed from the parent", func() ([]byte, error) { return RewardTerms(meta, self, base, changed) }},
		{"terminations", "Why episodes ended", func() ([]byte, error) { return Terminations(meta, self, base) }},
		{"length", "Mean episode length vs baseline and best", curve(TagMeanEpisodeLength)},
		{"progress", "Session progress", func() ([]byte, error) { return Progress(meta, in.Trials, in.Settings) }},
	}
	for _, s := range steps {
		if err := add(s.name, s.title, s.render); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// reportCurves are the training series a trial's report draws, with their labels: the
// trial's, the baseline's it is compared with and the best other trial's at its rung.
type reportCurves struct {
	self, base, best                 map[string][]session.Point
	trialLabel, baseLabel, bestLabel string
}

// curvesOf reads in's series for its report.
func curvesOf(in ReportInput) reportCurves {
	series := func(t *session.Trial) map[string][]session.Point {
		if t == nil || in.Series == nil {
			return nil
		}
		return in.Series(t.Ref())
	}
	cs := reportCurves{self: series(&in.Trial)}
	switch {
	case in.Control != nil && in.Control.Ref() != in.Trial.Ref():
		cs.base, cs.baseLabel = series(in.Control), fmt.Sprintf("baseline @ rung %d", in.Control.Rung)
	case in.Control == nil && in.Baseline != nil && in.Baseline.Ref() != in.Trial.Ref():
		cs.base = series(in.Baseline)
		if in.Trial.Rung > 0 {
			cs.baseLabel = "baseline @ rung 0"
		}
	}
	// curves compare at equal training: the best of this trial's rung, not the overall best
	if peer := bestAtRung(in.Settings, in.Trials, in.Best, in.Trial.Ref()); peer != nil {
		cs.best = series(peer)
		cs.bestLabel = fmt.Sprintf("best other at rung %d (trial %d)", peer.Rung, peer.Number)
	}
	cs.trialLabel = fmt.Sprintf("trial %d", in.Trial.Number)
	if in.Best != nil && in.Best.Ref() == in.Trial.Ref() {
		cs.trialLabel += " (best)"
	}
	if in.Baseline != nil && in.Baseline.Ref() == in.Trial.Ref() {
		cs.trialLabel += " (baseline)"
	}
	return cs
}

// objectivesChart is the report's evaluation chart and its title: the trial's evaluation
// against the baseline trained as long when there is one (session.ScoreVersus), else against
// rung 0's; a trial without a score gets a chart that says why.
func objectivesChart(meta Meta, in ReportInput) (string, func() ([]byte, error)) {
	score, rung, scored := session.ScoreVersus(in.Settings, in.Control, in.Trial)
	title := fmt.Sprintf("Evaluation vs baseline @ rung %d", rung)
	return title, func() ([]byte, error) {
		if !scored {
			reason := in.Trial.Reason
			if reason == "" {
				reason = "the trial has no evaluation yet"
			}
			return Failed(meta, title, fmt.Sprintf("trial %d has no score", in.Trial.Number), reason)
		}
		var bm session.Metrics
		switch {
		case rung > 0:
			bm = in.Control.Metrics
		case in.Baseline != nil:
			bm = in.Baseline.Metrics
		}
		return ObjectivesVs(meta, score, in.Trial.Metrics, bm, rung)
	}
}

// changedNames lists the weights and params that differ from a to b, sorted.
func changedNames(a, b session.RewardConfig) []string {
	out := []string{}
	diff := func(am, bm map[string]float64) {
		for k, v := range bm {
			if av, ok := am[k]; !ok || av != v {
				out = append(out, k)
			}
		}
		for k := range am {
			if _, ok := bm[k]; !ok {
				out = append(out, k)
			}
		}
	}
	diff(a.Weights, b.Weights)
	diff(a.Params, b.Params)
	sort.Strings(out)
	return out
}

// ImagePrefix is how the file names of a trial's images begin: t003-r0-.
func ImagePrefix(ref session.TrialRef) string { return fmt.Sprintf("t%03d-r%d-", ref.Number, ref.Rung) }

// reportParts are the charts of a trial's report, in TrialReport's order.
var reportParts = []string{"objectives", "reward", "scores", "terms", "terminations", "length", "progress"}

// ReportNames are the file names of trial ref's report (TrialReport's Image.Name): what a
// terminal that saved them looks for to draw again the charts a full disk cost it.
func ReportNames(ref session.TrialRef) []string {
	out := make([]string, len(reportParts))
	for i, part := range reportParts {
		out[i] = ImagePrefix(ref) + part + ".png"
	}
	return out
}

// bestAtRung is the trial whose curves stand for "best" next to trial self: best when it is
// at self's rung, else the eligible trial of that rung ranked first (session.Figures);
// never self.
func bestAtRung(st session.Settings, trials []session.Trial, best *session.Trial, self session.TrialRef) *session.Trial {
	if best != nil && best.Rung == self.Rung {
		if best.Ref() == self {
			return nil
		}
		return best
	}
	var peers []session.Trial
	for _, t := range trials {
		if t.Rung == self.Rung && t.Ref() != self && t.Eligible() {
			peers = append(peers, t)
		}
	}
	if len(peers) == 0 {
		return nil
	}
	session.FiguresAmong(st, trials, peers).Sort(peers)
	return &peers[0]
}
