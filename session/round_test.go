package session_test

import (
	"context"
	"strings"
	"testing"

	"tunebot/session"
)

// noisy is what a proposer's arithmetic leaves: -200 × 1.9999999997.
const noisy = -399.99999944548205

func TestRoundKeepsTheRules(t *testing.T) {
	sp := session.DefaultSpace()
	defaults := sp.Defaults()
	third := session.Merge(defaults, session.Patch{Weights: map[string]float64{"body_orientation_l2": -0.3333333}})
	narrow := session.DefaultSpace() // a bound that is not a round number
	for i := range narrow.Params {
		if narrow.Params[i].Name == "foot_clearance.target_height" {
			narrow.Params[i].Max = 0.123456
		}
	}
	overlap := overlappingThresholds()
	tests := []struct {
		name  string
		space *session.Space
		base  session.RewardConfig
		patch session.Patch
		want  session.Patch
	}{
		{"noise on a doubled weight", sp, defaults, w("is_terminated", noisy), w("is_terminated", -400)},
		{"noise on a halved weight", sp, defaults, w("is_terminated", -100.0000001386295), w("is_terminated", -100)},
		{"small magnitudes keep four digits", sp, defaults, w("joint_acc_l2", -2.4999999e-7, "soft_landing", -0.0005000000006931474), w("joint_acc_l2", -2.5e-7, "soft_landing", -0.0005)},
		{"a clean value stays", sp, defaults, w("pose", 1.25), w("pose", 1.25)},
		// 2 × -0.3333333 rounds to -0.6667, a step of 2.0000002×: towards the inside instead.
		{"inward of the step rule", sp, third, w("body_orientation_l2", -0.6666666), w("body_orientation_l2", -0.6666)},
		{"inward of a bound", narrow, defaults, p("foot_clearance.target_height", 0.1234559), p("foot_clearance.target_height", 0.1234)},
		// Both round to 1: their order would break, so they stay as written.
		{"an order kept", overlap, defaults, p("pose.walking_threshold", 1.000001, "pose.running_threshold", 1.000002), p("pose.walking_threshold", 1.000001, "pose.running_threshold", 1.000002)},
		// A value that breaks a rule is not rounded into one that obeys it.
		{"out of bounds stays", sp, defaults, w("is_terminated", -400.04), w("is_terminated", -400.04)},
		{"unknown names stay", sp, defaults, w("banana", 1.23456789), w("banana", 1.23456789)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.space.Round(tt.base, tt.patch)
			if !sameBits(got, tt.want) {
				t.Fatalf("Round = %v, want %v", got, tt.want)
			}
			if _, err := tt.space.Validate(tt.base, tt.patch, nil); (err == nil) != (tt.name != "out of bounds stays" && tt.name != "unknown names stay") {
				t.Errorf("Validate = %v", err)
			} else if err != nil && !strings.Contains(err.Error(), "-400.04") && tt.name == "out of bounds stays" {
				t.Errorf("the refusal %q does not name the value as written", err)
			}
			if again := tt.space.Round(tt.base, got); !sameBits(again, got) {
				t.Errorf("rounding twice gives %v, once %v", again, got)
			}
		})
	}
}

// sameBits compares exactly: rounding is about the very digits stored.
func sameBits(a, b session.Patch) bool {
	if len(a.Weights) != len(b.Weights) || len(a.Params) != len(b.Params) {
		return false
	}
	for k, v := range a.Weights {
		if b.Weights[k] != v {
			return false
		}
	}
	for k, v := range a.Params {
		if b.Params[k] != v {
			return false
		}
	}
	return true
}

func TestCompleteMergesOverTheDefaults(t *testing.T) {
	sp := session.DefaultSpace()
	got, err := sp.Complete(w("is_terminated", noisy))
	if err != nil {
		t.Fatal(err)
	}
	want := session.Merge(sp.Defaults(), w("is_terminated", -400))
	if !sameBits(got, want) {
		t.Fatalf("Complete = %v, want the defaults with is_terminated -400", got)
	}
	// One real problem is one line: no "missing" for what the defaults fill in, no order
	// broken by a missing threshold.
	_, err = sp.Complete(w("is_termnated", -100))
	if err == nil || strings.Count(err.Error(), ";") != 0 || !strings.Contains(err.Error(), "weights.is_termnated: unknown term (did you mean is_terminated?)") {
		t.Fatalf("Complete = %v, want the one unknown term named alone", err)
	}
}

func TestCheckConfigNamesAMissingThresholdOnce(t *testing.T) {
	sp := session.DefaultSpace()
	c := sp.Defaults()
	delete(c.Params, "pose.running_threshold")
	err := sp.CheckConfig(c)
	if err == nil || !strings.Contains(err.Error(), "params.pose.running_threshold: missing") || strings.Contains(err.Error(), "must stay below") {
		t.Fatalf("CheckConfig = %v, want the missing threshold named, and no order it would only repeat", err)
	}
}

// Every patch the engine stores or runs is rounded, whoever wrote it: the sampler's and
// the advisor's answers (one path, ask) and a person's edit.
func TestEngineRoundsEveryPatch(t *testing.T) {
	for _, path := range []string{"sampler", "advisor", "edit"} {
		t.Run(path, func(t *testing.T) {
			h := newHarness(t, t.TempDir())
			propose := func(req session.ProposalRequest) (session.Suggestion, error) {
				if len(req.History) > 1 {
					return improving(req)
				}
				return session.Suggestion{Patch: w("is_terminated", noisy), Source: path}, nil
			}
			st := settings(session.ModeAutomatic)
			cfg := session.EngineConfig{Store: configStore{h.db}, Trainer: h.tr, Space: session.DefaultSpace(), SessionsDir: t.TempDir()}
			switch path {
			case "sampler":
				h.sampler.fn, cfg.Sampler, st.Fallback = propose, h.sampler, true
			case "advisor":
				h.adv.fn, cfg.Advisor = propose, h.adv
			case "edit":
				h.adv.fn, cfg.Advisor, st.Mode = improving, h.adv, session.ModeApproval
			}
			eng, err := session.NewEngine(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Shutdown(context.Background())
			ctx := context.Background()
			s, err := eng.Start(ctx, st, console)
			if err != nil {
				t.Fatal(err)
			}
			if s, err = eng.Wait(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
			if path == "edit" {
				if s.State != session.StateAwaitingApproval {
					t.Fatalf("state %s, want a proposal waiting", s.State)
				}
				edit := w("is_terminated", noisy)
				if _, err := eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionEdit, Edit: &edit, By: console}); err != nil {
					t.Fatal(err)
				}
				if s, err = eng.Wait(ctx, s.ID); err != nil || s.State != session.StateAwaitingApproval {
					t.Fatalf("after the edit: %v, state %s, want trial 1 run and proposal 2 waiting", err, s.State)
				}
			}
			ps, _ := h.db.Proposals(ctx, s.ID)
			if len(ps) == 0 || ps[0].Effective().Weights["is_terminated"] != -400 {
				t.Fatalf("proposal 1 stored as %+v, want is_terminated -400", ps)
			}
			ran := false
			for _, tr := range h.trials(s.ID) {
				ran = ran || tr.Number == 1
				if tr.Number == 1 && tr.RewardConfig.Weights["is_terminated"] != -400 {
					t.Errorf("trial 1 @ rung %d runs is_terminated %v, want -400", tr.Rung, tr.RewardConfig.Weights["is_terminated"])
				}
			}
			if !ran {
				t.Error("trial 1 never ran")
			}
		})
	}
}
