#!/usr/bin/env bash
# make bench: one numeric-sampler proposal (tunebot's time between two training jobs) with
# the defaults and with each candidate source or model part on or off (advisor's
# BenchmarkSamplerPropose): a part that is off costs nothing; allocations are the steady figure.
set -euo pipefail
cd "$(dirname "$0")/../.."
go test -run '^$' -bench 'BenchmarkSamplerPropose' -benchtime 10x -benchmem ./advisor/ | grep -E 'Benchmark|ok'
