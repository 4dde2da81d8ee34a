package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
)

func TestCreateSession(t *testing.T) {
	tests := []struct {
		name     string
		stored   []session.Session
		create   session.Session
		want     error
		mentions []string
	}{
		{name: "first", create: newSession("s1", session.StateQueued, t0)},
		{
			name:   "after finished ones",
			stored: []session.Session{newSession("s1", session.StateSucceeded, t0), newSession("s2", session.StateFailed, t0), newSession("s3", session.StateCancelled, t0)},
			create: newSession("s4", session.StateQueued, t0),
		},
		{
			name:     "another is running",
			stored:   []session.Session{newSession("s1", session.StateSucceeded, t0), newSession("s2", session.StateAwaitingApproval, t0)},
			create:   newSession("s3", session.StateQueued, t0),
			want:     session.ErrBusy,
			mentions: []string{"s2", string(session.StateAwaitingApproval)},
		},
		{
			name:     "another is paused",
			stored:   []session.Session{newSession("old", session.StatePaused, t0)},
			create:   newSession("new", session.StateQueued, t0),
			want:     session.ErrBusy,
			mentions: []string{"old", "paused"},
		},
		{
			name:   "id taken",
			stored: []session.Session{newSession("s1", session.StateFailed, t0)},
			create: newSession("s1", session.StateQueued, t0),
			want:   session.ErrExists,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := openDB(t)
			for _, s := range tt.stored {
				// Stored one by one in a finished state, then set to theirs, to get past the rule.
				want := s.State
				s.State = session.StateFailed
				if err := db.CreateSession(ctx, s); err != nil {
					t.Fatal(err)
				}
				if _, err := db.UpdateSession(ctx, s.ID, func(s *session.Session) error { s.State = want; return nil }); err != nil {
					t.Fatal(err)
				}
			}
			err := db.CreateSession(ctx, tt.create)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("CreateSession: %v, want %v", err, tt.want)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("CreateSession: %q does not mention %q", err, m)
				}
			}
			sessions, err := db.Sessions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantN := len(tt.stored)
			if tt.want == nil {
				wantN++
			}
			if len(sessions) != wantN {
				t.Errorf("%d sessions stored, want %d", len(sessions), wantN)
			}
		})
	}
}

func TestCreateSessionRace(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = db.CreateSession(ctx, newSession(fmt.Sprint("s", i), session.StateQueued, t0)) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, session.ErrBusy):
			t.Errorf("CreateSession: %v, want ErrBusy", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d sessions created at once, want 1", ok)
	}
}

