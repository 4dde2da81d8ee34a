package session

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
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
	Mode        string           `json:"mode" yaml:"mode"`
	Task        string           `json:"task" yaml:"task"`
	RunName     string           `json:"run_name" yaml:"run_name"`
	GPUs        []int            `json:"gpus" yaml:"gpus"`
	TrialCount  int              `json:"trial_count" yaml:"trial_count"`
	Rungs       []int            `json:"rungs" yaml:"rungs"`
	Promote     []int            `json:"promote" yaml:"promote"`
	NumEnvs     int              `json:"num_envs" yaml:"num_envs"`
	EvalNumEnvs int              `json:"eval_num_envs" yaml:"eval_num_envs"`
	EvalSteps   int              `json:"eval_steps" yaml:"eval_steps"`
	Seed        int64            `json:"seed" yaml:"seed"`
	Patience    int              `json:"early_stop_patience" yaml:"early_stop_patience"`
	Objective   ObjectiveWeights `json:"objective_weights" yaml:"objective_weights"`
	Floors      Metrics          `json:"floors" yaml:"floors"`
	Fallback    bool             `json:"fallback" yaml:"fallback"`
	Control     bool             `json:"control" yaml:"control"`
	EvalSeeds   []int            `json:"eval_seeds" yaml:"eval_seeds"`
	// FinalEvalSeeds are the seeds of the final evaluation; none listed (the default): a
	// session draws FinalEvalCount fresh ones of its own (FreshSeeds). They must not be
	// evaluation seeds: the final evaluation measures what those chose (docs/design.md §3).
	FinalEvalSeeds []int  `json:"final_eval_seeds" yaml:"final_eval_seeds"`
	FinalEvalCount int    `json:"final_eval_count,omitempty" yaml:"final_eval_count"`
	Preset         string `json:"preset,omitempty" yaml:"preset"`
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
	// From is the earlier session on the same task this one builds on (tune --from,
	// /tune start from=): its finished trials seed the numeric sampler's model, each weighted
	// FromWeight (0: DefaultFromWeight), and its rejected directions stay rejected.
	// FromStart says where this session starts: FromBest (the default) or FromDefaults
	// (docs/design.md §1, a second session). Chosen per session, never in the config file.
	From       string  `json:"from,omitempty" yaml:"-"`
	FromStart  string  `json:"from_start,omitempty" yaml:"-"`
	FromWeight float64 `json:"from_weight,omitempty" yaml:"-"`
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
		Floors: DefaultFloors(), EvalSeeds: []int{0, 1, 2}, FinalEvalCount: DefaultFinalEvalCount,
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

// Validate checks every field against its rule in settingRules and names each bad one.
func (s Settings) Validate() error {
	var probs []string
	for _, r := range settingRules {
		for _, p := range r.check(s) {
			probs = append(probs, r.field+": "+p)
		}
	}
	if len(probs) > 0 {
		return &InvalidError{What: "settings invalid", Problems: probs}
	}
	return nil
}

// settingRule is one field's rule: check returns its problems, each without the field name.
type settingRule struct {
	field string
	check func(Settings) []string
}

// settingRules are the rules of every setting, in the order their problems are listed. Adding
// a setting is one row here and one row in TestSettingRules.
var settingRules = []settingRule{
	{"mode", func(s Settings) []string { return oneOf(s.Mode, ModeAutomatic, ModeApproval) }},
	{"task", func(s Settings) []string { return supportedTask(s.Task, s.Tasks) }},
	{"run_name", func(s Settings) []string { return validName(s.RunName, "") }},
	{"gpus", func(s Settings) []string { return gpuList(s.GPUs) }},
	{"trial_count", func(s Settings) []string { return inRange(s.TrialCount, MinTrials, MaxTrials) }},
	{"rungs", func(s Settings) []string { return rungList(s.Rungs) }},
	{"promote", func(s Settings) []string { return promoteList(s.Promote, s.TrialCount) }},
	{"num_envs", func(s Settings) []string { return inRange(s.NumEnvs, 1, 16384) }},
	{"eval_num_envs", func(s Settings) []string { return inRange(s.EvalNumEnvs, 1, 4096) }},
	{"eval_steps", func(s Settings) []string { return inRange(s.EvalSteps, 10, 100000) }},
	{"early_stop_patience", func(s Settings) []string { return inRange(s.Patience, 1, 20) }},
	{"sampler_max_changes", func(s Settings) []string { return inRange(s.SamplerMaxChanges, 0, 64) }},
	{"seed", func(s Settings) []string { return seedRange(s.Seed) }},
	{"objective_weights", func(s Settings) []string { return problemsOf(s.Objective.Check()) }},
	{"floors", func(s Settings) []string { return problemsOf(CheckFloors(s.Floors)) }},
	{"eval_seeds", func(s Settings) []string { return evalSeedList(s.EvalSeeds) }},
	{"final_eval_seeds", func(s Settings) []string { return finalSeedList(s.FinalEvalSeeds, s.EvalSeeds) }},
	{"final_eval_count", func(s Settings) []string { return finalCount(s.FinalEvalCount, s.FinalEvalSeeds) }},
	{"budget_gpu_hours", func(s Settings) []string { return gpuHours(s.BudgetGPUHours) }},
	{"budget_tokens", func(s Settings) []string { return tokenBudget(s.BudgetTokens) }},
	{"preferences.ask", func(s Settings) []string { return oneOf(s.Preferences.Ask, AskAuto, AskOff) }},
	{"preferences.max", func(s Settings) []string { return inRange(s.Preferences.Max, 0, 20) }},
	{"preferences.weight", func(s Settings) []string { return preferenceWeight(s.Preferences.Weight) }},
	{"promotion_review", func(s Settings) []string { return reviewWait(s.PromotionReview) }},
	{"preset", func(s Settings) []string { return validName(s.Preset, "a preset name") }},
	{"from", func(s Settings) []string { return s.fromProblems() }},
	{"from_start", func(s Settings) []string { return s.fromStartProblems() }},
	{"from_weight", func(s Settings) []string { return s.fromWeightProblems() }},
	{"preset", func(s Settings) []string { return s.presetAndFromBest() }},
}

