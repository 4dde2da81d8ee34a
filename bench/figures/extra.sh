#!/usr/bin/env bash
# Figures you can bank on (issue 43): whole sessions with the product's defaults on held-out
# sim surfaces (1000 and up) of seven problems, the reported gain against the noise-free truth,
# "improved" where nothing beats the defaults and where a real gain was found, and what the
# fresh final seeds cost. See README.md. Env: SESSIONS (50 per problem), FLAT (0: how many more
# flat ones after them, for a closer rate of false claims), WORKERS (2).
set -euo pipefail
cd "$(dirname "$0")/../.."
SESSIONS=${SESSIONS:-50}
FLAT=${FLAT:-0}
WORKERS=${WORKERS:-2}
OUT=bench/out/figures-sessions
mkdir -p "$OUT"
go build -o bench/out/figures-bin ./bench/figures/
bench/out/figures-bin -first 1000 -sessions "$SESSIONS" -workers "$WORKERS" > "$OUT/held-out.jsonl"
files=("$OUT/held-out.jsonl")
if [ "$FLAT" -gt 0 ]; then
	bench/out/figures-bin -problems flat -first $((1000 + SESSIONS)) -sessions "$FLAT" -workers "$WORKERS" > "$OUT/flat-more.jsonl"
	files+=("$OUT/flat-more.jsonl")
fi
bench/out/figures-bin summary "${files[@]}"
