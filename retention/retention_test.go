package retention_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/retention"
	"tunebot/session"
	"tunebot/store"
)

var now = time.Date(2026, 12, 1, 4, 30, 0, 0, time.UTC)

type rig struct {
	db       *store.DB
	sessions string // the sessions directory
	reports  string
	p        *retention.Pruner
}

func newRig(t *testing.T) *rig {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "tunebot.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r := &rig{db: db, sessions: filepath.Join(dir, "sessions"), reports: filepath.Join(dir, "reports")}
	r.p = &retention.Pruner{Store: db, SessionsDir: r.sessions, ReportsDir: r.reports, Now: func() time.Time { return now }}
	return r
}

// add stores a session created and ended daysAgo, with three trials (trial 2 its best, the
// preset's when preset), curves of 1000 points, a run directory per trial and a chart.
func (r *rig) add(t *testing.T, id string, state session.State, daysAgo int, preset bool) {
	t.Helper()
	ctx := context.Background()
	at := now.AddDate(0, 0, -daysAgo)
	s := session.Session{ID: id, State: state, Settings: session.DefaultSettings(), BestTrial: 2, CreatedAt: at.Add(-time.Hour), UpdatedAt: at}
	if !state.Active() {
		s.EndedAt = at
	}
	// Stored finished, then set to its state (an active one is added last).
	s.State = session.StateFailed
	if err := r.db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := r.db.UpdateSession(ctx, id, func(s *session.Session) error { s.State = state; return nil }); err != nil {
		t.Fatal(err)
	}
	for n := range 3 {
		run := fmt.Sprintf("trial-%03d-rung-0", n)
		tr := session.Trial{SessionID: id, Number: n, State: session.TrialCompleted, RunDir: run,
			Checkpoint: run + "/model_300.pt", Policy: run + "/policy.onnx", Score: &session.Score{Total: float64(n) / 10, Eligible: true}}
		if err := r.db.PutTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
		pts := make([]session.Point, 1000)
		for i := range pts {
			pts[i] = session.Point{Step: int64(i), Value: float64(i % 7)}
		}
		if err := r.db.PutSeriesBatch(ctx, id, tr.Ref(), map[string][]session.Point{"Train/mean_reward": pts, "Loss/value": pts}); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"model_100.pt", "model_300.pt", "policy.onnx", "events.out.tfevents.1", "evaluation-events/events.out.tfevents.2"} {
			write(t, filepath.Join(r.sessions, id, run, f), 1000)
		}
	}
	write(t, filepath.Join(r.reports, session.Short(id), "t000-r0-reward.png"), 500)
	if err := r.db.Append(ctx, session.AuditEntry{SessionID: id, Kind: "session_started", Actor: session.System}); err != nil {
		t.Fatal(err)
	}
	if preset {
		if err := r.db.SavePreset(ctx, session.Preset{Name: "auto-tune-" + session.Short(id), SessionID: id, Trial: session.TrialRef{Number: 2}, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
}

func write(t *testing.T, path string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
}

// files lists what is left under dir, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// kept is what a list view, a preset and the audit read of the store: everything but curves.
type kept struct {
	Trials    map[string][]session.Trial
	Proposals map[string][]session.Proposal
	Presets   []session.Preset
	Audit     map[string][]session.AuditEntry
}

func (r *rig) kept(t *testing.T, ids ...string) kept {
	t.Helper()
	ctx := context.Background()
	k := kept{Trials: map[string][]session.Trial{}, Proposals: map[string][]session.Proposal{}, Audit: map[string][]session.AuditEntry{}}
	var err error
	for _, id := range ids {
		if k.Trials[id], err = r.db.Trials(ctx, id); err != nil {
			t.Fatal(err)
		}
		if k.Proposals[id], err = r.db.Proposals(ctx, id); err != nil {
			t.Fatal(err)
		}
		audit, err := r.db.Audit(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		k.Audit[id] = slices.DeleteFunc(audit, func(e session.AuditEntry) bool { return e.Kind == "pruned" })
	}
	if k.Presets, err = r.db.Presets(ctx); err != nil {
		t.Fatal(err)
	}
	return k
}

func (r *rig) points(t *testing.T, id string) int {
	t.Helper()
	pts, err := r.db.Series(context.Background(), session.SeriesKey{SessionID: id, Number: 1, Tag: "Loss/value"})
	if errors.Is(err, session.ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(pts)
}

func ids(rep retention.Report) []string {
	var out []string
	for _, s := range rep.Sessions {
		out = append(out, s.ID)
	}
	return out
}

var operator = session.Actor{Platform: "cli", ID: "ana", Name: "ana"}

// Old finished sessions lose their curves' detail and their run directories; their records
// stay, as do their presets' files; the newest, the recent and the active are not touched.
func TestPruneOldSessionsOnly(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.add(t, "a0000000000000a1", session.StateSucceeded, 400, true) // old, with a preset
	r.add(t, "b0000000000000b2", session.StateFailed, 200, false)   // old
	r.add(t, "d0000000000000d4", session.StateSucceeded, 120, true) // old, but among the newest 2
	r.add(t, "e0000000000000e5", session.StateCancelled, 10, false) // recent
	r.add(t, "c0000000000000c3", session.StatePaused, 300, false)   // old but active (resumable)
	all := []string{"a0000000000000a1", "b0000000000000b2", "c0000000000000c3", "d0000000000000d4", "e0000000000000e5"}
	before := r.kept(t, all...)
	o := retention.Config{OlderThan: retention.Age(90 * 24 * time.Hour), KeepLast: 2, Curves: session.CurvesDownsample, Points: 100, RunDirs: true, Compact: true}.Options()

	o.DryRun = true
	dry, err := r.p.Run(ctx, o, operator)
	if err != nil {
		t.Fatal(err)
	}
	// Newest first: e5, d4 (the two kept whatever their age), b2, c3 (active), a1.
	if want := []string{"b0000000000000b2", "a0000000000000a1"}; !slices.Equal(ids(dry), want) {
		t.Fatalf("a dry run picked %v, want %v", ids(dry), want)
	}
	if r.points(t, "a0000000000000a1") != 1000 || len(files(t, filepath.Join(r.sessions, "a0000000000000a1"))) != 15 {
		t.Fatal("a dry run changed something")
	}
	if dry.CurvesBefore <= dry.CurvesAfter || dry.RunDirBytes != 2*(15*1000+500)-2*1000 /* the preset's two files */ {
		t.Errorf("dry run: curves %d → %d, run dirs %d", dry.CurvesBefore, dry.CurvesAfter, dry.RunDirBytes)
	}

	o.DryRun = false
	rep, err := r.p.Run(ctx, o, operator)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ids(dry), ids(rep)); diff != "" {
		t.Errorf("the run pruned other sessions than its dry run said (-dry +run):\n%s", diff)
	}
	if rep.CurvesBefore != dry.CurvesBefore || rep.CurvesAfter != dry.CurvesAfter || rep.RunDirBytes != dry.RunDirBytes {
		t.Errorf("the run's numbers %+v differ from the dry run's %+v", rep, dry)
	}
	// bbolt sizes a small file in powers of two: what compaction gives back shows as free
	// pages gone (the shrinking of a large file is in make bench).
	if free, _ := r.db.Free(ctx); !rep.Compacted || rep.FileAfter > rep.FileBefore || rep.Free < 64<<10 || free > 32<<10 {
		t.Errorf("compaction: %v, %d → %d bytes, %d free before, %d after", rep.Compacted, rep.FileBefore, rep.FileAfter, rep.Free, free)
	}
	for id, want := range map[string]int{"a0000000000000a1": 100, "b0000000000000b2": 100, "c0000000000000c3": 1000, "d0000000000000d4": 1000, "e0000000000000e5": 1000} {
		if got := r.points(t, id); got != want {
			t.Errorf("session %s: %d points per curve, want %d", id, got, want)
		}
	}
	presetFiles := []string{"trial-002-rung-0/model_300.pt", "trial-002-rung-0/policy.onnx"}
	for id, want := range map[string][]string{"a0000000000000a1": presetFiles, "b0000000000000b2": nil} {
		if got := files(t, filepath.Join(r.sessions, id)); !slices.Equal(got, want) {
			t.Errorf("session %s keeps %v on disk, want %v", id, got, want)
		}
		if got := files(t, filepath.Join(r.reports, session.Short(id))); len(got) > 0 {
			t.Errorf("session %s keeps its charts %v", id, got)
		}
	}
	if got := rep.Sessions[1].Kept; !slices.Equal(got, []string{"a0000000000000a1/trial-002-rung-0/policy.onnx", "a0000000000000a1/trial-002-rung-0/model_300.pt"}) {
		t.Errorf("the report names %v as kept", got)
	}
	for _, id := range []string{"c0000000000000c3", "d0000000000000d4", "e0000000000000e5"} {
		if n := len(files(t, filepath.Join(r.sessions, id))); n != 15 {
			t.Errorf("session %s has %d of its 15 files left", id, n)
		}
	}
	if diff := cmp.Diff(before, r.kept(t, all...)); diff != "" {
		t.Errorf("records changed (-before +after):\n%s", diff)
	}
	s, _ := r.db.Session(ctx, "a0000000000000a1")
	if s.Pruned == nil || s.Pruned.Curves != session.CurvesDownsample || s.Pruned.Points != 100 || !s.Pruned.RunDirs || !s.Pruned.At.Equal(now) {
		t.Errorf("session a1 is marked %+v", s.Pruned)
	}
	audit, _ := r.db.Audit(ctx, "")
	var kinds []string
	for _, e := range audit {
		if strings.HasPrefix(e.Kind, "prune") {
			kinds = append(kinds, e.Kind+" "+e.SessionID+" "+e.Actor.Name)
		}
	}
	if want := []string{"pruned b0000000000000b2 ana", "pruned a0000000000000a1 ana", "prune  ana"}; !slices.Equal(kinds, want) {
		t.Errorf("audit %v, want %v", kinds, want)
	}

	// Pruned once, passed over the next time; a stronger setting prunes again.
	again, err := r.p.Run(ctx, o, operator)
	if err != nil || len(again.Sessions) != 0 || again.Compacted {
		t.Errorf("a second run: %v sessions, compacted %v, %v; want nothing to do", ids(again), again.Compacted, err)
	}
	o.Curves = session.CurvesDrop
	drop, err := r.p.Run(ctx, o, operator)
	if err != nil || len(drop.Sessions) != 2 || r.points(t, "a0000000000000a1") != 0 || drop.RunDirBytes != 0 {
		t.Errorf("drop after downsample: %v, %d points left, %d run dir bytes, %v", ids(drop), r.points(t, "a0000000000000a1"), drop.RunDirBytes, err)
	}
	if diff := cmp.Diff(before, r.kept(t, all...)); diff != "" {
		t.Errorf("records changed by the drop (-before +after):\n%s", diff)
	}
}

func TestPruneOptionsAreChecked(t *testing.T) {
	r := newRig(t)
	_, err := r.p.Run(context.Background(), retention.Options{OlderThan: -time.Hour, KeepLast: -1, Curves: "shred", Points: 5}, operator)
	for _, want := range []string{"--older-than: -1h0m0s must not be negative", "--keep-last: -1 must not be negative", `--curves: "shred" is not downsample, drop or keep`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad options: %v, want %q", err, want)
		}
	}
	_, err = r.p.Run(context.Background(), retention.Options{Curves: session.CurvesDownsample, Points: 5}, operator)
	if err == nil || !strings.Contains(err.Error(), "--points: 5 is outside 20–4096") {
		t.Errorf("5 points: %v", err)
	}
}

func TestAge(t *testing.T) {
	for in, want := range map[string]time.Duration{"90d": 90 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "36h": 36 * time.Hour, "0d": 0, "1h30m": 90 * time.Minute} {
		got, err := retention.ParseAge(in)
		if err != nil || time.Duration(got) != want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v", in, time.Duration(got), err, want)
		}
	}
	for _, in := range []string{"", "90", "d", "-3d", "1.5d", "soon"} {
		if _, err := retention.ParseAge(in); err == nil || !strings.Contains(err.Error(), "is not an age like 90d") {
			t.Errorf("ParseAge(%q): %v", in, err)
		}
	}
	if s := retention.Age(90 * 24 * time.Hour).String(); s != "90d" {
		t.Errorf("90 days print as %s", s)
	}
}

// TestKeepLastCountsFinishedSessions: the newest KeepLast kept are finished sessions; an
// unfinished one (never pruned anyway) does not take a place among them (issue 28).
func TestKeepLastCountsFinishedSessions(t *testing.T) {
	r := newRig(t)
	r.add(t, "a0000000000000a1", session.StateSucceeded, 300, false) // old, the second newest finished
	r.add(t, "b0000000000000b2", session.StateSucceeded, 200, false) // old, the newest finished: kept
	r.add(t, "c0000000000000c3", session.StatePaused, 5, false)      // the newest, unfinished
	o := retention.Config{OlderThan: retention.Age(90 * 24 * time.Hour), KeepLast: 1, Curves: session.CurvesDownsample, Points: 100, RunDirs: true}.Options()
	o.DryRun = true
	rep, err := r.p.Run(context.Background(), o, operator)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a0000000000000a1"}; !slices.Equal(ids(rep), want) {
		t.Errorf("--keep-last 1 with an unfinished session newest picked %v, want %v", ids(rep), want)
	}
}

// TestReportedSizeIsTheFileSize: the size a prune reports after compaction is the data
// file's size on disk once the prune is done, its own audit line written (issue 28).
func TestReportedSizeIsTheFileSize(t *testing.T) {
	r := newRig(t)
	for i := range 6 {
		r.add(t, fmt.Sprintf("a00000000000000%d", i), session.StateSucceeded, 200+i, false)
	}
	o := retention.Config{OlderThan: retention.Age(90 * 24 * time.Hour), Curves: session.CurvesDrop, Points: 100, RunDirs: true, Compact: true}.Options()
	rep, err := r.p.Run(context.Background(), o, operator)
	if err != nil {
		t.Fatal(err)
	}
	size, err := r.db.Size()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Compacted || rep.FileAfter != size {
		t.Errorf("compacted %v, reported %d bytes after, the file holds %d", rep.Compacted, rep.FileAfter, size)
	}
}
