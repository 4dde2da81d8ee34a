"""Optuna's TPESampler on the same problem as tunebot's samplers (see README.md).

For each seed: start `sampler serve -seed S`, add the baseline as a finished trial, then
ask Optuna for a full suggestion 11 times; the Go side projects it onto the patch rules
around the best configuration so far and scores it. Optuna is told what was really run:
the asked trial is closed as FAIL (TPE ignores failed trials) and the projected
configuration is added as a COMPLETE trial with its score. Prints one JSON line per seed.
"""

import argparse
import json
import subprocess
import sys

import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial


def run_seed(binary: str, seed: int, trials: int) -> dict:
    proc = subprocess.Popen([binary, "serve", "-seed", str(seed)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        hello = json.loads(proc.stdout.readline())
        dists = {d["name"]: FloatDistribution(d["low"], d["high"], log=d["log"]) for d in hello["dims"]}
        # Optuna's defaults: 10 start-up trials, gamma, weights, 24 candidates, prior 1,
        # magic clip, univariate.
        study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
        study.add_trial(create_trial(params=hello["baseline"], distributions=dists, value=hello["score"]))
        scores, best = [hello["score"]], hello["score"]
        for _ in range(trials - 1):
            trial = study.ask(dists)
            proc.stdin.write(json.dumps({"params": trial.params}) + "\n")
            proc.stdin.flush()
            reply = json.loads(proc.stdout.readline())
            study.tell(trial, state=TrialState.FAIL)
            study.add_trial(create_trial(params=reply["params"], distributions=dists, value=reply["score"]))
            scores.append(reply["score"])
            best = reply["best"]
        return {"sampler": "optuna", "seed": seed, "best": best, "scores": scores}
    finally:
        proc.stdin.close()
        proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--trials", type=int, default=12)
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    for seed in range(args.first, args.first + args.seeds):
        print(json.dumps(run_seed(args.binary, seed, args.trials)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
