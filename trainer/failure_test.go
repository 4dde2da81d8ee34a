package trainer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/session"
	"tunebot/trainer"
)

// shellTemplates runs train as `sh -c script {run_dir} args...`; evaluate is never run.
func shellTemplates(script string, args ...string) trainer.Templates {
	return trainer.Templates{Train: append([]string{"sh", "-c", script, "{run_dir}"}, args...), Evaluate: []string{"true"}}
}

// TestKilledTrainerSaysTheSignal kills real trainer processes with signals: the reason
// names the signal and its usual cause, whether the job's own process died of it or a
// wrapper shell reported it as 128+N, never a bare "exit status 137" or "exit status -1".
func TestKilledTrainerSaysTheSignal(t *testing.T) {
	const oom = "the kernel's out-of-memory killer is the usual cause; see dmesg"
	tests := []struct {
		name, script, want string
	}{
		{"the job's process is killed", `kill -KILL $$`, "killed by SIGKILL: " + oom},
		{"a wrapper's child is killed", `sh -c 'kill -KILL $$'; exit $?`,
			"killed by SIGKILL (exit status 137, as a shell reports a command killed by it): " + oom + "; train.log ends: Killed"},
		{"a crash in native code", `kill -SEGV $$`,
			"killed by SIGSEGV: a crash in native code (CUDA, a driver or a compiled extension); see the log and dmesg"},
		{"a signal with no known cause", `kill -USR1 $$`, "killed by SIGUSR1"},
		{"an exit code past 128 that is no signal's", `exit 200`, "exit status 200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := newRunner(t, shellTemplates(tt.script)).Train(context.Background(), trainJob(t.TempDir(), 10), session.JobHooks{})
			if je := jobError(t, err); je.Reason != tt.want {
				t.Errorf("reason %q, want %q", je.Reason, tt.want)
			}
		})
	}
}

// TestFailedJobSaysItsLogEnd: a failed job's reason ends with the last lines it wrote (not
// tunebot's notes, not an earlier job's output in the same log), so "exit status 1" never
// comes alone when the job said why.
func TestFailedJobSaysItsLogEnd(t *testing.T) {
	dir := t.TempDir()
	script := `echo "loading task"; echo "Traceback (most recent call last):"; echo; echo "ValueError: no term named upright" >&2; exit 1`
	_, err := newRunner(t, shellTemplates(script)).Train(context.Background(), trainJob(dir, 10), session.JobHooks{})
	want := `exit status 1; train.log ends: loading task ⏎ Traceback (most recent call last): ⏎ ValueError: no term named upright`
	if je := jobError(t, err); je.Reason != want || !strings.Contains(je.LogTail, "=== tunebot: train job started") {
		t.Errorf("reason %q with tail %q, want %q", je.Reason, je.LogTail, want)
	}

	// The next job in the same run dir writes nothing: the earlier job's lines are not its.
	_, err = newRunner(t, shellTemplates(`exit 2`)).Train(context.Background(), trainJob(dir, 10), session.JobHooks{})
	if je := jobError(t, err); je.Reason != "exit status 2" {
		t.Errorf("a silent job's reason %q, want exit status 2 alone", je.Reason)
	}

	// A long last line keeps its end, where a Python error says what went wrong.
	long := strings.Repeat("x", 1000) + " ValueError: the end"
	script = `printf '%s\n' "$1"; exit 1`
	_, err = newRunner(t, shellTemplates(script, long)).Train(context.Background(), trainJob(t.TempDir(), 10), session.JobHooks{})
	je := jobError(t, err)
	if !strings.HasSuffix(je.Reason, "xx ValueError: the end") || !strings.Contains(je.Reason, "train.log ends: …x") || len([]rune(je.Reason)) > 450 {
		t.Errorf("reason of a long line: %q", je.Reason)
	}
}

// TestOneLongLastLogLineShowsItsEnd: a trainer whose last 4 KiB of log were one line
// (tunebot's own "job ended" note after it) failed with a bare "exit status 1": the tail
// dropped the line the 4 KiB cut, and with it all the job had said. The tail keeps that
// line's end after "…", and the reason quotes it.
func TestOneLongLastLogLineShowsItsEnd(t *testing.T) {
	for _, n := range []int{4096, 5000, 100_000} {
		long := strings.Repeat("x", n) + " ValueError: the end"
		_, err := newRunner(t, shellTemplates(`echo loading; printf '%s\n' "$1"; exit 1`, long)).Train(context.Background(), trainJob(t.TempDir(), 10), session.JobHooks{})
		je := jobError(t, err)
		if !strings.HasPrefix(je.Reason, "exit status 1; train.log ends: …x") || !strings.HasSuffix(je.Reason, "xx ValueError: the end") {
			t.Errorf("a last line of %d bytes: reason %q", n, je.Reason)
		}
		if !strings.HasPrefix(je.LogTail, "…xxx") || len(je.LogTail) > 4<<10 {
			t.Errorf("a last line of %d bytes: tail of %d bytes starts %q", n, len(je.LogTail), je.LogTail[:min(len(je.LogTail), 20)])
		}
	}
}

// TestMissingOutputSaysTheLogEnd: a job that exits 0 but leaves no checkpoint says so with
// what it wrote last.
func TestMissingOutputSaysTheLogEnd(t *testing.T) {
	dir := t.TempDir()
	_, err := newRunner(t, shellTemplates(`echo "warning: nothing to train"`)).Train(context.Background(), trainJob(dir, 10), session.JobHooks{})
	want := "no model_<N>.pt checkpoint in run dir; train.log ends: warning: nothing to train"
	if je := jobError(t, err); je.Reason != want {
		t.Errorf("reason %q, want %q", je.Reason, want)
	}
	if _, err := os.Stat(filepath.Join(dir, trainer.TrainLog)); err != nil {
		t.Fatal(err)
	}
}

// TestLogEndIsPrintable: the log end a reason quotes has none of the job's control
// characters or bidi overrides: the reason reaches the terminal as it is, where an escape
// sequence in train.log would retitle the window, clear the screen or hide text.
func TestLogEndIsPrintable(t *testing.T) {
	script := `printf '\033]0;owned\007\033[2J\033[31mValueError\033[0m: bad \342\200\256term\n'; exit 1`
	_, err := newRunner(t, shellTemplates(script)).Train(context.Background(), trainJob(t.TempDir(), 10), session.JobHooks{})
	want := "exit status 1; train.log ends: ]0;owned[2J[31mValueError[0m: bad term"
	if je := jobError(t, err); je.Reason != want {
		t.Errorf("reason %q, want %q", je.Reason, want)
	}
}
