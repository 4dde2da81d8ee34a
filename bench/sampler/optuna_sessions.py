"""Optuna's samplers as the proposer of whole tunebot sessions (see README.md).

For each surface and repetition, start `sampler optuna-session`, which runs the real session
engine (rung 0, early stop, successive halving, final re-evaluation) on the sim surface and
asks this script for every proposal with the finished rung-0 trials so far. Optuna searches
the 0.5x-2x box of every scalar around the defaults (weights as magnitudes on a log scale,
Optuna's defaults otherwise). The samplers:

- tpe: TPESampler; a trial that broke a gate is told -1 (the worst);
- gp: GPSampler, told every trial's rung-0 score, with the gates as its constraint
  (Trial.set_constraint, Optuna 5's form of constraints_func: a trial that broke a gate is
  infeasible), as Optuna's AutoSampler would run it on a numeric space with constraints;

`--startup N` sets n_startup_trials (0: Optuna's default, 10 for both). With `--warm` each
session is followed by a second one that builds on it (the warm row), proposed by the same
study going on: the second session's scores are relative to its own baseline, the first's
best, so the bridge adds that trial's first-session score to them and the study keeps one
objective. Prints each session's result, one JSON line per session (with --warm the first
session's, labelled as the row without --warm, then the second's).
"""

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

# The gates as Optuna's constraint: a trial that broke one is infeasible (a value > 0).
# Trial.set_constraint stores it under "constraints:gates" (Optuna 5 deprecated
# constraints_func for it; the GP reads either); a trial added with add_trial gets it there.
GATES = "gates"
GATES_ATTR = "constraints:" + GATES


def make_sampler(kind: str, seed: int, startup: int):
    kw = {"n_startup_trials": startup} if startup > 0 else {}
    if kind == "tpe":
        return optuna.samplers.TPESampler(seed=seed, **kw)
    if kind == "gp":
        return optuna.samplers.GPSampler(seed=seed, **kw)
    raise ValueError(f"unknown sampler {kind!r} (tpe or gp)")


class Session:
    """One study, told the trials of one session after another."""

    def __init__(self, kind: str, dists: dict, study):
        self.kind, self.dists, self.study = kind, dists, study
        self.asked = []  # Optuna trials asked in this session, in proposal order
        self.told = 0    # this session's trials told so far (trial 0, the baseline, is added)

    def value(self, t: dict) -> float:
        if self.kind == "tpe" and not t["eligible"]:
            return -1.0
        return t["score"]

    def tell(self, trials: list) -> None:
        while self.told < len(trials):
            t = trials[self.told]
            broke = 1.0 if not t["eligible"] else -1.0
            gated = self.kind == "gp"
            if self.told == 0:
                if t["score"] is not None:
                    self.study.add_trial(create_trial(params=t["params"], distributions=self.dists, value=self.value(t),
                                                      system_attrs={GATES_ATTR: broke} if gated else None))
            elif self.told - 1 < len(self.asked):
                trial = self.asked[self.told - 1]
                if t["score"] is None:
                    self.study.tell(trial, state=TrialState.FAIL)
                else:
                    if gated:
                        trial.set_constraint(GATES, broke)
                    self.study.tell(trial, self.value(t))
            self.told += 1


class SessionFailed(Exception):
    """A session that did not run to its result, with what went wrong."""


def read_msg(proc, what: str) -> dict:
    """The next message of optuna-session; SessionFailed when it ended or sent no JSON."""
    line = proc.stdout.readline()
    if not line:
        raise SessionFailed(f"optuna-session ended before sending {what}")
    try:
        return json.loads(line)
    except json.JSONDecodeError as e:
        raise SessionFailed(f"optuna-session sent {what} that is not JSON ({e}): {line[:200]!r}") from None


