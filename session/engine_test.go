package session_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer"
)

// fakeTrainer runs jobs in-process: it writes a checkpoint file, returns metrics from a
// simple response surface, and can block, fail or count jobs on demand.
type fakeTrainer struct {
	trainer.Layout
	mu        sync.Mutex
	trains    map[session.TrialRef]int
	evals     map[session.TrialRef]int
	resumed   map[session.TrialRef]string
	startIter map[session.TrialRef]int
	orphans   []session.Proc
	// gate, when set for a job, is waited on (or the ctx) before the job returns.
	trainGate map[session.TrialRef]chan struct{}
	evalGate  map[session.TrialRef]chan struct{}
	entered   chan string // "train 3/0", "eval 3/0" as jobs start
	failTrain map[session.TrialRef]string
	broken    error // every training job fails with it, as a trainer that cannot start
	clips     int   // evaluations that asked for a clip
	// tweak, when set, changes one seed's metrics of a job (final: a final re-evaluation)
	// before they are averaged.
	tweak func(ref session.TrialRef, final bool, iteration, seed int, m session.Metrics)
}

func newFakeTrainer() *fakeTrainer {
	return &fakeTrainer{
		trains: map[session.TrialRef]int{}, evals: map[session.TrialRef]int{}, resumed: map[session.TrialRef]string{},
		startIter: map[session.TrialRef]int{}, trainGate: map[session.TrialRef]chan struct{}{},
		evalGate: map[session.TrialRef]chan struct{}{}, entered: make(chan string, 100), failTrain: map[session.TrialRef]string{},
	}
}

func (f *fakeTrainer) Train(ctx context.Context, job session.TrainJob, hooks session.JobHooks) (session.TrainResult, error) {
	f.mu.Lock()
	f.trains[job.Trial]++
	f.resumed[job.Trial] = job.Checkpoint
	f.startIter[job.Trial] = job.StartIter
	gate := f.trainGate[job.Trial]
	fail := f.failTrain[job.Trial]
	broken := f.broken
	f.mu.Unlock()
	if broken != nil {
		return session.TrainResult{}, broken
	}
	if hooks.Started != nil {
		hooks.Started(session.Proc{PID: 4242, PGID: 4242, StartTick: 7, GPUs: job.Settings.GPUs})
	}
	f.entered <- fmt.Sprintf("train %d/%d", job.Trial.Number, job.Trial.Rung)
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return session.TrainResult{}, fmt.Errorf("train: %w", ctx.Err())
		}
	}
	if fail != "" {
		return session.TrainResult{}, &session.JobError{Job: "train", Reason: fail, LogTail: "Traceback: boom"}
	}
	if err := os.MkdirAll(job.RunDir, 0o755); err != nil {
		return session.TrainResult{}, err
	}
	ckpt := filepath.Join(job.RunDir, fmt.Sprintf("model_%d.pt", job.Target))
	if err := os.WriteFile(ckpt, []byte("ckpt"), 0o644); err != nil {
		return session.TrainResult{}, err
	}
	if hooks.Progress != nil {
		hooks.Progress(job.Target)
	}
	series := map[string][]session.Point{"Train/mean_reward": {{Step: 0, Value: 1}, {Step: int64(job.Target - 1), Value: 10}}}
	return session.TrainResult{Checkpoint: ckpt, Iteration: job.Target, Policy: filepath.Join(job.RunDir, "policy.onnx"), Series: series}, nil
}

func (f *fakeTrainer) Evaluate(ctx context.Context, job session.EvalJob, hooks session.JobHooks) (session.Evaluation, error) {
	f.mu.Lock()
	f.evals[job.Trial]++
	gate := f.evalGate[job.Trial]
	tweak := f.tweak
	f.mu.Unlock()
	if hooks.Started != nil {
		hooks.Started(session.Proc{PID: 4242, PGID: 4242, StartTick: 7, GPUs: job.Settings.GPUs})
	}
	f.entered <- fmt.Sprintf("eval %d/%d", job.Trial.Number, job.Trial.Rung)
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return session.Evaluation{}, fmt.Errorf("evaluate: %w", ctx.Err())
		}
	}
	var per []session.SeedMetrics
	mean := session.Metrics{}
	for _, seed := range job.Seeds {
		m := surface(f.configOf(job), iterOf(job.Checkpoint), seed)
		if tweak != nil {
			tweak(job.Trial, !job.Clip, iterOf(job.Checkpoint), seed, m)
		}
		per = append(per, session.SeedMetrics{Seed: seed, Metrics: m})
		for k, v := range m {
			mean[k] += v / float64(len(job.Seeds))
		}
	}
	ev := session.Evaluation{Task: job.Settings.Task, Iteration: iterOf(job.Checkpoint), Seeds: job.Seeds, Metrics: mean, PerSeed: per}
	if job.Clip {
		f.mu.Lock()
		f.clips++
		f.mu.Unlock()
		ev.Clip = &session.Clip{File: session.File{Path: filepath.Join(job.RunDir, "clip.gif"), Size: 10, SHA256: "ab"}, Format: session.ClipGIF,
			Poster: &session.File{Path: filepath.Join(job.RunDir, "clip-poster.png")}}
	}
	return ev, nil
}

func (f *fakeTrainer) EndOrphan(ctx context.Context, p session.Proc) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.orphans = append(f.orphans, p)
	return nil
}

// configs maps run dirs to configs, filled by the test's store lookups.
var configsMu sync.Mutex
var configs = map[string]session.RewardConfig{}

func (f *fakeTrainer) configOf(job session.EvalJob) session.RewardConfig {
	configsMu.Lock()
	defer configsMu.Unlock()
	if c, ok := configs[job.SessionID+job.Trial.String()]; ok {
		return c
	}
	return session.DefaultSpace().Defaults()
}

func iterOf(ckpt string) int {
	var n int
	fmt.Sscanf(filepath.Base(ckpt), "model_%d.pt", &n)
	return n
}

// surface: more tracking weight → better tracking; stronger action-rate penalty → smoother;
// more iterations → better everything.
func surface(c session.RewardConfig, it, seed int) session.Metrics {
	w := c.Weights
	itf := 1 + 20/float64(it+1)
	noise := 1 + 0.001*float64(seed%7) // fresh final seeds (7301, ...) stay on the scale of 0, 1, 2
	return session.Metrics{
		session.MetricVelLinear:   0.2 * math.Pow(1/w["track_linear_velocity"], 0.5) * itf * noise,
		session.MetricVelAngular:  0.3 * math.Pow(1/w["track_angular_velocity"], 0.5) * itf,
		session.MetricActionAcc:   12 * math.Pow(0.05/math.Abs(w["action_rate_l2"]), 0.5) * itf,
		session.MetricOrientation: 0.05 * itf,
		session.MetricFallRate:    0.01 * 200 / math.Abs(w["is_terminated"]),
		session.MetricFootSlip:    0.08 * itf,
		session.MetricPower:       150 * itf,
	}
}

