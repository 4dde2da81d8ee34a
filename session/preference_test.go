package session_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"tunebot/session"
)

var bea = session.Actor{Platform: "slack", ID: "U2", Name: "bea"}

// session reads session id as stored.
func (h *harness) session(id string) session.Session {
	h.t.Helper()
	s, err := h.db.Session(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// An always-improving search asks "which walks better?" when trial 1 finishes (A: trial 1,
// B: the best so far, the baseline); the answer is one decision, goes to the next
// proposals with its note, and the next card is asked only once none is open, at most
// preferences.max in all. The last one, unanswered, expires when rung 0 ends.
func TestPreferenceCards(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	gate := make(chan struct{})
	h.tr.trainGate[session.TrialRef{Number: 2}] = gate
	st := settings(session.ModeAutomatic)
	st.Preferences.Max = 2
	s, err := h.eng.Start(ctx, st, console)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"train 0/0", "eval 0/0", "train 1/0", "eval 1/0", "train 2/0"} {
		h.expect(j)
	}
	card, ok := h.session(s.ID).OpenCard()
	if !ok || card.A != 1 || card.B != 0 || !card.Asked || card.AConfig.Equal(card.BConfig) {
		t.Fatalf("open card %+v (%v), want trial 1 against the baseline with both configurations", card, ok)
	}
	p, err := h.eng.Prefer(ctx, session.PreferRequest{SessionID: s.ID, Card: card.Seq, Answer: session.AnswerA, Note: "trots; the baseline shuffles", By: console})
	if err != nil || p.Answer != session.AnswerA || p.By == nil || p.By.ID != console.ID {
		t.Fatalf("answer: %+v, %v", p, err)
	}
	// A second click, another person: one decision, and the answer names the first.
	_, err = h.eng.Prefer(ctx, session.PreferRequest{SessionID: s.ID, Card: card.Seq, Answer: session.AnswerB, By: bea})
	if !errors.Is(err, session.ErrConflict) || !strings.Contains(err.Error(), "already compared by ana") {
		t.Fatalf("second answer: %v, want refused naming ana", err)
	}
	// The typed form of the same pair is the same decision.
	if _, err := h.eng.Prefer(ctx, session.PreferRequest{SessionID: s.ID, Winner: 0, Loser: 1, By: bea}); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("typed answer of a decided pair: %v", err)
	}
	// Whoever answered may add a note by answering the same again.
	if p, err = h.eng.Prefer(ctx, session.PreferRequest{SessionID: s.ID, Winner: 1, Loser: 0, Note: "trots, no hopping", By: console}); err != nil || p.Note != "trots, no hopping" {
		t.Fatalf("note added: %+v, %v", p, err)
	}
	close(gate)
	s = h.wait(s.ID)
	if s.State != session.StateSucceeded {
		t.Fatalf("state %s: %s", s.State, s.Reason)
	}
	var asked []session.Preference
	for _, p := range s.Preferences {
		if p.Asked {
			asked = append(asked, p)
		}
	}
	if len(asked) != 2 || asked[1].A != 2 || asked[1].B != 1 || !asked[1].Expired || asked[1].Decided() {
		t.Fatalf("cards %+v, want 2 asked (max), the second (trial 2 against trial 1) expired unanswered", s.Preferences)
	}
	reqs := h.adv.requests()
	if len(reqs) < 3 || len(reqs[2].Preferences) != 1 || reqs[2].Preferences[0].Note != "trots, no hopping" ||
		reqs[2].PreferenceWeight != st.Preferences.Weight {
		t.Fatalf("the proposal after the answer was asked with %+v", reqs[min(2, len(reqs)-1)].Preferences)
	}
	if len(reqs[0].Preferences) != 0 {
		t.Errorf("the first proposal already had preferences: %+v", reqs[0].Preferences)
	}
	h.eng.Shutdown(ctx)
	if h.note.count(session.EventPreferenceAsked) != 2 || h.note.count(session.EventPreference) != 3 {
		t.Errorf("events %v: want 2 cards asked and 3 updates (the answer, the note, the expiry)", h.note.kinds)
	}
	audit, _ := h.db.Audit(ctx, s.ID)
	kinds := map[string]int{}
	for _, a := range audit {
		kinds[a.Kind]++
	}
	if kinds["preference_asked"] != 2 || kinds["preference"] != 2 || kinds["preference_expired"] != 1 {
		t.Errorf("audit %v", kinds)
	}
}

