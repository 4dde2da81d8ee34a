package trainer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/session"
	"tunebot/trainer"
	"tunebot/trainer/ray"
	"tunebot/trainer/slurm"
)

// TestJobCarryingASecretIsRefused: a job whose final command line, environment or Slurm
// batch script would hold the value of one of tunebot's secrets does not start, whatever
// put it there (a run name set in chat, a variable that copies a token, a Slurm account):
// the refusal names the place and the secret, never the value, and nothing runs.
func TestJobCarryingASecretIsRefused(t *testing.T) {
	const value = "sigsecret-0123456789"
	t.Setenv("SLACK_SIGNING_SECRET", value)
	record := `printf '%s\n' "$@" > "$0/argv"; exit 0`
	local := shellTemplates(record, "--name={run_name}", "{reward_config}", "{iterations}")
	onSlurm := local
	onSlurm.Slurm = &trainer.Slurm{Client: &slurm.Client{Env: []string{"PATH=/nonexistent"}}, Account: value}
	onRay := local
	onRay.Ray = &trainer.Ray{Client: &ray.Client{Address: "http://127.0.0.1:9"}} // refused before any request
	for _, tc := range []struct {
		name    string
		tpl     trainer.Templates
		runName string
		env     string // a variable of tunebot's environment that copies the secret
		want    string
	}{
		{"run name set in chat", local, value, "", "argument 4 of its command line holds the value of the secret SLACK_SIGNING_SECRET"},
		{"a variable copying the secret", local, "auto-tune", "WANDB_API_KEY", "its environment variable WANDB_API_KEY holds the value of the secret SLACK_SIGNING_SECRET"},
		{"slurm account", onSlurm, "auto-tune", "", "its job script (Slurm's batch script, Ray's entrypoint) holds the value of the secret SLACK_SIGNING_SECRET"},
		{"run name set in chat, on Ray", onRay, value, "", "argument 4 of its command line holds the value of the secret SLACK_SIGNING_SECRET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv(tc.env, value)
			}
			dir := t.TempDir()
			job := trainJob(dir, 10)
			job.Settings.RunName = tc.runName
			_, err := newRunner(t, tc.tpl).Train(context.Background(), job, session.JobHooks{})
			je := jobError(t, err)
			if !strings.Contains(je.Reason, tc.want) || strings.Contains(err.Error(), value) || strings.Contains(je.LogTail, value) {
				t.Errorf("reason %q (tail %q), want it to say %q and never the value", je.Reason, je.LogTail, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "argv")); err == nil {
				t.Error("the job ran")
			}
			logs, _ := filepath.Glob(filepath.Join(dir, "*"))
			for _, l := range logs {
				if b, _ := os.ReadFile(l); strings.Contains(string(b), value) {
					t.Errorf("%s holds the secret", filepath.Base(l))
				}
			}
		})
	}
	// Without the secret, the same job runs.
	dir := t.TempDir()
	if _, err := newRunner(t, local).Train(context.Background(), trainJob(dir, 10), session.JobHooks{}); err != nil && !strings.Contains(err.Error(), "checkpoint") {
		t.Fatalf("a job without a secret: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "argv")); err != nil {
		t.Errorf("a job without a secret did not run: %v", err)
	}
}
