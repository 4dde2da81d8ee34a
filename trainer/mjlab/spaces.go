package mjlab

import (
	"embed"
	"maps"
	"slices"
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
