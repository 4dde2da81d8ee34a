// Package sessiontest holds test doubles of the session ports that several packages'
// tests share. Like session, it uses the standard library only.
package sessiontest

import (
	"context"
	"sync"

	"tunebot/session"
)

// AuditLog is an in-memory session.AuditLog; the zero value is ready to use.
type AuditLog struct {
	mu      sync.Mutex
	entries []session.AuditEntry
}

var _ session.AuditLog = (*AuditLog)(nil)

// Append implements session.AuditLog: e gets the next sequence number.
func (l *AuditLog) Append(_ context.Context, e session.AuditEntry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.Seq = uint64(len(l.entries) + 1)
	l.entries = append(l.entries, e)
	return nil
}

// Audit implements session.AuditLog.
func (l *AuditLog) Audit(_ context.Context, id string) ([]session.AuditEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []session.AuditEntry
	for _, e := range l.entries {
		if id == "" || e.SessionID == id {
			out = append(out, e)
		}
	}
	return out, nil
}

// Entries returns every entry, oldest first.
func (l *AuditLog) Entries() []session.AuditEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]session.AuditEntry(nil), l.entries...)
}

// Kinds returns the kind of every entry, oldest first.
func (l *AuditLog) Kinds() []string {
	var out []string
	for _, e := range l.Entries() {
		out = append(out, e.Kind)
	}
	return out
}

// GateLadder is a succeeded session whose trial 5, trained to rung 2, scores highest against
// the baseline's rung-0 evaluation but tracks 5.6 % worse than the baseline trained as long
// (the control at rung 2): judged as the engine judges it (session.JudgeAll), it is not
// eligible, and trial 4, better than the control in everything, ships. Its trials are scored
// and judged by the session's own functions, as the engine stores them.
func GateLadder() (session.Session, []session.Trial) {
	st := session.DefaultSettings()
	st.Normalize()
	st.FinalEvalSeeds = session.FreshSeeds("5e55f00d-0000-4000-8000-000000000035", st.FinalEvalCount, st.EvalSeeds)
	base := session.Metrics{session.MetricVelLinear: 0.21, session.MetricVelAngular: 0.30, session.MetricActionAcc: 12,
		session.MetricOrientation: 0.05, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08, session.MetricPower: 150}
	scale := func(m session.Metrics, k map[string]float64) session.Metrics {
		out := session.Metrics{}
		for n, v := range m {
			out[n] = v
			if f, ok := k[n]; ok {
				out[n] = v * f
			}
		}
		return out
	}
	control := scale(base, map[string]float64{session.MetricVelLinear: 0.7, session.MetricVelAngular: 0.8, session.MetricActionAcc: 0.8})
	metrics := map[session.TrialRef]session.Metrics{
		{Number: 0, Rung: 0}: base,
		{Number: 4, Rung: 0}: scale(base, map[string]float64{session.MetricVelLinear: 0.95}),
		{Number: 5, Rung: 0}: scale(base, map[string]float64{session.MetricActionAcc: 0.9}),
		{Number: 0, Rung: 2}: control,
		{Number: 4, Rung: 2}: scale(control, map[string]float64{session.MetricVelLinear: 0.97, session.MetricActionAcc: 0.95}),
		// 7 % more linear error than the control: tracking −5.6 %, below the gate; far
		// smoother, so its score against rung 0 is the highest of the rung.
		{Number: 5, Rung: 2}: scale(control, map[string]float64{session.MetricVelLinear: 1.07, session.MetricActionAcc: 0.3, session.MetricPower: 0.6}),
	}
	scorer := session.Scorer{Baseline: base, Weights: st.Objective, Floors: st.Floors}
	var trials []session.Trial
	for _, ref := range []session.TrialRef{{Number: 0, Rung: 0}, {Number: 0, Rung: 2}, {Number: 4, Rung: 0}, {Number: 4, Rung: 2}, {Number: 5, Rung: 0}, {Number: 5, Rung: 2}} {
		m := metrics[ref]
		sc, _ := scorer.Score(m)
		t := session.Trial{SessionID: "5e55f00d-0000-4000-8000-000000000035", Number: ref.Number, Rung: ref.Rung, Iterations: st.Rungs[ref.Rung],
			State: session.TrialCompleted, Source: session.SourceSampler, Metrics: m, Score: &sc}
		if ref.Number == 0 {
			t.Source = session.SourceBaseline
		}
		if ref.Rung == 2 {
			var per []session.SeedMetrics
			for _, seed := range st.FinalEvalSeeds {
				per = append(per, session.SeedMetrics{Seed: seed, Metrics: m})
			}
			t.Final = &session.Final{Seeds: st.FinalEvalSeeds, Metrics: m, PerSeed: per, Score: sc}
		}
		if !sc.Eligible {
			t.Reason = session.GateReason(t)
		}
		trials = append(trials, t)
	}
	session.JudgeAll(st, trials)
	s := session.Session{ID: trials[0].SessionID, State: session.StateSucceeded, Settings: st, Preset: "auto-tune-5e55f00d",
		BestTrial: 4, BestRung: 2, Outcome: session.OutcomeImproved}
	if c, ok := session.Compare(s, trials); ok {
		s.Result = &c
	}
	return s, trials
}

// RankLadder is a session with the baseline carried to rung 1 where trials 1 and 2 rank one
// way by their score against rung 0's baseline and the other way by their figure against the
// baseline trained as long (session.RankFigure): the control learned half the linear tracking
// error away and nothing else, so against it trial 1's better tracking counts double. Trial 2
// leads on the rung-0 score, trial 1 on the figure every surface ranks by, and the session
// names trial 1 its best.
func RankLadder() (session.Session, []session.Trial) {
	st := session.DefaultSettings()
	st.Objective = session.ObjectiveWeights{session.ObjTracking: 1, session.ObjSmoothness: 1}
	st.Normalize()
	base := session.Metrics{session.MetricVelLinear: 0.4, session.MetricVelAngular: 0.3, session.MetricActionAcc: 12,
		session.MetricOrientation: 0.05, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08, session.MetricPower: 150}
	scorer := session.Scorer{Baseline: base, Weights: st.Objective, Floors: st.Floors}
	var trials []session.Trial
	for _, r := range []struct{ num, rung, lin, acc float64 }{{0, 0, 1, 1}, {1, 0, 0.9, 1}, {2, 0, 1, 0.9}, {0, 1, 0.5, 1}, {1, 1, 0.4, 1}, {2, 1, 0.5, 0.85}} {
		m := session.Metrics{}
		for k, v := range base {
			m[k] = v
		}
		m[session.MetricVelLinear], m[session.MetricActionAcc] = r.lin*base[session.MetricVelLinear], r.acc*base[session.MetricActionAcc]
		sc, _ := scorer.Score(m)
		trials = append(trials, session.Trial{SessionID: "7a4c1e55-0000-4000-8000-000000000043", Number: int(r.num), Rung: int(r.rung),
			Iterations: st.Rungs[int(r.rung)], State: session.TrialCompleted, Source: session.SourceSampler, Metrics: m, Score: &sc})
	}
	trials[0].Source, trials[3].Source = session.SourceBaseline, session.SourceBaseline
	s := session.Session{ID: trials[0].SessionID, State: session.StateRunning, Settings: st, BestTrial: 1, BestRung: 1}
	return s, trials
}
