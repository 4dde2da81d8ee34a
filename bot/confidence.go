package bot

import (
	"fmt"
	"math"
	"strings"

	"tunebot/session"
)

// ConfidenceFields names a proposal's chances for what they are (issue 28, item 3): from
// the numeric sampler, the chance that every gate passes and the chance of beating the best
// so far, its model's, never beyond what its trials allow (session.Credible); from DeepSeek,
// its own claim that the patch improves the score, labelled as its own.
func ConfidenceFields(p session.Proposal) [][2]string {
	if p.Source == session.SourceAdvisor {
		return [][2]string{{"DeepSeek's confidence", pct(p.Confidence)}}
	}
	out := [][2]string{{"gates pass", pct(p.Confidence)}}
	if p.BeatBest != nil {
		out = append(out, [2]string{"beats the best so far", pct(*p.BeatBest)})
	}
	return out
}

// ConfidenceText is ConfidenceFields in one line: "gates pass: 92 % · beats the best so far:
// 40 %", or "DeepSeek's confidence: 60 %".
func ConfidenceText(p session.Proposal) string {
	var parts []string
	for _, f := range ConfidenceFields(p) {
		parts = append(parts, f[0]+": "+f[1])
	}
	return strings.Join(parts, " · ")
}

func pct(v float64) string {
	return fmt.Sprintf("%.0f %%", 100*math.Max(0, math.Min(1, v)))
}
