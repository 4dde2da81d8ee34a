package apply_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"tunebot/apply"
	"tunebot/session"
)

// A checkout trains one task (apply.task): a preset tuned on another is refused, naming
// both, by diff and apply alike, and the checkout is untouched; its own task's applies.
func TestApplyRefusesAPresetOfAnotherTask(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	before := snap(t, repo)
	a, log := newApplier(t, repo, []string{"true"}, func(c *apply.Config) { c.Task = "Mjlab-Velocity-Flat-Unitree-Go1" })
	p := testPreset() // tuned on Unitree-Go2-Flat
	_, diffErr := a.Diff(ctx, p)
	_, applyErr := a.Apply(ctx, p, alice)
	for what, err := range map[string]error{"diff": diffErr, "apply": applyErr} {
		if !errors.Is(err, session.ErrConflict) || !strings.Contains(err.Error(), "preset auto-tune-0123abcd was tuned on task Unitree-Go2-Flat, not Mjlab-Velocity-Flat-Unitree-Go1") {
			t.Errorf("%s of another task's preset: %v", what, err)
		}
	}
	if after := snap(t, repo); after.head != before.head || after.branches != before.branches || len(log.Entries()) != 0 {
		t.Errorf("a refused apply touched the checkout or the audit")
	}
	p.Task = "Mjlab-Velocity-Flat-Unitree-Go1"
	if res, err := a.Apply(ctx, p, alice); err != nil || res.Commit == "" {
		t.Errorf("its own task's preset: %+v, %v", res, err)
	}
}