// oneOf: the value is one of the allowed words.
func oneOf(v string, allowed ...string) []string {
	if contains(allowed, v) {
		return nil
	}
	if len(allowed) == 2 {
		return []string{fmt.Sprintf("%q is not %s or %s%s", v, allowed[0], allowed[1], DidYouMean(v, allowed))}
	}
	return []string{fmt.Sprintf("%q is not one of %v%s", v, allowed, DidYouMean(v, allowed))}
}

// supportedTask: the task is one this installation accepts (the v1 task when none is listed),
// and named when several are.
func supportedTask(task string, tasks []string) []string {
	if len(tasks) == 0 {
		tasks = []string{TaskGo2Flat}
	}
	if task == "" && len(tasks) > 1 {
		return []string{noTaskProblem(tasks)}
	}
	if contains(tasks, task) {
		return nil
	}
	return []string{fmt.Sprintf("%q is not supported (supported: %v)", task, tasks)}
}

// validName: a run name always follows NamePattern; an optional name (what is not "") only
// when it is given.
func validName(name, what string) []string {
	switch {
	case ValidName(name):
		return nil
	case what == "":
		return []string{fmt.Sprintf("%q must match %s (1–64 letters, digits, '_', '.' or '-', starting with a letter or digit)", name, NamePattern)}
	case name == "":
		return nil
	}
	return []string{fmt.Sprintf("%q is not %s", name, what)}
}

// gpuList: at least one GPU, each 0–255 and listed once.
func gpuList(gpus []int) []string {
	if len(gpus) == 0 {
		return []string{"must list at least one GPU"}
	}
	var probs []string
	seen := map[int]bool{}
	for _, g := range gpus {
		if g < 0 || g > 255 {
			probs = append(probs, fmt.Sprintf("%d is outside 0–255", g))
		} else if seen[g] {
			probs = append(probs, fmt.Sprintf("%d is listed twice", g))
		}
		seen[g] = true
	}
	return probs
}

// inRange: lo ≤ v ≤ hi.
func inRange(v, lo, hi int) []string {
	if v < lo || v > hi {
		return []string{fmt.Sprintf("%d is outside %d–%d", v, lo, hi)}
	}
	return nil
}

// rungList: three rungs of 1–1000000 iterations, none shorter than the one before.
func rungList(rungs []int) []string {
	if len(rungs) != 3 {
		return []string{fmt.Sprintf("must have 3 entries, the iterations of rungs 0, 1 and 2 (the search, then two rounds of promotion), e.g. [300, 900, 2000] (got %d)", len(rungs))}
	}
	var probs []string
	for i, r := range rungs {
		switch {
		case r < 1 || r > 1_000_000:
			probs = append(probs, fmt.Sprintf("rung %d: %d iterations is outside 1–1000000", i, r))
		case i > 0 && r < rungs[i-1]:
			probs = append(probs, fmt.Sprintf("rung %d: %d is less than rung %d's %d", i, r, i-1, rungs[i-1]))
		}
	}
	return probs
}

