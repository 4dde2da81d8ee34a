package retention_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tunebot/retention"
	"tunebot/session"
)

// TestPruneStaysInTheSessionsDirectory: a run directory, or a session's whole directory,
// swapped for a link to a directory outside between prune's listing and its removals (a
// trainer running as another user can), or a link from the start: nothing outside is
// removed.
func TestPruneStaysInTheSessionsDirectory(t *testing.T) {
	const id = "a0000000000000a1"
	run := filepath.Join(id, "trial-001-rung-0")
	for _, tc := range []struct {
		name string
		swap string // relative to the sessions directory; "" links the session's directory from the start
	}{
		{"a run directory swapped", run},
		{"the session's directory swapped", id},
		{"the session's directory a link", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.add(t, id, session.StateSucceeded, 400, false)
			outside := t.TempDir()
			// The names a run directory holds, and those a session's directory holds.
			for _, f := range []string{"model_100.pt", "model_300.pt", "policy.onnx", "events.out.tfevents.1", "evaluation-events/events.out.tfevents.2"} {
				write(t, filepath.Join(outside, f), 10)
				for n := range 3 {
					write(t, filepath.Join(outside, fmt.Sprintf("trial-%03d-rung-0", n), f), 10)
				}
			}
			want := files(t, outside)
			if tc.swap == "" {
				if err := replaceWithLink(t, filepath.Join(r.sessions, id), outside); err != nil {
					t.Fatal(err)
				}
			}
			swapped := false
			defer retention.SetBeforeRemove(func(dir, rel string) {
				if swapped || tc.swap == "" {
					return
				}
				swapped = true
				if err := replaceWithLink(t, filepath.Join(r.sessions, tc.swap), outside); err != nil {
					t.Error(err)
				}
			})()
			o := retention.Config{OlderThan: retention.Age(90 * 24 * time.Hour), Curves: session.CurvesKeep, RunDirs: true}.Options()
			_, err := r.p.Run(context.Background(), o, operator)
			if tc.swap != "" && !swapped {
				t.Fatal("prune removed nothing: the test swapped no directory")
			}
			if got := files(t, outside); !slices.Equal(got, want) {
				t.Errorf("prune (err %v) left %v outside the sessions directory, want %v untouched", err, got, want)
			}
		})
	}
}

// replaceWithLink moves the directory at aside (into a temp dir) and puts a link to target
// in its place: what another user who can write its parent does.
func replaceWithLink(t *testing.T, at, target string) error {
	if err := os.Rename(at, filepath.Join(t.TempDir(), "moved")); err != nil {
		return err
	}
	return os.Symlink(target, at)
}

// TestPruneFollowsNoReportsLink (issue 44 item 3): with the reports directory (or the
// sessions directory) planted as a link to a directory outside holding a session's
// charts by name, prune's root followed it and removed them. Now the link is refused and
// nothing outside is removed.
func TestPruneFollowsNoReportsLink(t *testing.T) {
	const id = "a0000000000000a1"
	for _, top := range []string{"reports", "sessions"} {
		t.Run(top, func(t *testing.T) {
			r := newRig(t)
			r.add(t, id, session.StateSucceeded, 400, false)
			outside := t.TempDir()
			for _, f := range []string{session.Short(id) + "/t000-r0-reward.png", id + "/trial-000-rung-0/model_100.pt"} {
				write(t, filepath.Join(outside, f), 10)
			}
			want := files(t, outside)
			dir := map[string]string{"reports": r.reports, "sessions": r.sessions}[top]
			if err := replaceWithLink(t, dir, outside); err != nil {
				t.Fatal(err)
			}
			o := retention.Config{OlderThan: retention.Age(90 * 24 * time.Hour), Curves: session.CurvesKeep, RunDirs: true}.Options()
			_, err := r.p.Run(context.Background(), o, operator)
			if err == nil || !strings.Contains(err.Error(), dir+" is a symbolic link") {
				t.Errorf("prune through a %s link: %v", top, err)
			}
			if got := files(t, outside); !slices.Equal(got, want) {
				t.Errorf("prune left %v in the directory the %s link names, want %v untouched", got, top, want)
			}
		})
	}
}
