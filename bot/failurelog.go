package bot

import (
	"strings"

	"tunebot/session"
)

// A failure card's log: the end of what the failed job wrote, where a traceback ends with
// what went wrong, never its start.

// Bounds of a failure card's log block: the last lines, within the card's budget.
const (
	failureLogLines = 12
	failureLogRunes = 1200
)

// failureLog is the block a failure card shows of a job's log tail: the lines after the last
// job-started line (it quotes the whole command, which would fill the card's budget), the last failureLogLines of them, neutralised, and as many of those
// from the end as fit failureLogRunes (a single longer line keeps its end).
func failureLog(tail string) string {
	lines := strings.Split(strings.TrimRight(tail, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if session.IsJobStartLine(lines[i]) {
			lines = lines[i+1:]
			break
		}
	}
	lines = strings.Split(Neutralise(strings.Join(lines[max(len(lines)-failureLogLines, 0):], "\n"), 0), "\n")
	kept, used := []string{}, 0
	for i := len(lines) - 1; i >= 0; i-- {
		n := len([]rune(lines[i])) + 1 // and its newline
		if used+n > failureLogRunes {
			if len(kept) == 0 {
				r := []rune(lines[i])
				kept = append(kept, "…"+string(r[len(r)-failureLogRunes+1:]))
			}
			break
		}
		kept, used = append(kept, lines[i]), used+n
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	return strings.TrimSpace(strings.Join(kept, "\n"))
}
