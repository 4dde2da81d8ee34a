package advisor

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// moveEvidence is what a numeric proposer knows of one change it proposes, for the
// proposal's summary and evidence (session.Suggestion): the score change its model expects
// from the move, with a standard deviation, and how many finished trials had moved the
// scalar (0: not measured yet).
type moveEvidence struct {
	change   tpeChange
	expected float64
	sd       float64
	moved    int
	// metrics says how the move alone changes each metric it moves, when the proposer
	// models the metrics ("foot slip -29% ± 3%").
	metrics []string
	// back says how the move takes back an earlier change ("back to the default"), "" when
	// it does not.
	back string
}

// summaryNames is how many scalars the one-sentence summary names before "and N more".
const summaryNames = 4

// explainMoves turns the evidence of a proposal's moves, the model fitted to n trials, into
// its summary (one sentence: what moves, in words, and why) and its evidence (one line per
// move, strongest expected gain first), so a card can lead with the sentence and the three
// strongest lines and keep the rest for whoever asks.
func explainMoves(n int, moves []moveEvidence) (string, []string) {
	ms := rankMoves(moves)
	evidence := make([]string, len(ms))
	gain, gains, measured := 0.0, 0, 0
	for i, m := range ms {
		evidence[i] = m.line(n)
		if m.moved > 0 {
			measured++
			if m.expected > 0 {
				gain += m.expected
				gains++
			}
		}
	}
	model := "the model of " + plural(n, "trial")
	var why string
	switch {
	case gains > 0 && measured == len(ms):
		why = fmt.Sprintf("where %s expects the most gain (%+.3f in all)", model, gain)
	case gains > 0:
		why = fmt.Sprintf("where %s expects gains (%+.3f in all), and to measure %s no trial has moved yet", model, gain, plural(len(ms)-measured, "scalar"))
	case measured == 0:
		why = "to measure what no trial has moved yet"
	default:
		why = fmt.Sprintf("to learn more: %s expects no clear gain from any single move", model)
	}
	return capitalise(movesSentence(ms)) + ", " + why + ".", evidence
}

// rankMoves orders moves as a proposal's evidence lists them: the measured ones by expected
// gain, then the ones not measured yet.
func rankMoves(moves []moveEvidence) []moveEvidence {
	ms := append([]moveEvidence(nil), moves...)
	sort.SliceStable(ms, func(a, b int) bool {
		if (ms[a].moved > 0) != (ms[b].moved > 0) {
			return ms[a].moved > 0
		}
		return ms[a].expected > ms[b].expected
	})
	return ms
}

// movesSentence says what moves in words, verbs grouped in the order of the moves:
// "strengthens foot_slip and action_rate_l2, lowers params.foot_gait.period and 3 more".
func movesSentence(ms []moveEvidence) string {
	var verbs []string
	byVerb := map[string][]string{}
	for i, m := range ms {
		if i == summaryNames {
			break
		}
		v := m.change.verb()
		if m.back != "" {
			v = "takes back"
		}
		if _, ok := byVerb[v]; !ok {
			verbs = append(verbs, v)
		}
		byVerb[v] = append(byVerb[v], m.change.dim.label())
	}
	parts := make([]string, len(verbs))
	for i, v := range verbs {
		parts[i] = v + " " + andList(byVerb[v])
	}
	out := strings.Join(parts, ", ")
	if more := len(ms) - summaryNames; more > 0 {
		out += fmt.Sprintf(", and %d more", more)
	}
	return out
}

// line is one piece of evidence: the move, then what the model expects of it.
func (m moveEvidence) line(n int) string {
	c := m.change
	head := fmt.Sprintf("%s %s → %s (%s)", c.dim.label(), fmtValue(c.old), fmtValue(c.new), c.word())
	if m.back != "" {
		head += ", " + m.back
	}
	if m.moved == 0 {
		return head + ": not measured yet, no trial has moved it"
	}
	metrics := ""
	if len(m.metrics) > 0 {
		metrics = " (" + strings.Join(m.metrics, ", ") + ")"
	}
	return fmt.Sprintf("%s: the model expects %+.3f ± %.3f on the score%s; %d of %s moved it", head, m.expected, m.sd, metrics, m.moved, plural(n, "trial"))
}

// word says which way a change goes, as constraints and cards say it: a weight gets
// stronger or weaker (its magnitude), a param higher or lower.
func (c tpeChange) word() string {
	switch {
	case c.dim.weight && c.old == 0:
		return "switched on"
	case c.dim.weight && c.new == 0:
		return "switched off"
	case c.dim.weight && math.Abs(c.new) > math.Abs(c.old):
		return fmt.Sprintf("×%.2f, stronger", c.new/c.old)
	case c.dim.weight:
		return fmt.Sprintf("×%.2f, weaker", c.new/c.old)
	case c.new > c.old:
		return "higher"
	}
	return "lower"
}

// verb is the change's word as a verb of the summary.
func (c tpeChange) verb() string {
	switch {
	case c.dim.weight && c.old == 0:
		return "switches on"
	case c.dim.weight && c.new == 0:
		return "switches off"
	case c.dim.weight && math.Abs(c.new) > math.Abs(c.old):
		return "strengthens"
	case c.dim.weight:
		return "weakens"
	case c.new > c.old:
		return "raises"
	}
	return "lowers"
}

func fmtValue(v float64) string { return fmt.Sprintf("%.4g", v) }

// plural says "1 trial", "9 trials".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func andList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
