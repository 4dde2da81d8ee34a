package main

import (
	"fmt"
	"syscall"
)

// protectProcess makes the process non-dumpable: other processes of the same user (the
// trainer runs as tunebot's user) can then neither read /proc/<pid>/environ or
// /proc/<pid>/mem nor attach a debugger, so the secrets in tunebot's environment and
// memory stay out of their reach. Children get the normal setting back when they exec.
// A separate trainer user is the stronger fence (README, "Secrets").
func protectProcess() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", errno)
	}
	return nil
}
