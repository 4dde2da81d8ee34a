package bot

import (
	"fmt"
	"sort"
	"strings"

	"tunebot/session"
)

// MaxRunningLines caps the running trials and pending proposals a status lists one per
// line; the rest are counted. A session runs at most `parallel` trials at once (issue 14),
// so the cap is only reached by a very wide executor.
const MaxRunningLines = 12

// RunningTrials are the trials of a session that run now (training or evaluating, several
// at once with parallel trials, issue 14), ordered by number and rung.
// cur, when set, replaces its stored copy: it carries the newest progress (and the stored
// job's whereabouts when it has none of its own).
func RunningTrials(trials []session.Trial, cur *session.Trial) []session.Trial {
	var out []session.Trial
	seen := false
	for _, t := range trials {
		if cur != nil && t.Ref() == cur.Ref() {
			proc := t.Proc
			t, seen = *cur, true
			if t.Proc == nil {
				t.Proc = proc
			}
		}
		if t.State == session.TrialTraining || t.State == session.TrialEvaluating {
			out = append(out, t)
		}
	}
	if cur != nil && !seen && (cur.State == session.TrialTraining || cur.State == session.TrialEvaluating) {
		out = append(out, *cur)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Number != out[j].Number {
			return out[i].Number < out[j].Number
		}
		return out[i].Rung < out[j].Rung
	})
	return out
}

// RunningLine is one running trial on one short line, the same on every surface (chat,
// terminal, monitoring page; docs/design.md §6): what it is, which job runs, how far it is,
// and where:
//
//	trial 3 @ rung 0 · training 150/300 (50%) · GPU 2
//	trial 4 @ rung 1 · evaluating · GPUs 0,1
//	trial 5 @ rung 0 · training 0/300 · Slurm job 1234 PENDING (Resources)
//	trial 6 @ rung 1 · training 420/900 (46%) · Slurm job 1235 RUNNING on node1
func RunningLine(t session.Trial) string {
	parts := []string{t.Ref().String(), jobWord(t)}
	if w := where(t.Proc); w != "" {
		parts = append(parts, w)
	}
	return strings.Join(parts, " · ")
}

// jobWord says which job runs and, while training, the iteration reached of the rung's.
func jobWord(t session.Trial) string {
	job := ""
	if t.Proc != nil {
		job = t.Proc.Job
	}
	if job == "evaluate" || job == "" && t.State == session.TrialEvaluating {
		return "evaluating"
	}
	if t.Iterations <= 0 {
		return "training"
	}
	k := max(t.Progress, t.StartIter)
	s := fmt.Sprintf("training %d/%d", k, t.Iterations)
	if k > 0 {
		s += fmt.Sprintf(" (%d%%)", min(100, 100*k/t.Iterations))
	}
	return s
}

// where names a job's GPUs or its Slurm job (session.ProcText); "" before it started.
func where(p *session.Proc) string {
	if p == nil || (!p.Remote() && len(p.GPUs) == 0) {
		return ""
	}
	return session.ProcText(*p)
}

// RunningLines is every running trial of trials as RunningLine, at most MaxRunningLines
// of them and then how many more.
func RunningLines(trials []session.Trial, cur *session.Trial) []string {
	return capLines(RunningTrials(trials, cur), RunningLine)
}

// capLines renders xs a line each, at most MaxRunningLines of them and then how many more.
func capLines[T any](xs []T, line func(T) string) []string {
	var out []string
	for i, x := range xs {
		if i == MaxRunningLines {
			out = append(out, fmt.Sprintf("… and %d more", len(xs)-i))
			break
		}
		out = append(out, line(x))
	}
	return out
}

// Pending is the proposals still waiting for a decision, in the order they were made. In
// approval mode up to `parallel` of them may wait at once (issue 14).
func Pending(ps []session.Proposal) []session.Proposal {
	var out []session.Proposal
	for _, p := range ps {
		if p.State == session.ProposalPending {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// PendingLine is one waiting proposal and how to decide it by a reply: the proposal's
// number, so it works however many wait.
func PendingLine(p session.Proposal) string {
	return fmt.Sprintf("proposal %d for trial %d: approve %d · reject %d <feedback>", p.Seq, p.Number, p.Seq, p.Seq)
}

// PendingLines is every pending proposal of ps as PendingLine, capped like RunningLines.
func PendingLines(ps []session.Proposal) []string {
	return capLines(Pending(ps), PendingLine)
}

// WhichProposal answers a decision that names no proposal while several wait: it lists
// them with the reply that decides each, instead of guessing one
// ("3 proposals wait: approve 4, approve 5 or approve 6").
func WhichProposal(verb Verb, pending []session.Proposal) string {
	forms := make([]string, len(pending))
	for i, p := range pending {
		forms[i] = DecisionReply(verb, p.Seq)
	}
	list := forms[0]
	if n := len(forms); n > 1 {
		list = strings.Join(forms[:n-1], ", ") + " or " + forms[n-1]
	}
	return fmt.Sprintf("%d proposals wait: %s", len(pending), list)
}

// DecisionReply is the thread reply that decides proposal seq with verb.
func DecisionReply(verb Verb, seq int) string {
	switch verb {
	case VerbReject:
		return fmt.Sprintf("reject %d <feedback>", seq)
	case VerbEdit:
		return fmt.Sprintf("edit %d term=value …", seq)
	}
	return fmt.Sprintf("approve %d", seq)
}

// bulleted is lines under a heading, one "• " line each, or "" for none.
func bulleted(heading string, lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return heading + "\n• " + strings.Join(lines, "\n• ")
}
