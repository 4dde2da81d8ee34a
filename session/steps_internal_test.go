package session

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The rules the steps of Decide, work, Review, reviewPlan and Prefer hold, one table each.

func TestCheckDecideRequest(t *testing.T) {
	edit := Patch{Weights: map[string]float64{"track_lin_vel": 1}}
	cases := []struct {
		name string
		d    DecideRequest
		want string // "" accepted; else part of the refusal
	}{
		{"approve", DecideRequest{Action: ActionApprove}, ""},
		{"reject with feedback", DecideRequest{Action: ActionReject, Feedback: "slower"}, ""},
		{"edit with a term", DecideRequest{Action: ActionEdit, Edit: &edit}, ""},
		{"unknown action", DecideRequest{Action: "maybe"}, `unknown decision "maybe"`},
		{"edit without a patch", DecideRequest{Action: ActionEdit}, "at least one term=value"},
		{"edit with an empty patch", DecideRequest{Action: ActionEdit, Edit: &Patch{}}, "at least one term=value"},
		{"feedback at the cap", DecideRequest{Action: ActionReject, Feedback: strings.Repeat("é", MaxFeedback)}, ""},
		{"feedback over the cap", DecideRequest{Action: ActionReject, Feedback: strings.Repeat("é", MaxFeedback+1)}, "at most 2000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkRefusal(t, checkDecideRequest(c.d), c.want, ErrConflict)
		})
	}
}

func TestAlreadyDecided(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ann := Actor{Platform: "slack", ID: "U1", Name: "ann"}
	cases := []struct {
		name string
		p    Proposal
		want string
	}{
		{"pending may be decided", Proposal{Seq: 3, State: ProposalPending}, ""},
		{"approved names who and when", Proposal{Seq: 3, State: ProposalApproved, Decision: &Decision{Action: ActionApprove, By: ann, At: at}}, "proposal 3 was already approved by ann at 03:04:05 UTC"},
		{"rejected", Proposal{Seq: 4, State: ProposalRejected, Decision: &Decision{Action: ActionReject, By: ann, At: at}}, "proposal 4 was already rejected by ann"},
		{"voided undecided names nobody", Proposal{Seq: 5, State: ProposalVoid}, "proposal 5 was already voided (the session moved on before it was decided)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkRefusal(t, alreadyDecided(c.p), c.want, ErrConflict)
		})
	}
}

func TestAfterStep(t *testing.T) {
	soon := time.Now().Add(time.Hour)
	cases := []struct {
		name    string
		more    bool
		running bool
		ended   bool
		wakeAt  time.Time
		want    workNext
	}{
		{"the step asked for more", true, true, true, soon, stepAgain},
		{"a job ended after the snapshot", false, false, true, time.Time{}, stepAgain},
		{"nothing runs, nothing is due", false, false, false, time.Time{}, workDone},
		{"nothing runs, a review is due", false, false, false, soon, waitThenStep},
		{"a job runs", false, true, false, time.Time{}, waitThenStep},
		{"a job runs and one ended", false, true, true, time.Time{}, waitThenStep},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &Engine{}
			j := &jobs{running: map[TrialRef]*slot{}, ended: make(chan struct{}, 1), wakeAt: c.wakeAt}
			if c.running {
				j.running[TrialRef{Number: 1}] = &slot{}
			}
			if c.ended {
				j.ended <- struct{}{}
			}
			if got := e.afterStep(c.more, j); got != c.want {
				t.Errorf("afterStep = %d, want %d", got, c.want)
			}
		})
	}
}

// TestAJobEndingDuringAStepIsHeard: a job that ends while the worker is still in its step
// (a fast trainer) has left the running set and told the worker in one move, so the worker
// never finds "nothing runs, nothing ended" and leaves a session active with nobody to take
// it further (one held-out bench session in about 1,800 ended "evaluating" that way).
func TestAJobEndingDuringAStepIsHeard(t *testing.T) {
	e := &Engine{cfg: EngineConfig{SessionsDir: t.TempDir(), Parallel: 1}, changed: make(chan struct{})}
	j := newJobs(e, Session{})
	left, release := make(chan struct{}), make(chan struct{})
	e.afterJobLeaves = func(TrialRef) {
		close(left)
		<-release // the job's goroutine is held here while the worker decides
	}
	if !e.launch(t.Context(), Session{}, j, TrialRef{Number: 1}, "starting", func(context.Context, *slot) error { return nil }) {
		t.Fatal("no slot to launch in")
	}
	<-left
	got := e.afterStep(false, j)
	close(release)
	j.wg.Wait()
	if got != stepAgain {
		t.Errorf("afterStep = %d once the step's only job has ended, want %d (plan again)", got, stepAgain)
	}
}

