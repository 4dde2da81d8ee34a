#!/usr/bin/env bash
# Event ingest benchmark (issue 2): generates a ~50 MB rsl_rl-like event file, then reports
# tunebot's reader against a raw read of the same bytes (target >= 0.5x) and against
# TensorBoard's EventAccumulator (target >= 10x faster). Run from anywhere:
#   bash bench/events/run.sh        (EVENTS_MB=N to change the size)
# Everything it makes stays in bench/out/ (gitignored), the Python venv included.
set -euo pipefail
cd "$(dirname "$0")/../.."

out=bench/out/events
venv=bench/out/venv
mkdir -p "$out"

echo "== tunebot reader vs raw read"
go build -o bench/out/events-bench ./bench/events
bench/out/events-bench -out "$out" -mb "${EVENTS_MB:-50}" | tee "$out/go.txt"
go_json=$(tail -n 1 "$out/go.txt")

echo "== TensorBoard EventAccumulator"
if ! "$venv/bin/python" -c 'import tensorboard' 2>/dev/null; then
	python3 -m venv "$venv"
	"$venv/bin/pip" install --quiet --disable-pip-version-check tensorboard
fi
file=$("$venv/bin/python" -c 'import json,sys; print(json.loads(sys.argv[1])["file"])' "$go_json")
"$venv/bin/python" bench/events/accumulate.py "$file" 2>"$out/accumulator.log" | tee "$out/py.json"

"$venv/bin/python" - "$go_json" "$(cat "$out/py.json")" <<'PY'
import json, sys
go, py = json.loads(sys.argv[1]), json.loads(sys.argv[2])
if (go["tags"], go["points"]) != (py["tags"], py["points"]):
    sys.exit(f"MISMATCH: tunebot read {go['tags']} tags / {go['points']} points, "
             f"EventAccumulator {py['tags']} / {py['points']}")
speedup = py["seconds"] / go["go_seconds"]
mb = go["bytes"] / 1e6
print()
print(f"summary ({mb:.1f} MB, {go['tags']} tags, {go['points']} points; both readers agree)")
print(f"  raw read (os.ReadFile)     {go['raw_seconds']*1e3:9.1f} ms  {mb/go['raw_seconds']:8.0f} MB/s")
print(f"  tunebot tfevents.ReadAll   {go['go_seconds']*1e3:9.1f} ms  {mb/go['go_seconds']:8.0f} MB/s"
      f"  {go['ratio_to_raw']:.2f}x raw  (target >= 0.5x: {'met' if go['ratio_to_raw'] >= 0.5 else 'NOT met'})")
print(f"  TensorBoard EventAccumulator {py['seconds']*1e3:7.0f} ms  {mb/py['seconds']:8.1f} MB/s"
      f"  tunebot is {speedup:.0f}x faster  (target >= 10x: {'met' if speedup >= 10 else 'NOT met'})")
PY
