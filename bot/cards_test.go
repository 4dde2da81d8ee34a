package bot_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/bot"
	"tunebot/session"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test ./bot -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

var t0 = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

func fixtureSession() session.Session {
	st := session.DefaultSettings()
	st.Mode = session.ModeApproval
	st.Normalize()
	return session.Session{ID: "1a2b3c4d5e6f7a8b", State: session.StateRunning, Settings: st,
		Owner: session.Actor{Platform: "slack", ID: "U1", Name: "alice"}, Base: session.DefaultSpace().Defaults(),
		BestTrial: 2, BestRung: 0, BestScore: 0.1234, GPUSeconds: 1800, CreatedAt: t0, UpdatedAt: t0,
		Message: "trial 3 @ rung 0 running"}
}

func scored(total float64, eligible bool, reasons ...string) *session.Score {
	return &session.Score{Total: total, Eligible: eligible, Reasons: reasons, Objectives: map[string]float64{
		"tracking": 0.12, "smoothness": -0.034, "stability": 0.2, "falls": 0, "slip": 0.051, "energy": -0.5}}
}

// fixtureMetrics are evaluation metrics k times a plausible baseline's (falls and power fixed).
func fixtureMetrics(k float64) session.Metrics {
	return session.Metrics{session.MetricVelLinear: 0.2 * k, session.MetricVelAngular: 0.3 * k, session.MetricActionAcc: 12 * k,
		session.MetricOrientation: 0.05 * k, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08 * k, session.MetricPower: 150}
}

func fixtureTrials() []session.Trial {
	sp := session.DefaultSpace()
	base := sp.Defaults()
	c1 := session.Merge(base, session.Patch{Weights: map[string]float64{"pose": 1.5, "foot_slip": -0.5}, Params: map[string]float64{"foot_gait.period": 0.5}})
	c2 := session.Merge(c1, session.Patch{Weights: map[string]float64{"electrical_power": -1e-3, "action_rate_l2": -0.1}})
	return []session.Trial{
		{Number: 0, Rung: 0, Iterations: 300, State: session.TrialCompleted, Source: "baseline", RewardConfig: base, Score: scored(0, true), GPUSeconds: 600},
		{Number: 1, Rung: 0, Iterations: 300, State: session.TrialCompleted, Source: "advisor", RewardConfig: c1, Parent: &session.TrialRef{Number: 0}, Score: scored(0.05, false, "fall rate 0.050 exceeds the baseline's 0.010 + 0.02"), GPUSeconds: 600},
		{Number: 2, Rung: 0, Iterations: 300, State: session.TrialCompleted, Source: "edit", RewardConfig: c2, Parent: &session.TrialRef{Number: 1}, Score: scored(0.1234, true), GPUSeconds: 600},
		{Number: 3, Rung: 0, Iterations: 300, Progress: 150, State: session.TrialTraining, Source: "advisor", RewardConfig: c2},
	}
}

func fixtureProposal() session.Proposal {
	base := session.DefaultSpace().Defaults()
	return session.Proposal{ID: "1a2b3c4d-p03", SessionID: "1a2b3c4d5e6f7a8b", Seq: 3, Number: 4, BaseTrial: 2, Base: base,
		Patch:          session.Patch{Weights: map[string]float64{"pose": 1.25, "electrical_power": -0.001}, Params: map[string]float64{"foot_clearance.target_height": 0.12}},
		Rationale:      "Raise pose a bit. @everyone look <!here> and <@U999> see [this](https://evil.example) ```rm -rf /```",
		ExpectedImpact: map[string]string{"smoothness": "+", "tracking": "0", "energy": "+"}, Confidence: 0.62,
		Source: "advisor", Model: "deepseek-v4-flash", State: session.ProposalPending, CreatedAt: t0}
}

