package trainer

import (
	"strings"
	"testing"

	"tunebot/secret"
	"tunebot/session"
	"tunebot/trainer/slurm"
)

// TestSlurmFailureSaysTheSignal: a finished Slurm job whose batch script a signal ended
// (sacct's exitcode 0:9, no exit file) says the signal, where it used to pass as exit
// status 0, a success; an exit file's 137 is the signal too; Slurm's own ends keep their
// state.
func TestSlurmFailureSaysTheSignal(t *testing.T) {
	const oom = "the kernel's out-of-memory killer is the usual cause; see dmesg"
	sacct := func(state, field string) slurm.Status {
		st := slurm.Status{State: state, Node: "gpu7"}
		st.ExitCode, st.Signal = slurm.ExitField(field)
		return st
	}
	tests := []struct {
		name string
		st   slurm.Status
		want string
	}{
		{"sacct says SIGKILL", sacct(slurm.Failed, "0:9"), "killed by SIGKILL (Slurm job 12 FAILED on gpu7): " + oom},
		{"the exit file says 137", slurm.Status{State: slurm.Failed, ExitCode: 137, Node: "gpu7"},
			"killed by SIGKILL (exit status 137, as a shell reports a command killed by it; Slurm job 12 FAILED on gpu7): " + oom},
		{"a plain failure", sacct(slurm.Failed, "3:0"), "exit status 3 (Slurm job 12 FAILED on gpu7)"},
		{"a success", sacct(slurm.Completed, "0:0"), ""},
		{"Slurm's own end keeps its state", sacct(slurm.Timeout, "0:15"), "Slurm job 12 ended TIMEOUT, exit status 0"},
		{"Slurm's out-of-memory end says what to raise", sacct(slurm.OutOfMem, "0:125"),
			"Slurm job 12 ended OUT_OF_MEMORY, exit status 0: it used more memory than it asked for (executor.slurm.mem, sbatch --mem)"},
		{"an unreadable field", sacct(slurm.Failed, "x"), "Slurm job 12 FAILED without an exit code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := slurmFailure("12", tt.st); got != tt.want {
				t.Errorf("slurmFailure = %q, want %q", got, tt.want)
			}
		})
	}
}

// The lines the runner starts a job's log with are the ones session.IsJobStartLine knows,
// so the reason's log end and the failure card leave them (and what came before) out.
func TestJobStartLinesAreKnown(t *testing.T) {
	for _, how := range []string{"started", "submitted to Slurm"} {
		line := strings.TrimSuffix(jobStartedLine("evaluate", how, []string{"python", "eval.py"}, secret.NewRedactor()), "\n")
		if !session.IsJobStartLine(line) {
			t.Errorf("%q is not a job-start line to session.IsJobStartLine", line)
		}
	}
	if session.IsJobStartLine("=== tunebot: train job ended after 2s: exit status 1") {
		t.Error("the job-ended line counts as a start")
	}
}