// scriptAdvisor proposes from a function and records what it was asked.
type scriptAdvisor struct {
	mu   sync.Mutex
	reqs []session.ProposalRequest
	fn   func(req session.ProposalRequest) (session.Suggestion, error)
}

func (a *scriptAdvisor) Propose(ctx context.Context, req session.ProposalRequest) (session.Suggestion, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	a.mu.Unlock()
	return a.fn(req)
}

func (a *scriptAdvisor) requests() []session.ProposalRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]session.ProposalRequest(nil), a.reqs...)
}

// improving raises track_linear_velocity a little each time: every proposal improves. Like
// every real proposer, it steps past configurations on the request's tried list.
func improving(req session.ProposalRequest) (session.Suggestion, error) {
	f := 1.1 + 0.01*float64(len(req.History))
	for {
		p := session.Patch{Weights: map[string]float64{"track_linear_velocity": req.Base.Weights["track_linear_velocity"] * f}}
		if !triedAlready(req, p) {
			return session.Suggestion{Patch: p, Rationale: "raise tracking", Confidence: 0.6, Model: "fake-model"}, nil
		}
		f += 0.05
	}
}

// triedAlready reports whether patch p, as the engine will run it (rounded), repeats a
// configuration of req.Tried: a value a few digits away from a tried one rounds onto it.
func triedAlready(req session.ProposalRequest, p session.Patch) bool {
	merged := session.Merge(req.Base, req.Space.Round(req.Base, p))
	for _, t := range req.Tried {
		if merged.Equal(t.Config) {
			return true
		}
	}
	return false
}

// recordingNotifier keeps the kinds of events it saw.
type recordingNotifier struct {
	mu    sync.Mutex
	kinds []session.EventKind
	texts []string
}

func (n *recordingNotifier) Notify(ctx context.Context, e session.Event) {
	n.mu.Lock()
	n.kinds = append(n.kinds, e.Kind)
	n.texts = append(n.texts, e.Text)
	n.mu.Unlock()
}

func (n *recordingNotifier) count(k session.EventKind) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, x := range n.kinds {
		if x == k {
			c++
		}
	}
	return c
}

type harness struct {
	t       *testing.T
	dir     string
	db      *store.DB
	eng     *session.Engine
	tr      *fakeTrainer
	adv     *scriptAdvisor
	sampler *scriptAdvisor
	note    *recordingNotifier
}

