package session_test

import (
	"strings"
	"testing"
	"time"

	"tunebot/session"
)

// TestSettingRules holds one row per setting: a bad value, the one problem it must raise
// (under its own field's name, and nothing else), and a good edge value that must pass. A
// new setting is one row in settingRules and one row here; the last check fails when a rule
// has no row.
func TestSettingRules(t *testing.T) {
	week := 7 * 24 * time.Hour
	over := week + time.Second
	tests := []struct {
		field string
		bad   func(*session.Settings)
		want  string
		edge  func(*session.Settings)
	}{
		{"mode", func(s *session.Settings) { s.Mode = "auto" }, `"auto" is not automatic or approval`, func(s *session.Settings) { s.Mode = session.ModeApproval }},
		{"task", func(s *session.Settings) { s.Tasks, s.Task = []string{"a", "b"}, "" }, "none given, and several tasks are configured (a, b)", func(s *session.Settings) { s.Tasks, s.Task = []string{"a", "b"}, "b" }},
		{"run_name", func(s *session.Settings) { s.RunName = "-rf" }, `"-rf" must match`, func(s *session.Settings) { s.RunName = strings.Repeat("a", 64) }},
		{"gpus", func(s *session.Settings) { s.GPUs = nil }, "must list at least one GPU", func(s *session.Settings) { s.GPUs = []int{0, 255} }},
		{"trial_count", func(s *session.Settings) { s.TrialCount = session.MaxTrials + 1 }, "21 is outside 4–20", func(s *session.Settings) { s.TrialCount = session.MaxTrials }},
		{"rungs", func(s *session.Settings) { s.Rungs = []int{300, 900} }, "must have 3 entries, the iterations of rungs 0, 1 and 2 (the search, then two rounds of promotion), e.g. [300, 900, 2000] (got 2)", func(s *session.Settings) { s.Rungs = []int{1, 1, 1_000_000} }},
		{"promote", func(s *session.Settings) { s.Promote = []int{12, 4, 0} }, "entry 2: 0 must be ≥ 1", func(s *session.Settings) { s.Promote = []int{12, 12, 12} }},
		{"num_envs", func(s *session.Settings) { s.NumEnvs = 0 }, "0 is outside 1–16384", func(s *session.Settings) { s.NumEnvs = 16384 }},
		{"eval_num_envs", func(s *session.Settings) { s.EvalNumEnvs = 4097 }, "4097 is outside 1–4096", func(s *session.Settings) { s.EvalNumEnvs = 1 }},
		{"eval_steps", func(s *session.Settings) { s.EvalSteps = 100001 }, "100001 is outside 10–100000", func(s *session.Settings) { s.EvalSteps = 10 }},
		{"early_stop_patience", func(s *session.Settings) { s.Patience = 0 }, "0 is outside 1–20", func(s *session.Settings) { s.Patience = 20 }},
		{"sampler_max_changes", func(s *session.Settings) { s.SamplerMaxChanges = -1 }, "-1 is outside 0–64", func(s *session.Settings) { s.SamplerMaxChanges = 0 }},
		{"seed", func(s *session.Settings) { s.Seed = -1 }, "-1 is outside 0–2147483647", func(s *session.Settings) { s.Seed = 1<<31 - 1 }},
		{"objective_weights", func(s *session.Settings) { s.Objective = session.ObjectiveWeights{"tracking": -1} }, "", nil},
		{"floors", func(s *session.Settings) { s.Floors = session.Metrics{"lin_vel_error": -1} }, "", nil},
		{"eval_seeds", func(s *session.Settings) { s.EvalSeeds = nil }, "must list 1–16 seeds", func(s *session.Settings) { s.EvalSeeds = make([]int, 16) }},
		{"final_eval_seeds", func(s *session.Settings) { s.FinalEvalSeeds = []int{7, -3} }, "-3 is outside 0–2147483647", func(s *session.Settings) { s.FinalEvalSeeds = []int{3, 1<<31 - 1} }},
		{"final_eval_count", func(s *session.Settings) { s.FinalEvalCount = 1 }, "1 is outside 2–16", func(s *session.Settings) { s.FinalEvalCount = 16 }},
		{"budget_gpu_hours", func(s *session.Settings) { s.BudgetGPUHours = -0.5 }, "-0.5 must be 0 (no cap)", func(s *session.Settings) { s.BudgetGPUHours = 0 }},
		{"budget_tokens", func(s *session.Settings) { s.BudgetTokens = -1 }, "-1 must be 0 (no cap)", func(s *session.Settings) { s.BudgetTokens = 1 }},
		{"preferences.ask", func(s *session.Settings) { s.Preferences.Ask = "always" }, `"always" is not auto or off`, func(s *session.Settings) { s.Preferences.Ask = session.AskOff }},
		{"preferences.max", func(s *session.Settings) { s.Preferences.Max = 21 }, "21 is outside 0–20", func(s *session.Settings) { s.Preferences.Max = 0 }},
		{"preferences.weight", func(s *session.Settings) { s.Preferences.Weight = 1.5 }, "1.5 is outside 0–1", func(s *session.Settings) { s.Preferences.Weight = 1 }},
		{"promotion_review", func(s *session.Settings) { s.PromotionReview = &over }, "is outside 0–168h", func(s *session.Settings) { s.PromotionReview = &week }},
		{"preset", func(s *session.Settings) { s.Preset = "../x" }, `"../x" is not a preset name`, func(s *session.Settings) { s.Preset = "" }},
		{"from", func(s *session.Settings) { s.FromStart = session.FromDefaults }, "given without from", func(s *session.Settings) { s.From = "abc123" }},
		{"from_start", func(s *session.Settings) { s.From, s.FromStart = "abc123", "latest" }, `"latest" is not best or defaults`, func(s *session.Settings) { s.From, s.FromStart = "abc123", session.FromDefaults }},
		{"from_weight", func(s *session.Settings) { s.From, s.FromWeight = "abc123", 2 }, "2 is outside 0–1", func(s *session.Settings) { s.From, s.FromWeight = "abc123", 1 }},
		{"preset", func(s *session.Settings) { s.From, s.Preset = "abc123", "p1" }, "start=best both choose", func(s *session.Settings) { s.From, s.Preset, s.FromStart = "abc123", "p1", session.FromDefaults }},
	}
	var fields []string
	for _, tt := range tests {
		fields = append(fields, tt.field)
		t.Run(tt.field, func(t *testing.T) {
			s := normalized()
			tt.bad(&s)
			err := s.Validate()
			ie, ok := err.(*session.InvalidError)
			if !ok || len(ie.Problems) == 0 {
				t.Fatalf("Validate = %v, want a problem of %s", err, tt.field)
			}
			for _, p := range ie.Problems {
				if !strings.HasPrefix(p, tt.field+": ") || !strings.Contains(p, tt.want) {
					t.Errorf("problem %q, want one of %s containing %q", p, tt.field, tt.want)
				}
			}
			if tt.edge == nil {
				return
			}
			s = normalized()
			tt.edge(&s)
			if err := s.Validate(); err != nil {
				t.Errorf("edge value refused: %v", err)
			}
		})
	}
	if got := strings.Join(session.SettingRuleFields(), " "); got != strings.Join(fields, " ") {
		t.Errorf("rules %s\nrows  %s\n(one row per rule, in order)", got, strings.Join(fields, " "))
	}
}
