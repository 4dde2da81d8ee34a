package preset

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"tunebot/session"
)

// GainHeading heads the column of every preset list (terminal, chat, page) that holds
// GainText: the one figure that ranks presets of different sessions.
const GainHeading = "gain vs defaults (equal training)"

// ByGain is presets in the order every preset list shows them (terminal, chat, page): by
// the one figure comparable across sessions, the gain over the task's defaults at equal
// training (GainText), highest first; then those whose gain is not known (unknown, not
// recorded, imported); each tie newest first, then by name.
func ByGain(presets []session.Preset) []session.Preset {
	ps := append([]session.Preset(nil), presets...)
	known := func(p session.Preset) bool { return !Imported(p) && p.Gain != nil && p.Gain.Known() }
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if known(a) != known(b) {
			return known(a)
		}
		if known(a) && a.Gain.Score != b.Gain.Score {
			return a.Gain.Score > b.Gain.Score
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.Name < b.Name
	})
	return ps
}

// FormatList renders presets as a table in ByGain's order: name, its gain over the task's
// defaults at equal training (GainText), its session's outcome (OutcomeWord), what its
// session started from, origin, task, trainer, created.
func FormatList(presets []session.Preset) string {
	if len(presets) == 0 {
		return "no presets yet: a session that succeeds saves its best configuration as one\n"
	}
	ps := ByGain(presets)
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, strings.Join([]string{"name", GainHeading, "outcome", "built on", "origin", "task", "trainer", "created"}, "\t"))
	for _, p := range ps {
		created := "—"
		if !p.CreatedAt.IsZero() {
			created = p.CreatedAt.UTC().Format("2006-01-02 15:04Z")
		}
		fmt.Fprintln(w, strings.Join([]string{p.Name, GainText(p), OutcomeWord(p), BuiltOnText(p), origin(p), orDash(p.Task), orDash(p.Trainer), created}, "\t"))
	}
	w.Flush()
	return b.String()
}

// GainText is a preset's one comparable figure (session.Gain) as every preset list shows
// it: "+0.313 ± 0.012 @ rung 2" (its standard error when recorded), or why there is none;
// never a score against another baseline.
func GainText(p session.Preset) string {
	switch g := p.Gain; {
	case Imported(p):
		return "n/a (imported)"
	case g == nil:
		return "not recorded" // saved before tunebot recorded it
	case !g.Known():
		return "unknown"
	default:
		return g.Text() + " @ rung " + strconv.Itoa(g.Rung)
	}
}

// OutcomeWord is a preset's session's outcome as a list shows it: "improved", "within the
// noise", "not measured", or "—" (imported, or saved before outcomes were recorded).
func OutcomeWord(p session.Preset) string {
	switch p.Outcome {
	case session.OutcomeImproved:
		return "improved"
	case session.OutcomeWithinNoise:
		return "within the noise"
	case session.OutcomeUnmeasured:
		return "not measured"
	}
	return "—"
}

// BuiltOnText says what a preset's session started from: a preset, an earlier session's
// trial, "the defaults", or "—" when not recorded (an imported preset, an older one).
func BuiltOnText(p session.Preset) string {
	switch {
	case p.BuiltOn != "":
		return p.BuiltOn
	case Imported(p) || p.Gain == nil:
		return "—"
	}
	return "the defaults"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// GainDetail is a preset's figure with where the defaults were trained, or why it is
// unknown, as show and the preset's page say it; "" for an imported preset.
func GainDetail(p session.Preset) string {
	g := p.Gain
	switch {
	case Imported(p):
		return ""
	case g == nil:
		return "not recorded (saved before tunebot recorded it)"
	case !g.Known():
		return "unknown: " + g.Unknown
	}
	where := "its own session's baseline"
	if g.Session != p.SessionID {
		where = "session " + short(g.Session) + "'s baseline, which it builds on"
	}
	eval := "rung evaluations"
	if g.Final {
		eval = "its final evaluation on fresh seeds"
	}
	return fmt.Sprintf("%s at rung %d against the defaults trained as long (%s; %s)", g.Text(), g.Rung, where, eval)
}

// FormatShow renders one preset: where it came from, its score, its metrics and every
// value that differs from the space's defaults (the rest are the defaults).
func FormatShow(p session.Preset, space *session.Space) string {
	var b strings.Builder
	fmt.Fprintf(&b, "preset %s\n", p.Name)
	fmt.Fprintf(&b, "  origin:    %s\n", origin(p))
	if p.Task != "" {
		fmt.Fprintf(&b, "  task:      %s\n", p.Task)
	}
	if t := session.TrainerText(p.Trainer); t != "" {
		fmt.Fprintf(&b, "  trainer:   %s\n", t)
		if p.Trainer == session.TrainerSim {
			b.WriteString("             apply refuses it unless told --from-sim\n")
		}
	}
	if !Imported(p) {
		fmt.Fprintf(&b, "  %s:\n             %s\n", GainHeading, GainDetail(p))
		fmt.Fprintf(&b, "  built on:  %s\n", BuiltOnText(p))
		fmt.Fprintf(&b, "  score:     %s (vs its session's baseline at rung 0; comparable within its session and rung only)\n", scoreText(p))
		if v := p.Versus; v != nil && v.Rung > 0 {
			fmt.Fprintf(&b, "             %s\n", v)
		}
		if p.Outcome != "" {
			fmt.Fprintf(&b, "  outcome:   %s\n", OutcomeWord(p))
		}
		if d := p.Verdict; d != nil {
			fmt.Fprintf(&b, "             %s\n", d.Text())
		}
		if p.Unconfirmed() {
			fmt.Fprintf(&b, "             apply refuses it unless told --unconfirmed\n")
		}
	}
	if len(p.Approvers) > 0 {
		fmt.Fprintf(&b, "  approved:  %s\n", strings.Join(p.Approvers, ", "))
	}
	if !p.CreatedAt.IsZero() {
		fmt.Fprintf(&b, "  created:   %s\n", p.CreatedAt.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if len(p.Metrics) > 0 {
		b.WriteString("  metrics (lower is better):\n")
		for _, k := range session.SortedMetricNames(p.Metrics) {
			fmt.Fprintf(&b, "    %-24s %g\n", k, session.Measured(p.Metrics[k]))
		}
	}
	changes := space.Diff(space.Defaults(), p.Config)
	if len(changes) == 0 {
		b.WriteString("  configuration: the defaults\n")
		return b.String()
	}
	b.WriteString("  changed from the defaults:\n")
	for _, c := range changes {
		fmt.Fprintf(&b, "    %-34s %g → %g%s\n", c.Label(), c.Old, c.New, factor(c))
	}
	return b.String()
}

func origin(p session.Preset) string {
	if Imported(p) {
		return "imported"
	}
	return fmt.Sprintf("session %s, %s", short(p.SessionID), p.Trial)
}

func scoreText(p session.Preset) string {
	if Imported(p) {
		return "n/a"
	}
	if p.ScoreStd > 0 {
		return session.SignedScore(p.Score) + " ± " + session.Spread(p.ScoreStd)
	}
	return session.SignedScore(p.Score)
}

func factor(c session.Change) string {
	f := c.Factor()
	if f == 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return ""
	}
	return fmt.Sprintf(" (×%.2f)", f)
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
