package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/bot"
	"tunebot/session"
	"tunebot/store"
)

// openDB opens a store in a fresh directory and closes it when the test ends.
func openDB(t testing.TB) (*store.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data", "tunebot.db")
	db, err := store.Open(path, store.Options{Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func newSession(id string, state session.State, created time.Time) session.Session {
	return session.Session{
		ID: id, State: state, Settings: session.DefaultSettings(), Owner: session.Actor{Platform: "slack", ID: "U1", Name: "ana"},
		Base:      session.RewardConfig{Weights: map[string]float64{"track_lin_vel": 1}, Params: map[string]float64{"std": 0.5}},
		BestTrial: -1, CreatedAt: created, UpdatedAt: created,
	}
}

func TestOpenCreatesDirectoryAndReopenKeepsEverything(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a", "b", "tunebot.db")
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data directory: %v, %v; want mode 0700", fi, err)
	}
	s := newSession("s1", session.StateRunning, t0)
	tr := session.Trial{SessionID: "s1", Number: 1, Rung: 0, State: session.TrialCompleted, Source: session.SourceBaseline,
		Score: &session.Score{Total: 0.25, Eligible: true}, Metrics: session.Metrics{"vel": 0.1}}
	p := session.Proposal{ID: "p1", SessionID: "s1", Seq: 1, State: session.ProposalPending, CreatedAt: t0}
	pr := session.Preset{Name: "auto-tune-s1", SessionID: "s1", Trial: session.TrialRef{Number: 1}, CreatedAt: t0}
	pts := []session.Point{{Step: 1, Value: 2}, {Step: 5, Value: -3}}
	key := session.SeriesKey{SessionID: "s1", Number: 1, Tag: "Train/mean_reward"}
	steps := []error{
		db.CreateSession(ctx, s),
		db.PutTrial(ctx, tr),
		db.PutProposal(ctx, p),
		db.SavePreset(ctx, pr),
		db.Append(ctx, session.AuditEntry{Time: t0, SessionID: "s1", Kind: "start", Actor: session.System}),
		db.PutSeries(ctx, key, pts),
	}
	item, err := db.Enqueue(ctx, bot.OutboxItem{Platform: "slack", Thread: "T", Kind: "message", Body: []byte("hi"), CreatedAt: t0})
	steps = append(steps, err)
	if err := errors.Join(steps...); err != nil {
		t.Fatalf("writing: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	db, err = store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	defer db.Close()
	gotS, err := db.Session(ctx, "s1")
	if diff := cmp.Diff(s, gotS); err != nil || diff != "" {
		t.Errorf("session after reopen: %v, diff (-want +got):\n%s", err, diff)
	}
	gotT, err := db.Trials(ctx, "s1")
	if diff := cmp.Diff([]session.Trial{tr}, gotT); err != nil || diff != "" {
		t.Errorf("trials after reopen: %v, diff:\n%s", err, diff)
	}
	gotP, err := db.Proposals(ctx, "s1")
	if diff := cmp.Diff([]session.Proposal{p}, gotP); err != nil || diff != "" {
		t.Errorf("proposals after reopen: %v, diff:\n%s", err, diff)
	}
	gotPr, err := db.Preset(ctx, pr.Name)
	if diff := cmp.Diff(pr, gotPr); err != nil || diff != "" {
		t.Errorf("preset after reopen: %v, diff:\n%s", err, diff)
	}
	gotA, err := db.Audit(ctx, "s1")
	if err != nil || len(gotA) != 1 || gotA[0].Kind != "start" || gotA[0].Seq != 1 {
		t.Errorf("audit after reopen: %v, %+v", err, gotA)
	}
	gotPts, err := db.Series(ctx, key)
	if diff := cmp.Diff(pts, gotPts); err != nil || diff != "" {
		t.Errorf("series after reopen: %v, diff:\n%s", err, diff)
	}
	due, err := db.Due(ctx, "slack", t0, 0)
	if diff := cmp.Diff([]bot.OutboxItem{item}, due); err != nil || diff != "" {
		t.Errorf("outbox after reopen: %v, diff:\n%s", err, diff)
	}
}

func TestOpenLockedFailsFast(t *testing.T) {
	_, path := openDB(t)
	_, err := store.Open(path, store.Options{Timeout: 20 * time.Millisecond})
	if !errors.Is(err, session.ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	want := fmt.Sprintf("data file %s is in use by another tunebot process (stop it or use another data_dir)", path)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("second Open: %q, want it to contain %q", err, want)
	}
}

func TestOpenUnusablePath(t *testing.T) {
	dir := t.TempDir()
	// A file where the data directory should be fails even for root, unlike a chmod.
	blocker := filepath.Join(dir, "notadir")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a bbolt file ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, mention string
	}{
		{"directory is a file", filepath.Join(blocker, "sub", "tunebot.db"), filepath.Join(blocker, "sub")},
		{"data file is a directory", dir, dir},
		{"data file is not bbolt", garbage, garbage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := store.Open(tt.path, store.Options{Timeout: 20 * time.Millisecond})
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("Open: %q does not name %s", err, tt.mention)
			}
		})
	}
}

func TestOpenNewerSchema(t *testing.T) {
	db, path := openDB(t)
	db.Close()
	asVersion(t, path, store.SchemaVersion+1, nil)
	db, err := store.Open(path, store.Options{})
	if err == nil {
		db.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
	for _, want := range []string{path, fmt.Sprint("version ", store.SchemaVersion+1), fmt.Sprint("version ", store.SchemaVersion)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open: %q does not mention %q", err, want)
		}
	}
}

func TestCancelledContext(t *testing.T) {
	db, _ := openDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := db.CreateSession(ctx, newSession("s1", session.StateQueued, t0)); !errors.Is(err, context.Canceled) {
		t.Errorf("CreateSession with a cancelled context: %v", err)
	}
	if _, err := db.Sessions(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Sessions with a cancelled context: %v", err)
	}
}

// TestConcurrentReadersAndWriter checks under -race that readers always see whole records
// while a writer keeps adding trials and series.
func TestConcurrentReadersAndWriter(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	if err := db.CreateSession(ctx, newSession("s1", session.StateRunning, t0)); err != nil {
		t.Fatal(err)
	}
	const n = 30
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := range n {
			tr := session.Trial{SessionID: "s1", Number: i, State: session.TrialCompleted}
			if err := db.PutTrial(ctx, tr); err != nil {
				errs <- err
				return
			}
			pts := []session.Point{{Step: int64(i), Value: float64(i)}}
			if err := db.PutSeriesBatch(ctx, "s1", tr.Ref(), map[string][]session.Point{"a": pts, "b": pts}); err != nil {
				errs <- err
				return
			}
		}
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				trials, err := db.Trials(ctx, "s1")
				if err != nil {
					errs <- err
					return
				}
				if len(trials) < last {
					errs <- fmt.Errorf("trials went from %d to %d", last, len(trials))
					return
				}
				last = len(trials)
				for i, tr := range trials {
					if tr.Number != i {
						errs <- fmt.Errorf("trial %d at position %d", tr.Number, i)
						return
					}
				}
				if _, err := db.Sessions(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	trials, err := db.Trials(ctx, "s1")
	if err != nil || len(trials) != n {
		t.Fatalf("Trials: %d, %v; want %d", len(trials), err, n)
	}
}
