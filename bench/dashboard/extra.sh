#!/usr/bin/env bash
# make bench: the monitoring page's load with 20 trials × 20 tags × 2,000 points (issue 15).
set -euo pipefail
cd "$(dirname "$0")/../.."
go run ./bench/dashboard
