package apply_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"tunebot/apply"
	"tunebot/apply/applytest"
	"tunebot/session"
)

// The commit message says who applied the preset as a person reads it: "at the terminal",
// "by bob at the command line", never "cli (cli)" (issue 43, item 7.8).
func TestApplySaysWhoAppliedPlainly(t *testing.T) {
	tests := []struct {
		by   session.Actor
		want string
	}{
		{session.Actor{Platform: "console", ID: "console", Name: "you"}, "Applied at the terminal."},
		{session.Actor{Platform: "cli", ID: "bob", Name: "bob"}, "Applied by bob at the command line."},
		{session.Actor{Platform: "cli", ID: "cli", Name: "cli"}, "Applied at the command line."},
		{alice, "Applied by alice (slack)."},
		{session.Actor{Platform: "slack", ID: "U9", Name: "the boss"}, "Applied by the boss (slack)."},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			repo := newRepo(t)
			a, _ := newApplier(t, repo, []string{"true"}, nil)
			res, err := a.Apply(context.Background(), testPreset(), tt.by)
			if err != nil {
				t.Fatal(err)
			}
			if msg := applytest.Git(t, repo, "log", "-1", "--format=%B", res.Commit); !strings.Contains(msg, "\n"+tt.want+"\n") {
				t.Errorf("the commit message does not say %q:\n%s", tt.want, msg)
			}
		})
	}
}

// A checkout whose base already holds every value the preset's edits write has nothing to
// commit: the apply says so as ErrNothingToApply, before any branch is made, and nothing is
// audited; once that apply is rolled back the preset applies again (issue 43, items 6 and 7.8).
func TestApplyWithNothingToCommit(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	a, log := newApplier(t, repo, []string{"true"}, nil)
	p := testPreset()
	// gait.py's edit writes a comment after the value its pattern then no longer matches
	p.Config.Params["foot_clearance.target_height"] = session.DefaultSpace().Defaults().Params["foot_clearance.target_height"]
	res, err := a.Apply(ctx, p, alice)
	if err != nil {
		t.Fatal(err)
	}
	applytest.Git(t, repo, "checkout", "-q", "-b", "merged", res.Branch) // a branch holding the preset
	before := snap(t, repo)
	_, err = a.Apply(ctx, p, alice)
	msg, user := session.UserMessage(err)
	if !errors.Is(err, apply.ErrNothingToApply) || !user || !strings.Contains(msg, "already holds every value of preset auto-tune-0123abcd that apply.edits writes") {
		t.Errorf("apply onto a checkout holding the preset: %v, want ErrNothingToApply saying so", err)
	}
	if after := snap(t, repo); after.branches != before.branches || after.head != before.head || len(log.Entries()) != 1 {
		t.Errorf("nothing to commit changed the checkout or the audit: %+v → %+v, %d entries", before, after, len(log.Entries()))
	}

	applytest.Git(t, repo, "checkout", "-q", "main")
	rec, err := a.LastApply(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Rollback(ctx, rec, alice); err != nil {
		t.Fatal(err)
	}
	// After the rollback the checkout no longer holds it: applied again, on a fresh branch.
	if res, err := a.Apply(ctx, p, alice); err != nil || res.Branch != "tunebot/auto-tune-0123abcd-2" {
		t.Errorf("apply again after a rollback: %+v, %v; want it committed on tunebot/auto-tune-0123abcd-2", res, err)
	}
}

// A partial apply's commit message agrees in number: "1 of the preset's values is not in
// this commit" (issue 43, item 7.8).
func TestPartialApplyOfOneValue(t *testing.T) {
	repo := newRepo(t)
	p := testPreset()
	p.Config.Weights["pose"] = 1.5 // no edit names it
	a, _ := newApplier(t, repo, []string{"true"}, nil)
	a.Partial = true
	res, err := a.Apply(context.Background(), p, alice)
	if err != nil {
		t.Fatal(err)
	}
	if msg := applytest.Git(t, repo, "log", "-1", "--format=%B", res.Commit); !strings.Contains(msg, "1 of the preset's values is not in this commit") {
		t.Errorf("the commit message:\n%s", msg)
	}
}
