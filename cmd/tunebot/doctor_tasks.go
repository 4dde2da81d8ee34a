package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"tunebot/config"
)

// doctorTasks are the tasks doctor checks against the installed trainer: every task of
// reward_spaces, else session.task.
func doctorTasks(cfg config.Config) []string {
	if ts := cfg.Tasks(); len(ts) > 0 {
		return ts
	}
	return []string{cfg.Session.Task}
}

// tasksText names the configured tasks for doctor's config line.
func tasksText(cfg config.Config) string {
	ts := doctorTasks(cfg)
	if len(ts) == 1 {
		return "task " + ts[0]
	}
	def := ""
	if cfg.Session.Task != "" {
		def = "; default " + cfg.Session.Task
	}
	return fmt.Sprintf("tasks %s%s", strings.Join(ts, ", "), def)
}

// taskLabel is the label of a line about task: the bare label with one task, the label
// and the task with several, so each line says which task it is about.
func taskLabel(cfg config.Config, label, task string) string {
	if len(cfg.Spaces) == 0 {
		return label
	}
	return label + " " + task
}

// doctorTask checks that task is registered (ck is the adapter's check of it, asked for
// here when its Task is empty) and compares its configured space with the installed task.
func doctorTask(ctx context.Context, r *doctorReport, cfg config.Config, py, task string, ck adapterCheck) {
	label := taskLabel(cfg, "task", task)
	if ck.Task == "" {
		out, err := probe(ctx, cfg.Trainer.Workdir, py, "-m", adapterModule, "check", "--task", task)
		if err == nil {
			err = json.Unmarshal([]byte(out), &ck)
		}
		if err != nil {
			r.line("fail", label, fmt.Sprintf("the adapter could not check task %s: %v", task, err))
			return
		}
	}
	if !ck.Registered {
		r.line("fail", label, ck.Error)
		return
	}
	r.line("ok", label, task+" is registered")
	doctorDefaults(ctx, r, cfg, py, task)
}
