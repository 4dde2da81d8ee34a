#!/usr/bin/env bash
# parallel trials (issue 14): wall time of one 12-trial sim session at parallel 1, 2 and 4.
set -euo pipefail
go run ./bench/parallel -bin "${BIN:-bin/tunebot}"