// With preferences.ask off no card is asked; a preference typed on a person's own is
// still taken, once per pair, and only of finished rung-0 trials.
func TestPreferencesOffAndTyped(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	st := settings(session.ModeApproval)
	st.Preferences.Ask = session.AskOff
	s, err := h.eng.Start(ctx, st, console)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if s = h.wait(s.ID); s.State != session.StateAwaitingApproval {
			t.Fatalf("state %s", s.State)
		}
		if _, err := h.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionApprove, By: console}); err != nil {
			t.Fatal(err)
		}
	}
	s = h.wait(s.ID)
	if len(s.Preferences) != 0 {
		t.Fatalf("cards asked with ask off: %+v", s.Preferences)
	}
	if _, err := h.eng.Prefer(ctx, session.PreferRequest{SessionID: s.ID, Winner: 1, Loser: 9, By: console}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("a trial that does not exist: %v", err)
	}
	p, err := h.eng.Prefer(ctx, session.PreferRequest{SessionID: s.ID, Winner: 2, Loser: 1, Note: "smoother", By: console})
	if err != nil || p.Asked || p.A != 2 || p.B != 1 {
		t.Fatalf("typed preference: %+v, %v", p, err)
	}
	if w, l, ok := p.Winner(); !ok || w != 2 || l != 1 || p.Verdict() != "trial 2 walks better than trial 1" {
		t.Errorf("winner %d over %d (%v): %q", w, l, ok, p.Verdict())
	}
	if _, err := h.eng.Prefer(ctx, session.PreferRequest{SessionID: s.ID, Winner: 1, Loser: 2, Tie: true, By: bea}); !errors.Is(err, session.ErrConflict) {
		t.Errorf("a second answer on the pair: %v", err)
	}
}

func trialAt(n int, score float64) session.Trial {
	return session.Trial{Number: n, State: session.TrialCompleted, Score: &session.Score{Total: score, Eligible: true}}
}

func numbers(ts []session.Trial) []int {
	out := make([]int, len(ts))
	for i, t := range ts {
		out[i] = t.Number
	}
	return out
}

func answered(win, lose int) session.Preference {
	return session.Preference{A: win, B: lose, Answer: session.AnswerA}
}

// Halving respects people's preferences within the noise, and never past it; a trial a
// person marked worse than the baseline goes after every tuned trial nobody marked.
func TestRankForPromotion(t *testing.T) {
	ts := []session.Trial{trialAt(1, 0.100), trialAt(2, 0.095), trialAt(3, 0.092), trialAt(4, 0.050), trialAt(5, 0.040)}
	tests := []struct {
		name  string
		prefs []session.Preference
		want  []int
	}{
		{"by score", nil, []int{1, 2, 3, 4, 5}},
		{"preferred within the noise", []session.Preference{answered(3, 1)}, []int{3, 1, 2, 4, 5}},
		{"preferred outside the noise", []session.Preference{answered(4, 1)}, []int{1, 2, 3, 4, 5}},
		{"can't tell changes nothing", []session.Preference{{A: 2, B: 1, Answer: session.AnswerTie}}, []int{1, 2, 3, 4, 5}},
		{"worse than the baseline", []session.Preference{answered(0, 1)}, []int{2, 3, 4, 5, 1}},
		{"a cycle ends", []session.Preference{answered(2, 1), answered(3, 2), answered(1, 3)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := numbers(session.RankForPromotion(session.DefaultSettings(), ts, ts, tt.prefs))
			if tt.want == nil {
				slices.Sort(got)
				tt.want = []int{1, 2, 3, 4, 5}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("rank %v, want %v", got, tt.want)
			}
		})
	}
}

