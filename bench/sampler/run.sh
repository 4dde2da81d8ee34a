#!/usr/bin/env bash
# Benchmarks the TPE sampler against random proposals and Optuna's TPESampler on the sim
# trainer's response surface; prints the per-seed table and the summary. See README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
FIRST=${FIRST:-0}
SEEDS=${SEEDS:-20}
TRIALS=${TRIALS:-12}
OUT=bench/out/sampler-run
mkdir -p "$OUT"
go build -o bench/out/sampler ./bench/sampler/
for s in random tpe; do
	bench/out/sampler run -sampler "$s" -first "$FIRST" -seeds "$SEEDS" -trials "$TRIALS" > "$OUT/$s.jsonl"
done
files=("$OUT/random.jsonl" "$OUT/tpe.jsonl")
VENV=bench/out/venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import optuna' 2>/dev/null; then
	python3 -m venv "$VENV"
	"$VENV/bin/pip" install -q 'optuna==5.0.0'
fi
"$VENV/bin/python" bench/sampler/optuna_bench.py --binary bench/out/sampler --first "$FIRST" --seeds "$SEEDS" --trials "$TRIALS" > "$OUT/optuna.jsonl"
files+=("$OUT/optuna.jsonl")
bench/out/sampler table "${files[@]}"
