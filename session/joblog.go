package session

import (
	"regexp"
	"strings"
	"unicode"
)

// jobStartLine matches the line a trainer runner writes into a job's log as the job starts
// (or is submitted to Slurm, or re-attached): "=== tunebot: train job started <time>: <argv>".
var jobStartLine = regexp.MustCompile(`^=== tunebot: \S+ job (started|submitted to Slurm|re-attached) `)

// IsJobStartLine reports whether line of a job log (JobError.LogTail) is the line that
// started a job: what follows is that job's output, what precedes an earlier job's (the log
// is appended to), and the line itself quotes the whole command.
func IsJobStartLine(line string) bool { return jobStartLine.MatchString(line) }

// Printable is s, text from outside tunebot (a job's log), without the control characters
// (newline and tab kept) and bidi overrides that can disguise what a reader sees or drive
// a terminal: the one filter such text passes before a card, a page or a terminal shows it.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case unicode.IsControl(r), r == '\u202e', r == '\u202d', r == '\u2066', r == '\u2067', r == '\u2068':
			return -1
		}
		return r
	}, s)
}
