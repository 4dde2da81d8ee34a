package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"

	"tunebot/session"
)

// floorDecades matches the advisor's modelling of weights whose bounds reach 0: their
// magnitude is searched in log space down to 1/1000 of the largest allowed magnitude.
const floorDecades = 3

// optunaDim is one search dimension as Optuna sees it: weights as their magnitude on a log
// scale (Optuna's log=True), params on their own linear scale.
type optunaDim struct {
	Name   string  `json:"name"`
	Weight bool    `json:"weight"`
	Low    float64 `json:"low"`
	High   float64 `json:"high"`
	Log    bool    `json:"log"`
	sign   float64
}

func optunaDims(s *session.Space) []optunaDim {
	var out []optunaDim
	for _, t := range s.Terms {
		hi := math.Max(math.Abs(t.Min), math.Abs(t.Max))
		lo := math.Min(math.Abs(t.Min), math.Abs(t.Max))
		if lo == 0 {
			lo = hi * math.Pow(10, -floorDecades)
		}
		sign := 1.0
		if t.Min < 0 {
			sign = -1
		}
		out = append(out, optunaDim{Name: t.Name, Weight: true, Low: lo, High: hi, Log: true, sign: sign})
	}
	for _, p := range s.Params {
		out = append(out, optunaDim{Name: p.Name, Low: p.Min, High: p.Max, sign: 1})
	}
	return out
}

// encode gives a configuration's value of d in Optuna's terms; a weight of 0 (term off)
// sits at the floor, as in the advisor's model.
func (d optunaDim) encode(c session.RewardConfig) float64 {
	if !d.Weight {
		return c.Params[d.Name]
	}
	return math.Min(math.Max(math.Abs(c.Weights[d.Name]), d.Low), d.High)
}

// unit is the position of an Optuna value on the dim's search scale, 0..1.
func (d optunaDim) unit(x float64) float64 {
	if d.Log {
		return (math.Log(x) - math.Log(d.Low)) / (math.Log(d.High) - math.Log(d.Low))
	}
	return (x - d.Low) / (d.High - d.Low)
}

type serveHello struct {
	Dims     []optunaDim        `json:"dims"`
	Baseline map[string]float64 `json:"baseline"`
	Score    float64            `json:"score"`
}

type serveAsk struct {
	Params map[string]float64 `json:"params"`
}

type serveReply struct {
	Params   map[string]float64 `json:"params"`   // the projected configuration, Optuna's terms
	Score    float64            `json:"score"`    // what Optuna is told: the score, -1 if ineligible
	Eligible bool               `json:"eligible"` //
	Changed  []string           `json:"changed"`  // the scalars the projection kept
	Best     float64            `json:"best"`     // best eligible score so far
}

// cmdServe is the objective for optuna_bench.py. It prints the dims and the baseline, then
// answers each JSON line {"params": {...}} (a full Optuna suggestion) with the projection of
// that suggestion onto the patch rules around the best configuration so far, its score, and
// the best eligible score so far.
func cmdServe(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	seed := fs.Int("seed", 0, "benchmark seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := newBenchSession(newProblem(*seed))
	if err != nil {
		return err
	}
	dims := optunaDims(s.p.space)
	enc := json.NewEncoder(stdout)
	hello := serveHello{Dims: dims, Baseline: map[string]float64{}, Score: s.bestScore}
	for _, d := range dims {
		hello.Baseline[d.Name] = d.encode(s.best)
	}
	if err := enc.Encode(hello); err != nil {
		return err
	}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ask serveAsk
		if err := json.Unmarshal(sc.Bytes(), &ask); err != nil {
			return fmt.Errorf("reading a suggestion: %w", err)
		}
		cfg, changed := project(s, dims, ask.Params)
		score, err := s.add(cfg, "optuna")
		if err != nil {
			return err
		}
		told := score.Total
		if !score.Eligible {
			told = -1 // the worst score there is: Optuna ranks it last, as the advisor does
		}
		reply := serveReply{Params: map[string]float64{}, Score: told, Eligible: score.Eligible, Changed: changed, Best: s.bestScore}
		for _, d := range dims {
			reply.Params[d.Name] = d.encode(cfg)
		}
		if err := enc.Encode(reply); err != nil {
			return err
		}
	}
	return sc.Err()
}

// project turns a full Optuna suggestion into a patch of the best configuration that obeys
// the rules: the MaxChanges scalars that moved furthest on their search scale are kept, each
// weight clipped into its 0.5×–2× trust region. When the result is refused (a duplicate, an
// order broken) the smallest mover is dropped and the rest tried again; a suggestion nothing
// survives of is evaluated as the base configuration itself, which costs Optuna that trial,
// as a refused proposal costs a session one.
func project(s *benchSession, dims []optunaDim, params map[string]float64) (session.RewardConfig, []string) {
	base := s.best
	type mover struct {
		d    optunaDim
		v    float64
		dist float64
	}
	var movers []mover
	for _, d := range dims {
		x, ok := params[d.Name]
		if !ok {
			continue
		}
		v := x
		if d.Weight {
			v = d.sign * x
			if b := base.Weights[d.Name]; b != 0 {
				lo, hi := math.Abs(b)*s.p.space.StepMin, math.Abs(b)*s.p.space.StepMax
				v = d.sign * math.Min(math.Max(x, lo), hi)
				t, _ := s.p.space.Term(d.Name)
				v = math.Min(math.Max(v, t.Min), t.Max)
			}
		}
		c := session.RewardConfig{Weights: map[string]float64{d.Name: v}, Params: map[string]float64{d.Name: v}}
		dist := math.Abs(d.unit(d.encode(c)) - d.unit(d.encode(base)))
		if dist > 1e-9 {
			movers = append(movers, mover{d: d, v: v, dist: dist})
		}
	}
	sort.SliceStable(movers, func(a, b int) bool { return movers[a].dist > movers[b].dist })
	movers = movers[:min(len(movers), s.p.space.MaxChanges)]
	for len(movers) > 0 {
		patch := session.Patch{Weights: map[string]float64{}, Params: map[string]float64{}}
		var names []string
		for _, m := range movers {
			if m.d.Weight {
				patch.Weights[m.d.Name] = m.v
			} else {
				patch.Params[m.d.Name] = m.v
			}
			names = append(names, m.d.Name)
		}
		if cfg, err := s.p.space.Validate(base, patch, s.tried); err == nil {
			return cfg, names
		}
		movers = movers[:len(movers)-1]
	}
	return base.Clone(), nil
}
