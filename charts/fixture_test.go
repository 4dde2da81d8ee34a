package charts_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"tunebot/charts"
	"tunebot/session"
)

// curve is a noisy saturating learning curve from start to end over n iterations.
func curve(n int, start, end, noise float64, seed uint64) []session.Point {
	r := rand.New(rand.NewPCG(seed, 7))
	pts := make([]session.Point, n)
	for i := range pts {
		f := float64(i) / float64(max(n, 1))
		pts[i] = session.Point{Step: int64(i), Value: start + (end-start)*(1-math.Exp(-4*f)) + noise*r.NormFloat64()}
	}
	return pts
}

var terms = []string{"track_linear_velocity", "track_angular_velocity", "body_orientation_l2", "pose", "body_ang_vel",
	"angular_momentum", "is_terminated", "joint_acc_l2", "joint_pos_limits", "action_rate_l2", "foot_gait",
	"foot_clearance", "foot_slip", "soft_landing", "stand_still"}

// seriesOf is what the store would hold for one trial: 20 tags of n points.
func seriesOf(number, rung, n int) map[string][]session.Point {
	seed := uint64(number*10 + rung)
	q := 1 + 0.03*float64(number%7) - 0.04*float64(number%3)
	m := map[string][]session.Point{
		charts.TagMeanReward:            curve(n, -5, 20*q, 1.5, seed),
		charts.TagMeanEpisodeLength:     curve(n, 20, 950*q, 30, seed+1),
		"Episode_Termination/time_out":  curve(n, 10, 3000*q, 60, seed+2),
		"Episode_Termination/fell_over": curve(n, 3000, 300/q, 60, seed+3),
		"Loss/value_function":           curve(n, 5, 0.2, 0.1, seed+4),
	}
	for i, t := range terms {
		sign := 1.0
		if i%3 == 2 {
			sign = -1
		}
		m["Episode_Reward/"+t] = curve(n, 0, sign*float64(i+1)*0.1*q, 0.01*float64(i+1), seed+uint64(10+i))
	}
	return m
}

// session20 is a finished-looking session: 12 rung-0 trials (one failed, two not eligible),
// 4 promoted to rung 1, 2 to rung 2.
func session20() ([]session.Trial, session.Settings) {
	st := session.DefaultSettings()
	st.Normalize()
	base := session.Metrics{session.MetricVelLinear: 0.21, session.MetricVelAngular: 0.30, session.MetricActionAcc: 12,
		session.MetricOrientation: 0.05, session.MetricFallRate: 0.01, session.MetricFootSlip: 0.08, session.MetricPower: 150}
	sc := session.Scorer{Baseline: base, Weights: st.Objective, Floors: st.Floors}
	space := session.DefaultSpace()
	var trials []session.Trial
	add := func(n, rung int, f float64, state session.TrialState) {
		m := session.Metrics{}
		for k, v := range base {
			m[k] = v * (1 - f*float64(1+len(k)%3)/2)
		}
		if n == 5 {
			m[session.MetricFallRate] = 0.05 // falls gate
		}
		if n == 8 {
			m[session.MetricVelLinear] = 0.3 // tracking gate
		}
		cfg := space.Defaults()
		cfg.Weights["foot_slip"] *= 1 + 0.1*float64(n)
		t := session.Trial{SessionID: "5e55a7b1c0ffee00", Number: n, Rung: rung, Iterations: st.Rungs[rung], State: state,
			RewardConfig: cfg, Metrics: m, Trained: state == session.TrialCompleted}
		if rung > 0 {
			t.StartIter = st.Rungs[rung-1]
		}
		if state == session.TrialCompleted {
			s, err := sc.Score(m)
			if err != nil {
				panic(err)
			}
			t.Score = &s
		} else {
			t.Reason = "train job failed: exit status 1 (CUDA out of memory)"
			t.Metrics = nil
			t.Progress = 120
		}
		trials = append(trials, t)
	}
	for n := 0; n < 12; n++ {
		state := session.TrialCompleted
		if n == 9 {
			state = session.TrialFailed
		}
		add(n, 0, 0.1*math.Sin(float64(n)*1.7)+0.01*float64(n), state)
	}
	for i, n := range []int{4, 6, 10, 11} {
		add(n, 1, 0.05+0.03*float64(i), session.TrialCompleted)
	}
	for i, n := range []int{10, 11} {
		add(n, 2, 0.12+0.04*float64(i), session.TrialCompleted)
	}
	return trials, st
}

func find(trials []session.Trial, ref session.TrialRef) *session.Trial {
	for i := range trials {
		if trials[i].Ref() == ref {
			return &trials[i]
		}
	}
	panic(fmt.Sprint("no ", ref))
}

// reportInput is the report of trial ref in session20 with n-point curves.
func reportInput(ref session.TrialRef, n int) charts.ReportInput {
	trials, st := session20()
	cache := map[session.TrialRef]map[string][]session.Point{}
	for _, t := range trials {
		cache[t.Ref()] = seriesOf(t.Number, t.Rung, n)
	}
	in := charts.ReportInput{
		Meta:     charts.Meta{SessionID: "5e55a7b1c0ffee00", RunName: "auto-tune"},
		Trial:    *find(trials, ref),
		Baseline: find(trials, session.TrialRef{Number: 0}),
		Series:   func(r session.TrialRef) map[string][]session.Point { return cache[r] },
		Trials:   trials,
		Settings: st,
	}
	if b, ok := charts.BestOf(trials); ok {
		in.Best = find(trials, b)
	}
	if ref.Number > 0 {
		in.Parent = in.Baseline
	}
	return in
}
