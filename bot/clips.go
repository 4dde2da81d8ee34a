package bot

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"tunebot/session"
)

// ClipFunc reads the clip recorded on trial t from its run directory (poster: the clip's
// first frame, a PNG), checked against the size and hash the store holds, and says where
// the file is. cmd/tunebot wires trainer.ReadClip; nil means clips are not shown.
type ClipFunc func(t session.Trial, poster bool) (data []byte, path string, err error)

// Content type of a poster frame; a clip's own is session.Clip.ContentType.
const ContentPNG = "image/png"

// ClipAttachment is trial t's clip as a file for a card (docs/design.md §6): named after
// the trial and its container, so platforms play it (MP4) or animate it (GIF) inline.
// link is where to see it when a platform cannot carry it (the trial's page, "" for none).
// ok is false when t has no clip or it cannot be read; the error says why.
func ClipAttachment(t session.Trial, read ClipFunc, link string) (Attachment, bool, error) {
	if t.Clip == nil || read == nil {
		return Attachment{}, false, nil
	}
	data, path, err := read(t, false)
	if err != nil {
		return Attachment{}, false, err
	}
	return Attachment{Name: fmt.Sprintf("trial-%03d-rung-%d.%s", t.Number, t.Rung, t.Clip.Format),
		Title: ClipTitle(t), Data: data, Size: len(data), ContentType: t.Clip.ContentType(), Path: path, Link: link}, true, nil
}

// ClipTitle names a trial's clip: "trial 3 @ rung 0 · 5.0 s".
func ClipTitle(t session.Trial) string {
	title := fmt.Sprintf("trial %d @ rung %d", t.Number, t.Rung)
	if t.Number == 0 {
		title += " (baseline)"
	}
	if t.Clip != nil && t.Clip.Seconds > 0 {
		title += fmt.Sprintf(" · %.1f s", t.Clip.Seconds)
	}
	return title
}

// IsClip reports whether a is a trial's clip (video or GIF), as adapters show those inline.
func IsClip(a Attachment) bool {
	return a.ContentType == "video/mp4" || a.ContentType == "image/gif"
}

// Kind says what an attachment is, in words for people: "chart", "clip" or "file".
func (a Attachment) Kind() string {
	switch {
	case a.ContentType == "":
		return "chart"
	case IsClip(a):
		return "clip"
	}
	return "file"
}

// clipNote is the trial report's line when a finished trial has no clip to show: why
// (the trainer wrote none, or it was refused), so nobody looks for one in vain.
func clipNote(t session.Trial) string {
	if t.Clip != nil || !t.State.Terminal() || t.ClipNote == "" {
		return ""
	}
	return t.ClipNote
}

// ClipSide is one trial of a clip pair: the trial and its clip, when it has one.
type ClipSide struct {
	Trial session.Trial
	Label string      // what the trial is here: "best", "baseline"
	Clip  *Attachment // nil: the trial has no clip (Trial.ClipNote says why)
	Note  string      // why Clip is nil when reading it failed
	// Versus is the trial's score as shown (session.VersusControl); nil: against rung 0's
	// baseline, said as trained less above rung 0.
	Versus *session.Versus
}

// ClipBlocks shows trials' clips one after the other (docs/design.md §6: side by side
// where the platform allows, else in order), each named with its score and metrics beside
// it, and says of a side without a clip why not. Cards that compare two trials (the
// session summary's best against the baseline, a person's A/B choice) build on it.
func ClipBlocks(sides ...ClipSide) []Block {
	var blocks []Block
	var atts []Attachment
	for _, side := range sides {
		t := side.Trial
		line := fmt.Sprintf("%s: trial %d @ rung %d", side.Label, t.Number, t.Rung)
		v, ok := session.VersusOf(session.Settings{}, nil, t)
		if side.Versus != nil {
			v, ok = *side.Versus, true
		}
		if ok {
			line += " · " + v.String()
		}
		if m := metricLine(t.Metrics); m != "" {
			line += "\n" + m
		}
		switch {
		case side.Clip != nil:
			atts = append(atts, *side.Clip)
		case side.Note != "":
			line += "\nno clip: " + side.Note
		case t.ClipNote != "":
			line += "\n" + t.ClipNote
		default:
			line += "\nno clip"
		}
		blocks = append(blocks, Text(line))
	}
	if len(atts) > 0 {
		blocks = append(blocks, Block{Kind: BlockAttachments, Attachments: atts})
	}
	return blocks
}

