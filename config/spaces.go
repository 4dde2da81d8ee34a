package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"tunebot/session"
)

// TaskSpace is one task's entry under reward_spaces: either the reward space's own keys
// (terms, params, orders, max_changes, step_min, step_max, as reward_space takes them) or
// file, a space file holding a reward_space block as `tunebot space --task` prints it
// (trainer/mjlab/spaces/g1.yaml), relative to the config file.
type TaskSpace struct {
	File          string `yaml:"file"`
	session.Space `yaml:",inline"`

	unread bool // file could not be read: said once, not checked again
}

// inType is the Go type a yaml decoding error names, which says nothing to a person.
var inType = regexp.MustCompile(` in type [^;]*`)

// maxSpaceFile bounds a space file: a space of a few dozen terms is a few kilobytes.
const maxSpaceFile = 1 << 20

// Tasks are the tasks of reward_spaces, sorted; none when the config has one space.
func (c Config) Tasks() []string { return slices.Sorted(maps.Keys(c.Spaces)) }

// SpaceOf is task's reward space: its reward_spaces entry, or the one space (reward_space
// or the built-in one) when the config has no reward_spaces. nil for a task reward_spaces
// does not hold.
func (c Config) SpaceOf(task string) *session.Space {
	if len(c.Spaces) == 0 {
		return c.RewardSpace()
	}
	if ts, ok := c.Spaces[task]; ok && ts != nil {
		return &ts.Space
	}
	return nil
}

// TaskSpaces maps each task of reward_spaces to its space, for the engine (nil without).
func (c Config) TaskSpaces() map[string]*session.Space {
	if len(c.Spaces) == 0 {
		return nil
	}
	out := map[string]*session.Space{}
	for task := range c.Spaces {
		out[task] = c.SpaceOf(task)
	}
	return out
}

// EngineSpace is the engine's one space: the config's, or with reward_spaces the default
// task's (nil when no task is the default: every session then names its own).
func (c Config) EngineSpace() *session.Space {
	if len(c.Spaces) == 0 {
		return c.RewardSpace()
	}
	return c.SpaceOf(c.Session.Task)
}

// NamesSpace is what chat commands are parsed against (a term's name, a param's): the
// one space, or with several tasks all their scalars together; the engine then checks a
// session's patch against its own task's space.
func (c Config) NamesSpace() *session.Space {
	if len(c.Spaces) == 0 {
		return c.RewardSpace()
	}
	all := &session.Space{}
	for _, task := range c.Tasks() {
		sp := c.SpaceOf(task)
		if all.MaxChanges == 0 {
			all.MaxChanges, all.StepMin, all.StepMax = sp.MaxChanges, sp.StepMin, sp.StepMax
		}
		for _, t := range sp.Terms {
			if _, ok := all.Term(t.Name); !ok {
				all.Terms = append(all.Terms, t)
			}
		}
		for _, p := range sp.Params {
			if _, ok := all.Param(p.Name); !ok {
				all.Params = append(all.Params, p)
			}
		}
	}
	return all
}

// setTasks reads the space files of reward_spaces (relative to dir) and makes its keys the
// tasks sessions may run: session.tasks, and session.task when the file does not name the
// default itself (the only task; with several, none, so that each start names one).
func (c *Config) setTasks(root *yaml.Node, dir string, known map[string]string) []string {
	if len(c.Spaces) == 0 {
		return nil
	}
	var probs []string
	if c.Space != nil {
		probs = append(probs, "reward_space: set together with reward_spaces; give each task its space under reward_spaces and remove reward_space")
	}
	tasks := c.Tasks()
	for _, task := range tasks {
		if ts := c.Spaces[task]; ts != nil && ts.File != "" {
			probs = append(probs, ts.read(task, dir, known)...)
		}
	}
	for _, t := range c.Session.Tasks {
		if !slices.Contains(tasks, t) {
			probs = append(probs, fmt.Sprintf("session.tasks: %s has no space under reward_spaces (%s)", t, strings.Join(tasks, ", ")))
		}
	}
	c.Session.Tasks = tasks
	if !hasKey(mappingAt(root, "session"), "task") {
		c.Session.Task = ""
		if len(tasks) == 1 {
			c.Session.Task = tasks[0]
		}
	}
	return probs
}

