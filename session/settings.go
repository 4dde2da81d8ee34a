package session

import (
	"fmt"
	"regexp"
	"time"
)

// Modes of a session.
const (
	ModeAutomatic = "automatic"
	ModeApproval  = "approval"
)

// TaskGo2Flat is the one task of v1.
const TaskGo2Flat = "Unitree-Go2-Flat"

// Settings are a session's parameters, validated at create (docs/design.md §1).
type Settings struct {
	Mode           string           `json:"mode" yaml:"mode"`
	Task           string           `json:"task" yaml:"task"`
	RunName        string           `json:"run_name" yaml:"run_name"`
	GPUs           []int            `json:"gpus" yaml:"gpus"`
	TrialCount     int              `json:"trial_count" yaml:"trial_count"`
	Rungs          []int            `json:"rungs" yaml:"rungs"`
	Promote        []int            `json:"promote" yaml:"promote"`
	NumEnvs        int              `json:"num_envs" yaml:"num_envs"`
	EvalNumEnvs    int              `json:"eval_num_envs" yaml:"eval_num_envs"`
	EvalSteps      int              `json:"eval_steps" yaml:"eval_steps"`
	Seed           int64            `json:"seed" yaml:"seed"`
	Patience       int              `json:"early_stop_patience" yaml:"early_stop_patience"`
	Objective      ObjectiveWeights `json:"objective_weights" yaml:"objective_weights"`
	Floors         Metrics          `json:"floors" yaml:"floors"`
	Fallback       bool             `json:"fallback" yaml:"fallback"`
	Control        bool             `json:"control" yaml:"control"`
	EvalSeeds      []int            `json:"eval_seeds" yaml:"eval_seeds"`
	FinalEvalSeeds []int            `json:"final_eval_seeds" yaml:"final_eval_seeds"`
	Preset         string           `json:"preset,omitempty" yaml:"preset"`
	// SamplerMaxChanges is how many scalars a numeric-sampler proposal of an automatic
	// session may change (0: the reward space's max_changes). Nobody reviews those patches,
	// and the benchmark shows the sampler needs more than the reviewable 4 to find the gain
	// (bench/sampler/README.md); approval sessions and the advisor keep the space's limit.
	SamplerMaxChanges int `json:"sampler_max_changes,omitempty" yaml:"sampler_max_changes"`
	// BudgetGPUHours and BudgetTokens cap a session's GPU time and advisor tokens (0 = no
	// cap); reaching one pauses the session and asks in its thread.
	BudgetGPUHours float64  `json:"budget_gpu_hours,omitempty" yaml:"budget_gpu_hours"`
	BudgetTokens   int      `json:"budget_tokens,omitempty" yaml:"budget_tokens"`
	Tasks          []string `json:"-" yaml:"tasks"` // tasks this installation accepts
	// Preferences says whether and how often tunebot asks people which of two trials walks
	// better, and how much their answers weigh in the numeric sampler (docs/design.md §1).
	Preferences PreferenceSettings `json:"preferences" yaml:"preferences"`
	// PromotionReview is how long a rung's promotion plan waits for people (Go, promote N,
	// drop N) before the promotions start; nil takes the mode's default (ReviewWait).
	PromotionReview *time.Duration `json:"promotion_review,omitempty" yaml:"promotion_review"`
}

// PreferenceSettings is session.preferences: the A/B cards.
type PreferenceSettings struct {
	Ask    string  `json:"ask" yaml:"ask"`       // auto (cards are asked) or off
	Max    int     `json:"max" yaml:"max"`       // cards asked per session at most
	Weight float64 `json:"weight" yaml:"weight"` // score per unit of the fitted "looks right" utility
}

// When A/B cards are asked.
const (
	AskAuto = "auto"
	AskOff  = "off"
)

// DefaultPreferenceWeight is what one unit of the "looks right" utility (a logit of the
// person's preference) is worth in score units to the numeric sampler; chosen on sim
// surfaces below the held-out seeds (bench/prefs/README.md).
const DefaultPreferenceWeight = 0.02

// Asks reports whether tunebot asks A/B cards at all (a session stored before preferences
// existed has neither ask nor max, and asks none).
func (p PreferenceSettings) Asks() bool { return p.Ask == AskAuto && p.Max > 0 }