func newHarness(t *testing.T, dir string) *harness {
	t.Helper()
	db, err := store.Open(filepath.Join(dir, "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, db: db, tr: newFakeTrainer(), adv: &scriptAdvisor{fn: improving},
		sampler: &scriptAdvisor{fn: func(req session.ProposalRequest) (session.Suggestion, error) {
			s, err := improving(req)
			s.Source = session.SourceSampler
			return s, err
		}}, note: &recordingNotifier{}}
	h.eng = h.engine(h.tr)
	t.Cleanup(func() {
		h.eng.Shutdown(context.Background())
		db.Close()
	})
	return h
}

func (h *harness) engine(tr session.Trainer) *session.Engine {
	eng, err := session.NewEngine(session.EngineConfig{Store: configStore{h.db}, Trainer: tr, Advisor: h.adv, Sampler: h.sampler,
		Notifier: h.note, Space: session.DefaultSpace(), SessionsDir: filepath.Join(h.dir, "sessions")})
	if err != nil {
		h.t.Fatal(err)
	}
	return eng
}

// configStore records each trial's config so the fake evaluator can score it.
type configStore struct{ *store.DB }

func (c configStore) PutTrial(ctx context.Context, t session.Trial) error {
	configsMu.Lock()
	configs[t.SessionID+t.Ref().String()] = t.RewardConfig
	configsMu.Unlock()
	return c.DB.PutTrial(ctx, t)
}

func settings(mode string) session.Settings {
	s := session.DefaultSettings()
	s.Mode = mode
	s.TrialCount = 6
	s.Rungs = []int{10, 20, 30}
	s.Patience = 5
	// The ladder tests count trials per rung without the baseline carried along;
	// TestControlComparesAtEqualTraining runs with it (the default).
	s.Control = false
	// The promotion review goes ahead at once, as in automatic mode: the tests that
	// review a plan (review_test.go) set a wait of their own.
	s.PromotionReview = new(time.Duration)
	s.Normalize()
	return s
}

var console = session.Actor{Platform: "console", ID: "u1", Name: "ana"}

// startApproval starts an approval-mode session (settings(ModeApproval)) and returns it
// once it waits: its baseline ran and its first proposal waits for a decision.
func (h *harness) startApproval() session.Session {
	h.t.Helper()
	s, err := h.eng.Start(context.Background(), settings(session.ModeApproval), console)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.wait(s.ID)
}

func (h *harness) wait(id string) session.Session {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := h.eng.Wait(ctx, id)
	if err != nil {
		h.t.Fatalf("waiting for session: %v", err)
	}
	return s
}

// resumeToSuccess resumes paused session id on eng and waits for it to succeed with every
// trial completed.
func (h *harness) resumeToSuccess(eng *session.Engine, id string) session.Session {
	h.t.Helper()
	if _, err := eng.Resume(context.Background(), id, console); err != nil {
		h.t.Fatal(err)
	}
	s := h.wait(id)
	if s.State != session.StateSucceeded {
		h.t.Fatalf("after the resume: %s %q", s.State, s.Reason)
	}
	for _, x := range h.trials(id) {
		if x.State != session.TrialCompleted {
			h.t.Fatalf("trial %d @ rung %d is %s: %q", x.Number, x.Rung, x.State, x.Reason)
		}
	}
	return s
}

func (h *harness) trials(id string) []session.Trial {
	h.t.Helper()
	ts, err := h.db.Trials(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return ts
}

func (h *harness) expect(what string) {
	h.t.Helper()
	select {
	case got := <-h.tr.entered:
		if got != what {
			h.t.Fatalf("next job: got %q, want %q", got, what)
		}
	case <-time.After(10 * time.Second):
		h.t.Fatalf("job %q never started", what)
	}
}

func TestAutomaticSessionRunsTheWholeLadder(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	s, err := h.eng.Start(ctx, settings(session.ModeAutomatic), console)
	if err != nil {
		t.Fatal(err)
	}
	s = h.wait(s.ID)
	if s.State != session.StateSucceeded {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
	count := map[int]int{}
	for _, tr := range h.trials(s.ID) {
		count[tr.Rung]++
		if tr.State != session.TrialCompleted {
			t.Errorf("trial %d@%d is %s: %s", tr.Number, tr.Rung, tr.State, tr.Reason)
		}
		// The trainer names the run dir and reports the policy; the trial keeps both,
		// relative to the session directory, for /tune policy to read.
		if want := (trainer.Layout{}).RunDir(tr.Ref()); tr.RunDir != want || tr.Policy != filepath.Join(want, "policy.onnx") {
			t.Errorf("trial %d@%d run dir %q, policy %q; want %q and its policy.onnx", tr.Number, tr.Rung, tr.RunDir, tr.Policy, want)
		}
		// and the clip its rung's evaluation wrote, relative too
		if want := (trainer.Layout{}).RunDir(tr.Ref()); tr.Clip == nil || tr.Clip.Path != filepath.Join(want, "clip.gif") ||
			tr.Clip.Poster == nil || tr.Clip.Poster.Path != filepath.Join(want, "clip-poster.png") {
			t.Errorf("trial %d@%d clip %+v, want %s/clip.gif and its poster", tr.Number, tr.Rung, tr.Clip, want)
		}
		if tr.Rung > 0 {
			want := filepath.Join(h.eng.SessionDir(s.ID), fmt.Sprintf("trial-%03d-rung-%d", tr.Number, tr.Rung-1), fmt.Sprintf("model_%d.pt", s.Settings.Rungs[tr.Rung-1]))
			if got := h.tr.resumed[tr.Ref()]; got != want {
				t.Errorf("trial %d@%d resumed %q, want its own parent's checkpoint %q", tr.Number, tr.Rung, got, want)
			}
			if h.tr.startIter[tr.Ref()] != s.Settings.Rungs[tr.Rung-1] {
				t.Errorf("trial %d@%d start iteration %d", tr.Number, tr.Rung, h.tr.startIter[tr.Ref()])
			}
		}
	}
	if count[0] != 6 || count[1] != 4 || count[2] != 2 {
		t.Fatalf("trials per rung %v, want 6/4/2", count)
	}
	for ref, n := range h.tr.trains {
		if n != 1 {
			t.Errorf("%s trained %d times", ref, n)
		}
	}
	p, err := h.db.Preset(ctx, s.Preset)
	if err != nil {
		t.Fatalf("preset %q: %v", s.Preset, err)
	}
	if p.Trial.Rung != 2 || p.Name != "auto-tune-"+s.ID[:8] {
		t.Errorf("preset %+v", p)
	}
	// The best of an always-improving search is the last rung-0 trial, promoted to rung 2.
	if s.BestTrial != 5 || s.BestRung != 2 {
		t.Errorf("best trial %d@%d, want 5@2", s.BestTrial, s.BestRung)
	}
	finals := 0
	for _, tr := range h.trials(s.ID) {
		if tr.Final != nil {
			finals++
			if len(tr.Final.PerSeed) != session.DefaultFinalEvalCount || tr.Final.ScoreStd <= 0 || tr.Ref() != (session.TrialRef{Number: 5, Rung: 2}) {
				t.Errorf("final of %d@%d: %+v", tr.Number, tr.Rung, tr.Final)
			}
		}
	}
	// The final evaluation measures what the top rung chose, and chooses nothing: only the
	// chosen finalist is measured (no baseline was carried along to measure beside it).
	if finals != 1 {
		t.Errorf("%d trials measured by the final evaluation, want the chosen one", finals)
	}
	if h.tr.clips != 12 {
		t.Errorf("%d evaluations asked for a clip, want the 12 rung evaluations (not the finalists' re-evaluations)", h.tr.clips)
	}
	h.eng.Shutdown(ctx) // delivers the events still queued for the notifier
	if h.note.count(session.EventTrialFinished) != 12 || h.note.count(session.EventSessionFinished) != 1 {
		t.Errorf("events: %v", h.note.kinds)
	}
	audit, _ := h.db.Audit(ctx, s.ID)
	kinds := map[string]int{}
	for _, a := range audit {
		kinds[a.Kind]++
	}
	if kinds["decision"] != 5 || kinds["trial_finished"] != 12 || kinds["session_succeeded"] != 1 {
		t.Errorf("audit kinds %v", kinds)
	}
}

// With control (the default) the baseline runs every rung and is measured on fresh seeds with
// the chosen finalist, it competes for best, and the session's headline compares at equal
// training.
func TestControlComparesAtEqualTraining(t *testing.T) {
	worse := func(req session.ProposalRequest) (session.Suggestion, error) {
		v := req.Base.Weights["track_linear_velocity"] * (0.95 - 0.02*float64(len(req.History)))
		return session.Suggestion{Patch: session.Patch{Weights: map[string]float64{"track_linear_velocity": v}}}, nil
	}
	tests := []struct {
		name     string
		advisor  func(session.ProposalRequest) (session.Suggestion, error)
		wantBest session.TrialRef
		wantMsg  string
	}{
		{"a tuned trial wins", improving, session.TrialRef{Number: 5, Rung: 2}, "the baseline +0.000 (both vs baseline @ rung 2) at the same 30 iterations on fresh seeds "},
		{"the baseline wins at equal training", worse, session.TrialRef{Number: 0, Rung: 2}, "done: nothing beat the defaults; they stand (trial "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, t.TempDir())
			ctx := context.Background()
			h.adv.fn = tt.advisor
			st := settings(session.ModeAutomatic)
			st.Control = session.DefaultSettings().Control
			s, err := h.eng.Start(ctx, st, console)
			if err != nil {
				t.Fatal(err)
			}
			s = h.wait(s.ID)
			if s.State != session.StateSucceeded {
				t.Fatalf("state %s (%s)", s.State, s.Reason)
			}
			var base2 *session.Trial
			for _, tr := range h.trials(s.ID) {
				if tr.Number == 0 && tr.Rung == 2 {
					base2 = &tr
				}
			}
			// Measured on fresh seeds beside the finalist the rung chose; nothing is measured
			// when the rung chose the baseline itself.
			tuned := tt.wantBest.Number != 0
			if base2 == nil || (base2.Final != nil) != tuned || (tuned && !slices.Equal(base2.Final.Seeds, s.Settings.FinalEvalSeeds)) {
				t.Fatalf("the baseline at rung 2: %+v, want it measured on the final seeds %v: %v", base2, s.Settings.FinalEvalSeeds, tuned)
			}
			if got := (session.TrialRef{Number: s.BestTrial, Rung: s.BestRung}); got != tt.wantBest {
				t.Fatalf("best %s, want %s", got, tt.wantBest)
			}
			// Nothing beat the baseline: its own outcome and no preset of the defaults
			// (issue 28, item 2).
			presets, err := h.db.Presets(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantOutcome, wantPresets := session.OutcomeImproved, 1
			if tt.wantBest.Number == 0 {
				wantOutcome, wantPresets = session.OutcomeNoImprovement, 0
			}
			if s.Outcome != wantOutcome || len(presets) != wantPresets || (wantPresets == 0) != (s.Preset == "") {
				t.Errorf("outcome %q, preset %q, %d presets stored; want %q and %d", s.Outcome, s.Preset, len(presets), wantOutcome, wantPresets)
			}
			if len(presets) == 1 && (presets[0].Versus == nil || s.Result == nil || s.Result.Versus == nil || *presets[0].Versus != *s.Result.Versus || !presets[0].Versus.Matched()) {
				t.Errorf("the preset's score against the baseline at its rung %+v, want the headline's %+v", presets[0].Versus, s.Result)
			}
			r := s.Result
			if r == nil || !r.Final || r.Control == nil || r.Control.Trial != 0 || r.Control.Rung != 2 || r.Best.Trial == 0 || r.Best.Rung != 2 {
				t.Fatalf("result %+v, want the best tuned trial against the baseline at rung 2", r)
			}
			if want := session.StandingOf(*base2, s.Settings.EvalSeeds); r.Control.Score != want.Score || r.Best.Final != tuned {
				t.Errorf("control %+v best %+v, want the baseline's standing %v", r.Control, r.Best, want)
			}
			if !strings.Contains(s.Message, tt.wantMsg) || !strings.Contains(s.Message, r.Headline()) {
				t.Errorf("message %q, want %q and the headline %q", s.Message, tt.wantMsg, r.Headline())
			}
			headlineAddsUp(t, r)
			// The baseline trains first at each rung, so every promoted trial's line is
			// against the baseline trained as long, never rung 0's.
			h.eng.Shutdown(ctx)
			h.note.mu.Lock()
			defer h.note.mu.Unlock()
			promotedLines, promotedTrials := 0, 0
			for _, tr := range h.trials(s.ID) {
				if tr.Rung > 0 {
					promotedTrials++
				}
			}
			for _, line := range h.note.texts {
				if !strings.Contains(line, " @ rung 1: score") && !strings.Contains(line, " @ rung 2: score") {
					continue
				}
				promotedLines++
				rung := line[strings.Index(line, " @ rung ")+8 : strings.Index(line, ": score")]
				if !strings.Contains(line, "vs baseline @ rung "+rung) || strings.Contains(line, "trained less") {
					t.Errorf("line %q, want it against the baseline @ rung %s", line, rung)
				}
			}
			if promotedLines != promotedTrials {
				t.Errorf("%d lines of promoted trials, want %d: %q", promotedLines, promotedTrials, h.note.texts)
			}
		})
	}
}

// headlineAddsUp checks that the headline's gain is the difference of the two scores it
// prints and is the score against the control every other surface shows (issue 35, item 6).
func headlineAddsUp(t *testing.T, r *session.Comparison) {
	t.Helper()
	h := r.Headline()
	m := regexp.MustCompile(`scores ([+-]\d+\.\d{3})[^,]*, the baseline ([+-]\d+\.\d{3}).*: (?:([+-]\d+\.\d{3})(?: ± \d+\.\d{3})? over the baseline|the baseline is ahead by (\d+\.\d{3}))`).FindStringSubmatch(h)
	if m == nil {
		t.Fatalf("headline %q: no scores and gain in it", h)
	}
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	gain := num(m[3])
	if m[4] != "" {
		gain = -num(m[4])
	}
	if d := num(m[1]) - num(m[2]) - gain; math.Abs(d) > 0.0015 {
		t.Errorf("headline %q: %s − %s is not %+.3f", h, m[1], m[2], gain)
	}
	if r.Versus != nil && r.Versus.Matched() && session.SignedScore(r.Versus.Score) != session.SignedScore(gain) {
		t.Errorf("headline %q: gain %+.3f, the score against the control %+.3f", h, gain, r.Versus.Score)
	}
}

// TestSecondStartNamesTheActiveSession: a start while another session is active is refused
// naming that session by its short id, its state and what it waits for, never the id the
// refused session would have had (a person cannot act on that one).
func TestSecondStartNamesTheActiveSession(t *testing.T) {
	cases := []struct {
		name string
		// hold leaves a session active and returns it.
		hold func(h *harness) session.Session
		want []string
	}{
		{"running", func(h *harness) session.Session {
			h.tr.trainGate[session.TrialRef{0, 0}] = make(chan struct{})
			s, err := h.eng.Start(context.Background(), settings(session.ModeAutomatic), console)
			if err != nil {
				h.t.Fatal(err)
			}
			h.expect("train 0/0")
			return s
		}, []string{"is running", "let it finish or cancel it"}},
		{"awaiting a decision", func(h *harness) session.Session { return h.startApproval() }, []string{"is awaiting approval (waiting for a decision on proposal 1)", "decide or cancel it"}},
		{"paused at the end of input", func(h *harness) session.Session {
			s, err := h.eng.Pause(context.Background(), h.startApproval().ID, console)
			if err != nil {
				h.t.Fatal(err)
			}
			return s
		}, []string{"is paused (waiting for a decision on proposal 1)", "resume or cancel it"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, t.TempDir())
			s := tc.hold(h)
			_, err := h.eng.Start(context.Background(), settings(session.ModeAutomatic), console)
			msg, _ := session.UserMessage(err)
			var be *session.BusyError
			if !errors.Is(err, session.ErrBusy) || !errors.As(err, &be) || be.Holder.ID != s.ID {
				t.Fatalf("second start: %v, want a BusyError naming %s", err, s.ID)
			}
			for _, w := range append(tc.want, "session "+session.Short(s.ID)+" ") {
				if !strings.Contains(msg, w) {
					t.Errorf("second start: %q, want %q in it", msg, w)
				}
			}
			if strings.Contains(msg, "creating session") || strings.Contains(msg, s.ID) {
				t.Errorf("second start: %q names ids of the store's refusal", msg)
			}
			if _, err := h.eng.Cancel(context.Background(), s.ID, console); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestStartRefusesBadSettingsAndMissingAdvisor(t *testing.T) {
	h := newHarness(t, t.TempDir())
	bad := settings(session.ModeAutomatic)
	bad.TrialCount, bad.RunName = 30, "has space"
	_, err := h.eng.Start(context.Background(), bad, console)
	if err == nil || !strings.Contains(err.Error(), "trial_count") || !strings.Contains(err.Error(), "run_name") {
		t.Fatalf("got %v", err)
	}
	eng, _ := session.NewEngine(session.EngineConfig{Store: h.db, Trainer: h.tr, Space: session.DefaultSpace(), SessionsDir: h.dir, Sampler: h.sampler})
	defer eng.Shutdown(context.Background())
	if _, err := eng.Start(context.Background(), settings(session.ModeAutomatic), console); err == nil || !strings.Contains(err.Error(), "DEEPSEEK_API_KEY") {
		t.Fatalf("start without advisor: %v", err)
	}
}

func TestApprovalRejectEditApprove(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	s := h.startApproval()
	if s.State != session.StateAwaitingApproval {
		t.Fatalf("state %s, want awaiting_approval", s.State)
	}
	s = rejectWithFeedback(t, h, s)
	badEditStaysPending(t, h, s)
	s = goodEditRuns(t, h, s)
	concurrentApprovals(t, h, s)
	if _, err := h.eng.Cancel(ctx, s.ID, console); err != nil {
		t.Fatal(err)
	}
}

// rejectWithFeedback rejects s's proposal with feedback: a new proposal comes, and the
// advisor saw the feedback.
func rejectWithFeedback(t *testing.T, h *harness, s session.Session) session.Session {
	t.Helper()
	if _, err := h.eng.Decide(context.Background(), session.DecideRequest{SessionID: s.ID, Action: session.ActionReject, Feedback: "too aggressive on tracking", By: console}); err != nil {
		t.Fatal(err)
	}
	s = h.wait(s.ID)
	reqs := h.adv.requests()
	if s.State != session.StateAwaitingApproval || len(reqs) != 2 || len(reqs[1].Feedback) != 1 || reqs[1].Feedback[0] != "too aggressive on tracking" {
		t.Fatalf("after reject: state %s, %d requests, feedback %v", s.State, len(reqs), reqs[len(reqs)-1].Feedback)
	}
	return s
}

// badEditStaysPending: an edit with a bad value is refused with the reason, and the proposal
// stays pending.
func badEditStaysPending(t *testing.T, h *harness, s session.Session) {
	t.Helper()
	ctx := context.Background()
	bad := session.Patch{Weights: map[string]float64{"track_linear_velocity": 9}}
	_, err := h.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionEdit, Edit: &bad, By: console})
	var ie *session.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "outside its bounds") {
		t.Fatalf("bad edit: %v", err)
	}
	ps, _ := h.db.Proposals(ctx, s.ID)
	if ps[len(ps)-1].State != session.ProposalPending {
		t.Fatalf("proposal after bad edit: %s", ps[len(ps)-1].State)
	}
	if n := h.tr.trains[session.TrialRef{1, 0}]; n != 0 {
		t.Fatalf("a trial ran after a refused edit")
	}
}

// goodEditRuns: a valid edit runs as source "edit".
func goodEditRuns(t *testing.T, h *harness, s session.Session) session.Session {
	t.Helper()
	good := session.Patch{Weights: map[string]float64{"action_rate_l2": -0.08}}
	if _, err := h.eng.Decide(context.Background(), session.DecideRequest{SessionID: s.ID, Action: session.ActionEdit, Edit: &good, By: console}); err != nil {
		t.Fatal(err)
	}
	s = h.wait(s.ID)
	var t1 session.Trial
	for _, tr := range h.trials(s.ID) {
		if tr.Number == 1 {
			t1 = tr
		}
	}
	if t1.Source != session.SourceEdit || t1.RewardConfig.Weights["action_rate_l2"] != -0.08 || t1.State != session.TrialCompleted {
		t.Fatalf("trial 1: source %s config %v state %s", t1.Source, t1.RewardConfig.Weights["action_rate_l2"], t1.State)
	}
	return s
}

// concurrentApprovals: two people approving at once: one decision, a clear answer to the
// second.
func concurrentApprovals(t *testing.T, h *harness, s session.Session) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = h.eng.Decide(context.Background(), session.DecideRequest{SessionID: s.ID, Action: session.ActionApprove, By: session.Actor{Platform: "slack", ID: fmt.Sprint("U", i)}})
		}()
	}
	wg.Wait()
	ok, conflict := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, session.ErrConflict) && strings.Contains(err.Error(), "already approved by U"):
			conflict++
		default:
			t.Errorf("second approval: %v", err)
		}
	}
	if ok != 1 || conflict != 1 {
		t.Fatalf("concurrent approvals: %d ok, %d conflicts (%v)", ok, conflict, errs)
	}
}