func TestWaitingReview(t *testing.T) {
	open := Review{Rung: 2}
	done := Review{Rung: 1, Done: true}
	cases := []struct {
		name     string
		state    State
		reviews  []Review
		rung     int
		wantRung int // the review returned, when accepted
		want     string
		sentinel error
	}{
		{"the open plan", StateAwaitingApproval, []Review{done, open}, 0, 2, "", nil},
		{"the open plan by its rung", StateRunning, []Review{done, open}, 2, 2, "", nil},
		{"an ended session", StateSucceeded, []Review{open}, 0, 0, "no promotion plan waits", ErrConflict},
		{"an older plan's button", StateRunning, []Review{done, open}, 1, 0, "the promotions to rung 1 have started", ErrConflict},
		{"a plan that never was", StateRunning, []Review{open}, 3, 0, "no promotion plan for rung 3", ErrNotFound},
		{"all plans closed", StateRunning, []Review{done}, 0, 0, "nothing waits for a review", ErrConflict},
		{"no plan yet", StateRunning, nil, 0, 0, "it is shown when rung 0's trials have all finished", ErrConflict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := &Session{ID: "s1", State: c.state, Reviews: c.reviews}
			rv, err := waitingReview(x, c.rung)
			checkRefusal(t, err, c.want, c.sentinel)
			if err == nil && (rv == nil || rv.Rung != c.wantRung || rv != &x.Reviews[len(x.Reviews)-1]) {
				t.Errorf("waitingReview = %+v, want the session's open review for rung %d", rv, c.wantRung)
			}
		})
	}
}

func TestPlanTrialRefusal(t *testing.T) {
	passed := &Score{Eligible: true}
	trials := []Trial{
		{Number: 0, Rung: 0, State: TrialCompleted, Score: passed},
		{Number: 1, Rung: 0, State: TrialCompleted, Score: passed},
		{Number: 2, Rung: 0, State: TrialCompleted, Score: &Score{}},
		{Number: 3, Rung: 1, State: TrialCompleted, Score: passed},
	}
	cases := []struct {
		name     string
		control  bool
		num      int
		want     string
		sentinel error
	}{
		{"an eligible trial", false, 1, "", nil},
		{"the baseline without control", false, 0, "", nil},
		{"the baseline as the control", true, 0, "carried along as the control", ErrConflict},
		{"a trial that failed the gates", false, 2, "a person's choice never makes a trial eligible", ErrConflict},
		{"a trial not at the rung", false, 3, "has no trial 3 at rung 0", ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := &Session{ID: "s1", Settings: Settings{Control: c.control}}
			checkRefusal(t, planTrialRefusal(x, trials, c.num, 0), c.want, c.sentinel)
		})
	}
}

func TestNewReview(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	plan := []Trial{{Number: 4}, {Number: 2}}
	cases := []struct {
		name     string
		wait     time.Duration
		wantDone bool
	}{
		{"waits for people", time.Hour, false},
		{"no wait closes at once", 0, true},
		{"a negative wait closes at once", -time.Second, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := newReview(1, plan, c.wait, now)
			if v.Rung != 1 || len(v.Plan) != 2 || v.Plan[0] != 4 || v.Plan[1] != 2 || !v.Until.Equal(now.Add(c.wait)) {
				t.Errorf("newReview = %+v", v)
			}
			if v.Done != c.wantDone || (c.wantDone && !v.DoneAt.Equal(now)) {
				t.Errorf("Done = %v at %v, want %v", v.Done, v.DoneAt, c.wantDone)
			}
			v.Plan[0] = 9 // a person's change leaves tunebot's plan as it was
			if v.Planned[0] != 4 {
				t.Errorf("Planned shares Plan's array")
			}
		})
	}
}

func TestReviewState(t *testing.T) {
	for mode, want := range map[string]State{ModeApproval: StateAwaitingApproval, ModeAutomatic: StateRunning} {
		if got := reviewState(mode); got != want {
			t.Errorf("reviewState(%q) = %s, want %s", mode, got, want)
		}
	}
}

func TestSecondAnswer(t *testing.T) {
	ann := Actor{Platform: "slack", ID: "U1", Name: "ann"}
	annElsewhere := Actor{Platform: "discord", ID: "U1", Name: "ann"}
	bob := Actor{Platform: "slack", ID: "U2", Name: "bob"}
	p := Preference{Seq: 1, A: 1, B: 2, Answer: AnswerA, By: &ann, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	cases := []struct {
		name   string
		by     Actor
		answer string
		note   string
		want   string
	}{
		{"the same person adds a note", ann, AnswerA, "smoother", ""},
		{"the same answer without a note", ann, AnswerA, "", "already compared by ann at 03:04:05 UTC"},
		{"the same person changes the answer", ann, AnswerB, "smoother", "already compared"},
		{"someone else", bob, AnswerA, "smoother", "already compared by ann"},
		{"the same id on another platform", annElsewhere, AnswerA, "smoother", "already compared"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := PreferRequest{By: c.by, Note: c.note}
			checkRefusal(t, secondAnswer(p, r, c.answer), c.want, ErrConflict)
		})
	}
}