// Default promotion review waits: approval mode waits for Go or this long; automatic mode
// goes ahead at once unless session.promotion_review says otherwise.
const (
	DefaultApprovalReview  = 15 * time.Minute
	DefaultAutomaticReview = 0
)

// ReviewWait is how long a promotion plan waits before the promotions start: the
// session's promotion_review, or the mode's default.
func (s Settings) ReviewWait() time.Duration {
	switch {
	case s.PromotionReview != nil:
		return *s.PromotionReview
	case s.Mode == ModeApproval:
		return DefaultApprovalReview
	}
	return DefaultAutomaticReview
}

// DefaultSettings returns the defaults of docs/design.md §1, with three changes measured on
// held-out problems (bench/sampler/README.md): rung 0 is evaluated on 3 seeds, because with
// a few percent of evaluation noise a single seed's best trial is often a lucky one and the
// next patches build on it (an evaluation costs far less than the training it judges);
// patience is 8, because at that noise 4 trials without a +0.01 gain stopped most sessions
// a third of the way in; and a sampler proposal of an automatic session may change 12
// scalars (sampler_max_changes), since nobody has to review it.
func DefaultSettings() Settings {
	s := Settings{
		Mode: ModeAutomatic, Task: TaskGo2Flat, RunName: "auto-tune", GPUs: []int{0},
		TrialCount: 12, Rungs: []int{300, 900, 2000}, NumEnvs: 4096, EvalNumEnvs: 256,
		EvalSteps: 1000, Seed: 42, Patience: 8, Objective: DefaultObjectiveWeights(),
		Floors: DefaultFloors(), EvalSeeds: []int{0, 1, 2}, FinalEvalSeeds: []int{0, 1, 2},
		SamplerMaxChanges: 12, Control: true,
		Preferences: PreferenceSettings{Ask: AskAuto, Max: 6, Weight: DefaultPreferenceWeight},
	}
	return s
}

// Normalize fills what derives from other fields: promote defaults to
// [trial_count, min(4, n), min(2, n)] when not given.
func (s *Settings) Normalize() {
	if len(s.Promote) == 0 {
		s.Promote = DefaultPromote(s.TrialCount)
	}
	if s.Objective == nil {
		s.Objective = DefaultObjectiveWeights()
	}
	if s.Floors == nil {
		s.Floors = DefaultFloors()
	}
}

// DefaultPromote is [n, min(4, n), min(2, n)].
func DefaultPromote(n int) []int { return []int{n, min(4, n), min(2, n)} }

