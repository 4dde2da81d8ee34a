package main

import (
	"path/filepath"
	"strings"
	"testing"

	"tunebot/trainer/slurm/slurmtest"
)

// cluster is the test binary's real Slurm (slurmtest), taken down by TestMain.
var cluster slurmtest.Cluster

// needSlurm returns SLURM_CONF of the test cluster, or skips saying why there is none.
func needSlurm(t *testing.T) string {
	t.Helper()
	return cluster.Need(t)
}

func slurmDoctorConfig(t *testing.T, executor string) string {
	t.Helper()
	return writeFile(t, "tunebot.yaml", "data_dir: "+filepath.Join(t.TempDir(), "data")+"\nsession: {fallback: true}\nexecutor:\n"+executor)
}

// TestDoctorSlurm runs doctor against the real Slurm: a good partition with GPUs passes,
// and a partition that does not exist fails naming the ones that do.
func TestDoctorSlurm(t *testing.T) {
	conf := needSlurm(t)
	vars := map[string]string{"SLURM_CONF": conf}
	tests := []struct {
		name, executor string
		code           int
		want           []string
	}{
		{"the default partition", "  backend: slurm\n", 0, []string{
			"ok    slurm      sbatch, squeue, sacct, scancel, sinfo are on PATH",
			"ok    partition  debug (the cluster's default) is up",
			"ok    gres       partition debug offers gpu:2; each job asks --gres=gpu:1",
		}},
		{"a named partition, CPU jobs", "  backend: slurm\n  gpus_per_trial: 0\n  slurm: {partition: debug}\n", 0, []string{
			"ok    partition  debug is up",
			"ok    gres       executor.gpus_per_trial is 0: jobs ask for no GPU",
		}},
		{"a partition that does not exist", "  backend: slurm\n  slurm: {partition: a100}\n", 1, []string{
			`fail  partition  executor.slurm.partition "a100" does not exist; sinfo lists: debug`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTunebot(t, "", vars, "doctor", "--config", slurmDoctorConfig(t, tt.executor))
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tt.code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w+"\n") {
					t.Errorf("doctor does not say %q:\n%s", w, stdout)
				}
			}
			if !strings.Contains(stdout, "ok    gpus       jobs run on Slurm") && !strings.Contains(stdout, "built-in sim trainer") {
				t.Errorf("doctor output:\n%s", stdout)
			}
		})
	}
}

// TestDoctorSlurmCommandsMissing: without Slurm's commands on PATH, doctor says which and
// how to get them.
func TestDoctorSlurmCommandsMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	code, stdout, _ := runTunebot(t, "", nil, "doctor", "--config", slurmDoctorConfig(t, "  backend: slurm\n"))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := "fail  slurm      sbatch, squeue, sacct, scancel, sinfo not on PATH: install Slurm's client commands where tunebot runs (Debian: apt install slurm-client"
	if !strings.Contains(stdout, want) {
		t.Errorf("doctor does not say %q:\n%s", want, stdout)
	}
	if strings.Contains(stdout, "partition") {
		t.Errorf("doctor went on to the partition without the commands:\n%s", stdout)
	}
}
