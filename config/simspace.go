package config

import (
	"fmt"
	"slices"
	"strings"

	"tunebot/session"
	"tunebot/trainer"
)

// What config check says about a task the configured trainer would not run: one the
// installation does not list, and one whose reward space the built-in sim is never told.

// sessionProblems checks session (Settings.Validate); a session.task the installation does
// not list says how to make it one (supportHint).
func (c *Config) sessionProblems() []string {
	probs := errProblems("session", c.defaultSettings().Validate())
	for i, p := range probs {
		if strings.HasPrefix(p, "session.task: ") && strings.Contains(p, "is not supported") {
			probs[i] = p + "; " + c.supportHint(c.Session.Task)
		}
	}
	return probs
}

// supportHint is how a task becomes one this config supports.
func (c *Config) supportHint(task string) string {
	switch {
	case len(c.Spaces) > 0:
		return fmt.Sprintf("give it a space under reward_spaces (`tunebot space --task %s` prints one)", task)
	case c.Space != nil:
		return "list it in session.tasks (the tasks this installation runs, with its reward_space), or give each task its space under reward_spaces"
	}
	return fmt.Sprintf("list it in session.tasks and paste its space as reward_space (`tunebot space --task %s` prints one), or give each task its space under reward_spaces", task)
}

// simSpaceProblems: a built-in sim trainer whose templates do not pass {reward_space} (a
// config that spells out older templates) reads every configuration in the built-in Go2
// space, so a task whose space has other names would fail its first job; each such task is
// named with the fix.
func (c *Config) simSpaceProblems() []string {
	t := c.Trainer
	if !t.IsSim() || (passesSpace(t.Train) && passesSpace(t.Evaluate)) {
		return nil
	}
	tasks := c.Tasks()
	if len(tasks) == 0 {
		tasks = []string{c.Session.Task}
	}
	builtin := slices.Sorted(slices.Values(session.DefaultSpace().Names()))
	var probs []string
	for _, task := range tasks {
		sp := c.SpaceOf(task)
		if sp == nil || slices.Equal(slices.Sorted(slices.Values(sp.Names())), builtin) {
			continue
		}
		probs = append(probs, fmt.Sprintf(`trainer.train: the built-in sim trainer is not told the reward space of task %s (its names are not the built-in Go2 space's), so its first job would fail: add "--reward-space", "{reward_space}" to trainer.train and trainer.evaluate, or leave both out to use the defaults, which pass it`, task))
	}
	return probs
}

// passesSpace reports whether a sim template gives the job a reward space: the
// {reward_space} placeholder or a --reward-space flag of its own.
func passesSpace(argv []string) bool {
	return trainer.Uses(argv, "reward_space") || slices.ContainsFunc(argv, func(a string) bool {
		return a == "--reward-space" || strings.HasPrefix(a, "--reward-space=")
	})
}