// metricLine is a trial's evaluation metrics in one line, named as the page and the charts
// name them beside a clip: "lin. vel. error 0.210 · ang. vel. error 0.300 · …".
func metricLine(m session.Metrics) string {
	var parts []string
	for _, name := range session.MetricNames {
		if v, ok := m[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", session.MetricLabel(name), Num(v)))
		}
	}
	return strings.Join(parts, " · ")
}

// BestClipsCard leads a finished session's summary: the best trial's clip beside the
// baseline's at the same rung (the control), or at rung 0 when it was not carried along.
// ok is false when the session has no best trial; when the best is the baseline, it is
// shown alone.
func BestClipsCard(s session.Session, trials []session.Trial, read ClipFunc, link func(session.Trial) string) (Card, bool) {
	best := s.BestOf(trials)
	if best == nil {
		return Card{}, false
	}
	var base *session.Trial
	for i := range trials {
		if t := &trials[i]; t.Number == 0 && t.State == session.TrialCompleted && (t.Rung == best.Rung || t.Rung == 0 && base == nil) {
			base = t
		}
	}
	if base != nil && base.Ref() == best.Ref() {
		base = nil // the baseline is the best: nothing beat it
	}
	side := func(t session.Trial, label string) ClipSide {
		cs := ClipSide{Trial: t, Label: label}
		if v, ok := session.VersusControl(s.Settings, trials, t); ok {
			cs.Versus = &v
		}
		l := ""
		if link != nil {
			l = link(t)
		}
		if a, ok, err := ClipAttachment(t, read, l); err != nil {
			cs.Note = userText(err)
		} else if ok {
			cs.Clip = &a
		}
		return cs
	}
	sides := []ClipSide{side(*best, "best")}
	title := fmt.Sprintf("session %s: the best trial against the baseline, walking", session.Short(s.ID))
	if base != nil {
		sides = append(sides, side(*base, "baseline"))
	} else {
		title = fmt.Sprintf("session %s: the best trial (the baseline: nothing beat it), walking", session.Short(s.ID))
	}
	c := Card{Ref: "s/" + s.ID + "/clips/best", Kind: "clips", Session: s.ID, Title: title}
	c.Blocks = append([]Block{{Kind: BlockHeader, Text: c.Title}}, ClipBlocks(sides...)...)
	return c, true
}

// trialClip loads trial t's clip for its report; a clip that cannot be read is logged
// and the report says so, as a picture must never hold back a card.
func (r *Renderer) trialClip(ctx context.Context, s session.Session, t session.Trial) []Attachment {
	link := ""
	if r.TrialURL != nil {
		link = r.TrialURL(s.ID, t.Number, t.Rung)
	}
	a, ok, err := ClipAttachment(t, r.Clips, link)
	if err != nil {
		r.logger().Warn("reading a trial's clip", "session", s.ID, "trial", t.Number, "rung", t.Rung, "err", err)
		return nil
	}
	if !ok {
		return nil
	}
	return []Attachment{a}
}

func (r *Renderer) trialLink(s session.Session) func(session.Trial) string {
	if r.TrialURL == nil {
		return nil
	}
	return func(t session.Trial) string { return r.TrialURL(s.ID, t.Number, t.Rung) }
}

