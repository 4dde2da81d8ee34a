"""The train job of docs/design.md section 4 for an mjlab + RSL-RL velocity task.

Leaves in the run dir: TensorBoard event files, model_<iteration>.pt checkpoints (RSL-RL
numbering: a run to T iterations ends with model_<T-1>.pt) and policy.onnx, exported with
every checkpoint.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict
from pathlib import Path

from tunebot_mjlab import names, tasks

POLICY_FILE = "policy.onnx"


class TrainError(RuntimeError):
  """A train job that cannot run as asked; the message names the problem."""


def read_reward_config(path: str | None) -> dict | None:
  if not path:
    return None
  try:
    with open(path, encoding="utf-8") as f:
      return json.load(f)
  except OSError as e:
    raise TrainError(f"reading reward config {path}: {e.strerror}") from None
  except json.JSONDecodeError as e:
    raise TrainError(f"reward config {path} is not valid JSON: {e}") from None


def prepare(task: str, reward_config: dict | None, num_envs: int, seed: int):
  """Loads the task and applies everything that needs no simulation; raises before any
  simulation starts when the configuration does not fit the task."""
  tm, env_cfg, agent_cfg, runner_cls = tasks.load(task)
  applied = {}
  if reward_config is not None:
    applied = names.apply_reward_config(tm, env_cfg.rewards, reward_config)
  env_cfg.scene.num_envs = num_envs
  env_cfg.seed = seed
  agent_cfg.seed = seed
  # TensorBoard only, never wandb, and nothing uploaded.
  agent_cfg.logger = "tensorboard"
  agent_cfg.upload_model = False
  return tm, env_cfg, agent_cfg, runner_cls, applied


def policy_runner(base):
  """A subclass of the task's runner that also writes policy.onnx next to every checkpoint.

  mjlab's velocity runner exports <dirname>.onnx with metadata on save; pointing its export
  path at policy.onnx keeps that metadata. A runner without that hook gets a plain export.
  """
  has_hook = hasattr(base, "_get_export_paths")

  class Runner(base):
    if has_hook:

      @staticmethod
      def _get_export_paths(checkpoint_path: str):
        d = Path(checkpoint_path).parent
        return d, POLICY_FILE, d / POLICY_FILE

    def save(self, path, infos=None):
      super().save(path, infos)
      out = Path(path).parent / POLICY_FILE
      if not has_hook or not out.exists() or out.stat().st_mtime < Path(path).stat().st_mtime:
        self.export_policy_to_onnx(str(out.parent), POLICY_FILE)

  Runner.__name__ = f"Tunebot{base.__name__}"
  return Runner


_CKPT = re.compile(r"^model_(\d+)\.pt$")


def newest_checkpoint(run_dir: Path) -> int:
  best = -1
  for p in run_dir.iterdir():
    m = _CKPT.match(p.name)
    if m:
      best = max(best, int(m.group(1)))
  return best


def run(args) -> int:
  if args.iterations < 1:
    raise TrainError(f"--iterations must be at least 1, got {args.iterations}")
  run_dir = Path(args.run_dir).resolve()
  run_dir.mkdir(parents=True, exist_ok=True)
  if args.resume_checkpoint and not os.path.isfile(args.resume_checkpoint):
    raise TrainError(f"resume checkpoint {args.resume_checkpoint} does not exist")
  if not args.resume_checkpoint and args.start_iteration:
    raise TrainError(
      f"--start-iteration {args.start_iteration} without --resume-checkpoint: nothing to resume"
    )

  cfg = read_reward_config(args.reward_config)
  tm, env_cfg, agent_cfg, runner_cls, applied = prepare(args.task, cfg, args.num_envs, args.seed)
  agent_cfg.max_iterations = args.iterations
  if args.run_name:
    agent_cfg.run_name = args.run_name

  import torch
  from mjlab.envs import ManagerBasedRlEnv
  from mjlab.rl import MjlabOnPolicyRunner, RslRlVecEnvWrapper
  from mjlab.utils.os import dump_yaml

  dev = tasks.device()
  print(f"[tunebot] task={args.task} device={dev} seed={args.seed} num_envs={args.num_envs} "
        f"iterations={args.iterations} resume={bool(args.resume_checkpoint)}", flush=True)
  (run_dir / "params").mkdir(exist_ok=True)
  with open(run_dir / "params" / "rewards_applied.json", "w", encoding="utf-8") as f:
    json.dump(applied, f, indent=2, sort_keys=True)
  dump_yaml(run_dir / "params" / "agent.yaml", asdict(agent_cfg))

  env = ManagerBasedRlEnv(cfg=env_cfg, device=dev)
  try:
    env = RslRlVecEnvWrapper(env, clip_actions=agent_cfg.clip_actions)
    runner = policy_runner(runner_cls or MjlabOnPolicyRunner)(env, asdict(agent_cfg), str(run_dir), dev)
    start = 0
    if args.resume_checkpoint:
      runner.load(args.resume_checkpoint, map_location=dev)
      # RSL-RL stores the index of the last finished iteration and would run it again;
      # continue after it, so N more iterations end at model_<target-1>.pt as a fresh run
      # to the same target would.
      loaded = int(torch.load(args.resume_checkpoint, map_location="cpu", weights_only=False)["iter"])
      start = loaded + 1
      runner.current_learning_iteration = start
      if args.start_iteration and args.start_iteration != start:
        print(f"[tunebot] warning: checkpoint ends at iteration {loaded}, "
              f"--start-iteration says {args.start_iteration}; continuing from {start}", flush=True)
    runner.learn(num_learning_iterations=args.iterations, init_at_random_ep_len=True)
  finally:
    env.close()

  want = start + args.iterations - 1
  got = newest_checkpoint(run_dir)
  if got < want:
    raise TrainError(f"training ended without model_{want}.pt (newest is model_{got}.pt)")
  if args.target_iterations and got < args.target_iterations - 1:
    raise TrainError(
      f"model_{got}.pt is short of the target of {args.target_iterations} iterations: "
      f"resume from iteration {start} plus {args.iterations} does not reach it"
    )
  if not (run_dir / POLICY_FILE).is_file():
    raise TrainError(f"ONNX export did not write {POLICY_FILE} (see the log above)")
  print(f"[tunebot] done: model_{got}.pt and {POLICY_FILE} in {run_dir}", flush=True)
  return 0
