#!/usr/bin/env bash
# make bench: every benchmark of the project, reported as numbers and ratios from one run
# (the machines are shared and noisy, so nothing here is a pass/fail timing assertion).
# Python reference implementations (tensorboard, optuna) are installed into bench/out/venv.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
BIN=${BIN:-bin/tunebot}
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/tunebot

section() { printf '\n=== %s ===\n' "$1"; }

section "engine: tunebot's own time between trainer jobs, peak RSS (issue 3)"
go run ./bench/engine -bin "$BIN"

section "event reader: ingest vs raw read vs tensorboard's EventAccumulator (issue 2)"
bash bench/events/run.sh

section "sampler: whole sessions on held-out sim surfaces, fraction of the attainable gain (issue 17)"
bash bench/sampler/run.sh
section "sampler: Search V's variants on the tuning surfaces, paired with the defaults (issue 45)"
bash bench/sampler/variants.sh

section "charts: full trial report render time on one core (issue 5)"
go test -run '^$' -bench 'BenchmarkTrialReport' -benchtime 5x -cpu 1 ./charts/

for extra in bench/*/extra.sh; do
  [ -f "$extra" ] || continue
  section "$(dirname "$extra")"
  bash "$extra"
done