// waitFor waits until session id, as stored, is what ok says.
func (h *harness) waitFor(id string, ok func(session.Session) bool) session.Session {
	h.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		ch := h.eng.Changed()
		s := h.session(id)
		if ok(s) {
			return s
		}
		if !s.State.Active() {
			h.t.Fatalf("session %s ended: %s", s.State, s.Reason)
		}
		select {
		case <-ch:
		case <-deadline:
			h.t.Fatalf("session %s: %s; still not what the test waits for", s.State, s.Message)
		}
	}
}

// waitReview waits until session id's promotion review of rung waits for people.
func (h *harness) waitReview(id string, rung int) (session.Session, session.Review) {
	h.t.Helper()
	s := h.waitFor(id, func(s session.Session) bool { r, ok := s.OpenReview(); return ok && r.Rung == rung })
	r, _ := s.OpenReview()
	return s, r
}

// A promotion plan waits for people as long as promotion_review says; drop and promote
// change which trials train at the next rung (the budget kept), Go starts them, and the
// promoted trial records who put it there.
func TestPromotionReview(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	st := settings(session.ModeAutomatic)
	hour := time.Hour
	st.PromotionReview = &hour
	s, err := h.eng.Start(ctx, st, console)
	if err != nil {
		t.Fatal(err)
	}
	s, rv := h.waitReview(s.ID, 1)
	// Every search trial improved on the last: the plan is the newest four.
	if !slices.Equal(rv.Plan, []int{5, 4, 3, 2}) || !strings.Contains(s.Message, "trials 5, 4, 3 and 2 go to 20 iterations") {
		t.Fatalf("plan %v, message %q", rv.Plan, s.Message)
	}
	if len(h.trials(s.ID)) != 6 || s.State != session.StateRunning {
		t.Fatalf("the review did not hold the promotions: %d trials, %s", len(h.trials(s.ID)), s.State)
	}
	if _, _, err := h.eng.Review(ctx, session.ReviewRequest{SessionID: s.ID, Action: session.ReviewDrop, Trial: 1, By: bea}); !errors.Is(err, session.ErrConflict) {
		t.Errorf("dropping a trial that is not planned: %v", err)
	}
	rv, text, err := h.eng.Review(ctx, session.ReviewRequest{SessionID: s.ID, Action: session.ReviewDrop, Trial: 4, By: bea})
	if err != nil || !slices.Equal(rv.Plan, []int{5, 3, 2, 1}) || !strings.Contains(text, "trial 1, next in rank, takes its place") {
		t.Fatalf("drop 4: %v %q %v", rv.Plan, text, err)
	}
	rv, _, err = h.eng.Review(ctx, session.ReviewRequest{SessionID: s.ID, Action: session.ReviewPromote, Trial: 0, By: console})
	if err != nil || !slices.Equal(rv.Plan, []int{5, 3, 2, 0}) {
		t.Fatalf("promote 0: %v %v", rv.Plan, err)
	}
	gate := make(chan struct{})
	h.tr.trainGate[session.TrialRef{Number: 5, Rung: 1}] = gate
	if _, _, err := h.eng.Review(ctx, session.ReviewRequest{SessionID: s.ID, Action: session.ReviewGo, By: bea}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.eng.Review(ctx, session.ReviewRequest{SessionID: s.ID, Action: session.ReviewPromote, Trial: 4, By: bea}); !errors.Is(err, session.ErrConflict) ||
		!strings.Contains(err.Error(), "have started (bea said go") {
		t.Errorf("a change after go: %v", err)
	}
	close(gate)
	_, rv = h.waitReview(s.ID, 2)
	if _, _, err := h.eng.Review(ctx, session.ReviewRequest{SessionID: s.ID, Action: session.ReviewGo, By: bea}); err != nil {
		t.Fatal(err)
	}
	s = h.wait(s.ID)
	if s.State != session.StateSucceeded {
		t.Fatalf("state %s: %s", s.State, s.Reason)
	}
	var rung1 []int
	for _, tr := range h.trials(s.ID) {
		if tr.Rung == 1 {
			rung1 = append(rung1, tr.Number)
			switch {
			case tr.Number == 0 && (tr.PromotedBy == nil || tr.PromotedBy.Text() != "promoted by ana over trial 1"):
				t.Errorf("trial 0@1 promoted by %+v", tr.PromotedBy)
			case tr.Number != 0 && tr.PromotedBy != nil:
				t.Errorf("trial %d@1 promoted by %+v, want tunebot's plan", tr.Number, tr.PromotedBy)
			}
		}
	}
	if !slices.Equal(rung1, []int{0, 2, 3, 5}) {
		t.Errorf("rung 1 trained %v, want the reviewed plan 0, 2, 3, 5", rung1)
	}
	if len(s.Reviews) != 2 || s.Reviews[0].GoBy == nil || s.Reviews[0].GoBy.ID != bea.ID || len(s.Reviews[0].Changes) != 2 {
		t.Errorf("reviews %+v", s.Reviews)
	}
}

// A session killed while its promotion review waits (approval mode) still waits after the
// restart, with the review's clock running, and Go goes on.
func TestPromotionReviewSurvivesACrash(t *testing.T) {
	a := newHarness(t, t.TempDir())
	ctx := context.Background()
	s := a.reviewWaiting()
	if s.State != session.StateAwaitingApproval || !strings.Contains(s.Message, "promotion review for rung 1") {
		t.Fatalf("approval mode waits for the review: %s %q", s.State, s.Message)
	}
	bdir := t.TempDir()
	copyTree(t, a.dir, bdir) // kill -9: the disk as it is now
	b := newHarness(t, bdir)
	if err := b.eng.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.session(s.ID); got.State != session.StateAwaitingApproval || !b.eng.Running(s.ID) {
		t.Fatalf("after the restart: %s, worker running %v; want the review waiting on its clock", got.State, b.eng.Running(s.ID))
	}
	if _, err := b.eng.Resume(ctx, s.ID, console); err == nil || !strings.Contains(err.Error(), "promotion review") {
		t.Errorf("resume of a reviewing session: %v", err)
	}
	if _, _, err := b.eng.Review(ctx, session.ReviewRequest{SessionID: s.ID, Action: session.ReviewGo, By: console}); err != nil {
		t.Fatal(err)
	}
	_, rv := b.waitReview(s.ID, 2)
	if _, _, err := b.eng.Review(ctx, session.ReviewRequest{SessionID: s.ID, Action: session.ReviewGo, By: console}); err != nil {
		t.Fatal(err)
	}
	if got := b.wait(s.ID); got.State != session.StateSucceeded || len(rv.Plan) != 2 {
		t.Fatalf("after go: %s (%s), rung-2 plan %v", got.State, got.Reason, rv.Plan)
	}
}

// A review whose wait runs out goes ahead by itself.
func TestPromotionReviewTimesOut(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	st := settings(session.ModeAutomatic)
	wait := 50 * time.Millisecond
	st.PromotionReview = &wait
	s, err := h.eng.Start(ctx, st, console)
	if err != nil {
		t.Fatal(err)
	}
	s = h.wait(s.ID)
	if s.State != session.StateSucceeded || len(s.Reviews) != 2 {
		t.Fatalf("state %s, reviews %+v", s.State, s.Reviews)
	}
	for _, r := range s.Reviews {
		if !r.Done || r.GoBy != nil || r.DoneAt.Before(r.Until) {
			t.Errorf("review %+v: want done by its clock", r)
		}
	}
}

func TestPlanText(t *testing.T) {
	for _, tt := range []struct {
		plan []int
		want string
	}{
		{[]int{8, 10, 5, 0}, "trials 8, 10, 5 and the baseline go to 900 iterations"},
		{[]int{8, 10}, "trials 8 and 10 go to 900 iterations"},
		{[]int{8, 0}, "trial 8 and the baseline go to 900 iterations"},
		{[]int{8}, "trial 8 goes to 900 iterations"},
		{[]int{0}, "the baseline goes to 900 iterations"},
	} {
		if got := session.PlanText(tt.plan, 900); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.plan, got, tt.want)
		}
	}
}

