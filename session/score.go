package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// The seven weight-independent evaluation metrics (lower is better), docs/design.md §3.
const (
	MetricVelLinear   = "velocity_error_linear"
	MetricVelAngular  = "velocity_error_angular"
	MetricActionAcc   = "action_acceleration"
	MetricOrientation = "orientation_error"
	MetricFallRate    = "fall_rate"
	MetricFootSlip    = "foot_slip"
	MetricPower       = "mechanical_power"
)

// MetricNames lists the metrics in display order.
var MetricNames = []string{MetricVelLinear, MetricVelAngular, MetricActionAcc, MetricOrientation, MetricFallRate, MetricFootSlip, MetricPower}

// MetricUnits gives each metric's unit for display.
var MetricUnits = map[string]string{
	MetricVelLinear: "m/s", MetricVelAngular: "rad/s", MetricActionAcc: "", MetricOrientation: "rad",
	MetricFallRate: "", MetricFootSlip: "m/s", MetricPower: "W",
}

// The six objectives, in priority order.
const (
	ObjTracking   = "tracking"
	ObjSmoothness = "smoothness"
	ObjStability  = "stability"
	ObjFalls      = "falls"
	ObjSlip       = "slip"
	ObjEnergy     = "energy"
)

// ObjectiveNames lists the objectives in priority order.
var ObjectiveNames = []string{ObjTracking, ObjSmoothness, ObjStability, ObjFalls, ObjSlip, ObjEnergy}

// Metrics maps metric name to value.
type Metrics map[string]float64

// ObjectiveWeights maps objective name to its weight in the total.
type ObjectiveWeights map[string]float64

// DefaultObjectiveWeights is the 35/20/15/15/10/5 split of the plan.
func DefaultObjectiveWeights() ObjectiveWeights {
	return ObjectiveWeights{ObjTracking: 35, ObjSmoothness: 20, ObjStability: 15, ObjFalls: 15, ObjSlip: 10, ObjEnergy: 5}
}

// DefaultFloors are the physical floors under each baseline scale.
func DefaultFloors() Metrics {
	return Metrics{MetricVelLinear: 0.05, MetricVelAngular: 0.05, MetricActionAcc: 1.0, MetricOrientation: 0.02,
		MetricFallRate: 0.01, MetricFootSlip: 0.02, MetricPower: 5}
}

// Check validates objective weights: known names, non-negative finite, sum > 0.
func (w ObjectiveWeights) Check() error {
	var probs []string
	sum := 0.0
	for _, k := range sortedKeys(w) {
		v := w[k]
		if !contains(ObjectiveNames, k) {
			probs = append(probs, fmt.Sprintf("objective %q is unknown (one of %s)", k, strings.Join(ObjectiveNames, ", ")))
			continue
		}
		if !finite(v) || v < 0 {
			probs = append(probs, fmt.Sprintf("objective %s: weight %g must be a non-negative number", k, v))
			continue
		}
		sum += v
	}
	if len(probs) == 0 && !(sum > 0) {
		probs = append(probs, "objective weights must sum to more than 0")
	}
	if len(probs) > 0 {
		return &InvalidError{What: "objective weights", Problems: probs}
	}
	return nil
}

