#!/usr/bin/env bash
# make bench: the ray executor through a real head with 4 logical GPUs (issue 46): a 12-trial
# sim session at parallel 4 against parallel 1, and the time between jobs against the local
# backend. Installs Ray (scripts/ray.sh install) and starts a head of its own with a token,
# unless RAY_ADDRESS names a running one; says so and skips where Ray cannot be had.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${RAY_ADDRESS:-}" ]; then
  if ! bash scripts/ray.sh install >/dev/null 2>&1; then
    echo "skipped: Ray could not be installed (bash scripts/ray.sh install: PyPI's ray[default] into a venv)"
    exit 0
  fi
  dir=$(mktemp -d /tmp/tunebot-bench-ray.XXXXXX)
  RAY_AUTH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  export RAY_AUTH_TOKEN
  trap 'bash scripts/ray.sh stop "$dir"; rm -rf "$dir"' EXIT
  export "$(bash scripts/ray.sh start "$dir" 4 | grep '^RAY_ADDRESS=')"
fi
go run ./bench/ray -bin "${BIN:-bin/tunebot}"