// reviewWaiting starts an approval-mode session of 4 trials whose promotion review waits an
// hour, approves each proposal, and returns it once rung 1's plan waits, its worker settled
// on the review's clock.
func (h *harness) reviewWaiting() session.Session {
	h.t.Helper()
	ctx := context.Background()
	st := settings(session.ModeApproval)
	hour := time.Hour
	st.PromotionReview = &hour
	st.TrialCount, st.Promote = 4, nil
	st.Normalize()
	s, err := h.eng.Start(ctx, st, console)
	if err != nil {
		h.t.Fatal(err)
	}
	for {
		s = h.waitFor(s.ID, func(s session.Session) bool {
			_, review := s.OpenReview()
			ps, _ := h.db.Proposals(ctx, s.ID)
			return review && h.eng.Settled(s.ID) || slices.ContainsFunc(ps, func(p session.Proposal) bool { return p.State == session.ProposalPending })
		})
		if _, ok := s.OpenReview(); ok {
			return s
		}
		if _, err := h.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionApprove, By: console}); err != nil {
			h.t.Fatal(err)
		}
	}
}

// A promotion review that waits on its clock (approval mode) is settled: only people or the
// clock move it on. Go unsettles it at once, before its worker has planned again; a pause
// makes the worker leave at once instead of at the clock, the session paused.
func TestPromotionReviewSettledAndPaused(t *testing.T) {
	for _, action := range []string{"go", "pause"} {
		t.Run(action, func(t *testing.T) {
			h := newHarness(t, t.TempDir())
			ctx := context.Background()
			s := h.reviewWaiting()
			if s.State != session.StateAwaitingApproval || !h.eng.Running(s.ID) {
				t.Fatalf("the review: %s, worker running %v; want its worker waiting on the clock", s.State, h.eng.Running(s.ID))
			}
			switch action {
			case "go":
				gate := make(chan struct{})
				rv, _ := s.OpenReview()
				for _, n := range rv.Plan {
					h.tr.trainGate[session.TrialRef{Number: n, Rung: 1}] = gate
				}
				if _, _, err := h.eng.Review(ctx, session.ReviewRequest{SessionID: s.ID, Action: session.ReviewGo, By: console}); err != nil {
					t.Fatal(err)
				}
				if h.eng.Settled(s.ID) {
					t.Fatal("settled right after go: the promotions have yet to start")
				}
				close(gate)
				h.waitFor(s.ID, func(s session.Session) bool { // rung 2's review, on its clock
					rv, ok := s.OpenReview()
					return ok && rv.Rung == 2 && h.eng.Settled(s.ID)
				})
			case "pause":
				if _, err := h.eng.Pause(ctx, s.ID, console); err != nil {
					t.Fatal(err)
				}
				// The review waits an hour: the worker leaves on the pause, not at the clock.
				if s = h.wait(s.ID); s.State != session.StatePaused {
					t.Fatalf("after the pause: %s, want paused", s.State)
				}
			}
		})
	}
}

