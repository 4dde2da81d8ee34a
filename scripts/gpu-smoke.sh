#!/usr/bin/env bash
# A smoke run of real training on a CUDA machine: a 4-trial session with short rungs through
# `tunebot tune`, every evaluation rendering its clip with EGL on the GPU, then per trial its
# training speed (iterations/s), evaluation time and clip render time, and the session's wall
# time.
#
#   scripts/gpu-smoke.sh [--task TASK] [RUNGS]     default RUNGS: 50,100,150 (iterations)
#
# TASK defaults to Unitree-Go2-Flat (or $TUNEBOT_SMOKE_TASK), with the design's reward space.
# Any other task gets its checked-in space from trainer/mjlab/spaces (the file whose first
# line names it: Mjlab-Velocity-Flat-Unitree-G1, Mjlab-Velocity-Flat-Unitree-Go1), else the
# space `tunebot space --task TASK` prints, e.g.
#
#   scripts/gpu-smoke.sh --task Mjlab-Velocity-Flat-Unitree-G1
#
# Needs: an NVIDIA GPU with its driver (nvidia-smi) and its EGL library (libEGL_nvidia),
# the mjlab venv (scripts/mjlab-venv.sh), for Unitree-Go2-Flat with unitree_rl_mjlab
# installed into it (trainer/mjlab/README.md; mjlab's own G1 and Go1 need nothing more),
# and Go to build tunebot. Everything it writes goes to a temporary directory it names at
# the end. It cannot run in CI (no GPU there): on a machine that lacks something it says
# what, and how to get it, and exits 2 without starting anything.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
task=${TUNEBOT_SMOKE_TASK:-Unitree-Go2-Flat}
rungs=50,100,150
while [[ $# -gt 0 ]]; do
  case $1 in
    --task) [[ $# -ge 2 && -n $2 ]] || { echo "gpu-smoke: --task needs a task id" >&2; exit 2; }; task=$2; shift 2 ;;
    --task=*) task=${1#--task=}; shift ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 0 ;;
    -*) echo "gpu-smoke: unknown flag $1 (usage: scripts/gpu-smoke.sh [--task TASK] [RUNGS])" >&2; exit 2 ;;
    *) [[ $1 =~ ^[0-9]+,[0-9]+,[0-9]+$ ]] || { echo "gpu-smoke: RUNGS $1 is not three comma separated iteration counts (e.g. 50,100,150)" >&2; exit 2; }
       rungs=$1; shift ;;
  esac
done
[[ -n $task ]] || { echo "gpu-smoke: the task is empty" >&2; exit 2; }
venv=${TUNEBOT_MJLAB_VENV:-$root/.venv/mjlab}
py=$venv/bin/python

missing=()
if ! command -v nvidia-smi >/dev/null 2>&1; then
  missing+=("no NVIDIA driver: nvidia-smi is not on PATH (this is not a CUDA machine)")
elif ! gpus=$(nvidia-smi --query-gpu=index,name --format=csv,noheader 2>&1) || [[ -z $gpus ]]; then
  missing+=("nvidia-smi lists no GPU: ${gpus:-nothing}")
fi
if ! { ldconfig -p 2>/dev/null || true; } | grep -q libEGL_nvidia; then
  missing+=("no libEGL_nvidia (the NVIDIA driver's EGL library): MuJoCo cannot render offscreen on the GPU; install the driver's EGL/GL libraries (e.g. libnvidia-gl-<version>)")
fi
if [[ ! -x $py ]]; then
  missing+=("no mjlab venv at $venv: build it with scripts/mjlab-venv.sh (or set TUNEBOT_MJLAB_VENV)")
fi
if ! command -v go >/dev/null 2>&1; then
  missing+=("no go on PATH: tunebot is built from this checkout (Go 1.26)")
fi
if [[ ${#missing[@]} -eq 0 ]]; then
  if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    missing+=("torch in $venv sees no CUDA device (torch.cuda.is_available() is false)")
  fi
  if ! MUJOCO_GL=egl "$py" - <<'EOF' 2>/dev/null; then
import mujoco
m = mujoco.MjModel.from_xml_string('<mujoco><worldbody><light pos="0 0 2"/><geom type="sphere" size=".1"/></worldbody></mujoco>')
r = mujoco.Renderer(m, 48, 64)
d = mujoco.MjData(m)
mujoco.mj_forward(m, d)
r.update_scene(d)
assert r.render().any()
EOF
    missing+=("MuJoCo cannot render with MUJOCO_GL=egl on this GPU (check the driver's EGL libraries)")
  fi
  if ! "$py" -m tunebot_mjlab --print-defaults --task "$task" >/dev/null 2>&1; then
    if [[ $task == Unitree-Go2-Flat ]]; then
      missing+=("task $task is not registered in the venv: install unitree_rl_mjlab into it (trainer/mjlab/README.md, Unitree-Go2-Flat)")
    else
      missing+=("task $task is not registered in the venv (python -m tunebot_mjlab --print-defaults --task $task says why)")
    fi
  fi
fi
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "gpu-smoke: this machine cannot run the GPU smoke test:" >&2
  for m in "${missing[@]}"; do echo "  - $m" >&2; done
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tunebot-gpu-smoke.XXXXXX")
echo "gpu-smoke: GPUs: $(echo "$gpus" | tr '\n' ';')  task: $task  rungs: $rungs  in $work" >&2
(cd "$root" && go build -o "$work/tunebot" ./cmd/tunebot)
{ echo "data_dir: $work/data"; cat "$root/trainer/mjlab/trainer.yaml"; } >"$work/tunebot.yaml"
cat >>"$work/tunebot.yaml" <<EOF
  job_timeout: 2h
  eval_timeout: 30m
session:
  task: $task
  tasks: [$task]
  gpus: [0]
  trial_count: 4
  rungs: [$rungs]
  promote: [4, 2, 1]
  num_envs: 4096
  eval_num_envs: 256
  eval_steps: 500
  eval_seeds: [0]
  final_eval_seeds: [1, 2]
  early_stop_patience: 4
EOF
# Unitree-Go2-Flat tunes the design's reward space (tunebot's default); any other task the
# space read from it, as checked in after review or as `tunebot space` prints it.
if [[ $task != Unitree-Go2-Flat ]]; then
  space=$(grep -lx "# Reward space of $task (.*" "$root"/trainer/mjlab/spaces/*.yaml 2>/dev/null | head -1 || true)
  if [[ -z $space ]]; then
    space=$work/space.yaml
    TUNEBOT_MJLAB_PYTHON=$py "$work/tunebot" space --task "$task" --config "$work/tunebot.yaml" >"$space"
  fi
  echo "gpu-smoke: reward space of $task from $space" >&2
  cat "$space" >>"$work/tunebot.yaml"
fi

start=$(date +%s)
# EGL on the GPU for the clips, whatever the shell says.
MUJOCO_GL=egl TUNEBOT_MJLAB_PYTHON=$py DEEPSEEK_API_KEY= "$work/tunebot" tune --config "$work/tunebot.yaml" --fallback --json \
  >"$work/summary.json" 2>"$work/tune.log" || {
  echo "gpu-smoke: the session failed; its log: $work/tune.log" >&2
  tail -40 "$work/tune.log" >&2
  exit 1
}
wall=$(( $(date +%s) - start ))

"$py" - "$work/summary.json" "$wall" <<'EOF'
import json, re, sys
from pathlib import Path

summary, wall = json.load(open(sys.argv[1])), int(sys.argv[2])
sess = Path(summary["outputs"]["session_dir"])
ended = re.compile(r"=== tunebot: (train|evaluate) job ended after ([0-9.]+)(ms|s|m)")
clip = re.compile(r"\[tunebot\] clip: (\d+) frames .* with MUJOCO_GL=(\w+) in ([0-9.]+) s, encoded in ([0-9.]+) s, (\d+) KiB")
unit = {"ms": 0.001, "s": 1, "m": 60}

def job_seconds(log):
  if not log.exists():
    return None
  times = [float(m[2]) * unit[m[3]] for m in ended.finditer(log.read_text(errors="replace"))]
  return times[-1] if times else None  # the newest run of the job

print(f"{'trial':>7} {'iters':>6} {'train s':>8} {'it/s':>6} {'eval s':>7} {'clip s':>7} {'enc s':>6} {'KiB':>5} {'GL':>6}  score")
for t in summary["trials"]:
  run = sess / f"trial-{t['number']:03d}-rung-{t['rung']}"
  train, ev = job_seconds(run / "train.log"), job_seconds(run / "evaluate.log")
  iters = t["iterations"] - ([0] + [x["iterations"] for x in summary["trials"] if x["number"] == t["number"] and x["rung"] == t["rung"] - 1])[-1]
  c = clip.search((run / "evaluate.log").read_text(errors="replace")) if (run / "evaluate.log").exists() else None
  fmt = lambda v, p=1: "—" if v is None else f"{v:.{p}f}"
  score = "—" if t["score"] is None else f"{t['score']:+.3f}"
  print(f"{t['number']:>4}@{t['rung']:<2} {iters:>6} {fmt(train):>8} {fmt(iters / train if train else None):>6} {fmt(ev):>7} "
        f"{fmt(float(c[3]) if c else None):>7} {fmt(float(c[4]) if c else None, 2):>6} {c[5] if c else '—':>5} {c[2] if c else '—':>6}  {score}"
        + ("" if t["clip"] else f"  ({t.get('clip_note') or 'no clip'})"))
print(f"session {summary['session'][:8]} {summary['state']} in {wall} s wall time; {summary.get('headline', '')}")
EOF
echo "gpu-smoke: everything is in $work" >&2
