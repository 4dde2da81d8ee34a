package trainer

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"tunebot/session"
)

// What a failed job tells the person: its reason with the end of its log, and a signal
// said by name with its usual cause, instead of a bare "exit status 1" or "exit status 137"
// whose explanation is only in train.log.

// jobFailed is the error of a job that failed for reason: reason followed by the last lines
// of its log at logPath (withLogEnd), and the log's tail for whoever wants more.
func jobFailed(kind, reason, logPath string, err error) *session.JobError {
	tail := logTail(logPath)
	return &session.JobError{Job: kind, Reason: withLogEnd(reason, filepath.Base(logPath), tail), LogTail: tail, Err: err}
}

// Bounds of the log's end said in a reason: a few lines, short enough for one line on a
// terminal or a card; the card and train.log have more.
const (
	endLines = 3
	endRunes = 240
)

// withLogEnd is reason followed by the last lines the job wrote (logEnd) — "exit status 1;
// train.log ends: ValueError: …" — or reason alone when it wrote none.
func withLogEnd(reason, name, tail string) string {
	end := logEnd(tail)
	if end == "" {
		return reason
	}
	return reason + "; " + name + " ends: " + end
}

// logEnd is the last non-blank lines (at most endLines, endRunes) of the job's own output
// in tail, each with its runs of spaces made one, joined by " ⏎ ": what it wrote after
// tunebot's line that started it, without tunebot's own "=== tunebot:" notes. A longer end
// keeps its last runes. tail is printable (logTail): the reason reaches a terminal as it
// is, and a log's escape sequences would drive it.
func logEnd(tail string) string {
	var lines []string
	for _, l := range strings.Split(tail, "\n") {
		switch l = strings.Join(strings.Fields(l), " "); {
		case session.IsJobStartLine(l):
			lines = lines[:0] // an earlier job's output (the log is appended to)
		case l == "" || strings.HasPrefix(l, "=== tunebot:"):
		default:
			lines = append(lines, l)
		}
	}
	lines = lines[max(len(lines)-endLines, 0):]
	end := []rune(strings.Join(lines, " ⏎ "))
	if len(end) > endRunes {
		return "…" + string(end[len(end)-endRunes+1:])
	}
	return string(end)
}

// signalCauses is the usual cause of a trainer's death by each signal a person meets.
var signalCauses = map[syscall.Signal]string{
	syscall.SIGKILL: "the kernel's out-of-memory killer is the usual cause; see dmesg",
	syscall.SIGSEGV: "a crash in native code (CUDA, a driver or a compiled extension); see the log and dmesg",
	syscall.SIGABRT: "the program aborted itself (a failed assertion or an uncaught C++ exception); see the log",
	syscall.SIGBUS:  "a bad memory access, often a full /dev/shm (shared memory of data loaders); see dmesg and df /dev/shm",
	syscall.SIGTERM: "something outside tunebot stopped it (a person, a scheduler or a shutdown)",
	syscall.SIGINT:  "something outside tunebot interrupted it (Ctrl-C or kill -INT)",
	syscall.SIGHUP:  "the terminal or login session it belonged to went away",
}

// signalName is "SIGKILL", or "signal 42" for a number with no name.
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// killedBy says that a process was killed by sig, and its usual cause when known:
// "killed by SIGKILL: the kernel's out-of-memory killer is the usual cause; see dmesg".
// how, when not "", says how the signal was learnt ("exit status 137").
func killedBy(sig syscall.Signal, how string) string {
	s := "killed by " + signalName(sig)
	if how != "" {
		s += " (" + how + ")"
	}
	if cause, ok := signalCauses[sig]; ok {
		s += ": " + cause
	}
	return s
}

// exitCodeReason says how a command that exited with code ended: "exit status N", or, for
// the code a shell or launcher gives a command a signal killed (128+N) when N is a signal
// signalCauses knows, that signal with its cause. A wrapper (sh -c, uv run, a Slurm batch
// script) turns its child's SIGKILL into exit status 137. where, when not "", says where
// the code came from ("Slurm job 12 FAILED").
func exitCodeReason(code int, where string) string {
	if sig := syscall.Signal(code - 128); code > 128 {
		if _, ok := signalCauses[sig]; ok {
			how := fmt.Sprintf("exit status %d, as a shell reports a command killed by it", code)
			if where != "" {
				how += "; " + where
			}
			return killedBy(sig, how)
		}
	}
	if where != "" {
		return fmt.Sprintf("exit status %d (%s)", code, where)
	}
	return fmt.Sprintf("exit status %d", code)
}
