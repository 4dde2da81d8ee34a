// Command sampler benchmarks the numeric proposers of package advisor on the sim trainer's
// response surface: the best rung-0 score after a fixed number of trials (a baseline plus
// proposals, each patching the best configuration so far, as the engine does), for the TPE
// sampler, the random proposer and, through the serve mode, Optuna's TPESampler driven by
// optuna_bench.py. See README.md; run.sh runs everything.
//
//	sampler run -sampler tpe|random [-first 0] [-seeds 20] [-trials 12]   JSON lines, one per seed
//	sampler serve -seed S                                       objective for optuna_bench.py
//	sampler table FILE...                                       the per-seed table and summary
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"tunebot/advisor"
	"tunebot/session"
	"tunebot/trainer/sim"
)

// rung0Iterations is the default first rung (session.DefaultSettings().Rungs[0]).
var rung0Iterations = session.DefaultSettings().Rungs[0]

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: sampler run|serve|table ...")
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = cmdRun(args[1:], stdout)
	case "serve":
		err = cmdServe(args[1:], stdin, stdout)
	case "table":
		err = cmdTable(args[1:], stdout)
	default:
		err = fmt.Errorf("unknown command %q (run, serve or table)", args[0])
	}
	if err != nil {
		fmt.Fprintln(stderr, "sampler:", err)
		return 1
	}
	return 0
}

// problem is one benchmark seed: the sim surface evaluated on that seed, scored against the
// default configuration's metrics with the default objective weights and floors.
type problem struct {
	space  *session.Space
	seed   int
	scorer session.Scorer
}

func newProblem(seed int) problem {
	space := session.DefaultSpace()
	return problem{space: space, seed: seed, scorer: session.Scorer{
		Baseline: sim.Evaluate(space.Defaults(), rung0Iterations, seed),
		Weights:  session.DefaultObjectiveWeights(),
		Floors:   session.DefaultFloors(),
	}}
}

func (p problem) score(cfg session.RewardConfig) (session.Score, error) {
	return p.scorer.Score(sim.Evaluate(cfg, rung0Iterations, p.seed))
}

// session is the engine's bookkeeping for one benchmark run: history, tried configurations
// and the best eligible configuration, which the next proposal patches.
type benchSession struct {
	p         problem
	hist      []session.TrialSummary
	tried     []session.Tried
	best      session.RewardConfig
	bestScore float64
}

func newBenchSession(p problem) (*benchSession, error) {
	s := &benchSession{p: p, bestScore: math.Inf(-1)}
	if _, err := s.add(p.space.Defaults(), session.SourceBaseline); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *benchSession) add(cfg session.RewardConfig, source string) (session.Score, error) {
	sc, err := s.p.score(cfg)
	if err != nil {
		return sc, fmt.Errorf("scoring trial %d: %w", len(s.hist), err)
	}
	total := sc.Total
	s.hist = append(s.hist, session.TrialSummary{Number: len(s.hist), Source: source, State: session.TrialCompleted,
		Score: &total, Eligible: sc.Eligible, Config: cfg.Clone()})
	s.tried = append(s.tried, session.Tried{Label: fmt.Sprintf("trial %d", len(s.hist)-1), Config: cfg.Clone()})
	if sc.Eligible && total > s.bestScore {
		s.best, s.bestScore = cfg.Clone(), total
	}
	return sc, nil
}

func (s *benchSession) request(seed int64) session.ProposalRequest {
	return session.ProposalRequest{SessionID: "bench", Task: session.TaskGo2Flat, Objective: s.p.scorer.Weights,
		Space: s.p.space, Base: s.best, History: s.hist, Tried: s.tried, Seed: seed}
}

// result is one seed's outcome, one JSON line.
type result struct {
	Sampler string    `json:"sampler"`
	Seed    int       `json:"seed"`
	Best    float64   `json:"best"`
	Scores  []float64 `json:"scores"`
}

func cmdRun(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	name := fs.String("sampler", "tpe", "tpe or random")
	seeds := fs.Int("seeds", 20, "number of seeds (first..first+seeds-1)")
	first := fs.Int("first", 0, "first seed: 0 for the reported set, others to develop or check against")
	trials := fs.Int("trials", 12, "trials per seed, baseline included")
	startup := fs.Int("startup", 0, "TPE exploration-only start-up trials (0: the sampler's default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var adv session.Advisor
	switch *name {
	case "tpe":
		adv = advisor.NewTPE(advisor.TPEOptions{Startup: *startup})
	case "random":
		adv = advisor.NewRandom()
	default:
		return fmt.Errorf("unknown sampler %q", *name)
	}
	enc := json.NewEncoder(stdout)
	for seed := *first; seed < *first+*seeds; seed++ {
		s, err := newBenchSession(newProblem(seed))
		if err != nil {
			return err
		}
		for len(s.hist) < *trials {
			sug, err := adv.Propose(context.Background(), s.request(int64(seed)))
			if err != nil {
				return fmt.Errorf("seed %d, trial %d: %w", seed, len(s.hist), err)
			}
			cfg, err := s.p.space.Validate(s.best, sug.Patch, s.tried)
			if err != nil {
				return fmt.Errorf("seed %d, trial %d: proposal refused: %w", seed, len(s.hist), err)
			}
			if _, err := s.add(cfg, sug.Source); err != nil {
				return err
			}
		}
		r := result{Sampler: *name, Seed: seed, Best: s.bestScore}
		for _, h := range s.hist {
			r.Scores = append(r.Scores, *h.Score)
		}
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
