#!/usr/bin/env bash
# The Python venv of the sampler benchmark's peers (README.md): Optuna 5.0.0 with what its
# GPSampler needs (torch on the CPU, scipy), in the gitignored bench/out/venv, never in the
# Go build. Created once; a venv that cannot import all three (a first run, or one cut
# short) is completed by running this again. Prints the venv's python.
# PyPI has no CPU-only torch wheel for Linux: its wheel brings CUDA libraries it does not
# use here (a few GB, downloaded once). Env: VENV (default bench/out/venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${VENV:-bench/out/venv}
check='import optuna, torch, scipy; assert optuna.__version__ == "5.0.0", optuna.__version__'
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$check" 2>/dev/null; then
	echo "$VENV/bin/python"
	exit 0
fi
mkdir -p "$(dirname "$VENV")"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q 'optuna==5.0.0' 'torch==2.15.0' 'scipy==1.17.1' >&2
if ! "$VENV/bin/python" -c "$check"; then
	echo "venv.sh: $VENV cannot import optuna 5.0.0, torch and scipy after installing them" >&2
	exit 1
fi
echo "$VENV/bin/python"
