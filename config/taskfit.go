package config

import (
	"fmt"
	"slices"
	"sync"

	"go.yaml.in/yaml/v3"

	"tunebot/session"
	"tunebot/trainer/mjlab"
)

// Whether a space fits the task it is configured for. A space pasted under the wrong task
// (the G1's space as reward_space while session.task is the Go2's) passes every check of
// its own, runs on the sim, and ships a preset labelled with the wrong task; on a real
// trainer its first job fails an hour in. tunebot knows the spaces of a few tasks, so a
// space whose names are clearly one of those while it is keyed by another known task is
// refused here, naming both. A space of names nobody knows, or keyed by a task tunebot does
// not know, is the operator's own.

// knownSpace is a reward space whose task tunebot knows: the built-in Go2 space, or a
// checked-in space of trainer/mjlab/spaces.
type knownSpace struct {
	task  string   // the task it was written for
	fits  []string // the tasks that read it: its own, and the tables' for the built-in names
	what  string   // what it is, for a message
	names map[string]bool
}

// mostly is the share of a space's names another task's known space must hold for the space
// to be clearly that task's: a pasted space the operator trimmed or added a term or two to
// is still mostly its own task's, while two robots' velocity spaces share far fewer names.
const mostly = 0.75

// knownSpaces are read once: the built-in names first, then the checked-in spaces by task.
var knownSpaces = sync.OnceValue(func() []knownSpace {
	known := []knownSpace{{task: session.TaskGo2Flat, fits: mjlab.TableTasks(), what: "the built-in Go2 space", names: nameSet(session.DefaultSpace())}}
	for _, task := range mjlab.CheckedInTasks() {
		raw, _ := mjlab.CheckedInSpace(task)
		var doc struct {
			Space *session.Space `yaml:"reward_space"`
		}
		// The checked-in files are tested to decode (mjlab's tests, TestRewardSpacesLoad).
		if yaml.Unmarshal(raw, &doc) != nil || doc.Space == nil {
			continue
		}
		known = append(known, knownSpace{task: task, fits: []string{task}, what: mjlab.CheckedInFile(task), names: nameSet(doc.Space)})
	}
	return known
})

func nameSet(sp *session.Space) map[string]bool {
	set := map[string]bool{}
	for _, n := range sp.Names() {
		set[n] = true
	}
	return set
}

// spaceMatch is how much of a space's names a known space holds.
type spaceMatch struct {
	known *knownSpace
	in    int  // how many of the space's names the known space has
	exact bool // the same names, no more and no fewer
}

func matchOf(k *knownSpace, names []string) spaceMatch {
	m := spaceMatch{known: k}
	for _, n := range names {
		if k.names[n] {
			m.in++
		}
	}
	m.exact = m.in == len(names) && m.in == len(k.names)
	return m
}

func (m spaceMatch) better(o spaceMatch) bool {
	return m.in > o.in || m.in == o.in && m.exact && !o.exact
}

// spaceVerdict is what judgeSpace made of a space under a task.
type spaceVerdict int

const (
	spaceFits    spaceVerdict = iota
	spaceOthers               // its names do not fit the task and are clearly another's: refused
	spaceExactly              // it fits, but its names are exactly another task's space: a warning
)

// judgeSpace compares a space's names with the known spaces of task and of the other tasks.
// It fits when task is not a known one, or some known space of task holds all its names
// (the adapter trains those; a trimmed space is still the task's); it is another's when a
// known space of another task holds most of them and more than any of task's does.
func judgeSpace(task string, names []string) (spaceMatch, spaceVerdict) {
	var own, other spaceMatch
	knownTask := false
	known := knownSpaces()
	for i := range known {
		k := &known[i]
		m := matchOf(k, names)
		if slices.Contains(k.fits, task) {
			knownTask = true
			if m.better(own) {
				own = m
			}
		} else if m.better(other) {
			other = m
		}
	}
	switch {
	case !knownTask || len(names) == 0 || other.known == nil:
		return other, spaceFits
	case own.in < len(names) && other.in > own.in && float64(other.in) >= mostly*float64(len(names)):
		return other, spaceOthers
	case other.exact && !own.exact:
		return other, spaceExactly
	}
	return other, spaceFits
}

