#!/usr/bin/env bash
# Whole tunebot sessions (real engine: rung 0, early stop, successive halving, final
# re-evaluation) on held-out sim surfaces, for tunebot's sampler, the old sampler, random
# search and Optuna's TPE over the 0.5x-2x box; prints the fraction of the attainable gain
# each method's shipped configuration reached. See README.md.
# Env: FIRST (default 1000: held out; surfaces 1-999 are for tuning), SURFACES (50), REPS (3),
# WORKERS (2).
set -euo pipefail
cd "$(dirname "$0")/../.."
FIRST=${FIRST:-1000}
SURFACES=${SURFACES:-50}
REPS=${REPS:-3}
WORKERS=${WORKERS:-2}
OUT=bench/out/sampler-sessions
TMP=/dev/shm
[ -d "$TMP" ] && [ -w "$TMP" ] || TMP=""
mkdir -p "$OUT"
go build -o bench/out/sampler ./bench/sampler/
args=(-first "$FIRST" -surfaces "$SURFACES" -reps "$REPS" -workers "$WORKERS")
[ -n "$TMP" ] && args+=(-tmp "$TMP")
files=()
for m in tunebot old random; do
	bench/out/sampler sessions -method "$m" "${args[@]}" > "$OUT/$m.jsonl"
	files+=("$OUT/$m.jsonl")
done
# The same sampler held to the reviewable 4 changes per proposal (sampler_max_changes 0).
bench/out/sampler sessions -method tunebot -label tunebot-4 -sampler-max-changes 0 "${args[@]}" > "$OUT/tunebot-4.jsonl"
files+=("$OUT/tunebot-4.jsonl")
# The old sampler as it shipped: with the old session defaults (rung 0 on 1 seed, patience 4).
bench/out/sampler sessions -method old -label old-as-shipped -patience 4 -eval-seeds 1 -sampler-max-changes 0 "${args[@]}" > "$OUT/old-as-shipped.jsonl"
files+=("$OUT/old-as-shipped.jsonl")
VENV=bench/out/venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import optuna' 2>/dev/null; then
	python3 -m venv "$VENV"
	"$VENV/bin/pip" install -q 'optuna==5.0.0'
fi
pyargs=(--binary bench/out/sampler --first "$FIRST" --surfaces "$SURFACES" --reps "$REPS" --workers "$WORKERS")
[ -n "$TMP" ] && pyargs+=(--tmp "$TMP")
"$VENV/bin/python" bench/sampler/optuna_sessions.py "${pyargs[@]}" > "$OUT/optuna.jsonl"
files+=("$OUT/optuna.jsonl")
echo "surfaces $FIRST..$((FIRST + SURFACES - 1)), $REPS sessions each, session defaults (12 trials, patience, halving, final re-evaluation)"
bench/out/sampler summary "${files[@]}"