// TestEditCountsChangesAfterMerging (issue 43 item 6.4): an edit that names a value equal to
// its base's is no change: an edit of four changes and one such value runs (the limit is 4),
// the stored edit holds the four, and the answer says the fifth was left as it was.
func TestEditCountsChangesAfterMerging(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	s := h.startApproval()
	edit := session.Patch{Weights: map[string]float64{"track_linear_velocity": 1.2, "pose": 1.5, "foot_slip": -0.5, "body_ang_vel": -0.05},
		Params: map[string]float64{"foot_gait.period": 0.55}}
	p, err := h.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionEdit, Edit: &edit, By: console})
	if err != nil {
		t.Fatalf("an edit of 4 changes and a value equal to its base: %v", err)
	}
	if got := p.Decision.Edited; got == nil || got.Len() != 4 || patchHasName(*got, "body_ang_vel") {
		t.Errorf("stored edit %+v, want the 4 changes without body_ang_vel", got)
	}
	if want := "body_ang_vel = -0.05 is its current value: left as it was"; !strings.Contains(p.Decision.Note, want) {
		t.Errorf("note %q, want %q", p.Decision.Note, want)
	}
	if _, err := h.eng.Cancel(ctx, s.ID, console); err != nil {
		t.Fatal(err)
	}
}

