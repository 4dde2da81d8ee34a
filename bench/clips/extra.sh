#!/usr/bin/env bash
# Clips (issue 21): the sim's clip drawn and encoded (time, size) and its share of a rung-0
# sim trial's wall time (target ≤ 5 %); with the mjlab venv, Go1's clip on CPU (OSMesa):
# render and encode time, size, and its share of a rung-0 trial of make test's session.
# Numbers, not a pass/fail timing.
set -euo pipefail
cd "$(dirname "$0")/../.."
go run ./bench/clips -bin "${BIN:-bin/tunebot}" -venv .venv/mjlab
