package session

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Tasks are the tasks the engine has a space of their own for, sorted; none for a
// one-space engine.
func (e *Engine) Tasks() []string { return slices.Sorted(maps.Keys(e.cfg.Spaces)) }

// SpaceOf is the reward space of task: its own when the engine knows one space per task
// (EngineConfig.Spaces), else the one space. Every reader of a session's space (proposals,
// decisions and edits, presets, checks) asks here with the session's task.
func (e *Engine) SpaceOf(task string) *Space {
	if sp, ok := e.cfg.Spaces[task]; ok && sp != nil {
		return sp
	}
	return e.cfg.Space
}

// CheckPresetTask refuses to use preset p for task: a preset is applied only to the task
// it was tuned on, whose terms and defaults its configuration holds. A preset stored
// before presets recorded their task (Task "") is not refused.
func CheckPresetTask(p Preset, task string) error {
	if p.Task == "" || task == "" || p.Task == task {
		return nil
	}
	return Userf(ErrConflict, "preset %s was tuned on task %s, not %s: a preset is applied only to its own task", p.Name, p.Task, task)
}

// noTaskProblem is what Validate says of a session that names no task while several are
// configured: there is no default to fall back on, so each start names one.
func noTaskProblem(tasks []string) string {
	return fmt.Sprintf("none given, and several tasks are configured (%s): name one (e.g. %s)", strings.Join(tasks, ", "), tasks[0])
}
