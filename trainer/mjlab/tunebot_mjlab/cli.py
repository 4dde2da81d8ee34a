"""Command line of the adapter: train, evaluate, check, space and --print-defaults.

Flags follow tunebot's sim trainer (tunebot sim-train / sim-eval), so the same argv
templates fit both; see config.example.yaml.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _parser() -> argparse.ArgumentParser:
  p = argparse.ArgumentParser(prog="python -m tunebot_mjlab", description=__doc__)
  p.add_argument("--print-defaults", action="store_true",
                 help="print the installed task's reward weights and params as a tunebot reward configuration")
  p.add_argument("--task", help="task id (with --print-defaults)")
  sub = p.add_subparsers(dest="cmd")

  t = sub.add_parser("train", help="train (or resume) a policy into a run dir")
  t.add_argument("--task", required=True)
  t.add_argument("--run-dir", required=True)
  t.add_argument("--reward-config", help="tunebot reward configuration (JSON)")
  t.add_argument("--iterations", type=int, required=True, help="iterations this job adds")
  t.add_argument("--target-iterations", type=int, default=0, help="total iterations to reach")
  t.add_argument("--start-iteration", type=int, default=0)
  t.add_argument("--seed", type=int, default=42)
  t.add_argument("--num-envs", type=int, default=4096)
  t.add_argument("--gpu-ids", default="", help="JSON list; the GPU itself comes from CUDA_VISIBLE_DEVICES")
  t.add_argument("--run-name", default="")
  t.add_argument("--resume-checkpoint", default="")

  e = sub.add_parser("evaluate", help="evaluate a checkpoint into evaluation.json")
  e.add_argument("--task", required=True)
  e.add_argument("--checkpoint", required=True)
  e.add_argument("--output", required=True)
  e.add_argument("--seeds", default="0", help="comma separated")
  e.add_argument("--num-envs", type=int, default=256)
  e.add_argument("--steps", type=int, default=1000)
  e.add_argument("--run-dir", default="", help="accepted for the contract; evaluation writes no events")
  e.add_argument("--gpu-ids", default="")
  e.add_argument("--clip-output", default="",
                 help="write a clip of the policy here (MP4), after the measured rollouts; empty: none")
  e.add_argument("--clip-poster", default="", help="write the clip's first frame here (PNG); empty: none")

  s = sub.add_parser("space", help="print the task's reward terms, weights and scalar params as JSON (for tunebot space)")
  s.add_argument("--task", required=True)

  c = sub.add_parser("check", help="report versions, task registration and GPUs as JSON (for tunebot doctor)")
  c.add_argument("--task", required=True)
  return p


def check(task: str) -> dict:
  """What tunebot doctor asks: importable packages, task registration, visible GPUs."""
  from importlib import metadata

  out: dict = {"packages": {}, "missing": [], "task": task, "registered": False, "error": "", "gpus": []}
  for pkg in ("mjlab", "mujoco", "mujoco-warp", "warp-lang", "rsl-rl-lib", "torch", "onnx", "tensorboard",
              "imageio-ffmpeg"):
    try:
      out["packages"][pkg] = metadata.version(pkg)
    except metadata.PackageNotFoundError:
      out["missing"].append(pkg)
  try:
    from tunebot_mjlab import tasks

    tasks.load(task)
    out["registered"] = True
  except Exception as e:  # reported, not raised: doctor prints it as what to do
    out["error"] = str(e)
  try:
    import torch

    if torch.cuda.is_available():
      out["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
  except Exception as e:
    out["error"] = out["error"] or f"torch: {e}"
  return out


def print_defaults(task: str) -> dict:
  from tunebot_mjlab import names, tasks

  tm, env_cfg, _, _ = tasks.load(task)
  return names.task_defaults(tm, names.copy_rewards(env_cfg.rewards))


def space(task: str) -> dict:
  """What `tunebot space` builds a reward space from: the task's own reward terms, in the
  order of env_cfg.rewards, with their weights, functions and scalar params; and, for a task
  with a name map, the names that map accepts (a configuration in only those names is read
  through the map) and the task's defaults in those names (what --print-defaults prints)."""
  from importlib import metadata

  from tunebot_mjlab import names, tasks

  tm, env_cfg, _, _ = tasks.load(task)
  return {
    "task": task,
    "mjlab": metadata.version("mjlab"),
    "terms": names.describe(env_cfg.rewards),
    "table_names": sorted(set(tm.weights) | set(tm.params)),
    "table_defaults": names.task_defaults(tm, names.copy_rewards(env_cfg.rewards)) if tm.weights else None,
  }


def main(argv: list[str] | None = None) -> int:
  args = _parser().parse_args(argv)
  os.environ.setdefault("WANDB_MODE", "disabled")
  # Only an evaluation's clip renders; its OpenGL backend is chosen before mujoco loads.
  if args.cmd == "evaluate" and args.clip_output:
    from tunebot_mjlab.clip import gl_backend

    gl_backend()
  else:
    os.environ["MUJOCO_GL"] = "disable"
  from tunebot_mjlab.evaluate import EvalError
  from tunebot_mjlab.names import RewardConfigError
  from tunebot_mjlab.tasks import TaskNotFound
  from tunebot_mjlab.train import TrainError

  try:
    if args.print_defaults:
      if not args.task:
        print("tunebot_mjlab: --print-defaults needs --task", file=sys.stderr)
        return 2
      json.dump(print_defaults(args.task), sys.stdout, indent=2, sort_keys=True)
      print()
      return 0
    if args.cmd == "train":
      from tunebot_mjlab import train

      return train.run(args)
    if args.cmd == "evaluate":
      from tunebot_mjlab import evaluate

      return evaluate.run(args)
    if args.cmd == "space":
      json.dump(space(args.task), sys.stdout, indent=2)
      print()
      return 0
    if args.cmd == "check":
      json.dump(check(args.task), sys.stdout, indent=2)
      print()
      return 0
  except (RewardConfigError, TaskNotFound, TrainError, EvalError) as e:
    print(f"tunebot_mjlab: {e}", file=sys.stderr)
    return 1
  _parser().print_usage(sys.stderr)
  return 2