func TestPreferenceTarget(t *testing.T) {
	x := &Session{ID: "s1", Preferences: []Preference{{Seq: 1, A: 3, B: 5}}}
	cases := []struct {
		name       string
		r          PreferRequest
		wantI      int
		wantAnswer string
		want       string
		sentinel   error
	}{
		{"a card's answer", PreferRequest{Card: 1, Answer: AnswerB}, 0, AnswerB, "", nil},
		{"a card that never was", PreferRequest{Card: 2, Answer: AnswerA}, 0, "", "no A/B card 2", ErrNotFound},
		{"a card's unknown answer", PreferRequest{Card: 1, Answer: "c"}, 0, "", `unknown answer "c"`, ErrConflict},
		{"the asked pair's A side won", PreferRequest{Winner: 3, Loser: 5}, 0, AnswerA, "", nil},
		{"the asked pair's B side won", PreferRequest{Winner: 5, Loser: 3}, 0, AnswerB, "", nil},
		{"a tie on the asked pair", PreferRequest{Winner: 5, Loser: 3, Tie: true}, 0, AnswerTie, "", nil},
		{"a pair not asked about", PreferRequest{Winner: 7, Loser: 3}, -1, AnswerA, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			i, answer, err := preferenceTarget(x, c.r)
			checkRefusal(t, err, c.want, c.sentinel)
			if err == nil && (i != c.wantI || answer != c.wantAnswer) {
				t.Errorf("preferenceTarget = %d, %q; want %d, %q", i, answer, c.wantI, c.wantAnswer)
			}
		})
	}
}

// checkRefusal checks err is nil when want is "", else a person's error holding want that
// is sentinel.
func checkRefusal(t *testing.T, err error, want string, sentinel error) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	var ue *UserError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) || !errors.Is(err, sentinel) {
		t.Fatalf("err = %v, want a person's %v holding %q", err, sentinel, want)
	}
}

func TestCheckParams(t *testing.T) {
	s := &Space{Params: []Param{{Name: "height", Default: 0.3, Min: 0.1, Max: 0.5}}}
	base := RewardConfig{Params: map[string]float64{}}
	cases := []struct {
		name      string
		base      RewardConfig
		params    map[string]float64
		wantProbs string
		wantSame  int // the values equal to base's: no change
	}{
		{"within bounds", base, map[string]float64{"height": 0.4}, "", 0},
		{"at its default", base, map[string]float64{"height": 0.3}, "", 1},
		{"at base's value", RewardConfig{Params: map[string]float64{"height": 0.2}}, map[string]float64{"height": 0.2}, "", 1},
		{"at the bound", base, map[string]float64{"height": 0.5}, "", 0},
		{"over the bound", base, map[string]float64{"height": 0.6}, "params.height: 0.6 is outside its bounds [0.1, 0.5]", 0},
		{"not finite", base, map[string]float64{"height": math.NaN()}, "params.height: NaN is not a finite number", 0},
		{"unknown", base, map[string]float64{"depth": 1}, "params.depth: ", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			probs, same := s.checkParams(c.base, c.params)
			got := strings.Join(probs, "|")
			if same != c.wantSame || (c.wantProbs == "") != (got == "") || !strings.HasPrefix(got, c.wantProbs) {
				t.Errorf("checkParams = %q, %d; want %q…, %d", got, same, c.wantProbs, c.wantSame)
			}
		})
	}
}

func TestOrderProblems(t *testing.T) {
	s := &Space{Orders: []Order{{Lower: "lo", Upper: "hi"}}}
	cases := []struct {
		name   string
		patch  map[string]float64
		merged map[string]float64
		want   string
	}{
		{"kept in order", map[string]float64{"lo": 1}, map[string]float64{"lo": 1, "hi": 2}, ""},
		{"equal is out of order", map[string]float64{"hi": 1}, map[string]float64{"lo": 1, "hi": 1}, "params.lo (1) must stay below params.hi (1)"},
		{"crossed", map[string]float64{"lo": 3}, map[string]float64{"lo": 3, "hi": 2}, "params.lo (3) must stay below params.hi (2)"},
		{"untouched pairs are not checked", map[string]float64{"other": 1}, map[string]float64{"lo": 3, "hi": 2}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(s.orderProblems(Patch{Params: c.patch}, RewardConfig{Params: c.merged}), "|")
			if got != c.want {
				t.Errorf("orderProblems = %q, want %q", got, c.want)
			}
		})
	}
}

