#!/usr/bin/env bash
# people's preferences (issue 23): whole sessions on held-out sim surfaces with a simulated
# person who answers the A/B cards by a hidden "looks right" utility (a hopping penalty the
# score does not see), preferences off and on; see bench/prefs/README.md.
# Env: FIRST (default 1000: held out; 1-999 chose the weight), SURFACES (50), REPS (3), WORKERS (2).
# About 40 s on 2 cores.
set -euo pipefail
FIRST=${FIRST:-1000}
SURFACES=${SURFACES:-50}
REPS=${REPS:-3}
WORKERS=${WORKERS:-2}
TMP=/dev/shm
[ -d "$TMP" ] && [ -w "$TMP" ] || TMP=""
mkdir -p bench/out
go build -o bench/out/prefs ./bench/prefs/
# Preferences off, and on at the session's default weight (session.DefaultPreferenceWeight).
args=(-first "$FIRST" -surfaces "$SURFACES" -reps "$REPS" -workers "$WORKERS" -jsonl bench/out/prefs.jsonl)
[ -n "$TMP" ] && args+=(-tmp "$TMP")
bench/out/prefs "${args[@]}"