func patchHasName(p session.Patch, name string) bool {
	_, w := p.Weights[name]
	_, q := p.Params[name]
	return w || q
}

// A rejected patch is never proposed again in the session, whoever proposes: the proposers
// are told (their tried list), and an answer that repeats it anyway is refused like a
// duplicate, on the advisor's path, the sampler's and the fallback between them.
func TestRejectedPatchIsNeverProposedAgain(t *testing.T) {
	same := session.Patch{Weights: map[string]float64{"foot_slip": -0.5}}
	other := session.Patch{Weights: map[string]float64{"pose": 1.5}}
	stubborn := func(source string) func(session.ProposalRequest) (session.Suggestion, error) {
		return func(session.ProposalRequest) (session.Suggestion, error) {
			return session.Suggestion{Patch: same.Clone(), Rationale: "again", Source: source}, nil
		}
	}
	down := func(session.ProposalRequest) (session.Suggestion, error) {
		return session.Suggestion{}, &session.UserError{Msg: "advisor down"}
	}
	// heeding proposes same until it is on the tried list, then other
	heeding := func(req session.ProposalRequest) (session.Suggestion, error) {
		if triedAlready(req, same) {
			return session.Suggestion{Patch: other.Clone(), Rationale: "something else"}, nil
		}
		return session.Suggestion{Patch: same.Clone(), Rationale: "first"}, nil
	}
	tests := []struct {
		name         string
		advisor      func(session.ProposalRequest) (session.Suggestion, error)
		sampler      func(session.ProposalRequest) (session.Suggestion, error)
		fallback     bool
		wantNext     *session.Patch // the second proposal; nil: none, the session pauses
		wantInReason string
	}{
		{"advisor heeds the tried list", heeding, nil, false, &other, ""},
		{"advisor repeats it", stubborn(session.SourceAdvisor), nil, false, nil, "proposal 1, rejected earlier in this session"},
		{"advisor repeats it, the sampler stands in", stubborn(session.SourceAdvisor), heeding, true, &other, ""},
		{"sampler alone repeats it", down, stubborn(session.SourceSampler), true, nil, "numeric sampler could not propose: its patch breaks the rules: patch refused: duplicate: the merged configuration equals proposal 1, rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, t.TempDir())
			ctx := context.Background()
			first := tt.advisor
			if tt.fallback {
				// the first proposal comes from whoever proposes; it is the one rejected
				first = func(req session.ProposalRequest) (session.Suggestion, error) {
					if len(h.adv.requests()) == 1 {
						return session.Suggestion{Patch: same.Clone(), Rationale: "first"}, nil
					}
					return tt.advisor(req)
				}
			}
			h.adv.fn = first
			if tt.sampler != nil {
				h.sampler.fn = tt.sampler
			}
			st := settings(session.ModeApproval)
			st.Fallback = tt.fallback
			s, err := h.eng.Start(ctx, st, console)
			if err != nil {
				t.Fatal(err)
			}
			if s = h.wait(s.ID); s.State != session.StateAwaitingApproval {
				t.Fatalf("state %s (%s), want awaiting_approval", s.State, s.Reason)
			}
			if _, err := h.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionReject, Feedback: "no slip change", By: console}); err != nil {
				t.Fatal(err)
			}
			s = h.wait(s.ID)
			ps, err := h.db.Proposals(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !session.Merge(ps[0].Base, ps[0].Patch).Equal(session.Merge(ps[0].Base, same)) || ps[0].State != session.ProposalRejected {
				t.Fatalf("first proposal %v is %s", ps[0].Patch, ps[0].State)
			}
			for _, p := range ps[1:] {
				if session.Merge(p.Base, p.Patch).Equal(session.Merge(ps[0].Base, ps[0].Patch)) {
					t.Fatalf("proposal %d repeats the rejected proposal 1", p.Seq)
				}
			}
			if tt.wantNext == nil {
				if len(ps) != 1 || s.State != session.StatePaused || !strings.Contains(s.Reason, tt.wantInReason) {
					t.Fatalf("%d proposals, state %s, reason %q; want paused naming %q", len(ps), s.State, s.Reason, tt.wantInReason)
				}
				return
			}
			if len(ps) != 2 || s.State != session.StateAwaitingApproval || !ps[1].Patch.Equal(*tt.wantNext) {
				t.Fatalf("%d proposals, state %s (%s); want a second one of %v", len(ps), s.State, s.Reason, *tt.wantNext)
			}
			// every proposer asked after the reject was told
			reqs := append(h.adv.requests(), h.sampler.requests()...)
			told := false
			for _, r := range reqs[1:] {
				told = told || triedAlready(r, same)
			}
			if !told {
				t.Fatal("no proposer asked after the reject saw the rejected configuration on its tried list")
			}
		})
	}
}

