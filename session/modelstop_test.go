package session_test

import (
	"context"
	"strings"
	"testing"

	"tunebot/session"
)

func TestModelSaysStop(t *testing.T) {
	cases := []struct {
		name  string
		o     *session.Outlook
		tuned int
		want  bool
	}{
		{"no model: the patience counter decides", nil, 10, false},
		{"nothing beats the best by more than the noise", &session.Outlook{Gain: 0.004, Noise: 0.012, Chance: 0.05}, 6, true},
		{"too few trials to trust the model", &session.Outlook{Gain: 0.004, Noise: 0.012, Chance: 0.05}, session.ModelStopFrom - 1, false},
		{"just enough trials", &session.Outlook{Gain: 0.004, Noise: 0.012, Chance: 0.05}, session.ModelStopFrom, true},
		{"expected gain above the noise", &session.Outlook{Gain: 0.02, Noise: 0.012, Chance: 0.05}, 6, false},
		{"expected gain equal to the noise", &session.Outlook{Gain: 0.012, Noise: 0.012, Chance: 0.05}, 6, true},
		{"a fair chance of beating it by more", &session.Outlook{Gain: 0.008, Noise: 0.012, Chance: 0.3}, 6, false},
		{"chance at the bar", &session.Outlook{Gain: 0.008, Noise: 0.012, Chance: session.ModelStopChance}, 6, false},
	}
	for _, c := range cases {
		if got := session.ModelSaysStop(c.o, c.tuned); got != c.want {
			t.Errorf("%s: ModelSaysStop = %v, want %v", c.name, got, c.want)
		}
	}
}

// never improves: each proposal lowers the tracking weight a little more, and says what a
// model would of it: promising while the history is shorter than promisingUntil, then not.
func modelAdvisor(promisingUntil int) func(req session.ProposalRequest) (session.Suggestion, error) {
	return func(req session.ProposalRequest) (session.Suggestion, error) {
		v := req.Base.Weights["track_linear_velocity"] * (0.95 - 0.02*float64(len(req.History)))
		o := session.Outlook{Gain: 0.03, Noise: 0.01, Chance: 0.7}
		if len(req.History) >= promisingUntil {
			o = session.Outlook{Gain: 0.003, Noise: 0.01, Chance: 0.02}
		}
		return session.Suggestion{Patch: session.Patch{Weights: map[string]float64{"track_linear_velocity": v}}, Outlook: &o}, nil
	}
}

// The search goes on past the patience while the model expects a candidate to beat the
// best, and ends when it expects none to, saying so with its numbers.
func TestLoopStopsWhenTheModelSaysSo(t *testing.T) {
	h := newHarness(t, t.TempDir())
	h.adv.fn = modelAdvisor(7) // promising until the baseline and 6 tuned trials ended
	s, r0 := h.runRung0(10, 2)
	if s.State != session.StateSucceeded || r0 != 7 {
		t.Fatalf("state %s, %d rung-0 trials; want the baseline and 6 tuned trials (patience 2 would have stopped at 3)", s.State, r0)
	}
	if s.Stopped == nil || s.Stopped.Trials != 6 || s.Stopped.Gain != 0.003 {
		t.Fatalf("stop record %+v; want the model's, after 6 tuned trials", s.Stopped)
	}
	for _, want := range []string{"expected no candidate to beat the best by more than the noise", "+0.0030", "0.0100"} {
		if !strings.Contains(s.Message, want) {
			t.Errorf("the session's last line %q does not say %q", s.Message, want)
		}
	}
	ps, err := h.db.Proposals(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := ps[len(ps)-1]; last.State != session.ProposalVoid || last.Outlook == nil {
		t.Errorf("the proposal the model stopped on is %s (outlook %v), want void and carrying its outlook", last.State, last.Outlook)
	}
}

// A model that always expects a candidate to beat the best runs the whole trial count,
// whatever the patience.
func TestLoopGoesOnWhileTheModelIsPromising(t *testing.T) {
	h := newHarness(t, t.TempDir())
	h.adv.fn = modelAdvisor(1 << 30)
	s, r0 := h.runRung0(8, 2)
	if s.State != session.StateSucceeded || r0 != 8 || s.Stopped != nil {
		t.Fatalf("state %s, %d rung-0 trials, stop %+v; want all 8 trials", s.State, r0, s.Stopped)
	}
}