func TestCardsGolden(t *testing.T) {
	sp := session.DefaultSpace()
	s := fixtureSession()
	trials := fixtureTrials()
	decided := fixtureProposal()
	decided.State = session.ProposalApproved
	edited := session.Patch{Weights: map[string]float64{"pose": 1.1}}
	decided.Decision = &session.Decision{Action: session.ActionEdit, By: session.Actor{ID: "U2", Name: "bob"}, At: t0.Add(time.Hour), Edited: &edited}
	rejected := fixtureProposal()
	rejected.State = session.ProposalRejected
	rejected.Decision = &session.Decision{Action: session.ActionReject, By: session.Actor{ID: "U2", Name: "bob"}, At: t0.Add(time.Hour), Feedback: "too timid; @here try foot_slip"}
	// a numeric proposer's why: one sentence, then the three strongest of its evidence
	sampled := fixtureProposal()
	beat := 0.4
	sampled.Source, sampled.Model, sampled.Rationale, sampled.ExpectedImpact, sampled.Confidence, sampled.BeatBest = session.SourceSampler, "", "", nil, 0.92, &beat
	sampled.Summary = "Strengthens pose and electrical_power, raises foot_clearance.target_height, where the model of 9 trials expects the most gain (+0.031 in all)."
	sampled.Evidence = []string{"pose 1 → 1.25 (×1.25, stronger): the model expects +0.020 ± 0.006 on the score; 5 of 9 trials moved it",
		"foot_clearance.target_height 0.1 → 0.12 (higher): the model expects +0.008 ± 0.007 on the score; 3 of 9 trials moved it",
		"electrical_power 0 → -0.001 (switched on): the model expects +0.003 ± 0.009 on the score; 1 of 9 trials moved it",
		"foot_slip -0.25 → -0.3 (×1.20, stronger): the model expects +0.001 ± 0.009 on the score; 2 of 9 trials moved it"}
	// a reject whose feedback named terms: the card says what was read
	constrained := rejected
	constrained.Decision = &session.Decision{Action: session.ActionReject, By: session.Actor{ID: "U2", Name: "bob"}, At: t0.Add(time.Hour),
		Feedback: "do not touch is_terminated, lower foot_slip"}
	constrained.Decision.Read = session.ReadConstraints(constrained.Decision.Feedback, sp, 3)
	constrained.Decision.Note = session.FeedbackNote(constrained.Decision.Read, true)
	failed := trials[3]
	failed.State, failed.Reason, failed.LogTail = session.TrialFailed, "train job failed: exit status 1", "Traceback (most recent call last):\n  File \"train.py\"\nRuntimeError: CUDA out of memory"
	done := s
	done.State, done.Preset, done.EndedAt = session.StateSucceeded, "auto-tune-1a2b3c4d", t0.Add(3*time.Hour)
	done.Message = "done: best is trial 2 @ rung 0"
	// Above rung 0 a score is recomputed against the baseline at the same rung from the two
	// trials' metrics (session.VersusControl), so these have metrics.
	rung1 := session.Trial{Number: 2, Rung: 1, Iterations: 900, StartIter: 300, State: session.TrialCompleted, Source: "edit",
		Parent: &session.TrialRef{Number: 2}, Score: scored(0.25, true), Metrics: fixtureMetrics(0.75)}
	base1 := session.Trial{Number: 0, Rung: 1, Iterations: 900, StartIter: 300, State: session.TrialCompleted, Source: "baseline", Score: scored(0.3, true), Metrics: fixtureMetrics(0.7)}
	noControl := s
	noControl.Settings.Control = false
	unimproved := s
	unimproved.State, unimproved.Outcome, unimproved.BestTrial, unimproved.BestRung, unimproved.EndedAt = session.StateSucceeded, session.OutcomeNoImprovement, 0, 1, t0.Add(3*time.Hour)
	unimproved.Message = "done: nothing beat the defaults; they stand; no preset saved"
	cancelled := s
	cancelled.State, cancelled.Reason, cancelled.EndedAt = session.StateCancelled, "cancelled by ana", t0.Add(2*time.Hour)
	cancelled.Settings.Control = true
	for _, tc := range []struct {
		name string
		card bot.Card
	}{
		{"root", bot.RootCard(bot.RootInput{Session: s, Trials: trials})},
		{"root_parallel", bot.RootCard(parallelRoot())},
		{"root_waiting", bot.RootCard(bot.RootInput{Session: func() session.Session { x := s; x.State = session.StateAwaitingApproval; x.BestTrial = -1; return x }(), Trials: trials[:1]})},
		{"trial", bot.TrialCard(bot.TrialInput{Session: s, Trial: trials[2], Parent: &trials[1], Space: sp, Mentions: []string{"U1"},
			Attachments: []bot.Attachment{{Name: "curves.png", Title: "training curves"}, {Name: "metrics.png", Title: "evaluation vs baseline"}}})},
		{"trial_rung1_control", bot.TrialCard(bot.TrialInput{Session: s, Trial: rung1, Parent: &trials[2], Space: sp, Control: &base1})},
		{"trial_rung1_no_control", bot.TrialCard(bot.TrialInput{Session: noControl, Trial: rung1, Parent: &trials[2], Space: sp})},
		{"trial_ineligible", bot.TrialCard(bot.TrialInput{Session: s, Trial: trials[1], Parent: &trials[0], Space: sp})},
		{"trial_failed", bot.TrialCard(bot.TrialInput{Session: s, Trial: failed, Parent: &trials[2], Space: sp})},
		{"proposal", bot.ProposalCard(fixtureProposal(), sp, []string{"U1"})},
		{"proposal_edited", bot.ProposalCard(decided, sp, nil)},
		{"proposal_rejected", bot.ProposalCard(rejected, sp, nil)},
		{"proposal_sampler", bot.ProposalCard(sampled, sp, nil)},
		{"proposal_rejected_constraints", bot.ProposalCard(constrained, sp, nil)},
		{"why", bot.WhyCard(sampled)},
		{"summary", bot.SummaryCard(bot.SummaryInput{Session: done, Trials: trials[:3], Mentions: []string{"U1"}})},
		// nothing beat the baseline: its own outcome, no preset (issue 28, item 2)
		{"summary_no_improvement", bot.SummaryCard(bot.SummaryInput{Session: unimproved, Trials: append(trials[:2:2], base1, func() session.Trial {
			x := rung1
			x.Number = 1
			return x
		}())})},
		// cancelled at rung 1, where the baseline trained as long beats the tuned trial: the
		// headline says so instead of trial 2's gain at rung 0
		{"summary_cancelled", bot.SummaryCard(bot.SummaryInput{Session: cancelled, Trials: append(trials[:3:3],
			base1, rung1)})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, "card_"+tc.name, bot.RenderText(tc.card, map[string]string{"curves.png": "out/1a2b3c4d/curves.png"}))
		})
	}
}