// pauseDuringBaselineTraining starts an automatic session, pauses it while its baseline
// trains and returns it paused, once that training has ended.
func pauseDuringBaselineTraining(h *harness) session.Session {
	h.t.Helper()
	ctx := context.Background()
	gate := make(chan struct{})
	h.tr.trainGate[session.TrialRef{0, 0}] = gate
	s, err := h.eng.Start(ctx, settings(session.ModeAutomatic), console)
	if err != nil {
		h.t.Fatal(err)
	}
	h.expect("train 0/0")
	if _, err := h.eng.Pause(ctx, s.ID, console); err != nil {
		h.t.Fatal(err)
	}
	close(gate)
	if s = h.wait(s.ID); s.State != session.StatePaused {
		h.t.Fatalf("state %s, want paused", s.State)
	}
	return s
}

func TestPauseDuringTrainingStopsBeforeEvaluation(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	s := pauseDuringBaselineTraining(h)
	if h.tr.evals[session.TrialRef{0, 0}] != 0 {
		t.Fatal("evaluation ran after pause")
	}
	if _, err := h.eng.Pause(ctx, s.ID, console); err == nil || !strings.Contains(err.Error(), "already paused") {
		t.Fatalf("second pause: %v", err)
	}
	if _, err := h.eng.Resume(ctx, s.ID, console); err != nil {
		t.Fatal(err)
	}
	s = h.wait(s.ID)
	if s.State != session.StateSucceeded || h.tr.trains[session.TrialRef{0, 0}] != 1 {
		t.Fatalf("state %s, baseline trained %d times", s.State, h.tr.trains[session.TrialRef{0, 0}])
	}
}