// read loads the space file of task's entry into it. The file's strings are scanned for
// secrets as the config's are: the space is stored, shown and sent to the advisor.
func (ts *TaskSpace) read(task, dir string, known map[string]string) []string {
	where := "reward_spaces." + task + ".file"
	if !reflect.ValueOf(ts.Space).IsZero() {
		ts.unread = true
		return []string{"reward_spaces." + task + ": give either file or the space's own keys (terms, params, …), not both"}
	}
	path := ts.File
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	ts.unread = true
	raw, err := ReadSpaceBytes(path)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", where, err)}
	}
	if probs := secretsInSpaceFile(raw, where+": "+ts.File, known); len(probs) > 0 {
		return probs
	}
	var doc struct {
		Space *session.Space `yaml:"reward_space"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		msg := inType.ReplaceAllString(yamlMessage(err), "")
		return []string{fmt.Sprintf("%s: %s is not a space file (a reward_space block, as tunebot space prints it): %s", where, ts.File, msg)}
	}
	if doc.Space == nil {
		return []string{fmt.Sprintf("%s: %s holds no reward_space block (tunebot space --task %s prints one)", where, ts.File, task)}
	}
	ts.Space, ts.unread = *doc.Space, false
	return nil
}

// secretsInSpaceFile names the strings of a space file that hold a secret's value, each
// with its line in the file (after what, the config's key and the file's name). A file
// that is no YAML is left to the decoder, which says so.
func secretsInSpaceFile(raw []byte, what string, known map[string]string) []string {
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return nil
	}
	probs := secretsInConfig(&root, newExpansion(), known)
	for i, p := range probs {
		probs[i] = what + " " + p
	}
	return probs
}

// SpaceFileSecrets is the secret scan of the config (secretsInConfig) over a space file a
// person names outside it (the demo's --space): the space is stored, shown and sent to the
// advisor. nil when the file names and holds none of tunebot's secrets; else each problem
// with its line, after what (where the file was named), secrets masked as Load masks them.
func SpaceFileSecrets(raw []byte, what string, getenv func(string) string) error {
	probs := secretsInSpaceFile(raw, what, knownSecrets(getenv))
	if len(probs) == 0 {
		return nil
	}
	return &session.InvalidError{What: "reward space", Problems: hideSecrets(probs, getenv)}
}

// ReadSpaceBytes reads a space file (the config's, the demo's, the sim's): a regular
// file, bounded.
func ReadSpaceBytes(path string) ([]byte, error) {
	raw, err := readRegular(path, maxSpaceFile)
	if isNotExist(err) {
		return nil, fmt.Errorf("%s does not exist", path)
	}
	return raw, err
}

// spaceProblems checks every space of reward_spaces, each problem naming its task.
func (c Config) spaceProblems() []string {
	var probs []string
	for _, task := range c.Tasks() {
		where := "reward_spaces." + task
		ts := c.Spaces[task]
		if !session.ValidName(task) {
			probs = append(probs, fmt.Sprintf("%s: %q is not a task name (%s)", where, task, session.NamePattern))
		}
		switch {
		case ts == nil || ts.File == "" && reflect.ValueOf(ts.Space).IsZero():
			probs = append(probs, where+": needs a space: file: PATH (a space file) or the space's own terms and params")
		case ts.unread:
		default:
			if err := ts.Space.Check(); err != nil {
				probs = append(probs, problems(where, err)...)
			}
		}
	}
	return probs
}

// hasKey reports whether mapping m sets key.
func hasKey(m *yaml.Node, key string) bool {
	if m == nil {
		return false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

// defaultSettings are session's settings as config check validates them: with several
// tasks and none the default, the first stands in for the task each start will name.
func (c Config) defaultSettings() session.Settings {
	st := c.Session
	if st.Task == "" && len(st.Tasks) > 1 {
		st.Task = st.Tasks[0]
	}
	return st
}

// applyProblems checks the apply section against the space of the task its checkout
// trains: apply.task, by default session.task (with several tasks and no default, it must
// be named).
func (c *Config) applyProblems() []string {
	if c.Apply.Task == "" {
		c.Apply.Task = c.Session.Task
	}
	if c.Apply.Task == "" {
		return []string{fmt.Sprintf("apply.task: several tasks are configured (%s) and session.task names no default: name the task the checkout trains", strings.Join(c.Tasks(), ", "))}
	}
	space := c.SpaceOf(c.Apply.Task)
	if space == nil {
		return []string{fmt.Sprintf("apply.task: %s has no space under reward_spaces (%s)", c.Apply.Task, strings.Join(c.Tasks(), ", "))}
	}
	if err := c.Apply.Check(space); err != nil {
		return problems("apply", err)
	}
	return nil
}

// taskList is the tasks the config lets a session run: session.tasks (the keys of
// reward_spaces when it has them), else session.task alone.
func (c Config) taskList() []string {
	switch {
	case len(c.Session.Tasks) > 0:
		return c.Session.Tasks
	case c.Session.Task != "":
		return []string{c.Session.Task}
	}
	return []string{session.TaskGo2Flat}
}

// TaskFor resolves a command's --task (given, "" when not) to a task of the config and its
// space: the default, session.task, when not given; refused when the config does not list
// it, or when several tasks are configured and none is given or the default (the values
// could be any robot's).
func (c Config) TaskFor(given string) (string, *session.Space, error) {
	tasks := c.taskList()
	task := given
	if task == "" {
		task = c.Session.Task
	}
	if task == "" {
		return "", nil, session.Userf(session.ErrConflict, "several tasks are configured (%s) and session.task names no default: give --task TASK", strings.Join(tasks, ", "))
	}
	sp := c.SpaceOf(task)
	if !slices.Contains(tasks, task) || sp == nil {
		return "", nil, session.Userf(session.ErrNotFound, "--task %s is not a task of the config (session.tasks: %s)", task, strings.Join(tasks, ", "))
	}
	return task, sp, nil
}
