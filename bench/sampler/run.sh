#!/usr/bin/env bash
# Whole tunebot sessions (real engine: rung 0, early stop, successive halving, final
# re-evaluation) on held-out sim surfaces of both families (generic and domain-shaped), for
# tunebot's sampler, the old sampler, random search and Optuna's TPE over the 0.5x-2x box;
# prints the fraction of the attainable gain each method's shipped configuration reached and
# how many rung-0 trials broke a gate. See README.md.
# Env: FIRST (default 1000: held out; surfaces 1-999 are for tuning), SURFACES (50), REPS (3),
# WORKERS (2), FAMILIES ("generic domain coupled separable").
set -euo pipefail
cd "$(dirname "$0")/../.."
FIRST=${FIRST:-1000}
SURFACES=${SURFACES:-50}
REPS=${REPS:-3}
WORKERS=${WORKERS:-2}
FAMILIES=${FAMILIES:-generic domain coupled separable}
OUT=bench/out/sampler-sessions
TMP=/dev/shm
[ -d "$TMP" ] && [ -w "$TMP" ] || TMP=""
mkdir -p "$OUT"
go build -o bench/out/sampler ./bench/sampler/
VENV=bench/out/venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import optuna' 2>/dev/null; then
	python3 -m venv "$VENV"
	"$VENV/bin/pip" install -q 'optuna==5.0.0'
fi
files=()
for fam in $FAMILIES; do
	args=(-family "$fam" -first "$FIRST" -surfaces "$SURFACES" -reps "$REPS" -workers "$WORKERS")
	[ -n "$TMP" ] && args+=(-tmp "$TMP")
	for m in tunebot old random; do
		bench/out/sampler sessions -method "$m" "${args[@]}" > "$OUT/$fam-$m.jsonl"
		files+=("$OUT/$fam-$m.jsonl")
	done
	# The same sampler held to the reviewable 4 changes per proposal (sampler_max_changes 0).
	bench/out/sampler sessions -method tunebot -label tunebot-4 -sampler-max-changes 0 "${args[@]}" > "$OUT/$fam-tunebot-4.jsonl"
	files+=("$OUT/$fam-tunebot-4.jsonl")
	# A diagnostic, not a contender: the same sampler on noise-free evaluations (how much of
	# the gap is the noise's).
	bench/out/sampler sessions -method tunebot -label tunebot-noise-free -noise-free "${args[@]}" > "$OUT/$fam-tunebot-noise-free.jsonl"
	files+=("$OUT/$fam-tunebot-noise-free.jsonl")
	# The warm row: on each surface and repetition a second session, with fresh noise and
	# session seed, that builds on the first (from=); the second sessions' results.
	bench/out/sampler sessions -method tunebot -warm "${args[@]}" > "$OUT/$fam-tunebot-warm.jsonl"
	files+=("$OUT/$fam-tunebot-warm.jsonl")
	pyargs=(--binary bench/out/sampler --family "$fam" --first "$FIRST" --surfaces "$SURFACES" --reps "$REPS" --workers "$WORKERS")
	[ -n "$TMP" ] && pyargs+=(--tmp "$TMP")
	"$VENV/bin/python" bench/sampler/optuna_sessions.py "${pyargs[@]}" > "$OUT/$fam-optuna.jsonl"
	# TPE's default spends its first 10 trials at random; with 12 trials, 3 gives it a chance.
	"$VENV/bin/python" bench/sampler/optuna_sessions.py "${pyargs[@]}" --startup 3 --label optuna-startup-3 > "$OUT/$fam-optuna-3.jsonl"
	files+=("$OUT/$fam-optuna.jsonl" "$OUT/$fam-optuna-3.jsonl")
done
echo "surfaces $FIRST..$((FIRST + SURFACES - 1)), $REPS sessions each, session defaults (12 trials, patience, halving, final re-evaluation)"
bench/out/sampler summary "${files[@]}"
