package trainer

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"tunebot/secret"
	"tunebot/session"
	"tunebot/trainer/slurm"
)

// The config refuses a secret in what becomes a job (cmd/tunebot, secretsInConfig), but a
// job's final argv also holds what arrives later: a run name set in chat, a path. So each
// job is checked once more as it will start, by value, against the secrets this process
// holds: its argv, the environment it inherits, and on Slurm the whole batch script and
// sbatch's options. A job that would carry one is refused, naming the place, never the value.

// secretInJob names where argv, env or (Slurm) script and extra hold the value of one of
// known's secrets; "" when nowhere.
func secretInJob(argv, env []string, script string, extra []string, known map[string]string) string {
	for i, a := range argv {
		if name := secret.Holds(a, known); name != "" {
			return fmt.Sprintf("argument %d of its command line holds the value of the secret %s", i, name)
		}
	}
	for _, kv := range env {
		if name := secret.Holds(kv, known); name != "" {
			k, _, _ := strings.Cut(kv, "=")
			return fmt.Sprintf("its environment variable %s holds the value of the secret %s", k, name)
		}
	}
	for _, a := range extra {
		if name := secret.Holds(a, known); name != "" {
			return "an option it is submitted with (sbatch's, a Ray job's metadata) holds the value of the secret " + name
		}
	}
	if name := secret.Holds(script, known); name != "" {
		return "its job script (Slurm's batch script, Ray's entrypoint) holds the value of the secret " + name
	}
	return ""
}

// refuseSecret returns the error that refuses a job of kind that would carry a secret
// (where, from secretInJob), and nil when where is "".
func refuseSecret(kind, where string) error {
	if where == "" {
		return nil
	}
	reason := fmt.Sprintf("not started: %s, which every user of the machine would see (ps) and the trial's log would keep; tunebot's secrets never reach the trainer (check the run name and the trainer's environment)", where)
	return &session.JobError{Job: kind, Reason: reason, Err: errors.New(reason)}
}

// jobStartedLine is the line a job's log begins with: its command, redacted as every log
// line is, though secretInJob has refused a job that would show a secret there.
func jobStartedLine(kind, how string, argv []string, redact *secret.Redactor) string {
	return redact.String(fmt.Sprintf("=== tunebot: %s job %s %s: %s\n", kind, how, time.Now().Format(time.RFC3339), quoteArgv(argv)))
}

// slurmScriptText is j's batch script, "" when it cannot be made (Submit says why then).
func slurmScriptText(j slurm.Job) string {
	s, err := slurm.Script(j)
	if err != nil {
		return ""
	}
	return s
}