func TestSessionsNewestFirst(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	for i, id := range []string{"b", "c", "a", "d"} {
		s := newSession(id, session.StateSucceeded, t0.Add(time.Duration([]int{2, 1, 3, 1}[i])*time.Hour))
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	if diff := cmp.Diff([]string{"a", "b", "d", "c"}, ids); diff != "" {
		t.Errorf("Sessions order (-want +got):\n%s", diff)
	}
}

func TestSessionNotFound(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	if _, err := db.Session(ctx, "nope"); !errors.Is(err, session.ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Session: %v, want ErrNotFound naming nope", err)
	}
	_, err := db.UpdateSession(ctx, "nope", func(*session.Session) error { t.Error("fn called"); return nil })
	if !errors.Is(err, session.ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("UpdateSession: %v, want ErrNotFound naming nope", err)
	}
}

func TestUpdateSession(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	if err := db.CreateSession(ctx, newSession("s1", session.StateQueued, t0)); err != nil {
		t.Fatal(err)
	}
	got, err := db.UpdateSession(ctx, "s1", func(s *session.Session) error {
		s.State, s.Message = session.StateRunning, "training trial 1"
		return nil
	})
	if err != nil || got.State != session.StateRunning || got.Message != "training trial 1" {
		t.Fatalf("UpdateSession: %+v, %v", got, err)
	}

	sentinel := errors.New("refused by fn")
	_, err = db.UpdateSession(ctx, "s1", func(s *session.Session) error {
		s.State = session.StateFailed
		return fmt.Errorf("checking: %w", sentinel)
	})
	if !errors.Is(err, sentinel) {
		t.Errorf("UpdateSession with a failing fn: %v, want the fn's error", err)
	}
	_, err = db.UpdateSession(ctx, "s1", func(s *session.Session) error { s.ID = "other"; return nil })
	if !errors.Is(err, session.ErrConflict) {
		t.Errorf("UpdateSession changing the id: %v, want ErrConflict", err)
	}
	stored, err := db.Session(ctx, "s1")
	if err != nil || stored.State != session.StateRunning {
		t.Errorf("after aborted updates: %s, %v; want running", stored.State, err)
	}
}

func TestTrials(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	for _, id := range []string{"s1", "s2"} {
		if err := db.CreateSession(ctx, newSession(id, session.StateFailed, t0)); err != nil {
			t.Fatal(err)
		}
	}
	refs := []session.TrialRef{{Number: 10, Rung: 0}, {Number: 2, Rung: 1}, {Number: 2, Rung: 0}, {Number: 1, Rung: 2}, {Number: 300, Rung: 0}, {Number: 2, Rung: 2}}
	for _, r := range refs {
		tr := session.Trial{SessionID: "s1", Number: r.Number, Rung: r.Rung, State: session.TrialQueued}
		if err := db.PutTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PutTrial(ctx, session.Trial{SessionID: "s2", Number: 5}); err != nil {
		t.Fatal(err)
	}
	// Put replaces.
	if err := db.PutTrial(ctx, session.Trial{SessionID: "s1", Number: 2, Rung: 1, State: session.TrialCompleted}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutTrial(ctx, session.Trial{SessionID: "ghost", Number: 1}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("PutTrial of an unknown session: %v, want ErrNotFound", err)
	}

	order := func() []session.TrialRef {
		t.Helper()
		trials, err := db.Trials(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		var out []session.TrialRef
		for _, tr := range trials {
			out = append(out, tr.Ref())
			if tr.Ref() == (session.TrialRef{Number: 2, Rung: 1}) && tr.State != session.TrialCompleted {
				t.Errorf("trial 2@1 not replaced: %s", tr.State)
			}
		}
		return out
	}
	want := []session.TrialRef{{Number: 1, Rung: 2}, {Number: 2, Rung: 0}, {Number: 2, Rung: 1}, {Number: 2, Rung: 2}, {Number: 10, Rung: 0}, {Number: 300, Rung: 0}}
	if diff := cmp.Diff(want, order()); diff != "" {
		t.Errorf("Trials order (-want +got):\n%s", diff)
	}

	key := session.SeriesKey{SessionID: "s1", Number: 2, Rung: 1, Tag: "loss"}
	if err := db.PutSeries(ctx, key, []session.Point{{Step: 1, Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteTrial(ctx, "s1", session.TrialRef{Number: 2, Rung: 1}); err != nil {
		t.Fatalf("DeleteTrial: %v", err)
	}
	if diff := cmp.Diff([]session.TrialRef{{Number: 1, Rung: 2}, {Number: 2, Rung: 0}, {Number: 2, Rung: 2}, {Number: 10, Rung: 0}, {Number: 300, Rung: 0}}, order()); diff != "" {
		t.Errorf("Trials after delete (-want +got):\n%s", diff)
	}
	if _, err := db.Series(ctx, key); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Series of a deleted trial: %v, want ErrNotFound", err)
	}
	if err := db.DeleteTrial(ctx, "s1", session.TrialRef{Number: 2, Rung: 1}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("DeleteTrial twice: %v, want ErrNotFound", err)
	}
	if other, err := db.Trials(ctx, "s2"); err != nil || len(other) != 1 {
		t.Errorf("Trials of s2: %v, %v", other, err)
	}
	if none, err := db.Trials(ctx, "ghost"); err != nil || len(none) != 0 {
		t.Errorf("Trials of an unknown session: %v, %v", none, err)
	}
}

func TestProposals(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	if err := db.CreateSession(ctx, newSession("s1", session.StateRunning, t0)); err != nil {
		t.Fatal(err)
	}
	for _, seq := range []int{3, 1, 12, 2} {
		p := session.Proposal{ID: fmt.Sprint("p", seq), SessionID: "s1", Seq: seq, State: session.ProposalPending, CreatedAt: t0}
		if err := db.PutProposal(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// Re-putting with a new Seq moves it rather than duplicating it.
	if err := db.PutProposal(ctx, session.Proposal{ID: "p3", SessionID: "s1", Seq: 20, State: session.ProposalPending}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutProposal(ctx, session.Proposal{ID: "x", SessionID: "ghost"}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("PutProposal of an unknown session: %v, want ErrNotFound", err)
	}
	list, err := db.Proposals(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range list {
		ids = append(ids, p.ID)
	}
	if diff := cmp.Diff([]string{"p1", "p2", "p12", "p3"}, ids); diff != "" {
		t.Errorf("Proposals order (-want +got):\n%s", diff)
	}

	got, err := db.UpdateProposal(ctx, "s1", "p2", func(p *session.Proposal) error {
		p.State = session.ProposalRejected
		return nil
	})
	if err != nil || got.State != session.ProposalRejected || got.Seq != 2 {
		t.Errorf("UpdateProposal: %+v, %v", got, err)
	}
	for _, tc := range []struct{ session, id string }{{"s1", "nope"}, {"ghost", "p1"}} {
		_, err := db.UpdateProposal(ctx, tc.session, tc.id, func(*session.Proposal) error { return nil })
		if !errors.Is(err, session.ErrNotFound) || !strings.Contains(err.Error(), tc.id) {
			t.Errorf("UpdateProposal(%s, %s): %v, want ErrNotFound naming it", tc.session, tc.id, err)
		}
	}
	_, err = db.UpdateProposal(ctx, "s1", "p1", func(p *session.Proposal) error { p.ID = "p9"; return nil })
	if !errors.Is(err, session.ErrConflict) {
		t.Errorf("UpdateProposal changing the id: %v, want ErrConflict", err)
	}
}

// TestUpdateProposalDecidesOnce has two people approve and reject at once: exactly one
// decision is stored and the other sees it.
func TestUpdateProposalDecidesOnce(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	if err := db.CreateSession(ctx, newSession("s1", session.StateAwaitingApproval, t0)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutProposal(ctx, session.Proposal{ID: "p1", SessionID: "s1", Seq: 1, State: session.ProposalPending}); err != nil {
		t.Fatal(err)
	}
	errDecided := errors.New("already decided")
	people := []struct {
		name  string
		state session.ProposalState
	}{{"ana", session.ProposalApproved}, {"bo", session.ProposalRejected}, {"cy", session.ProposalApproved}, {"di", session.ProposalRejected}}
	errs := make([]error, len(people))
	var wg sync.WaitGroup
	for i, p := range people {
		wg.Go(func() {
			_, errs[i] = db.UpdateProposal(ctx, "s1", "p1", func(pr *session.Proposal) error {
				if pr.State != session.ProposalPending {
					return fmt.Errorf("%s decided by %s: %w", pr.ID, pr.Decision.By, errDecided)
				}
				pr.State = p.state
				pr.Decision = &session.Decision{Action: string(p.state), By: session.Actor{ID: p.name}, At: t0}
				return nil
			})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("both %s and %s decided", people[winner].name, people[i].name)
		case err == nil:
			winner = i
		case !errors.Is(err, errDecided):
			t.Errorf("%s: %v, want errDecided", people[i].name, err)
		}
	}
	if winner < 0 {
		t.Fatal("nobody decided")
	}
	list, err := db.Proposals(ctx, "s1")
	if err != nil || len(list) != 1 {
		t.Fatalf("Proposals: %v, %v", list, err)
	}
	if p := list[0]; p.State != people[winner].state || p.Decision.By.ID != people[winner].name {
		t.Errorf("stored decision %s by %s, want %s by %s", p.State, p.Decision.By.ID, people[winner].state, people[winner].name)
	}
}

func TestAudit(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	entries := []session.AuditEntry{
		{Time: t0, SessionID: "s1", Kind: "start", Actor: session.System},
		{Time: t0, Kind: "config", Actor: session.Actor{Platform: "cli", ID: "root"}},
		{Time: t0, SessionID: "s2", Kind: "start", Actor: session.System},
		{Time: t0, SessionID: "s1", Kind: "approve", Actor: session.Actor{Platform: "slack", ID: "U1"}, Detail: map[string]any{"proposal": "p1"}},
		{SessionID: "s1", Kind: "refused", Seq: 999}, // Seq is assigned, Time defaults to now
	}
	for _, e := range entries {
		if err := db.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	kinds := func(sessionID string) []string {
		t.Helper()
		list, err := db.Audit(ctx, sessionID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i, e := range list {
			if i > 0 && e.Seq <= list[i-1].Seq {
				t.Errorf("Audit(%q): seq %d after %d", sessionID, e.Seq, list[i-1].Seq)
			}
			if e.Time.IsZero() {
				t.Errorf("Audit(%q): entry %d has no time", sessionID, e.Seq)
			}
			out = append(out, fmt.Sprint(e.Seq, e.Kind))
		}
		return out
	}
	tests := []struct {
		session string
		want    []string
	}{
		{"", []string{"1start", "2config", "3start", "4approve", "5refused"}},
		{"s1", []string{"1start", "4approve", "5refused"}},
		{"s2", []string{"3start"}},
		{"ghost", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, kinds(tt.session)); diff != "" {
			t.Errorf("Audit(%q) (-want +got):\n%s", tt.session, diff)
		}
	}
	// AuditSince reads on from a cursor, across sessions.
	for _, tt := range []struct {
		after uint64
		want  []string
	}{
		{0, []string{"1start", "2config", "3start", "4approve", "5refused"}},
		{3, []string{"4approve", "5refused"}},
		{5, nil},
		{1 << 40, nil},
	} {
		list, err := db.AuditSince(ctx, tt.after)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range list {
			got = append(got, fmt.Sprint(e.Seq, e.Kind))
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("AuditSince(%d) (-want +got):\n%s", tt.after, diff)
		}
	}
	list, _ := db.Audit(ctx, "s1")
	if diff := cmp.Diff(map[string]any{"proposal": "p1"}, list[1].Detail); diff != "" {
		t.Errorf("audit detail (-want +got):\n%s", diff)
	}
}

func TestPresetsAreImmutable(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	first := session.Preset{Name: "run-b", SessionID: "s1", Score: 0.3, Config: session.RewardConfig{Weights: map[string]float64{"a": 1}}, CreatedAt: t0}
	if err := db.SavePreset(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := db.SavePreset(ctx, session.Preset{Name: "run-a", SessionID: "s2", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	err := db.SavePreset(ctx, session.Preset{Name: "run-b", SessionID: "s9", Score: 0.9})
	if !errors.Is(err, session.ErrExists) || !strings.Contains(err.Error(), "run-b") {
		t.Errorf("saving over a preset: %v, want ErrExists naming it", err)
	}
	got, err := db.Preset(ctx, "run-b")
	if diff := cmp.Diff(first, got); err != nil || diff != "" {
		t.Errorf("Preset: %v, diff (-want +got):\n%s", err, diff)
	}
	if _, err := db.Preset(ctx, "nope"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Preset(nope): %v, want ErrNotFound", err)
	}
	list, err := db.Presets(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "run-a" || list[1].Name != "run-b" {
		t.Errorf("Presets: %+v, %v; want run-a, run-b", list, err)
	}
}