func TestCancelDuringEvaluation(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	h.tr.evalGate[session.TrialRef{1, 0}] = make(chan struct{})
	s, err := h.eng.Start(ctx, settings(session.ModeAutomatic), console)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"train 0/0", "eval 0/0", "train 1/0", "eval 1/0"} {
		h.expect(j)
	}
	if _, err := h.eng.Cancel(ctx, s.ID, console); err != nil {
		t.Fatal(err)
	}
	s = h.wait(s.ID)
	if s.State != session.StateCancelled {
		t.Fatalf("state %s", s.State)
	}
	for _, tr := range h.trials(s.ID) {
		if tr.Number == 1 && tr.State != session.TrialInterrupted {
			t.Fatalf("trial 1 is %s after cancel", tr.State)
		}
	}
	if _, err := h.eng.Resume(ctx, s.ID, console); err == nil {
		t.Fatal("a cancelled session resumed")
	}
}

func TestFailedTrialDoesNotStopTheSessionButAFailedBaselineDoes(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	h.tr.failTrain[session.TrialRef{2, 0}] = "exit status 1"
	s, _ := h.eng.Start(ctx, settings(session.ModeAutomatic), console)
	s = h.wait(s.ID)
	if s.State != session.StateSucceeded {
		t.Fatalf("state %s: %s", s.State, s.Reason)
	}
	for _, tr := range h.trials(s.ID) {
		if tr.Number == 2 && (tr.State != session.TrialFailed || !strings.Contains(tr.Reason, "exit status 1") || tr.LogTail == "") {
			t.Fatalf("trial 2: %s %q %q", tr.State, tr.Reason, tr.LogTail)
		}
	}

	h2 := newHarness(t, t.TempDir())
	h2.tr.failTrain[session.TrialRef{0, 0}] = "no model_<N>.pt checkpoint in run dir"
	s, _ = h2.eng.Start(ctx, settings(session.ModeAutomatic), console)
	s = h2.wait(s.ID)
	if s.State != session.StateFailed || !strings.Contains(s.Reason, "baseline") || !strings.Contains(s.Reason, "checkpoint") {
		t.Fatalf("failed baseline: %s %q", s.State, s.Reason)
	}
}

func TestAdvisorFailure(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run(fmt.Sprint("fallback=", fallback), func(t *testing.T) {
			h := newHarness(t, t.TempDir())
			ctx := context.Background()
			h.adv.fn = func(session.ProposalRequest) (session.Suggestion, error) {
				return session.Suggestion{}, &session.UserError{Msg: "DeepSeek account balance is insufficient (402)"}
			}
			st := settings(session.ModeAutomatic)
			st.Fallback = fallback
			s, _ := h.eng.Start(ctx, st, console)
			s = h.wait(s.ID)
			audit, _ := h.db.Audit(ctx, s.ID)
			fellBack := 0
			for _, a := range audit {
				if a.Kind == "advisor_fallback" {
					fellBack++
				}
			}
			if !fallback {
				if s.State != session.StatePaused || !strings.Contains(s.Reason, "402") {
					t.Fatalf("state %s reason %q", s.State, s.Reason)
				}
				if len(h.sampler.requests()) != 0 {
					t.Fatal("the sampler proposed without fallback")
				}
				return
			}
			if s.State != session.StateSucceeded || fellBack != 5 {
				t.Fatalf("state %s, %d fallbacks audited", s.State, fellBack)
			}
			for _, tr := range h.trials(s.ID) {
				if tr.Number > 0 && tr.Source != session.SourceSampler {
					t.Errorf("trial %d source %s", tr.Number, tr.Source)
				}
			}
		})
	}
}

func TestInvalidSuggestionNeverReachesTheTrainer(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	h.adv.fn = func(session.ProposalRequest) (session.Suggestion, error) {
		return session.Suggestion{Patch: session.Patch{Weights: map[string]float64{"track_linear_velocity": -1}}}, nil
	}
	s, _ := h.eng.Start(ctx, settings(session.ModeAutomatic), console)
	s = h.wait(s.ID)
	if s.State != session.StatePaused || !strings.Contains(s.Reason, "sign flip") {
		t.Fatalf("state %s reason %q", s.State, s.Reason)
	}
	if len(h.trials(s.ID)) != 1 {
		t.Fatalf("%d trials ran", len(h.trials(s.ID)))
	}
}

func TestEarlyStop(t *testing.T) {
	h := newHarness(t, t.TempDir())
	// lowering tracking weight never improves the score
	h.adv.fn = func(req session.ProposalRequest) (session.Suggestion, error) {
		v := req.Base.Weights["track_linear_velocity"] * (0.95 - 0.02*float64(len(req.History)))
		return session.Suggestion{Patch: session.Patch{Weights: map[string]float64{"track_linear_velocity": v}}}, nil
	}
	s, r0 := h.runRung0(10, 2)
	if s.State != session.StateSucceeded || r0 != 3 || s.BestTrial != 0 {
		t.Fatalf("state %s, %d rung-0 trials (want baseline + patience 2), best %d", s.State, r0, s.BestTrial)
	}
}

// blockingNotifier never returns until the test ends: the session must not care.
type blockingNotifier struct{ stop chan struct{} }

func (b blockingNotifier) Notify(ctx context.Context, e session.Event) {
	select {
	case <-b.stop:
	case <-ctx.Done():
	}
}

func TestSlowNotifierNeverDelaysTraining(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stop := make(chan struct{})
	defer close(stop)
	eng, _ := session.NewEngine(session.EngineConfig{Store: configStore{db}, Trainer: newFakeTrainer(), Advisor: &scriptAdvisor{fn: improving},
		Notifier: blockingNotifier{stop}, NotifyTimeout: time.Hour, Space: session.DefaultSpace(), SessionsDir: dir})
	s, err := eng.Start(context.Background(), settings(session.ModeAutomatic), console)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err = eng.Wait(ctx, s.ID)
	if err != nil || s.State != session.StateSucceeded {
		t.Fatalf("state %s err %v", s.State, err)
	}
	eng.Shutdown(ctxDone())
}