// CheckFloors validates floors: every metric present with a positive finite floor.
func CheckFloors(f Metrics) error {
	var probs []string
	for _, m := range MetricNames {
		if v, ok := f[m]; !ok || !finite(v) || v <= 0 {
			probs = append(probs, fmt.Sprintf("floor for %s must be a positive number", m))
		}
	}
	for _, k := range sortedKeys(f) {
		if !contains(MetricNames, k) {
			probs = append(probs, fmt.Sprintf("floor for unknown metric %q", k))
		}
	}
	if len(probs) > 0 {
		return &InvalidError{What: "score floors", Problems: probs}
	}
	return nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// SeedMetrics is one evaluation seed's metrics.
type SeedMetrics struct {
	Seed    int     `json:"seed"`
	Metrics Metrics `json:"metrics"`
}

// Evaluation is the content of evaluation.json (docs/design.md §3).
type Evaluation struct {
	Task       string        `json:"task"`
	Checkpoint string        `json:"checkpoint"`
	Iteration  int           `json:"iteration"`
	Seeds      []int         `json:"seeds"`
	Metrics    Metrics       `json:"metrics"`
	PerSeed    []SeedMetrics `json:"perSeed"`
	// Clip is the checked clip the job wrote beside evaluation.json (its Path absolute), nil
	// when there is none; ClipNote says why not. Neither is part of the file.
	Clip     *Clip  `json:"-"`
	ClipNote string `json:"-"`
	// Notes say what DecodeEvaluation left out of the file (extra metric names past
	// MaxExtraMetrics), for the trial's log; not part of the file.
	Notes []string `json:"-"`
}

// DecodeEvaluation parses evaluation.json strictly: unknown fields, a missing or non-finite
// metric, more perSeed entries than seeds, or trailing data make it invalid, with every
// problem named (by key, never by a value the trainer wrote: evaluationProblem). Metric names
// outside MetricNames are kept only up to MaxExtraMetrics per map (KeptMetrics); what was
// dropped is said in Notes, for the trial's log.
func DecodeEvaluation(data []byte) (Evaluation, error) {
	var ev Evaluation
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return ev, &InvalidError{What: "evaluation.json", Problems: []string{"malformed: " + evaluationProblem(err)}}
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return ev, &InvalidError{What: "evaluation.json", Problems: []string{"trailing data after the JSON object"}}
	}
	var probs []string
	probs = append(probs, checkMetrics("metrics", ev.Metrics)...)
	if len(ev.PerSeed) > len(ev.Seeds) {
		probs = append(probs, fmt.Sprintf("perSeed has %d entries, more than the %d seeds", len(ev.PerSeed), len(ev.Seeds)))
	} else {
		for i, s := range ev.PerSeed {
			probs = append(probs, checkMetrics(fmt.Sprintf("perSeed[%d] (seed %d)", i, s.Seed), s.Metrics)...)
		}
	}
	if len(probs) > 0 {
		return ev, &InvalidError{What: "evaluation.json", Problems: atMost(probs, maxProblems)}
	}
	ev.keepMetrics()
	return ev, nil
}

func checkMetrics(where string, m Metrics) []string {
	var probs []string
	if m == nil {
		return []string{where + ": missing"}
	}
	for _, name := range MetricNames {
		v, ok := m[name]
		switch {
		case !ok:
			probs = append(probs, fmt.Sprintf("%s.%s: missing", where, name))
		case !finite(v):
			probs = append(probs, fmt.Sprintf("%s.%s: %g is not finite", where, name, v))
		case v < 0:
			probs = append(probs, fmt.Sprintf("%s.%s: %g is negative", where, name, v))
		}
	}
	return probs
}

// The gates of docs/design.md §3: a trial is not eligible when its fall rate exceeds the
// baseline's by more than GateFallRateMargin, or its tracking objective is below
// GateTrackingMin.
const (
	GateFallRateMargin = 0.02
	GateTrackingMin    = -0.05
)

// Score is a trial's evaluation compared with the session's baseline (comparable within a rung).
type Score struct {
	Total        float64            `json:"total"`
	Objectives   map[string]float64 `json:"objectives"`
	Improvements map[string]float64 `json:"improvements"` // per metric, clipped to [-1, 1]
	Eligible     bool               `json:"eligible"`
	Reasons      []string           `json:"reasons,omitempty"` // why not eligible
}

// scorer scores evaluations against baseline with s's objective weights and floors.
func (s Settings) scorer(baseline Metrics) Scorer {
	return Scorer{Baseline: baseline, Weights: s.Objective, Floors: s.Floors}
}