def run_session(binary: str, surface: int, rep: int, extra: list, kind: str, startup: int, label: str, warm: bool) -> list:
    args = [binary, "optuna-session", "-surface", str(surface), "-rep", str(rep), *extra] + (["-warm"] if warm else [])
    # optuna-session's own error goes to a file, so a failure can say it (a pipe nobody
    # reads while the session runs could fill and stall it).
    with tempfile.TemporaryFile(mode="w+") as errf:
        try:
            proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf, text=True)
        except OSError as e:
            raise SessionFailed(f"cannot start {binary}: {e}") from None
        results, failure = [], None
        try:
            results = converse(proc, kind, startup, label, warm, surface * 10 + rep)
        except Exception as e:  # whatever it was, the session failed: say which and why
            failure = e
        finally:
            for f in (proc.stdin, proc.stdout):
                try:
                    f.close()
                except BrokenPipeError:
                    pass
            code = proc.wait()
        if failure is None and code == 0:
            return results
        why = []
        if failure is not None:
            why.append(str(failure) if isinstance(failure, SessionFailed) else f"{type(failure).__name__}: {failure}")
        if code != 0:
            errf.seek(0)
            said = [ln.strip() for ln in errf.read().splitlines() if ln.strip()]  # its error is the last line
            why.append(f"optuna-session exited with status {code}" + (f": {said[-1][-500:]}" if said else ""))
        raise SessionFailed("; ".join(why))


def converse(proc, kind: str, startup: int, label: str, warm: bool, seed: int) -> list:
    """Answers optuna-session's requests for proposals until its result(s)."""
    hello = read_msg(proc, "the box")
    dists = {d["name"]: FloatDistribution(d["low"], d["high"], log=d["log"]) for d in hello["dims"]}
    study = optuna.create_study(direction="maximize", sampler=make_sampler(kind, seed, startup))
    cur = Session(kind, dists, study)
    results = []
    while len(results) < (2 if warm else 1):
        msg = read_msg(proc, "a request or a result")
        if "result" in msg:
            res = msg["result"]
            if label:
                res["method"] = label + ("-warm" if res["method"].endswith("-warm") else "")
            results.append(res)
            cur = Session(kind, dists, study)  # the same study goes on
            continue
        cur.tell(msg["trials"])
        trial = study.ask(dists)
        cur.asked.append(trial)
        proc.stdin.write(json.dumps({"params": trial.params}) + "\n")
        proc.stdin.flush()
    return results


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--first", type=int, default=1000)
    ap.add_argument("--surfaces", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tmp", default="")
    ap.add_argument("--sampler", default="tpe", choices=["tpe", "gp"])
    ap.add_argument("--startup", type=int, default=0,
                    help="the sampler's n_startup_trials (0: Optuna's default, 10)")
    ap.add_argument("--patience", type=int, default=0,
                    help="the session's early-stop patience (0: the session default; 20: never before the trial count)")
    ap.add_argument("--warm", action="store_true", help="follow each session by a second that builds on it, the same study going on")
    ap.add_argument("--label", default="", help="the method's name in the results (default: optuna)")
    ap.add_argument("--family", default="generic", choices=["generic", "domain", "coupled", "separable", "levers"], help="surface family")
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    extra = ["-family", args.family] + (["-tmp", args.tmp] if args.tmp else [])
    if args.patience > 0:
        extra += ["-patience", str(args.patience)]
    jobs = [(s, r) for s in range(args.first, args.first + args.surfaces) for r in range(args.reps)]

    def run(job):
        surface, rep = job
        try:
            return run_session(args.binary, surface, rep, extra, args.sampler, args.startup, args.label, args.warm), None
        except SessionFailed as e:
            return [], f"{args.family} surface {surface} rep {rep}: {e}"

    failed = 0
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for results, err in pool.map(run, jobs):
            if err:
                print(f"optuna_sessions.py: {err}", file=sys.stderr, flush=True)
                failed += 1
            for res in results:
                print(json.dumps(res), flush=True)
    if failed:
        print(f"optuna_sessions.py: {failed} of {len(jobs)} sessions failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
