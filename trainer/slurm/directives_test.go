package slurm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/trainer/slurm"
)

// TestScriptDirectives: the #SBATCH lines, in order: the fixed ones always, each resource
// only when set, the time limit rounded up to whole minutes, the extra options last.
func TestScriptDirectives(t *testing.T) {
	fixed := []string{"--job-name=a", "--output=/d/a.out", "--chdir=/d", "--ntasks=1"}
	tests := []struct {
		name string
		job  slurm.Job
		want []string
	}{
		{name: "nothing set", job: slurm.Job{}, want: fixed},
		{name: "own log and workdir", job: slurm.Job{Output: "/r/train.log", Workdir: "/src"},
			want: []string{"--job-name=a", "--output=/r/train.log", "--open-mode=append", "--chdir=/src", "--ntasks=1"}},
		{name: "every resource", job: slurm.Job{Partition: "gpu", Account: "lab", QOS: "high", TimeLimit: 90 * time.Minute,
			CPUs: 8, Mem: "32G", GPUs: 2, Extra: []string{"--constraint=a100", "--export=NONE"}},
			want: append(fixed, "--partition=gpu", "--account=lab", "--qos=high", "--time=90", "--cpus-per-task=8",
				"--mem=32G", "--gres=gpu:2", "--constraint=a100", "--export=NONE")},
		{name: "a time limit rounds up", job: slurm.Job{TimeLimit: 61 * time.Second}, want: append(fixed, "--time=2")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := tc.job
			j.Name, j.Dir, j.Argv = "a", "/d", []string{"true"}
			script, err := slurm.Script(j)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, line := range strings.Split(script, "\n") {
				if opt, ok := strings.CutPrefix(line, "#SBATCH "); ok {
					got = append(got, opt)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("directives (-want +got):\n%s", d)
			}
		})
	}
}