// evidence says how much of a space the known one holds: "23 of its 25 names are in X".
func (m spaceMatch) evidence(total int) string {
	switch {
	case m.exact:
		return "the same names as " + m.known.what
	case m.in == total:
		return fmt.Sprintf("all %d of its names are in %s", total, m.known.what)
	}
	return fmt.Sprintf("%d of its %d names are in %s", m.in, total, m.known.what)
}

// spaceTaskProblems refuses each space keyed by a known task whose names are clearly
// another known task's (judgeSpace): reward_spaces by its keys, the one space (reward_space,
// or the built-in one when it is not set) by session.task and session.tasks.
func (c *Config) spaceTaskProblems() []string {
	var probs []string
	c.eachTaskSpace(func(task string, sp *session.Space, where string) {
		m, v := judgeSpace(task, sp.Names())
		if v == spaceOthers {
			probs = append(probs, c.otherTaskProblem(task, where, m, len(sp.Names())))
		}
	})
	return probs
}

// spaceTaskWarnings names each space that fits its task but whose names are exactly another
// known task's space: a paste of the wrong file, or the task's own space trimmed to those.
func (c *Config) spaceTaskWarnings() []string {
	var warns []string
	c.eachTaskSpace(func(task string, sp *session.Space, where string) {
		if m, v := judgeSpace(task, sp.Names()); v == spaceExactly {
			warns = append(warns, fmt.Sprintf("%s: it has the same names as %s, task %s's space; task %s has them too, so it is not refused, but if that file was pasted by mistake, use task %s's own space (`tunebot space --task %s` prints one)", where, m.known.what, m.known.task, task, task, task))
		}
	})
	return warns
}

// eachTaskSpace calls f with every task the config runs and its space, where being the key
// that holds the space (reward_spaces.TASK, or reward_space). A space that could not be read
// or is missing is said by spaceProblems.
func (c *Config) eachTaskSpace(f func(task string, sp *session.Space, where string)) {
	if len(c.Spaces) > 0 {
		for _, task := range c.Tasks() {
			if ts := c.Spaces[task]; ts != nil && !ts.unread && len(ts.Space.Names()) > 0 {
				f(task, &ts.Space, "reward_spaces."+task)
			}
		}
		return
	}
	// The tasks the one space serves are session.tasks, by default the Go2's alone; a
	// session.task outside them is said by sessionProblems, with the fix.
	tasks := c.Session.Tasks
	if len(tasks) == 0 {
		tasks = []string{session.TaskGo2Flat}
	}
	if c.Session.Task != "" && !slices.Contains(tasks, c.Session.Task) {
		return
	}
	for _, task := range tasks {
		f(task, c.RewardSpace(), "reward_space")
	}
}

// otherTaskProblem says that the space at where is task m's, not task's, and what to do.
func (c *Config) otherTaskProblem(task, where string, m spaceMatch, total int) string {
	const mislabel = "its sessions would train another task's reward terms and ship presets labelled %s"
	other, fix := m.known.task, fmt.Sprintf("`tunebot space --task %s` prints one", task)
	switch {
	case len(c.Spaces) > 0:
		return fmt.Sprintf("%s: its names are task %s's (%s), not task %s's, the task it is keyed by: "+mislabel+"; key it by %s, or give %s its own space (%s)",
			where, other, m.evidence(total), task, task, other, task, fix)
	case c.Space == nil:
		return fmt.Sprintf("reward_space: not set, so task %s (%s) is tuned in the built-in space, whose names are task %s's: "+mislabel+"; paste task %s's own space as reward_space (%s)",
			task, c.taskKey(), other, task, task, fix)
	}
	if task == session.TaskGo2Flat {
		fix = "or remove reward_space for the built-in one"
	}
	return fmt.Sprintf("reward_space: its names are task %s's (%s), not task %s's, which %s names: "+mislabel+"; set session.task (and session.tasks) to %s, or give task %s its own space (%s)",
		other, m.evidence(total), task, c.taskKey(), task, other, task, fix)
}

// taskKey is the key that names the one space's tasks.
func (c *Config) taskKey() string {
	if len(c.Session.Tasks) > 1 {
		return "session.tasks"
	}
	return "session.task"
}
