#!/usr/bin/env bash
# Creates (or reuses) the Python venv of the mjlab adapter and prints its directory.
#
#   scripts/mjlab-venv.sh [DIR]      default DIR: .venv/mjlab in the repository
#
# The venv is keyed by a hash of trainer/mjlab/requirements.txt: when the pins change it is
# rebuilt, otherwise it is reused as is (PyPI's torch is the CUDA build, about 3 GB, so a
# rebuild takes minutes). The adapter itself is not copied in: a .pth file points at
# trainer/mjlab, so edits to it take effect at once. Progress goes to stderr; stdout carries
# only the venv path, for `VENV=$(scripts/mjlab-venv.sh)`.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/.venv/mjlab}
req=$root/trainer/mjlab/requirements.txt
python=${PYTHON:-python3}

want=$(sha256sum "$req" | cut -d' ' -f1)
stamp=$venv/.tunebot-requirements.sha256

if [[ ! -x $venv/bin/python || ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  echo "mjlab-venv: building $venv (requirements changed or venv missing; this downloads ~3 GB)" >&2
  start=$(date +%s)
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
  "$venv/bin/python" -m pip install --quiet -r "$req" >&2
  echo "$want" > "$stamp"
  echo "mjlab-venv: built in $(( $(date +%s) - start )) s" >&2
else
  echo "mjlab-venv: reusing $venv" >&2
fi

# Point the venv at this checkout's adapter (rewritten every time: the checkout may move).
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$root/trainer/mjlab" > "$site/tunebot_mjlab.pth"
echo "$venv"
