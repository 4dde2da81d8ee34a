package charts

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
)

// TestPlanProgress: how many trials each rung plans and how many iterations the session
// plans and has done.
func TestPlanProgress(t *testing.T) {
	done := func(n, rung, start, iters int, score float64) session.Trial {
		return session.Trial{Number: n, Rung: rung, StartIter: start, Iterations: iters, Progress: iters, Trained: true,
			State: session.TrialCompleted, Score: &session.Score{Total: score, Eligible: true}}
	}
	running := session.Trial{Number: 2, Rung: 1, StartIter: 100, Iterations: 300, Progress: 150, State: session.TrialTraining}
	rungs := []int{100, 300}
	tests := []struct {
		name              string
		settings          session.Settings
		trials            []session.Trial
		planned           []int
		itPlanned, itDone float64
	}{
		{name: "no rungs: one of 0 iterations", settings: session.Settings{Promote: []int{3}},
			planned: []int{3}},
		{name: "promote as set", settings: session.Settings{Rungs: rungs, Promote: []int{4, 2}},
			planned: []int{4, 2}, itPlanned: 4*100 + 2*200},
		{name: "the control rides along when the baseline is not promoted",
			settings: session.Settings{Rungs: rungs, Promote: []int{3, 1}, Control: true},
			trials:   []session.Trial{done(0, 0, 0, 100, 0), done(1, 0, 0, 100, 5), running},
			planned:  []int{3, 2}, itPlanned: 3*100 + 2*200, itDone: 100 + 100 + 50},
		{name: "no extra control when the baseline is promoted",
			settings: session.Settings{Rungs: rungs, Promote: []int{3, 1}, Control: true},
			trials:   []session.Trial{done(0, 0, 0, 100, 9), done(1, 0, 0, 100, 5)},
			planned:  []int{3, 1}, itPlanned: 3*100 + 1*200, itDone: 200},
		{name: "never fewer than a rung holds", settings: session.Settings{Rungs: rungs, Promote: []int{1, 1}},
			trials:  []session.Trial{done(0, 0, 0, 100, 0), done(1, 0, 0, 100, 5), done(3, 0, 0, 100, 1)},
			planned: []int{3, 1}, itPlanned: 3*100 + 1*200, itDone: 300},
		{name: "a trained trial counts its whole span", settings: session.Settings{Rungs: rungs, Promote: []int{1, 1}},
			trials:  []session.Trial{{Number: 1, Rung: 1, StartIter: 100, Iterations: 300, Progress: 120, Trained: true, State: session.TrialEvaluating}},
			planned: []int{1, 1}, itPlanned: 100 + 200, itDone: 200},
		{name: "trials of a rung not planned are left out", settings: session.Settings{Rungs: []int{100}, Promote: []int{1}},
			trials:  []session.Trial{done(1, 3, 0, 100, 1)},
			planned: []int{1}, itPlanned: 100, itDone: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planProgress(tt.trials, tt.settings)
			if d := cmp.Diff(tt.planned, p.planned); d != "" {
				t.Errorf("planned (-want +got):\n%s", d)
			}
			if p.itPlanned != tt.itPlanned || p.itDone != tt.itDone {
				t.Errorf("iterations: %v of %v planned, want %v of %v", p.itDone, p.itPlanned, tt.itDone, tt.itPlanned)
			}
		})
	}
}

// TestDataScales: the axes cover every point, and x ticks are whole iterations.
func TestDataScales(t *testing.T) {
	pts := func(ps ...session.Point) series { return series{pts: ps} }
	tests := []struct {
		name string
		ss   []series
		ok   bool
	}{
		{name: "no series"},
		{name: "only empty series", ss: []series{{}, {}}},
		{name: "one point", ss: []series{pts(session.Point{Step: 5, Value: 2})}, ok: true},
		{name: "two steps apart", ss: []series{pts(session.Point{Step: 0, Value: -1}, session.Point{Step: 1, Value: 3})}, ok: true},
		{name: "across series", ss: []series{pts(session.Point{Step: 10, Value: 0}), pts(session.Point{Step: 900, Value: -40})}, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xs, ys, ok := dataScales(tt.ss, 5)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if xs.step < 1 {
				t.Errorf("x step %v: ticks must be whole iterations", xs.step)
			}
			for _, s := range tt.ss {
				for _, p := range s.pts {
					if float64(p.Step) < xs.min || float64(p.Step) > xs.max || p.Value < ys.min || p.Value > ys.max {
						t.Errorf("point %+v outside x [%v, %v], y [%v, %v]", p, xs.min, xs.max, ys.min, ys.max)
					}
				}
			}
		})
	}
}
