package preset

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"tunebot/session"
)

// FormatList renders presets as one line each, newest first: name, score, origin, task.
func FormatList(presets []session.Preset) string {
	if len(presets) == 0 {
		return "no presets yet: a session that succeeds saves its best configuration as one\n"
	}
	ps := append([]session.Preset(nil), presets...)
	sort.SliceStable(ps, func(i, j int) bool {
		if !ps[i].CreatedAt.Equal(ps[j].CreatedAt) {
			return ps[i].CreatedAt.After(ps[j].CreatedAt)
		}
		return ps[i].Name < ps[j].Name
	})
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%s  score %s  %s", p.Name, scoreText(p), origin(p))
		if p.Task != "" {
			fmt.Fprintf(&b, "  %s", p.Task)
		}
		if p.Trainer != "" {
			fmt.Fprintf(&b, "  trainer %s", p.Trainer)
		}
		if !p.CreatedAt.IsZero() {
			fmt.Fprintf(&b, "  %s", p.CreatedAt.UTC().Format("2006-01-02 15:04Z"))
		}
		b.WriteByte('\n')
	}
	return b.String()
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
		fmt.Fprintf(&b, "  score:     %s (vs the baseline at rung 0; comparable within a rung)\n", scoreText(p))
		if v := p.Versus; v != nil && v.Rung > 0 {
			fmt.Fprintf(&b, "             %s\n", v)
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
		fmt.Fprintf(&b, "    %-34s %g → %g%s\n", c.Name, c.Old, c.New, factor(c))
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