func ctxDone() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestAnnounceShowsThePendingProposalAgain(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	s, _ := h.eng.Start(ctx, settings(session.ModeApproval), console)
	s = h.wait(s.ID)
	h.eng.Shutdown(ctx) // flush the first announcement
	before := h.note.count(session.EventProposalReady)
	eng := h.engine(h.tr)
	defer eng.Shutdown(ctx)
	if err := eng.Announce(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	eng.Shutdown(ctx)
	if got := h.note.count(session.EventProposalReady); got != before+1 {
		t.Fatalf("proposal announcements %d → %d, want one more", before, got)
	}
	if err := eng.Announce(ctx, "nope"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
}

func TestATrainerThatCannotStartFailsTheSessionAndItsTrial(t *testing.T) {
	h := newHarness(t, t.TempDir())
	h.tr.broken = errors.New("starting train job: run dir is not absolute")
	s, err := h.eng.Start(context.Background(), settings(session.ModeAutomatic), console)
	if err != nil {
		t.Fatal(err)
	}
	s = h.wait(s.ID)
	if s.State != session.StateFailed || !strings.Contains(s.Reason, "not absolute") {
		t.Fatalf("session %s: %q", s.State, s.Reason)
	}
	trials := h.trials(s.ID)
	if len(trials) != 1 || trials[0].State != session.TrialFailed || !strings.Contains(trials[0].Reason, "not absolute") {
		t.Fatalf("trials: %+v", trials)
	}
}

// A second approval that arrives after the first has been taken (the proposal is no longer
// pending and no new one exists yet) names who decided first instead of "nothing waiting".
func TestLateSecondApprovalNamesTheFirst(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	gate := make(chan struct{})
	h.tr.trainGate[session.TrialRef{1, 0}] = gate
	s := h.startApproval()
	first := session.Actor{Platform: "slack", ID: "U1"}
	if _, err := h.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionApprove, By: first}); err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"train 0/0", "eval 0/0", "train 1/0"} {
		h.expect(j)
	}
	_, err := h.eng.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionApprove, By: session.Actor{Platform: "slack", ID: "U2"}})
	if !errors.Is(err, session.ErrConflict) || !strings.Contains(err.Error(), "already approved by U1") {
		t.Fatalf("late approval: %v", err)
	}
	close(gate)
	if _, err := h.eng.Cancel(ctx, s.ID, console); err != nil {
		t.Fatal(err)
	}
}

// The advisor sees each finished trial's curves (reward reflection); a session run by the
// sampler alone reads none, since the sampler proposes from scores.
func TestCurvesGoToTheAdvisorOnly(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	s := h.startApproval()
	reqs := h.adv.requests()
	if len(reqs) != 1 || len(reqs[0].History) != 1 || len(reqs[0].History[0].Curves["Train/mean_reward"]) != 2 {
		t.Fatalf("the advisor's request lacks the baseline's curve: %+v", reqs)
	}
	if _, err := h.eng.Cancel(ctx, s.ID, console); err != nil {
		t.Fatal(err)
	}

	eng, err := session.NewEngine(session.EngineConfig{Store: configStore{h.db}, Trainer: h.tr, Sampler: h.sampler,
		Space: session.DefaultSpace(), SessionsDir: filepath.Join(h.dir, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Shutdown(context.Background())
	st := settings(session.ModeApproval)
	st.Fallback = true
	s2, err := eng.Start(ctx, st, console)
	if err != nil {
		t.Fatal(err)
	}
	for {
		changed := eng.Changed()
		if len(h.sampler.requests()) > 0 {
			break
		}
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("the sampler was never asked")
		}
	}
	if got := h.sampler.requests()[0].History; len(got) != 1 || got[0].Curves != nil {
		t.Errorf("the sampler's request carries curves: %+v", got)
	}
	if _, err := eng.Cancel(ctx, s2.ID, console); err != nil {
		t.Fatal(err)
	}
}

// longTrainer logs n points of Train/mean_reward per job, as a long run does.
type longTrainer struct {
	*fakeTrainer
	n int
}

func (l longTrainer) Train(ctx context.Context, job session.TrainJob, hooks session.JobHooks) (session.TrainResult, error) {
	res, err := l.fakeTrainer.Train(ctx, job, hooks)
	pts := make([]session.Point, l.n)
	for i := range pts {
		pts[i] = session.Point{Step: int64(i), Value: float64(i % 7)}
	}
	res.Series = map[string][]session.Point{"Train/mean_reward": pts, "Short": pts[:10]}
	return res, err
}

// A long run's curves are kept at MaxStoredPoints, both ends included; short ones whole.
func TestStoredSeriesAreBounded(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	h.eng.Shutdown(ctx)
	h.eng = h.engine(longTrainer{h.tr, 3 * session.MaxStoredPoints})
	s := h.startApproval()
	long, err := h.db.Series(ctx, session.SeriesKey{SessionID: s.ID, Number: 0, Rung: 0, Tag: "Train/mean_reward"})
	if err != nil {
		t.Fatal(err)
	}
	if len(long) != session.MaxStoredPoints || long[0].Step != 0 || long[len(long)-1].Step != 3*session.MaxStoredPoints-1 {
		t.Errorf("stored %d points from step %d to %d, want %d spanning the run", len(long), long[0].Step, long[len(long)-1].Step, session.MaxStoredPoints)
	}
	short, err := h.db.Series(ctx, session.SeriesKey{SessionID: s.ID, Number: 0, Rung: 0, Tag: "Short"})
	if err != nil || len(short) != 10 {
		t.Errorf("short series: %d points, %v", len(short), err)
	}
	if _, err := h.eng.Cancel(ctx, s.ID, console); err != nil {
		t.Fatal(err)
	}
}

// runRung0 runs an automatic session of trials rung-0 trials with patience and no
// promotion to its end, returning it and how many rung-0 trials ran.
func (h *harness) runRung0(trials, patience int) (session.Session, int) {
	st := settings(session.ModeAutomatic)
	st.TrialCount, st.Patience = trials, patience
	st.Promote = nil
	st.Normalize()
	s, _ := h.eng.Start(context.Background(), st, console)
	s = h.wait(s.ID)
	r0 := 0
	for _, tr := range h.trials(s.ID) {
		if tr.Rung == 0 {
			r0++
		}
	}
	return s, r0
}

// TestThreeMegabyteAdvisorErrorPausesWithACappedReason: a hostile advisor's error of 3 MB
// (100,000 problems, issue 44 table item 7) became the session's pause reason, its message
// and the paused audit entry whole. The stored reason is cut to session.TextLimit and says
// it was cut.
func TestThreeMegabyteAdvisorErrorPausesWithACappedReason(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	huge := strings.Repeat("weights.bogus_term: unknown term; ", 100_000)
	h.adv.fn = func(session.ProposalRequest) (session.Suggestion, error) {
		return session.Suggestion{}, &session.UserError{Msg: "the last answer broke: " + huge}
	}
	s, _ := h.eng.Start(ctx, settings(session.ModeAutomatic), console)
	s = h.wait(s.ID)
	if s.State != session.StatePaused || len(s.Reason) > session.TextLimit || len(s.Message) > session.TextLimit+100 || !strings.Contains(s.Reason, "(cut to 4096 of") {
		t.Fatalf("state %s, reason of %d bytes, message of %d", s.State, len(s.Reason), len(s.Message))
	}
}