// NamePattern is the rule of run and preset names (and the task name). They end up in the
// trainer's argv, in git branch names and in file names, so the first character is a letter
// or digit: a leading '-' would read as a flag (docs/design.md §4, §8).
const NamePattern = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`

var nameRE = regexp.MustCompile(NamePattern)

// ValidName reports whether name follows NamePattern.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// MinTrials and MaxTrials bound a session's trial count, the baseline included.
const (
	MinTrials = 4
	MaxTrials = 20
)

// Validate checks every field and names each bad one.
func (s Settings) Validate() error {
	var probs []string
	bad := func(field, format string, args ...any) {
		probs = append(probs, field+": "+fmt.Sprintf(format, args...))
	}
	if s.Mode != ModeAutomatic && s.Mode != ModeApproval {
		bad("mode", "%q is not automatic or approval", s.Mode)
	}
	tasks := s.Tasks
	if len(tasks) == 0 {
		tasks = []string{TaskGo2Flat}
	}
	if s.Task == "" && len(tasks) > 1 {
		bad("task", "%s", noTaskProblem(tasks))
	} else if !contains(tasks, s.Task) {
		bad("task", "%q is not supported (supported: %v)", s.Task, tasks)
	}
	if !ValidName(s.RunName) {
		bad("run_name", "%q must match %s (1–64 letters, digits, '_', '.' or '-', starting with a letter or digit)", s.RunName, NamePattern)
	}
	if len(s.GPUs) == 0 {
		bad("gpus", "must list at least one GPU")
	}
	seen := map[int]bool{}
	for _, g := range s.GPUs {
		if g < 0 || g > 255 {
			bad("gpus", "%d is outside 0–255", g)
		} else if seen[g] {
			bad("gpus", "%d is listed twice", g)
		}
		seen[g] = true
	}
	if s.TrialCount < MinTrials || s.TrialCount > MaxTrials {
		bad("trial_count", "%d is outside %d–%d", s.TrialCount, MinTrials, MaxTrials)
	}
	if len(s.Rungs) != 3 {
		bad("rungs", "must have 3 entries (got %d)", len(s.Rungs))
	} else {
		for i, r := range s.Rungs {
			switch {
			case r < 1 || r > 1_000_000:
				bad("rungs", "rung %d: %d iterations is outside 1–1000000", i, r)
			case i > 0 && r < s.Rungs[i-1]:
				bad("rungs", "rung %d: %d is less than rung %d's %d", i, r, i-1, s.Rungs[i-1])
			}
		}
	}
	if len(s.Promote) != 3 {
		bad("promote", "must have 3 entries (got %d)", len(s.Promote))
	} else {
		for i, p := range s.Promote {
			if p < 1 || (i > 0 && p > s.Promote[i-1]) || p > s.TrialCount {
				bad("promote", "entry %d: %d must be ≥ 1, ≤ trial_count and ≤ the entry before", i, p)
			}
		}
	}
	rangeCheck := func(field string, v, lo, hi int) {
		if v < lo || v > hi {
			bad(field, "%d is outside %d–%d", v, lo, hi)
		}
	}
	rangeCheck("num_envs", s.NumEnvs, 1, 16384)
	rangeCheck("eval_num_envs", s.EvalNumEnvs, 1, 4096)
	rangeCheck("eval_steps", s.EvalSteps, 10, 100000)
	rangeCheck("early_stop_patience", s.Patience, 1, 20)
	rangeCheck("sampler_max_changes", s.SamplerMaxChanges, 0, 64)
	if s.Seed < 0 || s.Seed > 1<<31-1 {
		bad("seed", "%d is outside 0–2147483647", s.Seed)
	}
	if err := s.Objective.Check(); err != nil {
		probs = append(probs, prefixed("objective_weights", err)...)
	}
	if err := CheckFloors(s.Floors); err != nil {
		probs = append(probs, prefixed("floors", err)...)
	}
	for _, f := range []struct {
		name  string
		seeds []int
	}{{"eval_seeds", s.EvalSeeds}, {"final_eval_seeds", s.FinalEvalSeeds}} {
		if len(f.seeds) == 0 || len(f.seeds) > 16 {
			bad(f.name, "must list 1–16 seeds")
		}
		for _, v := range f.seeds {
			if v < 0 || v > 1<<31-1 {
				bad(f.name, "%d is outside 0–2147483647", v)
			}
		}
	}
	if !finite(s.BudgetGPUHours) || s.BudgetGPUHours < 0 {
		bad("budget_gpu_hours", "%g must be 0 (no cap) or a positive number of hours", s.BudgetGPUHours)
	}
	if s.BudgetTokens < 0 {
		bad("budget_tokens", "%d must be 0 (no cap) or a positive number of tokens", s.BudgetTokens)
	}
	if p := s.Preferences; p.Ask != AskAuto && p.Ask != AskOff {
		bad("preferences.ask", "%q is not auto or off", p.Ask)
	}
	rangeCheck("preferences.max", s.Preferences.Max, 0, 20)
	if w := s.Preferences.Weight; !finite(w) || w < 0 || w > 1 {
		bad("preferences.weight", "%g is outside 0–1 (score per unit of the fitted utility)", w)
	}
	if r := s.PromotionReview; r != nil && (*r < 0 || *r > 7*24*time.Hour) {
		bad("promotion_review", "%s is outside 0–168h", *r)
	}
	if s.Preset != "" && !ValidName(s.Preset) {
		bad("preset", "%q is not a preset name", s.Preset)
	}
	if len(probs) > 0 {
		return &InvalidError{What: "settings invalid", Problems: probs}
	}
	return nil
}

func prefixed(field string, err error) []string {
	if ie, ok := err.(*InvalidError); ok {
		out := make([]string, len(ie.Problems))
		for i, p := range ie.Problems {
			out[i] = field + ": " + p
		}
		return out
	}
	return []string{field + ": " + err.Error()}
}
