package trainer

import (
	"testing"

	"tunebot/trainer/ray"
)

// TestRayFailureSaysWhy: a finished Ray job's reason, from what the head reports: success,
// an exit code, a signal said as Ray reports it (a negative code) and as a shell does
// (128+N), a command that never ran with Ray's last words, a stop by someone else.
func TestRayFailureSaysWhy(t *testing.T) {
	code := func(n int) *int { return &n }
	const oom = "the kernel's out-of-memory killer is the usual cause; see dmesg"
	on := "http://10.0.0.5:52365"
	tests := []struct {
		name string
		info ray.Info
		want string
	}{
		{"a success", ray.Info{Status: ray.Succeeded, DriverExitCode: code(0)}, ""},
		{"an exit code", ray.Info{Status: ray.Failed, DriverExitCode: code(3), DriverAgent: on}, "exit status 3 (Ray job j FAILED on 10.0.0.5)"},
		{"a signal as Ray reports it", ray.Info{Status: ray.Failed, DriverExitCode: code(-9), DriverAgent: on}, "killed by SIGKILL (Ray job j FAILED on 10.0.0.5): " + oom},
		{"a signal as a shell reports it", ray.Info{Status: ray.Failed, DriverExitCode: code(137)},
			"killed by SIGKILL (exit status 137, as a shell reports a command killed by it; Ray job j FAILED): " + oom},
		{"never ran", ray.Info{Status: ray.Failed, ErrorType: "RUNTIME_ENV_SETUP_FAILED", Message: "Traceback (most recent call last):\n  File \"x\"\nRuntimeError: pip install failed\n"},
			"Ray job j failed to start (RUNTIME_ENV_SETUP_FAILED: RuntimeError: pip install failed): its command never ran"},
		{"stopped by someone else", ray.Info{Status: ray.Stopped}, "Ray job j was stopped, not by tunebot (ray job stop, the dashboard, or the head shutting down)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rayFailure("j", tt.info); got != tt.want {
				t.Errorf("rayFailure = %q\nwant          %q", got, tt.want)
			}
		})
	}
}
