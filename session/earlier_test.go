package session_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"tunebot/session"
)

// finishedFirst runs an automatic session to its end and returns it.
func finishedFirst(t *testing.T, h *harness) session.Session {
	t.Helper()
	s, err := h.eng.Start(context.Background(), settings(session.ModeAutomatic), console)
	if err != nil {
		t.Fatal(err)
	}
	if s = h.wait(s.ID); s.State != session.StateSucceeded {
		t.Fatalf("first session %s (%s)", s.State, s.Reason)
	}
	return s
}

func TestSecondSessionBuildsOnTheFirst(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	first := finishedFirst(t, h)
	var done []session.Trial
	var best session.Trial
	for _, tr := range h.trials(first.ID) {
		if tr.Rung == 0 && tr.State == session.TrialCompleted {
			done = append(done, tr)
		}
		if tr.Number == first.BestTrial && tr.Rung == first.BestRung {
			best = tr
		}
	}
	if best.Number == 0 {
		t.Fatalf("the first session's best is its baseline (%d): the test needs one that moved", first.BestTrial)
	}
	st := settings(session.ModeApproval)
	st.From = session.Short(first.ID)[:6] // a short id resolves as elsewhere
	second, err := h.eng.Start(ctx, st, console)
	if err != nil {
		t.Fatal(err)
	}
	if first.Preset == "" {
		t.Fatalf("the first session shipped trial %d but saved no preset", best.Number)
	}
	want := session.BuiltOn{Session: first.ID, Trials: len(done), Weight: session.DefaultFromWeight, Start: session.FromBest, Trial: best.Number, Preset: first.Preset}
	if second.BuiltOn == nil || *second.BuiltOn != want || second.Settings.From != first.ID {
		t.Fatalf("built on %+v (from %q), want %+v", second.BuiltOn, second.Settings.From, want)
	}
	if !second.Base.Equal(best.RewardConfig) {
		t.Fatalf("start=best: base %v, want the earlier best %v", second.Base, best.RewardConfig)
	}
	if s := h.wait(second.ID); s.State != session.StateAwaitingApproval {
		t.Fatalf("second session %s (%s)", s.State, s.Reason)
	}
	line := "builds on session " + session.Short(first.ID) + ": " + itoa(len(done)) + " trials, each weighted 0.5, starting from its best configuration (trial " +
		itoa(best.Number) + ", preset " + first.Preset + ")"
	started := false
	for _, text := range h.note.texts {
		started = started || strings.HasPrefix(text, "session "+session.Short(second.ID)+" started") && strings.Contains(text, line)
	}
	if !started {
		t.Fatalf("no start message says %q: %q", line, h.note.texts)
	}
	ps, err := h.db.Proposals(ctx, second.ID)
	if err != nil || len(ps) == 0 {
		t.Fatalf("proposals %v, %v", ps, err)
	}
	if !strings.Contains(ps[0].BuiltOn, line) {
		t.Fatalf("first proposal says %q, want %q", ps[0].BuiltOn, line)
	}
	reqs := h.adv.requests()
	last := reqs[len(reqs)-1]
	if len(last.Earlier) != len(done) || last.EarlierWeight != session.DefaultFromWeight {
		t.Fatalf("the proposer saw %d earlier trials weighted %g, want %d weighted %g", len(last.Earlier), last.EarlierWeight, len(done), session.DefaultFromWeight)
	}
	if len(last.History) != 1 || last.History[0].Number != 0 {
		t.Fatalf("history %d trials: the earlier ones must stay out of this session's", len(last.History))
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestSecondSessionFromTheDefaults(t *testing.T) {
	h := newHarness(t, t.TempDir())
	first := finishedFirst(t, h)
	st := settings(session.ModeAutomatic)
	st.From, st.FromStart, st.FromWeight = first.ID, session.FromDefaults, 0.3
	s, err := h.eng.Start(context.Background(), st, console)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Base.Equal(session.DefaultSpace().Defaults()) || s.BuiltOn.Trial != -1 || s.BuiltOn.Weight != 0.3 {
		t.Fatalf("start=defaults: base %v, built on %+v", s.Base, s.BuiltOn)
	}
	if !strings.HasSuffix(s.BuiltOn.Line(), "each weighted 0.3, starting from the defaults") {
		t.Fatalf("line %q", s.BuiltOn.Line())
	}
	h.wait(s.ID)
}

func TestBuildingOnRefusesWhatItCannotUse(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	now := time.Now().UTC()
	other := settings(session.ModeAutomatic)
	other.Task = "Unitree-Go1-Flat"
	records := []session.Session{
		{ID: "aaaa0000000000000000000000000001", State: session.StateSucceeded, Settings: other, CreatedAt: now, BestTrial: -1},
		{ID: "bbbb0000000000000000000000000002", State: session.StateCancelled, Settings: settings(session.ModeAutomatic), CreatedAt: now, BestTrial: -1},
	}
	for _, r := range records {
		if err := h.db.CreateSession(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, from, start, preset string
		want                      string
	}{
		{"unknown", "cccc", "", "", "from: session cccc does not exist"},
		{"another task", "aaaa", "", "", "from: session aaaa0000 tuned task Unitree-Go1-Flat, not Unitree-Go2-Flat"},
		{"no finished trial", "bbbb", "", "", "from: session bbbb0000 has no finished trial to build on"},
		{"bad start", "bbbb", "latest", "", `from_start: "latest" is not best or defaults`},
		{"preset and start=best", "bbbb", "", "mine", "a preset and from's start=best both choose"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := settings(session.ModeAutomatic)
			st.From, st.FromStart, st.Preset = tt.from, tt.start, tt.preset
			_, err := h.eng.Start(ctx, st, console)
			msg, ok := session.UserMessage(err)
			if err == nil || !ok || !strings.Contains(msg, tt.want) {
				t.Fatalf("got %v (user message %q), want one naming %q", err, msg, tt.want)
			}
		})
	}
	if _, ok, err := session.ActiveSession(ctx, h.db); ok || err != nil {
		t.Fatalf("a refused start left an active session (%v)", err)
	}
}

func TestEarlierRejectionsReachTheProposer(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	st := settings(session.ModeApproval)
	first, err := h.eng.Start(ctx, st, console)
	if err != nil {
		t.Fatal(err)
	}
	if first = h.wait(first.ID); first.State != session.StateAwaitingApproval {
		t.Fatalf("first session %s (%s)", first.State, first.Reason)
	}
	if _, err := h.eng.Decide(ctx, session.DecideRequest{SessionID: first.ID, Action: session.ActionReject, Feedback: "not that", By: console}); err != nil {
		t.Fatal(err)
	}
	h.wait(first.ID)
	if _, err := h.eng.Cancel(ctx, first.ID, console); err != nil {
		t.Fatal(err)
	}
	h.wait(first.ID)
	ps, err := h.db.Proposals(ctx, first.ID)
	if err != nil || len(ps) == 0 || ps[0].State != session.ProposalRejected {
		t.Fatalf("first session's proposals %v, %v", ps, err)
	}
	st.From, st.FromStart = first.ID, session.FromDefaults
	second, err := h.eng.Start(ctx, st, console)
	if err != nil {
		t.Fatal(err)
	}
	h.wait(second.ID)
	reqs := h.adv.requests()
	last := reqs[len(reqs)-1]
	if last.SessionID != second.ID || len(last.Rejected) == 0 {
		t.Fatalf("the second session's proposer saw no rejection: %+v", last.Rejected)
	}
	r := last.Rejected[0]
	if r.Session != first.ID || r.Seq != 1 || !r.Patch.Equal(ps[0].Patch) || r.Feedback != "not that" {
		t.Fatalf("rejection %+v, want proposal 1 of the first session", r)
	}
}

// TestOutcomeNamesWhatStands (issue 35 item 5): a session in which nothing beat its baseline
// names that baseline: the earlier best it started from (its preset when it has one), the
// preset it was given, or the defaults.
func TestOutcomeNamesWhatStands(t *testing.T) {
	const earlier = "abcdef0123456789abcdef0123456789"
	unimproved := func(b *session.BuiltOn, preset string) session.Session {
		s := session.Session{State: session.StateSucceeded, Outcome: session.OutcomeNoImprovement, BuiltOn: b}
		s.Settings.Preset = preset
		return s
	}
	tests := []struct {
		name string
		s    session.Session
		want string
	}{
		{"the defaults", unimproved(nil, ""), "nothing beat the defaults; they stand"},
		{"a preset", unimproved(nil, "walk-1"), "nothing beat the baseline (preset walk-1); it stands"},
		{"the earlier best's preset", unimproved(&session.BuiltOn{Session: earlier, Start: session.FromBest, Trial: 7, Preset: "auto-abcdef01"}, ""),
			"nothing beat the earlier best (preset auto-abcdef01, session abcdef01's trial 7); it stands"},
		{"an earlier best with no preset", unimproved(&session.BuiltOn{Session: earlier, Start: session.FromBest, Trial: 3}, ""),
			"nothing beat the earlier best (session abcdef01's trial 3, which saved no preset); it stands"},
		{"an earlier session's baseline", unimproved(&session.BuiltOn{Session: earlier, Start: session.FromBest, Trial: 0}, ""),
			"nothing beat session abcdef01's baseline, the configuration it started from; it stands"},
		{"from the defaults", unimproved(&session.BuiltOn{Session: earlier, Start: session.FromDefaults, Trial: -1}, ""), "nothing beat the defaults; they stand"},
		{"from the defaults with a preset", unimproved(&session.BuiltOn{Session: earlier, Start: session.FromDefaults, Trial: -1, Preset: "walk-1"}, "walk-1"),
			"nothing beat the baseline (preset walk-1); it stands"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.OutcomeText(); got != tt.want {
				t.Errorf("OutcomeText = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBuiltOnJSON (issue 35 item 9): built_on's trial is null rather than -1 and its preset
// key is always there; both read back, and so does the -1 stored before.
func TestBuiltOnJSON(t *testing.T) {
	tests := []struct {
		b    session.BuiltOn
		want string
	}{
		{session.BuiltOn{Session: "s1", Trials: 4, Weight: 0.5, Start: session.FromDefaults, Trial: -1},
			`{"session":"s1","trials":4,"weight":0.5,"start":"defaults","trial":null,"preset":""}`},
		{session.BuiltOn{Session: "s1", Trials: 4, Weight: 0.5, Start: session.FromBest, Trial: 0, Preset: "p"},
			`{"session":"s1","trials":4,"weight":0.5,"start":"best","trial":0,"preset":"p"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.b)
		if err != nil || string(b) != tt.want {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tt.b, b, err, tt.want)
		}
		var back session.BuiltOn
		if err := json.Unmarshal(b, &back); err != nil || back != tt.b {
			t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", b, back, err, tt.b)
		}
	}
	var old session.BuiltOn
	if err := json.Unmarshal([]byte(`{"session":"s1","trials":2,"weight":0.5,"start":"defaults","trial":-1}`), &old); err != nil || old.Trial != -1 {
		t.Errorf("a record stored before: %+v, %v", old, err)
	}
}

// TestPresetGainIsAgainstTheDefaults (issue 35 item 4): every preset records its gain over
// the task's defaults at equal training: a session whose baseline is the defaults records the
// figure its versus shows; one that builds on an earlier best is scored against the defaults
// the earlier session trained to the same rung, not against its own baseline (that earlier
// best), and names the preset it was built on.
func TestPresetGainIsAgainstTheDefaults(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	st := settings(session.ModeAutomatic)
	st.Control = true // the baseline carried along every rung: the defaults at equal training
	first, err := h.eng.Start(ctx, st, console)
	if err != nil {
		t.Fatal(err)
	}
	if first = h.wait(first.ID); first.Preset == "" {
		t.Fatalf("the first session saved no preset (%s, %s)", first.State, first.Message)
	}
	p1, err := h.db.Preset(ctx, first.Preset)
	if err != nil {
		t.Fatal(err)
	}
	if g := p1.Gain; g == nil || !g.Known() || p1.Versus == nil || !p1.Versus.Matched() || g.Score != session.Measured(p1.Versus.Score) ||
		g.Session != first.ID || g.Rung != p1.Trial.Rung || p1.BuiltOn != "" {
		t.Fatalf("first preset: gain %+v, versus %+v, built on %q; want its versus against its own defaults", g, p1.Versus, p1.BuiltOn)
	}

	// The earlier best raised tracking to its bound's neighbourhood: this session turns another knob.
	angular := func(req session.ProposalRequest) (session.Suggestion, error) {
		f := 1.1 + 0.01*float64(len(req.History))
		for {
			p := session.Patch{Weights: map[string]float64{"track_angular_velocity": req.Base.Weights["track_angular_velocity"] * f}}
			if !triedAlready(req, p) {
				return session.Suggestion{Patch: p, Rationale: "raise turning", Confidence: 0.6, Model: "fake-model", Source: session.SourceSampler}, nil
			}
			f += 0.05
		}
	}
	h.adv.fn, h.sampler.fn = angular, angular
	st.From = first.ID
	second, err := h.eng.Start(ctx, st, console)
	if err != nil {
		t.Fatal(err)
	}
	if second = h.wait(second.ID); second.Preset == "" {
		t.Fatalf("the second session saved no preset (%s, %s)", second.State, second.Message)
	}
	p2, err := h.db.Preset(ctx, second.Preset)
	if err != nil {
		t.Fatal(err)
	}
	var best session.Trial
	for _, tr := range h.trials(second.ID) {
		if tr.Ref() == p2.Trial {
			best = tr
		}
	}
	control := session.ControlAt(h.trials(first.ID), best.Rung)
	if control == nil || !control.RewardConfig.Equal(session.DefaultSpace().Defaults()) {
		t.Fatalf("the first session has no defaults at rung %d", best.Rung)
	}
	sc := session.Scorer{Baseline: control.Metrics, Weights: st.Objective, Floors: st.Floors}
	mine := best.Metrics
	if best.Final != nil && control.Final != nil {
		sc.Baseline, mine = control.Final.Metrics, best.Final.Metrics
	}
	want, err := sc.Score(mine)
	if err != nil {
		t.Fatal(err)
	}
	g := p2.Gain
	if g == nil || !g.Known() || g.Score != session.Measured(want.Total) || g.Session != first.ID || g.Rung != best.Rung {
		t.Fatalf("second preset's gain %+v, want %.4f against session %s's defaults at rung %d", g, want.Total, session.Short(first.ID), best.Rung)
	}
	if g.Score == session.Measured(p2.Versus.Score) {
		t.Errorf("the second preset's gain %+v equals its score against its own baseline (the earlier best): the test does not tell them apart", g)
	}
	if p2.BuiltOn != "preset "+first.Preset {
		t.Errorf("second preset built on %q, want preset %s", p2.BuiltOn, first.Preset)
	}
}
