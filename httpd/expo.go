package httpd

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"tunebot/session"
)

var sessionStates = []session.State{
	session.StateQueued, session.StateRunning, session.StateEvaluating, session.StateAwaitingApproval,
	session.StatePaused, session.StateInterrupted, session.StateCancelled, session.StateFailed, session.StateSucceeded,
}

var trialStates = []session.TrialState{
	session.TrialQueued, session.TrialTraining, session.TrialEvaluating,
	session.TrialCompleted, session.TrialFailed, session.TrialInterrupted,
}

// Known label values are always written, zero or not, so a dashboard's series never
// vanish; unknown ones the source reports are added after them.
var (
	advisorOutcomes = []string{"ok", "invalid", "cancelled", "error"}
	tokenKinds      = []string{"prompt", "completion", "prompt_cache_hit", "prompt_cache_miss"}
)

type expo struct{ b *strings.Builder }

func (e expo) header(name, typ, help string) {
	fmt.Fprintf(e.b, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)
}

// sample writes one line; labels alternate name, value.
func (e expo) sample(name string, v float64, labels ...string) {
	e.b.WriteString(name)
	if len(labels) > 0 {
		e.b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				e.b.WriteByte(',')
			}
			fmt.Fprintf(e.b, `%s="%s"`, labels[i], escapeLabel(labels[i+1]))
		}
		e.b.WriteByte('}')
	}
	e.b.WriteByte(' ')
	e.b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	e.b.WriteByte('\n')
}

// escapeLabel escapes a label value as the text format requires: \\, \" and \n.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// escapeHelp escapes HELP text: \\ and \n.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func writeMetrics(b *strings.Builder, s Snapshot, version string) {
	e := expo{b}
	e.header("tunebot_build_info", "gauge", "tunebot's version and the Go version it was built with; always 1.")
	e.sample("tunebot_build_info", 1, "version", version, "goversion", goVersion)

	e.header("tunebot_sessions", "gauge", "Sessions in the store by state.")
	for _, st := range withExtra(sessionStates, s.Sessions) {
		e.sample("tunebot_sessions", float64(s.Sessions[st]), "state", string(st))
	}
	e.header("tunebot_sessions_active", "gauge", "Sessions holding or waiting for the GPU slot (at most 1).")
	e.sample("tunebot_sessions_active", float64(s.Active()))

	e.header("tunebot_trials", "gauge", "Trials in the store by state.")
	for _, st := range withExtra(trialStates, s.Trials) {
		e.sample("tunebot_trials", float64(s.Trials[st]), "state", string(st))
	}

	e.header("tunebot_trial_duration_seconds", "summary", "Wall time of finished trials (training and evaluation) by rung.")
	rungs := make([]int, 0, len(s.TrialDurations))
	for r := range s.TrialDurations {
		rungs = append(rungs, r)
	}
	sort.Ints(rungs)
	for _, r := range rungs {
		d := s.TrialDurations[r]
		rung := strconv.Itoa(r)
		e.sample("tunebot_trial_duration_seconds_sum", d.Sum, "rung", rung)
		e.sample("tunebot_trial_duration_seconds_count", float64(d.Count), "rung", rung)
	}

	e.header("tunebot_outbox_depth", "gauge", "Chat deliveries waiting in the outbox.")
	e.sample("tunebot_outbox_depth", float64(s.OutboxDepth))

	e.header("tunebot_advisor_calls_total", "counter", "Advisor API requests by outcome.")
	for _, o := range withExtra(advisorOutcomes, s.AdvisorCalls) {
		e.sample("tunebot_advisor_calls_total", float64(s.AdvisorCalls[o]), "outcome", o)
	}
	e.header("tunebot_advisor_tokens_total", "counter", "Advisor API tokens by kind, as the API reported them.")
	for _, k := range withExtra(tokenKinds, s.AdvisorTokens) {
		e.sample("tunebot_advisor_tokens_total", float64(s.AdvisorTokens[k]), "kind", k)
	}

	e.header("tunebot_gpu_seconds_total", "counter", "GPU time used by trainer jobs, summed over sessions.")
	e.sample("tunebot_gpu_seconds_total", s.GPUSeconds)
	writeDisks(e, s.Disks)
}

// writeDisks exports the free space a session pauses on (docs/design.md §1, "A full disk").
func writeDisks(e expo, disks []session.DiskUsage) {
	if len(disks) == 0 {
		return
	}
	e.header("tunebot_disk_free_bytes", "gauge", "Bytes free for tunebot on the filesystems of data_dir and the run directories.")
	for _, d := range disks {
		e.sample("tunebot_disk_free_bytes", float64(d.Free), "path", d.Path)
	}
	e.header("tunebot_disk_size_bytes", "gauge", "Size of the filesystems of data_dir and the run directories.")
	for _, d := range disks {
		e.sample("tunebot_disk_size_bytes", float64(d.Total), "path", d.Path)
	}
}

// withExtra returns known followed by any other keys of m, sorted.
func withExtra[K ~string, V any](known []K, m map[K]V) []K {
	out := append([]K(nil), known...)
	var extra []K
	for k := range m {
		found := false
		for _, x := range known {
			if x == k {
				found = true
				break
			}
		}
		if !found {
			extra = append(extra, k)
		}
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i] < extra[j] })
	return append(out, extra...)
}