func TestDuplicateOf(t *testing.T) {
	cfg := func(w float64) RewardConfig {
		return RewardConfig{Weights: map[string]float64{"pose": w}, Params: map[string]float64{}}
	}
	tried := []Tried{{Label: "trial 1", Config: cfg(1)}, {Label: "proposal 2", Config: cfg(2), Rejected: true}, {Label: "trial 3", Config: cfg(2)}}
	cases := []struct {
		name   string
		merged RewardConfig
		want   string
	}{
		{"new", cfg(3), ""},
		{"tried", cfg(1), "duplicate: the merged configuration equals trial 1, already tried in this session"},
		{"the first match: rejected", cfg(2), "duplicate: the merged configuration equals proposal 2, rejected earlier in this session"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := duplicateOf(c.merged, tried); got != c.want {
				t.Errorf("duplicateOf = %q, want %q", got, c.want)
			}
		})
	}
}

// TestRunDirsAreMadeUnderTheRoot: a session directory swapped for a link out of the
// sessions directory (another user's) is refused when a run directory
// is made or discarded in it: nothing is created or removed through the link (issue 36).
func TestRunDirsAreMadeUnderTheRoot(t *testing.T) {
	sessions, outside := t.TempDir(), t.TempDir()
	keep := filepath.Join(outside, "trial-000-rung-0", "keep")
	if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(sessions, "s1")); err != nil {
		t.Fatal(err)
	}
	e := &Engine{cfg: EngineConfig{SessionsDir: sessions}}
	if err := e.removeDir(filepath.Join("s1", "trial-000-rung-0")); err == nil {
		t.Error("a run directory was discarded through a link out of the sessions directory")
	}
	if err := e.makeDir(filepath.Join("s1", "trial-001-rung-0")); err == nil {
		t.Error("a run directory was made through a link out of the sessions directory")
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("the linked directory's file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "trial-001-rung-0")); err == nil {
		t.Error("a run directory was made in the linked directory")
	}
	if err := e.makeDir(filepath.Join("s2", "trial-000-rung-0")); err != nil {
		t.Errorf("a run directory of a session of its own: %v", err)
	}
}

// TestMinFreeKeepsTheSizesOfIdleRunDirs: a step measures the run directory of a trial that
// runs no job once per worker and keeps it (its size changes only while a job of its trial
// runs), walks a running trial's every time, and measures a trial's again once a job of it
// has been launched; MinFree itself always walks.
func TestMinFreeKeepsTheSizesOfIdleRunDirs(t *testing.T) {
	sessions := t.TempDir()
	e := &Engine{cfg: EngineConfig{SessionsDir: sessions, Parallel: 1}, changed: make(chan struct{})}
	j := newJobs(e, Session{})
	grow := func(rel string, size int64) {
		t.Helper()
		p := filepath.Join(sessions, "s1", rel, "model.pt")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
	}
	idle := Trial{SessionID: "s1", Number: 1, RunDir: "trial-001-rung-0", State: TrialCompleted}
	busy := Trial{SessionID: "s1", Number: 2, RunDir: "trial-002-rung-0", State: TrialTraining}
	trials := []Trial{idle, busy, {SessionID: "s1", Number: 3}}
	running := map[TrialRef]bool{busy.Ref(): true}
	grow(idle.RunDir, 600<<20)
	grow(busy.RunDir, 100<<20)
	check := func(what string, want int64) {
		t.Helper()
		if got := e.minFree(trials, running, j); got != want {
			t.Errorf("%s: floor %d MiB, want %d MiB", what, got>>20, want>>20)
		}
	}
	check("first step", 1200<<20)
	grow(busy.RunDir, 700<<20)
	check("the running trial's directory grew", 1400<<20)
	grow(busy.RunDir, 100<<20)
	grow(idle.RunDir, 650<<20) // not by a job of this worker
	check("an idle trial's directory, kept", 1200<<20)
	if got := e.MinFree(trials); got != 1300<<20 {
		t.Errorf("MinFree walks every directory: %d MiB, want 1300 MiB", got>>20)
	}
	if !e.launch(t.Context(), Session{}, j, idle.Ref(), "starting", func(context.Context, *slot) error { return nil }) {
		t.Fatal("no slot to launch in")
	}
	j.wg.Wait()
	check("after a job of the idle trial", 1300<<20)
}
