"""Optuna's TPESampler as the proposer of whole tunebot sessions (see README.md).

For each surface and repetition, start `sampler optuna-session`, which runs the real session
engine (rung 0, early stop, successive halving, final re-evaluation) on the sim surface and
asks this script for every proposal with the finished rung-0 trials so far. Optuna searches
the 0.5x-2x box of every scalar around the defaults (weights as magnitudes on a log scale,
Optuna's defaults otherwise); each trial is told its rung-0 score (-1 if it broke a gate).
Prints the session's result, one JSON line per session.
"""

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial


def run_session(binary: str, surface: int, rep: int, extra: list, startup: int, label: str) -> dict:
    proc = subprocess.Popen([binary, "optuna-session", "-surface", str(surface), "-rep", str(rep), *extra],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        hello = json.loads(proc.stdout.readline())
        kw = {"n_startup_trials": startup} if startup > 0 else {}
        dists = {d["name"]: FloatDistribution(d["low"], d["high"], log=d["log"]) for d in hello["dims"]}
        study = optuna.create_study(direction="maximize",
                                    sampler=optuna.samplers.TPESampler(seed=surface * 10 + rep, **kw))
        asked = []  # Optuna trials asked, in proposal order (session trial 1, 2, ...)
        told = 0    # session trials told so far (trial 0, the baseline, is added)
        while True:
            msg = json.loads(proc.stdout.readline())
            if "result" in msg:
                res = msg["result"]
                if label:
                    res["method"] = label
                return res
            trials = msg["trials"]
            while told < len(trials):
                t = trials[told]
                if told == 0:
                    if t["score"] is not None:
                        study.add_trial(create_trial(params=t["params"], distributions=dists, value=t["score"]))
                elif told - 1 < len(asked):
                    trial = asked[told - 1]
                    if t["score"] is None:
                        study.tell(trial, state=TrialState.FAIL)
                    else:
                        study.tell(trial, t["score"])
                told += 1
            trial = study.ask(dists)
            asked.append(trial)
            proc.stdin.write(json.dumps({"params": trial.params}) + "\n")
            proc.stdin.flush()
    finally:
        proc.stdin.close()
        if proc.wait() != 0:
            raise RuntimeError(f"optuna-session surface {surface} rep {rep} failed")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--first", type=int, default=1000)
    ap.add_argument("--surfaces", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tmp", default="")
    ap.add_argument("--startup", type=int, default=0,
                    help="TPESampler's n_startup_trials (0: Optuna's default, 10)")
    ap.add_argument("--label", default="", help="the method's name in the results (default: optuna)")
    ap.add_argument("--family", default="generic", help="surface family: generic, domain or coupled")
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    extra = ["-family", args.family] + (["-tmp", args.tmp] if args.tmp else [])
    jobs = [(s, r) for s in range(args.first, args.first + args.surfaces) for r in range(args.reps)]
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for res in pool.map(lambda j: run_session(args.binary, j[0], j[1], extra, args.startup, args.label), jobs):
            print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
