package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
	"tunebot/store"
)

// curve is n points of a training curve.
func curve(n int) []session.Point {
	pts := make([]session.Point, n)
	for i := range pts {
		pts[i] = session.Point{Step: int64(i * 10), Value: float64(i%37) / 3}
	}
	return pts
}

// fillSession stores a finished session with trials, a proposal, audit lines, a preset and
// curves of 3 tags × 3000 points per trial, plus one short curve.
func fillSession(t *testing.T, db *store.DB, id string, created time.Time) {
	t.Helper()
	ctx := context.Background()
	if err := db.CreateSession(ctx, newSession(id, session.StateSucceeded, created)); err != nil {
		t.Fatal(err)
	}
	for n := range 3 {
		score := &session.Score{Total: float64(n) / 10, Eligible: true}
		tr := session.Trial{SessionID: id, Number: n, State: session.TrialCompleted, Score: score, RunDir: fmt.Sprintf("trial-%03d-rung-0", n),
			RewardConfig: session.RewardConfig{Weights: map[string]float64{"pose": float64(n)}}}
		if err := db.PutTrialAudited(ctx, tr, session.AuditEntry{SessionID: id, Kind: "trial_finished", Actor: session.System}); err != nil {
			t.Fatal(err)
		}
		series := map[string][]session.Point{"Train/mean_reward": curve(3000), "Loss/value": curve(3000), "Episode/terms": curve(3000), "Eval/short": curve(50)}
		if err := db.PutSeriesBatch(ctx, id, tr.Ref(), series); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PutProposal(ctx, session.Proposal{ID: id + "-p1", SessionID: id, Seq: 1, Number: 1, State: session.ProposalUsed}); err != nil {
		t.Fatal(err)
	}
	if err := db.SavePreset(ctx, session.Preset{Name: "auto-" + id, SessionID: id, Trial: session.TrialRef{Number: 2}, CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
}

// records is everything but the curves, to compare before and after.
type records struct {
	Sessions  []session.Session
	Trials    map[string][]session.Trial
	Proposals map[string][]session.Proposal
	Audit     []session.AuditEntry
	Presets   []session.Preset
}

func allRecords(t *testing.T, db *store.DB) records {
	t.Helper()
	ctx := context.Background()
	r := records{Trials: map[string][]session.Trial{}, Proposals: map[string][]session.Proposal{}}
	var err error
	if r.Sessions, err = db.Sessions(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Sessions {
		if r.Trials[s.ID], err = db.Trials(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if r.Proposals[s.ID], err = db.Proposals(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
	}
	if r.Audit, err = db.Audit(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if r.Presets, err = db.Presets(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPruneSeriesThinsOrDropsOneSessionsCurves(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	fillSession(t, db, "old", t0)
	fillSession(t, db, "new", t0.Add(time.Hour))
	recs := allRecords(t, db)
	key := func(id, tag string) session.SeriesKey {
		return session.SeriesKey{SessionID: id, Number: 1, Tag: tag}
	}

	before, after, err := db.PruneSeries(ctx, "old", 200, true)
	if err != nil || before <= 0 || after <= 0 || after >= before/5 {
		t.Fatalf("dry run: %d → %d bytes, %v; want a fifth or less", before, after, err)
	}
	if pts, _ := db.Series(ctx, key("old", "Loss/value")); len(pts) != 3000 {
		t.Fatalf("a dry run changed a curve: %d points", len(pts))
	}
	b2, a2, err := db.PruneSeries(ctx, "old", 200, false)
	if err != nil || b2 != before || a2 != after {
		t.Fatalf("prune: %d → %d, %v; the dry run said %d → %d", b2, a2, err, before, after)
	}
	full := curve(3000)
	thin, err := db.Series(ctx, key("old", "Loss/value"))
	if err != nil || len(thin) != 200 || thin[0] != full[0] || thin[199] != full[2999] {
		t.Errorf("thinned curve: %d points from %v to %v, %v; want 200 with both ends", len(thin), thin[0], thin[len(thin)-1], err)
	}
	if short, _ := db.Series(ctx, key("old", "Eval/short")); len(short) != 50 {
		t.Errorf("a curve of 50 points has %d after thinning to 200", len(short))
	}
	if kept, _ := db.Series(ctx, key("new", "Loss/value")); len(kept) != 3000 {
		t.Errorf("the other session's curve has %d points, want 3000", len(kept))
	}
	if _, _, err := db.PruneSeries(ctx, "old", 0, false); err != nil {
		t.Fatal(err)
	}
	if tags, err := db.SeriesTags(ctx, "old", session.TrialRef{Number: 1}); err != nil || len(tags) != 0 {
		t.Errorf("after drop, tags %v, %v", tags, err)
	}
	if _, err := db.Series(ctx, key("old", "Loss/value")); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("a dropped curve: %v, want ErrNotFound", err)
	}
	if b, a, err := db.PruneSeries(ctx, "none", 200, false); err != nil || b != 0 || a != 0 {
		t.Errorf("a session without curves: %d → %d, %v", b, a, err)
	}
	if diff := cmp.Diff(recs, allRecords(t, db)); diff != "" {
		t.Errorf("pruning curves changed other records (-before +after):\n%s", diff)
	}
}

// Compaction gives back what pruning freed and keeps every record, the audit's sequence
// included; the store goes on working on the new file, and writes made while it ran are kept.
func TestCompactShrinksTheFileAndKeepsEverything(t *testing.T) {
	ctx := context.Background()
	db, path := openDB(t)
	for i := range 6 {
		fillSession(t, db, fmt.Sprintf("s%d", i), t0.Add(time.Duration(i)*time.Hour))
	}
	for i := range 5 {
		if _, _, err := db.PruneSeries(ctx, fmt.Sprintf("s%d", i), 0, false); err != nil {
			t.Fatal(err)
		}
	}
	recs := allRecords(t, db)
	grown, _ := db.Size()

	// Writers keep going while it compacts; none of their writes may be lost.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var written []int
	first := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 100; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := db.PutTrial(ctx, session.Trial{SessionID: "s5", Number: n, State: session.TrialCompleted}); err != nil {
				t.Error(err)
				return
			}
			written = append(written, n)
			if n == 100 {
				close(first)
			}
		}
	}()
	<-first
	before, after, err := db.Compact(ctx)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if before != grown || after >= before/2 {
		t.Errorf("Compact: %d → %d bytes; want less than half of %d", before, after, grown)
	}
	// A small file grows to bbolt's next mapping size (a power of two below 1 GiB) the
	// first time a write needs a page past its end, whatever that write's size.
	grownTo := int64(32 << 10)
	for grownTo < after {
		grownTo *= 2
	}
	if size, _ := db.Size(); size > max(grownTo, after)+int64(len(written))*64<<10 {
		t.Errorf("the data file is %d bytes after compacting to %d", size, after)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*compact*")); len(left) > 0 {
		t.Errorf("temporary files left beside the data file: %v", left)
	}
	if err := db.Append(ctx, session.AuditEntry{Kind: "after", Actor: session.System}); err != nil {
		t.Fatal(err)
	}
	if pts, err := db.Series(ctx, session.SeriesKey{SessionID: "s5", Number: 1, Tag: "Loss/value"}); err != nil || len(pts) != 3000 {
		t.Errorf("a kept curve after compaction: %d points, %v", len(pts), err)
	}
	db.Close()

	db, err = store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("reopening the compacted file: %v", err)
	}
	defer db.Close()
	got := allRecords(t, db)
	last := got.Audit[len(got.Audit)-1]
	if last.Kind != "after" || last.Seq != recs.Audit[len(recs.Audit)-1].Seq+1 {
		t.Errorf("the audit entry after compaction is %s #%d, want the next number after #%d", last.Kind, last.Seq, recs.Audit[len(recs.Audit)-1].Seq)
	}
	got.Audit = got.Audit[:len(got.Audit)-1]
	trials := got.Trials["s5"]
	got.Trials["s5"] = trials[:3]
	if diff := cmp.Diff(recs, got); diff != "" {
		t.Errorf("records changed by compaction (-before +after):\n%s", diff)
	}
	if len(trials)-3 != len(written) {
		t.Errorf("%d trials written while compacting, %d found after", len(written), len(trials)-3)
	}
}

func TestCompactRefusesReadOnly(t *testing.T) {
	db, path := openDB(t)
	db.Close()
	ro, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, _, err := ro.Compact(context.Background()); err == nil {
		t.Error("Compact of a read-only store succeeded")
	}
	if _, err := os.Stat(path); err != nil {
		t.Error(err)
	}
}