// onceClips reads each clip through read at most once (one event rendered for several
// platforms).
func onceClips(read ClipFunc) ClipFunc {
	if read == nil {
		return nil
	}
	type key struct {
		ref    session.TrialRef
		poster bool
	}
	type got struct {
		data []byte
		path string
		err  error
	}
	seen := map[key]got{}
	return func(t session.Trial, poster bool) ([]byte, string, error) {
		k := key{t.Ref(), poster}
		if g, ok := seen[k]; ok {
			return g.data, g.path, g.err
		}
		data, path, err := read(t, poster)
		seen[k] = got{data, path, err}
		return data, path, err
	}
}

// onceCharts draws each trial's standard charts through draw at most once (one event
// rendered for several platforms).
func onceCharts(draw ChartFunc) ChartFunc {
	if draw == nil {
		return nil
	}
	type got struct {
		atts []Attachment
		err  error
	}
	seen := map[session.TrialRef]got{}
	return func(ctx context.Context, s session.Session, t session.Trial, tags []string) ([]Attachment, error) {
		if len(tags) > 0 {
			return draw(ctx, s, t, tags)
		}
		if g, ok := seen[t.Ref()]; ok {
			return g.atts, g.err
		}
		atts, err := draw(ctx, s, t, nil)
		seen[t.Ref()] = got{atts, err}
		return atts, err
	}
}

// preferenceCard renders A/B card p: each trial's clip, or its charts when it has none.
func (r *Renderer) preferenceCard(ctx context.Context, s session.Session, p session.Preference, trials []session.Trial) Card {
	in := PreferenceInput{Session: s, Preference: p, NoAdvisor: r.NoAdvisor}
	link := r.trialLink(s)
	for k, n := range []int{p.A, p.B} {
		var t *session.Trial
		for i := range trials {
			if trials[i].Number == n && trials[i].Rung == 0 {
				t = &trials[i]
			}
		}
		if t == nil {
			continue
		}
		side := &ClipSide{Trial: *t, Label: []string{"A", "B"}[k]}
		l := ""
		if link != nil {
			l = link(*t)
		}
		if a, ok, err := ClipAttachment(*t, r.Clips, l); err != nil {
			side.Note = userText(err)
		} else if ok {
			side.Clip = &a
		}
		if side.Clip == nil {
			in.Charts = append(in.Charts, r.TrialCharts(ctx, s, *t)...) // no clip: its charts instead
		}
		if k == 0 {
			in.A = side
		} else {
			in.B = side
		}
	}
	return PreferenceCard(in)
}

// clip posts a trial's clip where it was asked for (/tune clip N [rung]): everyone there
// sees the policy walk. A trial without one gets a private answer saying why.
func (h *Handler) clip(ctx context.Context, s session.Session, cmd Command, log *slog.Logger) Reply {
	if h.cfg.Clips == nil {
		return Reply{Private: true, Text: "clips are not available in this tunebot"}
	}
	t, no, ok := h.namedTrial(ctx, s, cmd, log)
	if !ok {
		return no
	}
	a, ok, err := ClipAttachment(t, h.cfg.Clips, "")
	if err != nil {
		return h.engineError(err, log)
	}
	if !ok {
		why := t.ClipNote
		if why == "" {
			why = "no clip yet"
			if t.State.Terminal() {
				why = "no clip"
			}
		}
		return Reply{Private: true, Text: fmt.Sprintf("trial %d @ rung %d of session %s has no clip to show: %s", t.Number, t.Rung, session.Short(s.ID), why)}
	}
	c := Card{Kind: "notice", Session: s.ID, Title: "clip of " + ClipTitle(t)}
	side := ClipSide{Trial: t, Label: "clip", Clip: &a}
	if trials, err := h.cfg.Store.Trials(ctx, s.ID); err == nil {
		if v, ok := session.VersusControl(s.Settings, trials, t); ok {
			side.Versus = &v
		}
	}
	c.Blocks = ClipBlocks(side)
	return Reply{Card: &c}
}
