#!/usr/bin/env bash
# Whole tunebot sessions (real engine: rung 0, early stop, successive halving, final
# re-evaluation) on held-out sim surfaces of five families, for tunebot's sampler (and its
# second session), and the peers a user would pick: random search, Optuna's TPE and its
# GPSampler (4 and 10 start-up trials) over the 0.5x-2x box, each with its warm row; prints
# the fraction of the attainable gain each method's shipped configuration reached and how
# many rung-0 trials broke a gate. The peers' venv is made by venv.sh. See README.md.
# Env: FIRST (default 1000: held out; surfaces 1-999 are for tuning), SURFACES (50), REPS (3),
# WORKERS (2), FAMILIES ("generic domain coupled separable levers").
set -euo pipefail
cd "$(dirname "$0")/../.."
FIRST=${FIRST:-1000}
SURFACES=${SURFACES:-50}
REPS=${REPS:-3}
WORKERS=${WORKERS:-2}
FAMILIES=${FAMILIES:-generic domain coupled separable levers}
OUT=bench/out/sampler-sessions
TMP=/dev/shm
[ -d "$TMP" ] && [ -w "$TMP" ] || TMP=""
mkdir -p "$OUT"
go build -o bench/out/sampler ./bench/sampler/
PY=$(bash bench/sampler/venv.sh)
# One thread per torch process: the GP's sessions run WORKERS at a time on shared cores.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
files=()
for fam in $FAMILIES; do
	args=(-family "$fam" -first "$FIRST" -surfaces "$SURFACES" -reps "$REPS" -workers "$WORKERS")
	[ -n "$TMP" ] && args+=(-tmp "$TMP")
	# tunebot and its warm row in one run: each first session is the tunebot row's session,
	# and a second session on the same surface builds on it (from=) with fresh noise and
	# session seed.
	bench/out/sampler sessions -method tunebot -warm -warm-with-first "${args[@]}" > "$OUT/$fam-tunebot.jsonl"
	# The same sampler held to the reviewable 4 changes per proposal (sampler_max_changes 0).
	bench/out/sampler sessions -method tunebot -label tunebot-4 -sampler-max-changes 0 "${args[@]}" > "$OUT/$fam-tunebot-4.jsonl"
	# A diagnostic, not a contender: the same sampler on noise-free evaluations (how much of
	# the gap is the noise's).
	bench/out/sampler sessions -method tunebot -label tunebot-noise-free -noise-free "${args[@]}" > "$OUT/$fam-tunebot-noise-free.jsonl"
	# The peers run the whole budget (patience 20: no stop before the 12 trials, as a user of
	# Optuna runs it), each with its warm row: the same search going on for 12 more trials.
	bench/out/sampler sessions -method random -patience 20 -warm -warm-with-first "${args[@]}" > "$OUT/$fam-random.jsonl"
	pyargs=(--binary bench/out/sampler --family "$fam" --first "$FIRST" --surfaces "$SURFACES" --reps "$REPS" --workers "$WORKERS" --patience 20 --warm)
	[ -n "$TMP" ] && pyargs+=(--tmp "$TMP")
	"$PY" bench/sampler/optuna_sessions.py "${pyargs[@]}" --sampler tpe > "$OUT/$fam-optuna.jsonl"
	"$PY" bench/sampler/optuna_sessions.py "${pyargs[@]}" --sampler gp --startup 4 --label optuna-gp-4 > "$OUT/$fam-optuna-gp-4.jsonl"
	"$PY" bench/sampler/optuna_sessions.py "${pyargs[@]}" --sampler gp --label optuna-gp-10 > "$OUT/$fam-optuna-gp-10.jsonl"
	for f in tunebot tunebot-4 tunebot-noise-free random optuna optuna-gp-4 optuna-gp-10; do
		files+=("$OUT/$fam-$f.jsonl")
	done
done
echo "surfaces $FIRST..$((FIRST + SURFACES - 1)), $REPS sessions each, session defaults (12 trials, halving, final re-evaluation; the peers without a patience stop)"
bench/out/sampler summary "${files[@]}"
