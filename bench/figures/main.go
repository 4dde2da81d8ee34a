// Command figures measures whether the gain a session reports is an honest estimate of what
// its user gets (issue 43): whole automatic sessions of the real engine (the product's
// defaults: 12 trials, halving 12→4→2 with the baseline carried along, the final evaluation
// on fresh seeds) on held-out sim surfaces whose noise-free truth is known, one JSON line per
// session, then a table per problem:
//
//   - the mean of (reported − true gain) with its standard error, and the same for the figure
//     on the seeds that chose the finalist (what the final evaluation reported when it re-ran
//     those seeds);
//   - how often a session says "improved", on a problem where nothing beats the defaults
//     (flat: every configuration evaluates as the defaults, with its own noise) and among
//     sessions that found a real gain of 0.02–0.11;
//   - what the fresh final seeds cost: seed evaluations, and their share of the env steps a
//     session spends (at the product's 4096 × 24 steps per training iteration and 256 × 1000
//     per evaluated seed).
//
// The problems are the four families of bench/sampler (surfaces from 1000 up, which nothing
// was tuned on), the flat one, and the G1 space's surfaces (trainer/sim/spacesurf.go, built
// from another robot's declarations): a problem the defaults were not chosen on.
//
//	figures [-problems generic,domain,coupled,separable,flat,g1] [-first 1000] [-sessions 20] [-workers 2] [-final-count N] > out.jsonl
//	figures summary out.jsonl
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"

	"tunebot/advisor"
	"tunebot/bench/internal/memsim"
	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer/mjlab"
	"tunebot/trainer/sim"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	var err error
	if len(args) > 0 && args[0] == "summary" {
		err = summary(args[1:], stdout)
	} else {
		err = sessions(args, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "figures:", err)
		return 1
	}
	return 0
}

// result is one session, one JSON line.
type result struct {
	Problem string `json:"problem"`
	Surface int64  `json:"surface"`
	Outcome string `json:"outcome"`
	// Reported is the gain the session reports for what it ships: its headline's figure on
	// the fresh seeds, 0 when the defaults stand (no_improvement).
	Reported float64 `json:"reported"`
	// Chosen is the same finalist's figure on the seeds that chose it; True the noise-free gain
	// over the defaults of what it ships, at the top rung.
	Chosen float64 `json:"chosen"`
	True   float64 `json:"true"`
	SE     float64 `json:"se"`
	// FinalSeedEvals are the seed evaluations of the final evaluation; EnvSteps the env steps
	// of the whole session (training and every evaluation) at the product's sizes, and
	// FinalEnvSteps the final evaluation's.
	FinalSeedEvals int     `json:"final_seed_evals"`
	EnvSteps       float64 `json:"env_steps"`
	FinalEnvSteps  float64 `json:"final_env_steps"`
}

// problem is one surface maker: a family of the sim (with flat: nothing beats the defaults).
type problem struct {
	name   string
	space  *session.Space
	family sim.Family
	flat   bool
}

func problems(names string) ([]problem, error) {
	var out []problem
	for _, n := range strings.Split(names, ",") {
		switch n = strings.TrimSpace(n); n {
		case "flat":
			out = append(out, problem{name: n, space: session.DefaultSpace(), family: sim.FamilyCoupled, flat: true})
		case "g1":
			sp, err := g1Space()
			if err != nil {
				return nil, err
			}
			out = append(out, problem{name: n, space: sp, family: sim.FamilyDomain})
		default:
			fam, err := sim.ParseFamily(n)
			if err != nil {
				return nil, err
			}
			out = append(out, problem{name: n, space: session.DefaultSpace(), family: fam})
		}
	}
	return out, nil
}

