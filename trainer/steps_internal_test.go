package trainer

import (
	"context"
	"errors"
	"testing"

	"tunebot/session"
)

func TestSlurmStartable(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		attach *session.Proc
		want   string // "" : may start
	}{
		{name: "new job", ctx: live},
		{name: "new job, context ended", ctx: ended, want: "train job cancelled: context canceled"},
		{name: "re-attach a Slurm job", ctx: live, attach: &session.Proc{SlurmJob: "42"}},
		{name: "re-attach a Slurm job, context ended: follow decides", ctx: ended, attach: &session.Proc{SlurmJob: "42"}},
		{name: "re-attach a local process", ctx: live, attach: &session.Proc{PID: 7},
			want: "train job: cannot attach to a local process (pid 7); only a Slurm job is re-attached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := slurmStartable(tt.ctx, jobSpec{kind: "train", attach: tt.attach})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("slurmStartable = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLocalOutcome(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name, stopped, state string
		success              bool
		want                 jobOutcome
		cancelled            bool
	}{
		{name: "clean exit", success: true, state: "exit status 0"},
		{name: "non-zero exit", state: "exit status 3", want: jobOutcome{failed: "exit status 3"}},
		{name: "killed by a signal", state: "signal: killed", want: jobOutcome{failed: "signal: killed"}},
		{name: "timed out, even if the exit was clean", stopped: "timed out after 1s", success: true, want: jobOutcome{failed: "timed out after 1s"}},
		{name: "cancelled", stopped: "cancelled", state: "signal: terminated", cancelled: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := localOutcome(ended, "evaluate", tt.stopped, tt.success, tt.state)
			if tt.cancelled != (err != nil) {
				t.Fatalf("err = %v, want an error: %v", err, tt.cancelled)
			}
			if tt.cancelled && (!errors.Is(err, context.Canceled) || err.Error() != "evaluate job cancelled: context canceled") {
				t.Errorf("err = %v, want the cancel wrapped", err)
			}
			if got != tt.want {
				t.Errorf("outcome = %+v, want %+v", got, tt.want)
			}
		})
	}
}
