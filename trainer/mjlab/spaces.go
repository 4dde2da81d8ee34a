package mjlab

import (
	"embed"
	"maps"
	"slices"

	"tunebot/session"
)

// checkedIn holds the reviewed spaces of spaces/, as `tunebot space` printed them.
//
//go:embed spaces/*.yaml
var checkedIn embed.FS

// checkedInTasks names the task each checked-in space was printed for.
var checkedInTasks = map[string]string{
	"Mjlab-Velocity-Flat-Unitree-G1":  "spaces/g1.yaml",
	"Mjlab-Velocity-Flat-Unitree-Go1": "spaces/go1.yaml",
}

// CheckedInSpace is the checked-in reward space file of task (a `reward_space:` block), so
// the demo can run a task's space without mjlab or a source tree; false when none is.
func CheckedInSpace(task string) ([]byte, bool) {
	name, ok := checkedInTasks[task]
	if !ok {
		return nil, false
	}
	data, err := checkedIn.ReadFile(name)
	return data, err == nil
}

// CheckedInTasks lists the tasks with a checked-in space, sorted.
func CheckedInTasks() []string {
	return slices.Sorted(maps.Keys(checkedInTasks))
}

// tableTasks are the tasks whose adapter name table (tunebot_mjlab/names.py, TASKS) reads
// the built-in Go2 names of docs/design.md §2: a space in those names is theirs too.
var tableTasks = []string{session.TaskGo2Flat, "Mjlab-Velocity-Flat-Unitree-Go1"}

// TableTasks lists the tasks the adapter trains in the built-in Go2 names, sorted.
func TableTasks() []string { return slices.Sorted(slices.Values(tableTasks)) }

// CheckedInFile is where task's checked-in space is in the source tree, for a message that
// points at it; "" when it has none.
func CheckedInFile(task string) string {
	if name, ok := checkedInTasks[task]; ok {
		return "trainer/mjlab/" + name
	}
	return ""
}