// parallelRoot is a session running 8 trials at once (issue 14): local ones on one or two
// GPUs, Slurm jobs pending and running, training and evaluating; and 3 proposals waiting.
func parallelRoot() bot.RootInput {
	s := fixtureSession()
	s.Message = "8 trials running, 3 proposals wait"
	trials := fixtureTrials()[:3]
	run := func(n, rung, iters, progress int, st session.TrialState, p *session.Proc) session.Trial {
		return session.Trial{Number: n, Rung: rung, Iterations: iters, Progress: progress, State: st, Source: "advisor", Proc: p}
	}
	trials = append(trials,
		run(3, 0, 300, 150, session.TrialTraining, &session.Proc{Job: "train", GPUs: []int{2}}),
		run(4, 0, 300, 0, session.TrialTraining, &session.Proc{Job: "train", GPUs: []int{0, 1}}),
		run(5, 0, 300, 300, session.TrialEvaluating, &session.Proc{Job: "evaluate", GPUs: []int{3}}),
		run(6, 0, 300, 0, session.TrialTraining, &session.Proc{Job: "train", SlurmJob: "1234", JobState: "PENDING", JobReason: "Resources"}),
		run(7, 0, 300, 0, session.TrialTraining, &session.Proc{Job: "train", SlurmJob: "1235", JobState: "PENDING", JobReason: "Priority"}),
		run(8, 0, 300, 42, session.TrialTraining, &session.Proc{Job: "train", SlurmJob: "1236", JobState: "RUNNING", Node: "node1"}),
		run(9, 0, 300, 300, session.TrialEvaluating, &session.Proc{Job: "evaluate", SlurmJob: "1237", JobState: "RUNNING", Node: "gpu-node-17"}),
		run(10, 0, 300, 0, session.TrialTraining, nil), // its job is being started
		session.Trial{Number: 11, Rung: 0, Iterations: 300, State: session.TrialQueued},
	)
	var props []session.Proposal
	for i, seq := range []int{9, 10, 11, 8} {
		p := fixtureProposal()
		p.ID, p.Seq, p.Number = fmt.Sprintf("1a2b3c4d-p%02d", seq), seq, 12+i
		if seq == 8 {
			p.State = session.ProposalUsed
		}
		props = append(props, p)
	}
	return bot.RootInput{Session: s, Trials: trials, Proposals: props}
}