// promoteList: three entries, each at least 1, at most the trial count and the entry before.
func promoteList(promote []int, trials int) []string {
	if len(promote) != 3 {
		return []string{fmt.Sprintf("must have 3 entries, the trials of rungs 0, 1 and 2 (trial_count, then how many are promoted to each), e.g. [12, 4, 2] (got %d)", len(promote))}
	}
	var probs []string
	for i, p := range promote {
		if p < 1 || (i > 0 && p > promote[i-1]) || p > trials {
			probs = append(probs, fmt.Sprintf("entry %d: %d must be ≥ 1, ≤ trial_count and ≤ the entry before", i, p))
		}
	}
	return probs
}

// seedRange: a seed is 0–2147483647 (what every trainer takes).
func seedRange(seed int64) []string {
	if seed < 0 || seed > 1<<31-1 {
		return []string{fmt.Sprintf("%d is outside 0–2147483647", seed)}
	}
	return nil
}

// evalSeedList: 1–16 evaluation seeds, each 0–2147483647.
func evalSeedList(seeds []int) []string {
	var probs []string
	if len(seeds) == 0 || len(seeds) > 16 {
		probs = append(probs, "must list 1–16 seeds")
	}
	for _, v := range seeds {
		probs = append(probs, seedRange(int64(v))...)
	}
	return probs
}

// finalSeedList: none (fresh seeds of the session's own), or 2–16 seeds, each 0–2147483647,
// listed once and none an evaluation seed: a seed that chose the finalist would re-measure
// its luck, and a gain's spread needs two seeds.
func finalSeedList(seeds, evalSeeds []int) []string {
	if len(seeds) == 0 {
		return nil
	}
	var probs []string
	if len(seeds) < 2 || len(seeds) > 16 {
		probs = append(probs, fmt.Sprintf("must list 2–16 seeds (got %d), or none for fresh seeds of each session's own", len(seeds)))
	}
	seen := map[int]int{}
	var twice, shared []string
	for _, v := range seeds {
		if seen[v]++; seen[v] > 1 {
			if seen[v] == 2 {
				twice = append(twice, fmt.Sprint(v))
			}
			continue
		}
		probs = append(probs, seedRange(int64(v))...)
		if slices.Contains(evalSeeds, v) {
			shared = append(shared, fmt.Sprint(v))
		}
	}
	switch len(twice) {
	case 0:
	case 1:
		probs = append(probs, twice[0]+" is listed more than once")
	default:
		probs = append(probs, andWords(twice)+" are listed more than once")
	}
	if len(shared) > 0 {
		probs = append(probs, fmt.Sprintf("%s also in eval_seeds: the final evaluation must run on seeds that chose nothing, or it re-measures the luck that chose the finalist; leave final_eval_seeds out for fresh seeds of each session's own", andWords(shared)))
	}
	return probs
}

// finalCount: 2–16 fresh seeds when final_eval_seeds lists none.
func finalCount(n int, seeds []int) []string {
	if len(seeds) == 0 && (n < MinFinalEvalCount || n > MaxFinalEvalCount) {
		return []string{fmt.Sprintf("%d is outside %d–%d (a gain's spread needs two seeds)", n, MinFinalEvalCount, MaxFinalEvalCount)}
	}
	return nil
}

// andWords joins words as "1", "1 and 2", "1, 2 and 3".
func andWords(ws []string) string {
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return ws[0]
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " and " + ws[len(ws)-1]
}

// gpuHours: 0 (no cap) or a positive number of hours.
func gpuHours(h float64) []string {
	if !finite(h) || h < 0 {
		return []string{fmt.Sprintf("%g must be 0 (no cap) or a positive number of hours", h)}
	}
	return nil
}

// tokenBudget: 0 (no cap) or a positive number of tokens.
func tokenBudget(n int) []string {
	if n < 0 {
		return []string{fmt.Sprintf("%d must be 0 (no cap) or a positive number of tokens", n)}
	}
	return nil
}

// preferenceWeight: 0–1 of the score per unit of the fitted utility.
func preferenceWeight(w float64) []string {
	if !finite(w) || w < 0 || w > 1 {
		return []string{fmt.Sprintf("%g is outside 0–1 (score per unit of the fitted utility)", w)}
	}
	return nil
}

// reviewWait: a promotion review waits 0–168h (nil: the mode's default).
func reviewWait(r *time.Duration) []string {
	if r != nil && (*r < 0 || *r > 7*24*time.Hour) {
		return []string{fmt.Sprintf("%s is outside 0–168h", *r)}
	}
	return nil
}

// problemsOf lists an error's problems (each problem of an InvalidError), nil for nil.
func problemsOf(err error) []string {
	if err == nil {
		return nil
	}
	if ie, ok := err.(*InvalidError); ok {
		return ie.Problems
	}
	return []string{err.Error()}
}
