#!/usr/bin/env bash
# make bench: Slurm's submit-to-running overhead per job against a real one-node Slurm (issue 14).
# Brings one up with scripts/slurm.sh (installing Debian's packages when root and missing) unless
# SLURM_CONF names a running cluster; says so and skips where Slurm cannot be had.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${SLURM_CONF:-}" ]; then
  if ! bash scripts/slurm.sh install >/dev/null 2>&1; then
    echo "skipped: Slurm is not installed and cannot be (bash scripts/slurm.sh install needs root and Debian's packages)"
    exit 0
  fi
  dir=$(mktemp -d /tmp/tunebot-bench-slurm.XXXXXX)
  trap 'bash scripts/slurm.sh down "$dir"; rm -rf "$dir"' EXIT
  export "$(bash scripts/slurm.sh up "$dir" 2)"
fi
go run ./bench/slurm
