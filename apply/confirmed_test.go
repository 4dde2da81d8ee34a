package apply_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"tunebot/apply/applytest"
	"tunebot/session"
)

// A preset whose gain is within the noise is not applied unless acknowledged, and the commit
// of one that is says what its final evaluation found (issue 43, item 2).
func TestApplyOfAPresetWithinTheNoiseIsAcknowledged(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	a, log := newApplier(t, repo, []string{"true"}, nil)
	p := testPreset()
	p.Outcome = session.OutcomeWithinNoise
	p.Verdict = &session.Verdict{Gain: 0.005, SE: 0.012, Lower: -0.021, Upper: 0.031, Seeds: []int{7301, 7302, 7303, 7304, 7305}}
	before := snap(t, repo)
	_, err := a.Apply(ctx, p, alice)
	msg, user := session.UserMessage(err)
	if !errors.Is(err, session.ErrConflict) || !user || !strings.Contains(msg, "its gain over its session's baseline is within the noise (+0.005 ± 0.012 on fresh seeds 7301–7305") ||
		!strings.Contains(msg, "tunebot apply "+p.Name+" --unconfirmed --yes") {
		t.Fatalf("apply of a preset within the noise: %v, want it refused naming the verdict and --unconfirmed", err)
	}
	if after := snap(t, repo); after.branches != before.branches || len(log.Entries()) != 0 {
		t.Fatalf("a refused apply changed the checkout or the audit")
	}
	a.Unconfirmed = true
	res, err := a.Apply(ctx, p, alice)
	if err != nil {
		t.Fatal(err)
	}
	body := applytest.Git(t, repo, "log", "-1", "--format=%B", res.Commit)
	for _, want := range []string{"Its final evaluation: +0.005 ± 0.012 on fresh seeds 7301–7305 (paired, 95 % lower bound -0.021): within the noise.",
		"Not an improvement anyone has shown (within_noise); applied knowingly (--unconfirmed)."} {
		if !strings.Contains(body, want) {
			t.Errorf("commit message lacks %q:\n%s", want, body)
		}
	}
}
