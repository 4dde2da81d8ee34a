package session

import "regexp"

// jobStartLine matches the line a trainer runner writes into a job's log as the job starts
// (or is submitted to Slurm, or re-attached): "=== tunebot: train job started <time>: <argv>".
var jobStartLine = regexp.MustCompile(`^=== tunebot: \S+ job (started|submitted to Slurm|re-attached) `)

// IsJobStartLine reports whether line of a job log (JobError.LogTail) is the line that
// started a job: what follows is that job's output, what precedes an earlier job's (the log
// is appended to), and the line itself quotes the whole command.
func IsJobStartLine(line string) bool { return jobStartLine.MatchString(line) }
