#!/usr/bin/env bash
# Slack (issue 6): acknowledgement latency of 50 concurrent interactions (/tune status and
# button clicks, half refused) sent over Socket Mode to the adapter by a local fake Slack.
# p99 target ≤ 50 ms; Slack's own limit is 3000 ms. Numbers, not a pass/fail timing.
set -euo pipefail
cd "$(dirname "$0")/../.."
go test -run '^$' -bench 'BenchmarkAckLatency' -benchtime 20x ./bot/slack/ | grep -E 'Benchmark|ok'
