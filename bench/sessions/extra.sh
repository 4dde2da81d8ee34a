#!/usr/bin/env bash
# make bench: a year's scale (issue 20): the session list and /tune status on 10,000 sessions
# against a full scan, and prune with compaction on 90 demo-like sessions.
set -euo pipefail
cd "$(dirname "$0")/../.."
go run ./bench/sessions
