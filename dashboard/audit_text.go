package dashboard

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"tunebot/session"
)

// maxAuditText caps an audit entry's detail line on the page.
const maxAuditText = 400

// auditText is an audit entry's detail as the timeline reads it: "key: value · key: value"
// in key order, measured numbers with 4 significant digits (whole numbers as they are),
// times to the second in UTC rather than to the nanosecond, nested values compact.
func auditText(d map[string]any) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+": "+auditValue(tidy(d[k])))
	}
	text := strings.Join(parts, " · ")
	if r := []rune(text); len(r) > maxAuditText {
		text = string(r[:maxAuditText-1]) + "…"
	}
	return text
}

// tidy is v with its numbers measured and its times to the second, nested values included.
func tidy(v any) any {
	switch x := v.(type) {
	case float64:
		return number(x)
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05Z")
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return t.UTC().Format("2006-01-02 15:04:05Z")
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = tidy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = tidy(e)
		}
		return out
	case nil, bool, json.Number:
		return x
	}
	// Typed values (a struct, a typed map) as stored before a round trip: through JSON.
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var back any
	if json.Unmarshal(b, &back) != nil {
		return string(b)
	}
	switch back.(type) {
	case float64, map[string]any, []any: // a JSON value tidy reads without coming back here
		return tidy(back)
	}
	return back
}

// number is a JSON number as the page shows it: a whole number as it is, else measured.
func number(v float64) json.Number {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return json.Number(strconv.FormatInt(int64(v), 10))
	}
	return json.Number(strconv.FormatFloat(session.Measured(v), 'g', -1, 64))
}

func auditValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case nil:
		return "none"
	case bool:
		return strconv.FormatBool(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