// g1Space is the checked-in reward space of mjlab's G1 flat task.
func g1Space() (*session.Space, error) {
	data, ok := mjlab.CheckedInSpace("Mjlab-Velocity-Flat-Unitree-G1")
	if !ok {
		return nil, errors.New("no checked-in G1 space")
	}
	var doc struct {
		Space *session.Space `yaml:"reward_space"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil || doc.Space == nil {
		return nil, fmt.Errorf("the G1 space: %v", err)
	}
	return doc.Space, doc.Space.Check()
}

func (p problem) surface(seed int64) (*sim.Surface, error) {
	if p.name == "g1" {
		return sim.NewSpaceSurface(p.space, p.family, seed)
	}
	return sim.NewFamilySurface(p.family, seed)
}

func sessions(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("figures", flag.ContinueOnError)
	names := fs.String("problems", "generic,domain,coupled,separable,levers,flat,g1", "problems, comma-separated")
	first := fs.Int64("first", 1000, "first surface seed (1000 and up: held out)")
	n := fs.Int("sessions", 20, "sessions per problem, one per surface")
	workers := fs.Int("workers", 2, "sessions run at once")
	count := fs.Int("final-count", 0, "fresh final seeds per session (0: the product's default); chosen on surfaces below 1000")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ps, err := problems(*names)
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "tunebot-bench-figures")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	type job struct {
		p    problem
		seed int64
	}
	var jobs []job
	for _, p := range ps {
		for s := *first; s < *first+int64(*n); s++ {
			jobs = append(jobs, job{p, s})
		}
	}
	return memsim.Parallel(*workers, jobs, stdout, func(j job) ([]result, error) {
		r, err := one(context.Background(), filepath.Join(root, fmt.Sprintf("%s-%d", j.p.name, j.seed)), j.p, j.seed, *count)
		return []result{r}, err
	})
}

// one runs one session of problem p on surface seed with the product's defaults and scores
// what it reports against what it ships.
func one(ctx context.Context, dir string, p problem, seed int64, count int) (result, error) {
	surf, err := p.surface(seed)
	if err != nil {
		return result{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	db, err := store.Open(filepath.Join(dir, "tunebot.db"), store.Options{})
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	st := session.DefaultSettings()
	st.Seed = seed
	if count > 0 {
		st.FinalEvalCount = count
	}
	st.Normalize()
	s, trials, shipped, err := memsim.Play(ctx, db, dir, p.space, advisor.NewSampler(advisor.SamplerOptions{}), memsim.Trainer{Surf: surf, Flat: p.flat}, st)
	if err != nil {
		return result{}, err
	}
	if s.State != session.StateSucceeded {
		return result{}, fmt.Errorf("%s surface %d: session ended %s: %s", p.name, seed, s.State, s.Message)
	}
	top := st.Rungs[len(st.Rungs)-1]
	r := result{Problem: p.name, Surface: seed, Outcome: s.Outcome}
	if !p.flat {
		r.True, _ = surf.Gain(shipped.Config, top, st.Objective, st.Floors)
	}
	if c := s.Result; c != nil && s.Outcome != session.OutcomeNoImprovement && c.Versus != nil {
		r.Reported = c.Versus.Score
		if c.Chosen != nil {
			r.Chosen = c.Chosen.Score
		}
		if c.Verdict != nil {
			r.SE = c.Verdict.SE
		}
	}
	r.FinalSeedEvals, r.EnvSteps, r.FinalEnvSteps = cost(st, trials)
	return r, nil
}

// The product's sizes: RSL-RL's 24 steps per env per iteration on 4096 envs, and an
// evaluated seed's 256 envs × 1000 steps.
const (
	stepsPerIteration = 4096 * 24
	stepsPerSeedEval  = 256 * 1000
)

// cost is what the final evaluation of trials spent: its seed evaluations, and the env steps
// of the whole session and of the final evaluation alone.
func cost(st session.Settings, trials []session.Trial) (finalSeeds int, all, final float64) {
	for _, t := range trials {
		if t.State != session.TrialCompleted {
			continue
		}
		all += float64(t.Iterations-t.StartIter)*stepsPerIteration + float64(len(st.EvalSeeds))*stepsPerSeedEval
		if t.Final != nil {
			finalSeeds += len(t.Final.Seeds)
		}
	}
	final = float64(finalSeeds) * stepsPerSeedEval
	return finalSeeds, all + final, final
}

// summary prints one row per problem from the JSON lines of files.
func summary(files []string, w io.Writer) error {
	by := map[string][]result{}
	for _, f := range files {
		rs, err := read(f)
		if err != nil {
			return err
		}
		for _, r := range rs {
			by[r.Problem] = append(by[r.Problem], r)
		}
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "problem\tsessions\treported − true\tchosen-seeds figure − true\timproved\twithin noise\tno improvement\timproved with a real gain 0.02–0.11\tfinal seed evals\tshare of env steps\t")
	for _, n := range names {
		fmt.Fprintln(tw, row(n, by[n]))
	}
	return tw.Flush()
}

func row(name string, rs []result) string {
	var bias, chosen []float64
	outcomes := map[string]int{}
	real, realImproved, evals := 0, 0, 0
	share := 0.0
	for _, r := range rs {
		bias = append(bias, r.Reported-r.True)
		if r.Outcome != session.OutcomeNoImprovement {
			chosen = append(chosen, r.Chosen-r.True)
		}
		outcomes[r.Outcome]++
		if r.True >= 0.02 && r.True <= 0.11 {
			real++
			if r.Outcome == session.OutcomeImproved {
				realImproved++
			}
		}
		evals += r.FinalSeedEvals
		share += r.FinalEnvSteps / r.EnvSteps
	}
	n := float64(len(rs))
	return fmt.Sprintf("%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d of %d\t%.1f\t%.2f %%\t", name, len(rs), meanSE(bias), meanSE(chosen),
		outcomes[session.OutcomeImproved], outcomes[session.OutcomeWithinNoise]+outcomes[session.OutcomeUnmeasured],
		outcomes[session.OutcomeNoImprovement], realImproved, real, float64(evals)/n, 100*share/n)
}

func meanSE(xs []float64) string {
	if len(xs) == 0 {
		return "—"
	}
	m, _ := session.MeanStd(xs)
	return fmt.Sprintf("%+.4f ± %.4f", m, session.StdErr(xs))
}

func read(path string) ([]result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []result
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
