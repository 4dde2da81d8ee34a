package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"tunebot/config"
	"tunebot/session"
	"tunebot/trainer/mjlab"
)

// readSpaceFile reads a reward space file: a `reward_space:` block as `tunebot space`
// prints it, or the bare space (YAML or JSON), checked as the config checks one.
func readSpaceFile(path string) (*session.Space, error) {
	data, err := config.ReadSpaceBytes(path)
	if err != nil {
		return nil, fmt.Errorf("reading reward space: %w", err)
	}
	return parseSpace(data, filepath.Base(path))
}

// readDemoSpace reads the demo's --space file as readSpaceFile does, after the secret scan
// every configuration string goes through (config.SpaceFileSecrets).
func readDemoSpace(path string, getenv func(string) string) (*session.Space, error) {
	data, err := config.ReadSpaceBytes(path)
	if err != nil {
		return nil, fmt.Errorf("reading reward space: %w", err)
	}
	if err := config.SpaceFileSecrets(data, "--space "+path+":", getenv); err != nil {
		return nil, err
	}
	return parseSpace(data, filepath.Base(path))
}

// parseSpace decodes a reward space strictly (an unknown key is an error naming it) and
// checks it; name says where it came from in the messages.
func parseSpace(data []byte, name string) (*session.Space, error) {
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("reward space %s: %w", name, err)
	}
	var sp *session.Space
	if _, wrapped := top["reward_space"]; wrapped {
		var doc struct {
			Space *session.Space `yaml:"reward_space"`
		}
		if err := strictYAML(data, &doc); err != nil {
			return nil, fmt.Errorf("reward space %s: %w", name, err)
		}
		sp = doc.Space
	} else if err := strictYAML(data, &sp); err != nil {
		return nil, fmt.Errorf("reward space %s: %w", name, err)
	}
	if sp == nil || len(sp.Terms) == 0 {
		return nil, fmt.Errorf("reward space %s: no terms (want a reward_space block as `tunebot space --task TASK` prints it)", name)
	}
	if err := sp.Check(); err != nil {
		return nil, fmt.Errorf("reward space %s: %w", name, err)
	}
	return sp, nil
}

func strictYAML(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// spaceFlag is the --reward-space flag of sim-train and sim-eval.
func spaceFlag(sp **session.Space) func(string) error {
	return func(path string) error {
		s, err := readSpaceFile(path)
		*sp = s
		return err
	}
}

// demoSpace points a demo at the reward space of o.task: the file o.space, or else the
// task's checked-in space (trainer/mjlab/spaces); neither flag leaves the built-in Go2
// space. The sim trainer's templates pass the session's space to every job
// ({reward_space}), as they do outside the demo.
func demoSpace(cfg *config.Config, o tuneOptions, getenv func(string) string) error {
	if o.task == "" && o.space == "" {
		return nil
	}
	if o.task == "" {
		return errors.New("--space needs --task, the task the space was printed for")
	}
	if !session.ValidName(o.task) {
		return fmt.Errorf("--task %q must match %s", o.task, session.NamePattern)
	}
	var sp *session.Space
	var err error
	switch data, ok := mjlab.CheckedInSpace(o.task); {
	case o.space != "":
		sp, err = readDemoSpace(o.space, getenv)
	case o.task == session.TaskGo2Flat:
		return nil // the built-in space
	case ok:
		sp, err = parseSpace(data, "of "+o.task)
	default:
		known := append([]string{session.TaskGo2Flat}, mjlab.CheckedInTasks()...)
		return fmt.Errorf("--task %s has no checked-in reward space (%s have one): print one with `tunebot space --task %s > FILE` where mjlab is installed, then pass --space FILE", o.task, strings.Join(known, ", "), o.task)
	}
	if err != nil {
		return err
	}
	if !cfg.Trainer.IsSim() {
		return errors.New("the demo's trainer is not the built-in sim trainer")
	}
	cfg.Space = sp
	cfg.Session.Task, cfg.Session.Tasks = o.task, []string{o.task}
	return nil
}
