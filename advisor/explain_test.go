package advisor_test

import (
	"context"
	"fmt"
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
		// One "gates pass" figure on the card: the sentence's is the card's (issue 35,
		// item 8: 67 % beside "every gate passing in 90 % of its draws").
		if want := fmt.Sprintf("the chance that every gate passes is %.0f %%", 100*sug.Confidence); !strings.Contains(sug.Summary, want) {
			t.Errorf("%d trials: %q, want the card's gates-pass figure %q", n, sug.Summary, want)
		}
	}
}

// The sampler's sentence names the configuration its expectation is over: the trial it
// patches, the baseline as such, never "the base" (issue 43, item 7.5).
func TestSamplerNamesWhatItPatches(t *testing.T) {
	space := session.DefaultSpace()
	full := slipHistory(space)
	tests := []struct {
		base int
		want string
	}{
		{0, " over the baseline (trial 0), which it patches;"},
		{2, " over trial 2, which it patches;"},
	}
	for _, tt := range tests {
		req := full
		req.BaseTrial, req.Base = tt.base, full.History[tt.base].Config.Clone()
		sug, err := advisor.NewSampler(advisor.SamplerOptions{}).Propose(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(sug.Summary, tt.want) || strings.Contains(sug.Summary, "the base;") {
			t.Errorf("base trial %d: %q, want %q", tt.base, sug.Summary, tt.want)
		}
	}
}

// The sampler's sentence and evidence name a param as every surface does, "params.x" (the
// one vocabulary, docs/design.md §6), as the card's diff table beside them (issue 43, item 7.12).
func TestSamplerNamesParamsAsTheCardDoes(t *testing.T) {
	space := session.DefaultSpace()
	full := slipHistory(space)
	req := full
	req.History, req.Tried = full.History[:1], full.Tried[:1]
	sug, err := advisor.NewSampler(advisor.SamplerOptions{}).Propose(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(sug.Patch.Params) == 0 {
		t.Fatalf("the fixture's proposal moves no param: %v", sug.Patch)
	}
	for name := range sug.Patch.Params {
		label := session.ParamLabel(name)
		found := false
		for _, l := range sug.Evidence {
			found = found || strings.HasPrefix(l, label+" ")
		}
		if !strings.Contains(sug.Summary, label) || !found {
			t.Errorf("param %s is not named %s in %q / %q", name, label, sug.Summary, sug.Evidence)
		}
	}
}
