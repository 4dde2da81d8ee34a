package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"tunebot/trainer/mjlab"
)

func init() {
	register("space", "space --task TASK [--config FILE]: print a reward_space for an installed mjlab task, from its own reward terms", runSpace)
}

const spaceUsage = `usage: tunebot space --task TASK [--config FILE]

Asks the mjlab adapter (trainer.python of the config, else .venv/mjlab/bin/python) for the
task's reward terms and prints a commented reward_space block in the task's own names: every
term with its default weight and bounds, its scalar params, and what each acts on. Review it,
then paste it into your config (docs/design.md §2).`

// venvPython is where scripts/mjlab-venv.sh puts the adapter's python, from the repo root.
var venvPython = filepath.Join(".venv", "mjlab", "bin", "python")

func runSpace(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "space", spaceUsage)
	path := fs.String("config", "", "config file (YAML) whose trainer.python runs the adapter and whose reward_space gives max_changes and the step rule")
	task := fs.String("task", "", "task id, e.g. Mjlab-Velocity-Flat-Unitree-G1")
	cfg, code, ok := parseConfigFlags(e, fs, args, path)
	if !ok {
		return code
	}
	if *task == "" {
		return usageError(e, fs, "--task TASK is required")
	}
	pyName := cfg.Trainer.Python
	if *path == "" {
		if _, err := os.Stat(venvPython); err == nil {
			pyName = venvPython
		}
	}
	py, err := resolvePython(pyName, cfg.Trainer.Workdir)
	if err != nil {
		fmt.Fprintf(e.stderr, "tunebot space: %v\n", err)
		return 1
	}
	tr, err := taskRewards(ctx, cfg.Trainer.Workdir, py, *task)
	if err != nil {
		fmt.Fprintf(e.stderr, "tunebot space: %v\n", err)
		return 1
	}
	built := mjlab.Build(tr, cfg.RewardSpace())
	// What is printed must pass config check as it is.
	if err := built.Space.Check(); err != nil {
		fmt.Fprintf(e.stderr, "tunebot space: the space built from task %s does not pass its own check: %v\n", *task, err)
		return 1
	}
	fmt.Fprint(e.stdout, built.YAML(tr))
	return 0
}

// taskRewards runs `python -m tunebot_mjlab space --task TASK` and reads its answer.
func taskRewards(ctx context.Context, dir, py, task string) (mjlab.TaskRewards, error) {
	var tr mjlab.TaskRewards
	out, err := probe(ctx, dir, py, "-m", adapterModule, "space", "--task", task)
	if err != nil {
		return tr, fmt.Errorf("the adapter could not describe task %s: %v (is %s the mjlab venv's python? scripts/mjlab-venv.sh builds it)", task, err, py)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tr); err != nil {
		return tr, fmt.Errorf("the adapter's description of task %s is not what tunebot reads: %v", task, err)
	}
	if tr.Task != task || len(tr.Terms) == 0 {
		return tr, fmt.Errorf("the adapter described task %q with %d reward terms, asked for %s", tr.Task, len(tr.Terms), task)
	}
	return tr, nil
}