// Scorer compares evaluations with a frozen baseline.
type Scorer struct {
	Baseline Metrics
	Weights  ObjectiveWeights
	Floors   Metrics
	// Against names the baseline in the gates' reasons, "the baseline" when empty (rung 0's);
	// "the baseline @ rung 2" when the gates are judged against the control (Judge).
	Against string
}

// Score computes the score of m against the baseline. Missing or non-finite metrics are an
// error: the trial fails with that reason.
func (s Scorer) Score(m Metrics) (Score, error) {
	if probs := append(checkMetrics("baseline", s.Baseline), checkMetrics("metrics", m)...); len(probs) > 0 {
		return Score{}, &InvalidError{What: "cannot score", Problems: probs}
	}
	r := s.reckon(values(m))
	sc := Score{Total: r.total, Objectives: map[string]float64{}, Improvements: map[string]float64{}, Eligible: r.fallOK && r.trackOK}
	for i, name := range MetricNames {
		sc.Improvements[name] = r.imp[i]
	}
	for i, name := range ObjectiveNames {
		sc.Objectives[name] = r.obj[i]
	}
	against := s.Against
	if against == "" {
		against = "the baseline"
	}
	if !r.fallOK {
		sc.Reasons = append(sc.Reasons, fmt.Sprintf("fall rate %.3f exceeds %s's %.3f + 0.02", m[MetricFallRate], against, s.Baseline[MetricFallRate]))
	}
	if !r.trackOK {
		sc.Reasons = append(sc.Reasons, fmt.Sprintf("tracking is %.1f%% worse than %s (limit 5%%)", -100*r.obj[0], against))
	}
	return sc, nil
}

// Quick is Score's total and eligibility without its checks, maps and reasons, for a
// proposer that scores thousands of predicted metrics per proposal (the numeric sampler):
// the same arithmetic, so a prediction is judged exactly as the trial will be. m holds
// every metric in MetricNames order, finite.
func (s Scorer) Quick(m [NumMetrics]float64) (total float64, eligible bool) {
	r := s.reckon(m)
	return r.total, r.fallOK && r.trackOK
}

// NumMetrics is the number of metrics, len(MetricNames).
const NumMetrics = 7

// values lists m's metrics in MetricNames order.
func values(m Metrics) [NumMetrics]float64 {
	var v [NumMetrics]float64
	for i, name := range MetricNames {
		v[i] = m[name]
	}
	return v
}

// reckoning is the score's arithmetic: improvements in MetricNames order, objectives in
// ObjectiveNames order, the total and each gate.
type reckoning struct {
	imp             [NumMetrics]float64
	obj             [6]float64
	total           float64
	fallOK, trackOK bool
}

func (s Scorer) reckon(m [NumMetrics]float64) reckoning {
	var r reckoning
	for i, name := range MetricNames {
		b := s.Baseline[name]
		scale := math.Max(math.Abs(b), s.Floors[name])
		if !(scale > 0) {
			scale = 1
		}
		r.imp[i] = clip((b-m[i])/scale, -1, 1)
	}
	// MetricNames order: linear, angular, action acceleration, orientation, falls (4), slip, power.
	r.obj = [6]float64{0.8*r.imp[0] + 0.2*r.imp[1], r.imp[2], r.imp[3], r.imp[4], r.imp[5], r.imp[6]}
	var num, den float64
	for i, k := range ObjectiveNames {
		num += s.Weights[k] * r.obj[i]
		den += s.Weights[k]
	}
	if den > 0 {
		r.total = num / den
	}
	r.fallOK = FallRatePasses(m[4], s.Baseline[MetricFallRate])
	r.trackOK = TrackingPasses(r.obj[0])
	return r
}

func clip(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

// MeanStd returns the mean and population standard deviation of xs.
func MeanStd(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(xs)))
}

// SortedMetricNames returns m's names in display order, unknown names last.
func SortedMetricNames(m Metrics) []string {
	out := []string{}
	for _, n := range MetricNames {
		if _, ok := m[n]; ok {
			out = append(out, n)
		}
	}
	rest := []string{}
	for k := range m {
		if !contains(MetricNames, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}
