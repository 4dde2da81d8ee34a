package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// MaxExtraMetrics bounds the metric names outside MetricNames kept from one metrics map of
// an evaluation: a trainer may report a few of its own, shown beside the seven, but 15,000
// extra names per trial once made a session's page 29.7 MB and locked its reader out
// (issue 36). Such a name is also at most MaxMetricName bytes of UTF-8.
const (
	MaxExtraMetrics = 8
	MaxMetricName   = 64
)

// maxProblems bounds the problems an InvalidError of an evaluation lists.
const maxProblems = 20

// KeptMetrics is m with every metric of MetricNames and at most MaxExtraMetrics other names
// (the first in byte order of those that are valid names), and how many it left out. m
// itself is returned when nothing is left out. It bounds what a trial stores and what any
// surface serves of an evaluation, whatever a trainer or an older tunebot stored.
func KeptMetrics(m Metrics) (Metrics, int) {
	extra := 0
	for k := range m {
		if !contains(MetricNames, k) {
			extra++
		}
	}
	if extra <= MaxExtraMetrics && !hasBadName(m) {
		return m, 0
	}
	out := Metrics{}
	var names []string
	for k, v := range m {
		switch {
		case contains(MetricNames, k):
			out[k] = v
		case len(k) <= MaxMetricName && TagProblem(k) == "":
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names[:min(len(names), MaxExtraMetrics)] {
		out[k] = m[k]
	}
	return out, len(m) - len(out)
}

// hasBadName reports whether a name outside MetricNames is empty, not UTF-8 or too long.
func hasBadName(m Metrics) bool {
	for k := range m {
		if !contains(MetricNames, k) && (len(k) > MaxMetricName || TagProblem(k) != "") {
			return true
		}
	}
	return false
}

// keepMetrics bounds each metrics map of ev with KeptMetrics and notes what was left out.
func (ev *Evaluation) keepMetrics() {
	dropped, maps := 0, 0
	keep := func(m Metrics) Metrics {
		kept, n := KeptMetrics(m)
		if n > 0 {
			dropped += n
			maps++
		}
		return kept
	}
	ev.Metrics = keep(ev.Metrics)
	for i := range ev.PerSeed {
		ev.PerSeed[i].Metrics = keep(ev.PerSeed[i].Metrics)
	}
	if dropped > 0 {
		ev.Notes = append(ev.Notes, fmt.Sprintf("evaluation.json names more metrics than the seven of the evaluation contract: kept at most %d other names (of at most %d bytes) per metrics map, left out %d names in %d maps",
			MaxExtraMetrics, MaxMetricName, dropped, maps))
	}
}

// evaluationProblem says what is wrong with a file json could not decode, naming keys and
// kinds of value but never quoting what the trainer wrote: a value may be megabytes, or a
// secret the trainer read.
func evaluationProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("not JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		kind, _, _ := strings.Cut(typ.Value, " ") // "number 1e999" names the number itself
		where := "the top level"
		if typ.Field != "" {
			where = QuoteShort(typ.Field)
		}
		return fmt.Sprintf("%s holds a %s where a %s belongs", where, kind, typ.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, uerr := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		if uerr != nil {
			return "an unknown field"
		}
		return "unknown field " + QuoteShort(name)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "the JSON ends early"
	}
	return "not a JSON object of the evaluation contract"
}

// atMost keeps the first n problems and says how many more there were.
func atMost(probs []string, n int) []string {
	if len(probs) <= n {
		return probs
	}
	return append(probs[:n:n], fmt.Sprintf("and %d more problems", len(probs)-n))
}
