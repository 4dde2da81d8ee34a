package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSecretInTrainerArgvIsRefused: a ${NAME} of one of tunebot's secrets in a value that
// becomes a command line (the trainer's templates, sbatch's options, apply's test) is
// refused by config check and run, naming the variable and where it is; the secret's value
// never reaches the answer. Another variable there is fine.
func TestSecretInTrainerArgvIsRefused(t *testing.T) {
	vars := map[string]string{"DEEPSEEK_API_KEY": "sk-live-0123456789abcdef", "SLACK_BOT_TOKEN": "xoxb-0123456789", "NODE_LIST": "a100"}
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"train", "trainer:\n  train: [python, train.py, \"--wandb-key=${DEEPSEEK_API_KEY}\"]\n", "line 3: trainer.train[2]: ${DEEPSEEK_API_KEY}"},
		{"python", "trainer:\n  python: \"${SLACK_BOT_TOKEN}\"\n", "line 3: trainer.python: ${SLACK_BOT_TOKEN}"},
		{"resume", "trainer:\n  resume_args: [--resume, \"{checkpoint}\", \"${DEEPSEEK_API_KEY}\"]\n", "trainer.resume_args[2]"},
		{"sbatch", "executor:\n  slurm:\n    sbatch_args: [\"--comment=${DEEPSEEK_API_KEY}\"]\n", "line 4: executor.slurm.sbatch_args[0]: ${DEEPSEEK_API_KEY}"},
		{"apply test", "apply:\n  test: [pytest, \"--token=${SLACK_BOT_TOKEN}\"]\n", "apply.test[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, t.TempDir(), "data_dir: data\n"+tc.yaml)
			code, stdout, stderr := runTunebot(t, "", vars, "config", "check", "--config", cfg)
			check := func(cmd string, code int, out string) {
				if code == 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, "command line") {
					t.Errorf("%s: exit %d, output %q; want the variable named (%s)", cmd, code, out, tc.want)
				}
				if strings.Contains(out, vars["DEEPSEEK_API_KEY"]) || strings.Contains(out, vars["SLACK_BOT_TOKEN"]) {
					t.Errorf("%s shows the secret's value", cmd)
				}
			}
			check("config check", code, stdout+stderr)
			// The daemon refuses to start (bounded: a daemon that starts is the failure).
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			run := exec.CommandContext(ctx, tunebotBin, "run", "--config", cfg)
			run.Env = os.Environ()
			for k, v := range vars {
				run.Env = append(run.Env, k+"="+v)
			}
			out, err := run.CombinedOutput()
			code = 0
			if err != nil {
				code = 1
			}
			if ctx.Err() != nil {
				t.Fatalf("tunebot run started with the secret on the trainer's command line:\n%s", out)
			}
			check("run", code, string(out))
		})
	}
	cfg := writeConfig(t, t.TempDir(), "data_dir: data\nexecutor:\n  slurm:\n    sbatch_args: [\"--constraint=${NODE_LIST}\"]\n")
	if code, _, stderr := runTunebot(t, "", vars, "config", "check", "--config", cfg); code != 0 {
		t.Errorf("a variable that is no secret: exit %d %s", code, stderr)
	}
}

// TestDataDirOpenToOthersIsWarned: a data_dir that already exists with access for group or
// others is named, with the fix, by doctor and by run at start; a private one is not.
func TestDataDirOpenToOthersIsWarned(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	// fallback: doctor fails a config with no proposer, and this test is about data_dir.
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: \"off\"}\nsession: {fallback: true}\n", data))
	code, stdout, stderr := runTunebot(t, "", nil, "doctor", "--config", cfg)
	if code != 0 || !strings.Contains(stdout, "warn  data dir") || !strings.Contains(stdout, "mode 0755") || !strings.Contains(stdout, "chmod 700 "+data) {
		t.Errorf("doctor on a 0755 data_dir: exit %d\n%s%s", code, stdout, stderr)
	}
	_, _, logs := startDaemon(t, cfg)
	if !strings.Contains(logs.String(), "is open to group or others (mode 0755)") {
		t.Errorf("run on a 0755 data_dir says nothing:\n%s", logs.String())
	}

	if err := os.Chmod(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := runTunebot(t, "", nil, "doctor", "--config", cfg); code != 0 || strings.Contains(stdout, "open to group") || !strings.Contains(stdout, "ok    data dir") {
		t.Errorf("doctor on a 0700 data_dir: exit %d\n%s", code, stdout)
	}
}

// TestDoctorMakesAPrivateDataDir: a data_dir doctor creates is the owner's alone, as run's.
func TestDoctorMakesAPrivateDataDir(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nsession: {fallback: true}\n", data))
	if code, stdout, _ := runTunebot(t, "", nil, "doctor", "--config", cfg); code != 0 || strings.Contains(stdout, "open to group") {
		t.Errorf("doctor: exit %d\n%s", code, stdout)
	}
	if info, err := os.Stat(data); err != nil || info.Mode().Perm()&0o077 != 0 {
		t.Errorf("the data_dir doctor made: %v %v", info.Mode(), err)
	}
}
