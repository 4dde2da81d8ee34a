package trainer

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"tunebot/session"
)

// Templates configures how the trainer's subprocesses are started (docs/design.md §4). Every
// template is an argv list, never a shell string; placeholders such as {run_dir} are
// replaced anywhere inside an argument.
type Templates struct {
	Python     string   // value of {python}
	Workdir    string   // working directory of every job ("" = tunebot's own)
	Train      []string // argv of a training job
	ResumeArgs []string // appended to Train when a job resumes a checkpoint
	Evaluate   []string // argv of an evaluation job
	// JobTimeout and EvalTimeout bound one training and one evaluation job (0 = no bound).
	JobTimeout, EvalTimeout time.Duration
	// Grace is how long a job has to exit after SIGINT before its group gets SIGKILL
	// (0 = 10 s).
	Grace time.Duration
	// Tunebot is the value of {tunebot}, the tunebot executable the sim trainer runs as;
	// "" means this process's own executable.
	Tunebot string
	// Env adds KEY=VALUE entries to every job's environment (after the parent's, so they
	// win), for what a trainer needs that tunebot's own environment lacks.
	Env []string
	// Slurm, when set, runs every job on a Slurm cluster instead of this machine
	// (executor backend slurm); nil runs them here as subprocesses.
	Slurm *Slurm
	// Ray, when set, runs every job on a Ray cluster instead (executor backend ray).
	Ray *Ray
	// Events bound what is read of a training job's event files (zero fields: defaults).
	Events EventLimits
}

// DefaultGrace is the SIGINT-to-SIGKILL delay when Templates.Grace is 0.
const DefaultGrace = 10 * time.Second

// The built-in sim trainer's templates (tunebot sim-train and sim-eval), the embedded
// defaults of the config: they honour the same contract as a real trainer.
var (
	SimTrain = []string{"{tunebot}", "sim-train", "--task", "{task}", "--run-dir", "{run_dir}",
		"--reward-config", "{reward_config}", "--iterations", "{iterations}",
		"--target-iterations", "{target_iterations}", "--start-iteration", "{start_iteration}",
		"--seed", "{seed}", "--num-envs", "{num_envs}", "--reward-space", "{reward_space}"}
	SimResume   = []string{"--resume-checkpoint", "{checkpoint}"}
	SimEvaluate = []string{"{tunebot}", "sim-eval", "--task", "{task}", "--checkpoint", "{checkpoint}",
		"--output", "{eval_output}", "--seeds", "{eval_seeds}", "--num-envs", "{eval_num_envs}",
		"--steps", "{eval_steps}", "--run-dir", "{run_dir}", "--clip-output", "{clip_output}",
		"--clip-poster", "{clip_poster}", "--trial", "{trial}", "--rung", "{rung}",
		"--reward-space", "{reward_space}"}
)

// Placeholder names. Which ones a template may use depends on its kind: a value that a
// job of that kind does not have would silently become "", so it is refused up front.
var (
	commonNames = []string{"python", "tunebot", "task", "run_dir", "reward_config", "seed",
		"num_envs", "gpu_ids", "run_name", "eval_num_envs", "eval_steps", "trial", "rung", "reward_space"}
	trainNames  = append(slices.Clone(commonNames), "iterations", "target_iterations", "start_iteration")
	resumeNames = append(slices.Clone(trainNames), "checkpoint")
	evalNames   = append(slices.Clone(commonNames), "checkpoint", "eval_output", "eval_seeds", "clip_output", "clip_poster")
	allNames    = append(slices.Clone(resumeNames), "eval_output", "eval_seeds", "clip_output", "clip_poster")
)

// placeholderRE matches {name}; braces around anything else (a JSON argument) are literal.
var placeholderRE = regexp.MustCompile(`\{([a-z_]+)\}`)

// checkTemplate validates one template and names every problem: each unknown placeholder
// with the argument it is in and the known name it is closest to (a typo), and each
// placeholder that has no value in this kind of job.
func checkTemplate(field string, argv []string, allowed []string, required bool) []string {
	var probs []string
	if required && len(argv) == 0 {
		return []string{field + ": must not be empty"}
	}
	if len(argv) > 0 && field != "resume_args" && strings.TrimSpace(argv[0]) == "" {
		probs = append(probs, field+": the program (first argument) is empty")
	}
	job := strings.TrimSuffix(field, "_args")
	for i, a := range argv {
		seen := map[string]bool{}
		for _, m := range placeholderRE.FindAllStringSubmatch(a, -1) {
			n := m[1]
			if seen[n] || slices.Contains(allowed, n) {
				continue
			}
			seen[n] = true
			at := fmt.Sprintf("%s[%d]", field, i)
			if slices.Contains(allNames, n) {
				probs = append(probs, fmt.Sprintf("%s: placeholder {%s} in %q has no value in %s %s job", at, n, a, article(job), job))
				continue
			}
			hint := ""
			if best, ok := session.Closest(n, allowed); ok {
				hint = " (did you mean {" + best + "}?)"
			}
			probs = append(probs, fmt.Sprintf("%s: unknown placeholder {%s} in %q%s", at, n, a, hint))
		}
	}
	return probs
}

func article(word string) string {
	if strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// Uses reports whether any argument of argv holds the placeholder {name}.
func Uses(argv []string, name string) bool {
	for _, a := range argv {
		if strings.Contains(a, "{"+name+"}") {
			return true
		}
	}
	return false
}

// expand replaces the placeholders of argv with vals. Names were checked by New.
func expand(argv []string, vals map[string]string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = placeholderRE.ReplaceAllStringFunc(a, func(m string) string {
			if v, ok := vals[m[1:len(m)-1]]; ok {
				return v
			}
			return m
		})
	}
	return out
}
