package advisor_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"tunebot/advisor"
	"tunebot/session"
)

// The sampler's why counts in English: "1 of 2 trials", never "1 trials" (issue 20, item
// 15: "model of 1 trials"), on the first proposals of a session too.
func TestSamplerCountsInWords(t *testing.T) {
	space := session.DefaultSpace()
	full := slipHistory(space)
	oneTrials := regexp.MustCompile(`\b1 trials\b`)
	for n := 1; n <= 3; n++ {
		req := full
		req.History, req.Tried = full.History[:n], full.Tried[:n]
		sug, err := advisor.NewSampler(advisor.SamplerOptions{}).Propose(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		text := sug.Summary + "\n" + strings.Join(sug.Evidence, "\n")
		if oneTrials.MatchString(text) || sug.Summary == "" {
			t.Errorf("%d trials: %s", n, text)
		}
	}
}