func TestProposalCardActionsCarryIDs(t *testing.T) {
	c := bot.ProposalCard(fixtureProposal(), session.DefaultSpace(), nil)
	var ids []string
	for _, b := range c.Blocks {
		for _, a := range b.Actions {
			verb, sid, pid, err := bot.ParseActionID(a.ID)
			if err != nil {
				t.Fatalf("action %q: %v", a.ID, err)
			}
			if sid != "1a2b3c4d5e6f7a8b" || pid != "1a2b3c4d-p03" {
				t.Errorf("action %q names session %q proposal %q", a.ID, sid, pid)
			}
			ids = append(ids, verb)
		}
	}
	if diff := cmp.Diff([]string{"approve", "reject", "edit", "pause"}, ids); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	decided := fixtureProposal()
	decided.State = session.ProposalApproved
	decided.Decision = &session.Decision{Action: "approve", By: session.Actor{ID: "U2"}, At: t0}
	for _, b := range bot.ProposalCard(decided, session.DefaultSpace(), nil).Blocks {
		if b.Kind == bot.BlockActions {
			t.Error("a decided proposal still shows buttons")
		}
	}
}

func TestNeutralise(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		max      int
	}{
		{"hello", "hello", 0},
		{"@everyone now", "@\u200beveryone now", 0},
		{"ping @HERE and @channel", "ping @\u200bHERE and @\u200bchannel", 0},
		{"<@U123> <!here> <#C1> <!subteam^S1>", "<\u200b@U123> <\u200b!here> <\u200b#C1> <\u200b!subteam^S1>", 0},
		{"<https://evil|click>", "<\u200bhttps://evil|click>", 0},
		{"see [docs](https://x.y/z)", "see docs (https://x.y/z)", 0},
		{"```code```", "'''code'''", 0},
		{"a\x00b\x1bc\u202ed", "abcd", 0},
		{"line1\nline2", "line1\nline2", 0},
		{strings.Repeat("x", 20), strings.Repeat("x", 9) + "…", 10},
		{"mail a@everyone.com", "mail a@\u200beveryone.com", 0},
	} {
		if got := bot.Neutralise(tc.in, tc.max); got != tc.want {
			t.Errorf("Neutralise(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseActionIDRejectsForgeries(t *testing.T) {
	for _, id := range []string{"", "tune:approve", "tune:delete:s:p", "x:approve:s:p", "tune:approve:../../etc:p", "tune:approve:s:p:extra", "tune:approve:s p:p"} {
		if _, _, _, err := bot.ParseActionID(id); err == nil {
			t.Errorf("ParseActionID(%q) accepted", id)
		}
	}
}

type trialsOnly []session.Trial

func (r trialsOnly) Trials(context.Context, string) ([]session.Trial, error) { return r, nil }

// The summary of a finished session carries the charts drawn again for its best trial
// after the final re-evaluation (the wiring picks them: cmd/tunebot's finalCharts).
func TestSummaryRedrawsTheScoreAndProgressCharts(t *testing.T) {
	s := fixtureSession()
	s.State, s.Preset, s.BestTrial, s.BestRung = session.StateSucceeded, "auto-tune-1a2b3c4d", 2, 0
	var drawn []session.TrialRef
	r := &bot.Renderer{Records: trialsOnly(fixtureTrials()[:3]), Space: session.DefaultSpace(),
		Charts: func(context.Context, session.Session, session.Trial, []string) ([]bot.Attachment, error) {
			t.Error("the summary drew a trial report")
			return nil, nil
		},
		Final: func(_ context.Context, _ session.Session, tr session.Trial) ([]bot.Attachment, error) {
			drawn = append(drawn, tr.Ref())
			var out []bot.Attachment
			for _, n := range []string{"scores", "progress"} {
				out = append(out, bot.Attachment{Name: "final-" + n + ".png", Title: n, Data: []byte(n)})
			}
			return out, nil
		}}
	out := r.Render(context.Background(), session.Event{Kind: session.EventSessionFinished, Session: s}, "slack")
	var names []string
	for _, c := range out.Thread {
		for _, b := range c.Blocks {
			for _, a := range b.Attachments {
				names = append(names, a.Name+"="+string(a.Data))
			}
		}
	}
	if strings.Join(names, ",") != "final-scores.png=scores,final-progress.png=progress" || len(drawn) != 1 || drawn[0] != (session.TrialRef{Number: 2}) {
		t.Errorf("summary charts %v drawn for %v, want the best trial's scores and progress as final-*.png", names, drawn)
	}
}
