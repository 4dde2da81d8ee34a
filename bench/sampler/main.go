// Command sampler benchmarks tunebot's numeric proposers with whole sessions of the real
// engine on held-out surfaces of the sim trainer, against the old sampler, random search
// and, through the optuna-session mode, Optuna's TPESampler and GPSampler driven by
// optuna_sessions.py (-warm: a first session and a second one the same study goes on into).
// See README.md; run.sh runs everything.
//
//	sampler sessions -method tunebot|old|random [-first 1000] [-surfaces 50] [-reps 3]   JSON lines, one per session
//	sampler optuna-session -surface S -rep R [-warm]  one session (two) proposed by optuna_sessions.py
//	sampler box [-first 1] [-surfaces 40]            what the whole-box searches' box holds, noise-free
//	sampler summary FILE...                      quartiles, trials used and the targets
//	sampler calibrate [-family F] [-first 1] [-surfaces 10]  the model's predictions against what happened
//	sampler shares [-family F] [-first 1] [-surfaces 20]  where the attainable gain lies, per scalar
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: sampler sessions|optuna-session|box|summary ...")
		return 2
	}
	if prof := os.Getenv("SAMPLER_CPUPROFILE"); prof != "" {
		f, err := os.Create(prof)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	var err error
	switch args[0] {
	case "sessions":
		err = cmdSessions(args[1:], stdout)
	case "optuna-session":
		err = cmdOptunaSession(args[1:], stdin, stdout)
	case "box":
		err = cmdBox(args[1:], stdout)
	case "summary":
		err = cmdSummary(args[1:], stdout)
	case "calibrate":
		err = cmdCalibrate(args[1:], stdout)
	case "shares":
		err = cmdShares(args[1:], stdout)
	case "learned":
		err = cmdLearned(args[1:], stdout)
	default:
		err = fmt.Errorf("unknown command %q (sessions, optuna-session, box, summary, calibrate, learned or shares)", args[0])
	}
	if err != nil {
		fmt.Fprintln(stderr, "sampler:", err)
		return 1
	}
	return 0
}
