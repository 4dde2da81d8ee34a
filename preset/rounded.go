package preset

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"tunebot/session"
)

// Rounded lists the values of an imported file (data) that the preset (cfg) keeps rounded
// to session.SignificantDigits significant digits, as "weights.pose 1.23456 → 1.235", in
// name order; nil when every value was kept as written. An import says so rather than
// rounding silently.
func Rounded(data []byte, cfg session.RewardConfig) []string {
	written, err := session.DecodeConfig(data)
	if err != nil {
		return nil
	}
	var out []string
	for _, kind := range []struct {
		prefix     string
		was, comes map[string]float64
	}{{"weights.", written.Weights, cfg.Weights}, {"params.", written.Params, cfg.Params}} {
		for k, v := range kind.was {
			if kept, ok := kind.comes[k]; ok && kept != v {
				out = append(out, fmt.Sprintf("%s%s %s → %s", kind.prefix, k, strconv.FormatFloat(v, 'g', -1, 64), strconv.FormatFloat(kept, 'g', -1, 64)))
			}
		}
	}
	sort.Strings(out)
	return out
}

// RoundedNote is Rounded said in a sentence, "" when nothing was rounded.
func RoundedNote(data []byte, cfg session.RewardConfig) string {
	r := Rounded(data, cfg)
	if len(r) == 0 {
		return ""
	}
	return fmt.Sprintf("rounded to %d significant digits: %s", session.SignificantDigits, strings.Join(r, ", "))
}