// TestAskedWhy (issue 35 item 9): an A/B card says "within the noise" only when A scored
// within NoiseMargin of B; a trial above the best by more says so, with both scores. A B
// that is the baseline is named so, not "the best so far" alone (issue 43, item 7.5).
func TestAskedWhy(t *testing.T) {
	for _, tt := range []struct {
		b              int
		aScore, bScore float64
		want           string
	}{
		{0, 0.066, 0, "A, trial 7, just finished at +0.066, above the baseline, still the best so far (B, trial 0, at +0.000), by more than the noise (0.01)"},
		{0, 0.004, 0, "A, trial 7, just finished at +0.004, within the noise (0.01) of the baseline, still the best so far (B, trial 0, at +0.000)"},
		{4, 0.066, 0.02, "A, trial 7, just finished at +0.066, above the best so far (B, trial 4, at +0.020) by more than the noise (0.01)"},
		{4, 0.012, 0.015, "A, trial 7, just finished at +0.012, within the noise (0.01) of the best so far (B, trial 4, at +0.015)"},
		{4, 0.02, 0.015, "A, trial 7, just finished at +0.020, within the noise (0.01) of the best so far (B, trial 4, at +0.015)"},
	} {
		p := session.Preference{A: 7, B: tt.b}
		if got := session.AskedWhy(p, tt.aScore, tt.bScore); got != tt.want {
			t.Errorf("AskedWhy(B %d, %g, %g) = %q, want %q", tt.b, tt.aScore, tt.bScore, got, tt.want)
		}
	}
}
