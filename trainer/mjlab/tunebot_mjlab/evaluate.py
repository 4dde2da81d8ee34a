"""The evaluate job of docs/design.md sections 3 and 4.

A fixed protocol, independent of the reward weights: the deterministic policy (the actor's
mean, no action noise), a fixed command grid clipped to the task's own command ranges and
assigned round robin over the environments,
fixed seeds, no pushes and no observation noise, and episodes long enough that no env
times out. The seven metrics come from simulation state, per seed and as the mean over
seeds, lower is better:

  velocity_error_linear   mean |v_cmd_xy - v_base_xy| in the base frame (m/s)
  velocity_error_angular  mean |w_cmd_z - w_base_z| (rad/s)
  action_acceleration     mean sum over joints of (a_t - 2 a_t-1 + a_t-2)^2 (raw policy actions)
  orientation_error       mean tilt of the base from upright, from projected gravity (rad)
  fall_rate               fraction of envs with a non-timeout termination
  foot_slip               mean horizontal foot speed while the foot is in contact (m/s)
  mechanical_power        mean sum over joints of max(tau * qdot, 0) (W)

Each seed builds its own environment, so a seed's numbers do not depend on the other seeds
evaluated with it, and the same checkpoint and seeds give the same numbers.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import asdict
from pathlib import Path

from tunebot_mjlab import tasks

METRICS = (
  "velocity_error_linear",
  "velocity_error_angular",
  "action_acceleration",
  "orientation_error",
  "fall_rate",
  "foot_slip",
  "mechanical_power",
)

# (name, vx m/s, vy m/s, wz rad/s), before clip_grid fits it into the task's own command
# ranges (inside the initial ranges of mjlab 1.6.0's Go1 and G1: vx, vy ±1, wz ±0.5).
COMMAND_GRID = (
  ("standing", 0.0, 0.0, 0.0),
  ("forward", 0.8, 0.0, 0.0),
  ("lateral", 0.0, 0.5, 0.0),
  ("turning", 0.0, 0.0, 0.5),
  ("combined", 0.6, 0.3, 0.3),
)

COMMAND = "twist"
CONTACT_SENSOR = "feet_ground_contact"
# The command's ranges clip_grid reads, in the order of a grid cell's (vx, vy, wz).
RANGES = ("lin_vel_x", "lin_vel_y", "ang_vel_z")
GRID_FILE = "command_grid.json"


class EvalError(RuntimeError):
  """An evaluation that cannot run as asked; the message names the problem."""


def command_ranges(cmd) -> dict[str, tuple[float, float]]:
  """The (low, high) of each of the velocity command's RANGES, checked: a missing range, a
  bound that is not a finite number or a low above its high is an EvalError naming it."""
  ranges = getattr(cmd, "ranges", None)
  out = {}
  for name in RANGES:
    r = getattr(ranges, name, None)
    try:
      lo, hi = (float(x) for x in r)
    except (TypeError, ValueError):
      raise EvalError(f"the {COMMAND!r} command's ranges.{name} is {r!r}, not a (low, high) pair of numbers") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
      raise EvalError(f"the {COMMAND!r} command's ranges.{name} is ({lo}, {hi}): want finite numbers, low <= high")
    out[name] = (lo, hi)
  return out


def clip_grid(ranges: dict[str, tuple[float, float]], grid=COMMAND_GRID):
  """grid with each command clipped into the task's ranges (command_ranges): a humanoid that
  was never asked to turn faster than its range is not measured there. A cell keeps its name
  when clipping moves it (a task without lateral commands measures "lateral" standing)."""
  out = []
  for name, *cmd in grid:
    out.append((name, *(min(max(v, ranges[r][0]), ranges[r][1]) for v, r in zip(cmd, RANGES))))
  return tuple(out)


def task_grid(env_cfg):
  """The command grid clipped to env_cfg's own velocity command ranges, read before
  eval_env_cfg pins those ranges to zero."""
  cmd = env_cfg.commands.get(COMMAND)
  if cmd is None:
    raise EvalError(f"the task has no {COMMAND!r} velocity command; evaluation needs one")
  return clip_grid(command_ranges(cmd))


def eval_env_cfg(env_cfg, num_envs: int, steps: int, seed: int):
  """Turns the task's training env config into the evaluation protocol's."""
  from mjlab.tasks.velocity.mdp import UniformVelocityCommandCfg

  env_cfg.scene.num_envs = num_envs
  env_cfg.seed = seed
  # Long enough that no env reaches its time limit inside the evaluation window.
  env_cfg.episode_length_s = (steps + 10) * env_cfg.sim.mujoco.timestep * env_cfg.decimation
  for group in env_cfg.observations.values():
    group.enable_corruption = False
  for name in [n for n, ev in env_cfg.events.items() if getattr(ev, "mode", None) == "interval"]:
    env_cfg.events.pop(name)  # pushes
  env_cfg.curriculum = {}
  cmd = env_cfg.commands.get(COMMAND)
  if not isinstance(cmd, UniformVelocityCommandCfg):
    raise EvalError(f"the task has no {COMMAND!r} velocity command; evaluation needs one")
  cmd.resampling_time_range = (1e9, 1e9)
  cmd.heading_command = False
  cmd.ranges.heading = None
  cmd.rel_standing_envs = 0.0
  cmd.rel_heading_envs = 0.0
  cmd.rel_forward_envs = 0.0
  cmd.rel_world_envs = 0.0
  cmd.init_velocity_prob = 0.0
  cmd.ranges.lin_vel_x = (0.0, 0.0)
  cmd.ranges.lin_vel_y = (0.0, 0.0)
  cmd.ranges.ang_vel_z = (0.0, 0.0)
  return env_cfg


def _foot_sites(env_cfg) -> tuple[str, ...]:
  """The foot sites the task's foot_slip reward uses, or the four Unitree feet."""
  term = env_cfg.rewards.get("foot_slip")
  if term is not None:
    ac = (term.params or {}).get("asset_cfg")
    names = getattr(ac, "site_names", None)
    if names:
      return tuple(names) if not isinstance(names, str) else (names,)
  return ("FR", "FL", "RR", "RL")


def evaluate_seed(task: str, checkpoint: str, seed: int, num_envs: int, steps: int):
  """Returns (metrics, the clipped command grid the seed was measured on)."""
  import torch
  from mjlab.envs import ManagerBasedRlEnv
  from mjlab.rl import MjlabOnPolicyRunner, RslRlVecEnvWrapper

  _, env_cfg, agent_cfg, runner_cls = tasks.load(task)
  cells = task_grid(env_cfg)
  env_cfg = eval_env_cfg(env_cfg, num_envs, steps, seed)
  sites = _foot_sites(env_cfg)
  agent_cfg.logger = "tensorboard"
  agent_cfg.upload_model = False
  dev = tasks.device()
  torch.manual_seed(seed)

  env = ManagerBasedRlEnv(cfg=env_cfg, device=dev)
  try:
    venv = RslRlVecEnvWrapper(env, clip_actions=agent_cfg.clip_actions)
    runner = (runner_cls or MjlabOnPolicyRunner)(venv, asdict(agent_cfg), None, dev)
    runner.load(checkpoint, load_cfg={"actor": True}, strict=True, map_location=dev)
    policy = runner.get_inference_policy(device=dev)

    robot = env.scene["robot"]
    site_ids, _ = robot.find_sites(sites, preserve_order=True)
    contact = env.scene[CONTACT_SENSOR] if CONTACT_SENSOR in env.scene.sensors else None
    joint_ids, _ = robot.find_joints((".*",))
    cmd_term = env.command_manager.get_term(COMMAND)
    grid = torch.tensor([[vx, vy, wz] for _, vx, vy, wz in cells], device=dev)
    cmd = grid[torch.arange(num_envs, device=dev) % len(cells)]

    venv.reset()
    cmd_term.vel_command_b[:] = cmd
    obs = venv.get_observations()
    sums = {m: 0.0 for m in METRICS if m != "fall_rate"}
    counts = {m: 0.0 for m in sums}
    fell = torch.zeros(num_envs, dtype=torch.bool, device=dev)
    a1 = a2 = None
    with torch.inference_mode():
      for _ in range(steps):
        action = policy(obs)
        obs, _, dones, _ = venv.step(action)
        # A reset env gets a fresh (zero) command from the term; put the grid back.
        cmd_term.vel_command_b[:] = cmd
        obs = venv.get_observations()
        fell |= env.termination_manager.terminated
        live = ~dones.bool()
        n = float(live.sum())
        if n == 0:
          continue
        d = robot.data
        lin = torch.linalg.norm(cmd[:, :2] - d.root_link_lin_vel_b[:, :2], dim=1)
        ang = torch.abs(cmd[:, 2] - d.root_link_ang_vel_b[:, 2])
        g = d.projected_gravity_b
        tilt = torch.atan2(torch.linalg.norm(g[:, :2], dim=1), -g[:, 2])
        power = torch.clamp(d.qfrc_actuator[:, joint_ids] * d.joint_vel[:, joint_ids], min=0.0).sum(dim=1)
        for name, v in (("velocity_error_linear", lin), ("velocity_error_angular", ang),
                        ("orientation_error", tilt), ("mechanical_power", power)):
          sums[name] += float(v[live].sum())
          counts[name] += n
        a = action.detach().clone()
        if a1 is not None and a2 is not None:
          acc = torch.sum(torch.square(a - 2 * a1 + a2), dim=1)
          sums["action_acceleration"] += float(acc[live].sum())
          counts["action_acceleration"] += n
        a2, a1 = a1, a
        if contact is not None and contact.data.found is not None:
          in_contact = (contact.data.found > 0) & live.unsqueeze(1)
          speed = torch.linalg.norm(d.site_lin_vel_w[:, site_ids, :2], dim=-1)
          sums["foot_slip"] += float((speed * in_contact).sum())
          counts["foot_slip"] += float(in_contact.sum())
  finally:
    env.close()

  out = {m: (sums[m] / counts[m] if counts[m] > 0 else 0.0) for m in sums}
  out["fall_rate"] = float(fell.float().mean())
  return {m: _round(out[m]) for m in METRICS}, cells


def _round(x: float) -> float:
  if not math.isfinite(x):
    raise EvalError(f"a metric is not finite ({x}); the policy or the simulation diverged")
  return float(f"{max(x, 0.0):.9g}")


_CKPT = re.compile(r"model_(\d+)\.pt$")


def run(args) -> int:
  try:
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
  except ValueError:
    raise EvalError(f"--seeds {args.seeds!r} is not a comma separated list of integers") from None
  if not seeds:
    raise EvalError("--seeds is empty")
  if args.num_envs < 1 or args.steps < 1:
    raise EvalError("--num-envs and --steps must be at least 1")
  ckpt = Path(args.checkpoint)
  if not ckpt.is_file():
    raise EvalError(f"checkpoint {args.checkpoint} does not exist")
  m = _CKPT.search(ckpt.name)
  if m:
    iteration = int(m.group(1))
  else:
    import torch

    iteration = int(torch.load(ckpt, map_location="cpu", weights_only=False).get("iter", 0))

  per_seed = []
  for seed in seeds:
    metrics, cells = evaluate_seed(args.task, str(ckpt), seed, args.num_envs, args.steps)
    print(f"[tunebot] seed {seed}: " + ", ".join(f"{k}={v:.4g}" for k, v in metrics.items()), flush=True)
    per_seed.append({"seed": seed, "metrics": metrics})
  mean = {m: _round(sum(s["metrics"][m] for s in per_seed) / len(per_seed)) for m in METRICS}
  result = {
    "task": args.task,
    "checkpoint": ckpt.name,
    "iteration": iteration,
    "seeds": seeds,
    "metrics": mean,
    "perSeed": per_seed,
  }
  out = Path(args.output)
  out.parent.mkdir(parents=True, exist_ok=True)
  tmp = out.with_name(out.name + ".tmp")
  with open(tmp, "w", encoding="utf-8") as f:
    json.dump(result, f, indent=2)
    f.write("\n")
  os.replace(tmp, out)
  print(f"[tunebot] wrote {out}", flush=True)
  write_grid(out.with_name(GRID_FILE), args.task, cells)
  if args.clip_output:
    write_clip(args, seeds[0])
  return 0


def write_grid(path: Path, task: str, cells) -> None:
  """Records the command grid this evaluation measured, clipped to the task's ranges, beside
  evaluation.json (whose fields tunebot reads strictly) and in the log."""
  grid = [{"name": n, "vx": vx, "vy": vy, "wz": wz} for n, vx, vy, wz in cells]
  tmp = path.with_name(path.name + ".tmp")
  with open(tmp, "w", encoding="utf-8") as f:
    json.dump({"task": task, "grid": grid}, f, indent=2)
    f.write("\n")
  os.replace(tmp, path)
  print("[tunebot] command grid (vx m/s, vy m/s, wz rad/s), clipped to the task's ranges: "
        + ", ".join(f"{n} ({vx:g}, {vy:g}, {wz:g})" for n, vx, vy, wz in cells), flush=True)


def write_clip(args, seed: int) -> None:
  """Renders the clip after evaluation.json is written. A clip that cannot be rendered is
  said in the log and leaves none: the evaluation stands without it (tunebot reports that
  the trainer wrote no clip)."""
  from tunebot_mjlab import clip

  backend = os.environ.get("MUJOCO_GL", "")
  if backend in clip.OFF:
    print(f"[tunebot] clip: not rendered, MUJOCO_GL={backend} turns rendering off", flush=True)
    return
  try:
    r = clip.render(args.task, args.checkpoint, args.clip_output, args.clip_poster, seed)
  except Exception as e:  # the clip is a picture, not the verdict: never fail the evaluation
    print(f"[tunebot] clip: not rendered ({type(e).__name__}: {e})", flush=True)
    return
  print(f"[tunebot] clip: {r['frames']} frames ({r['seconds']:.1f} s) {r['width']}x{r['height']} rendered with "
        f"MUJOCO_GL={r['backend']} in {r['render_s']:.1f} s, encoded in {r['encode_s']:.1f} s, "
        f"{r['size'] / 1024:.0f} KiB, camera {r['camera_m']:.2f} m from the root body (robot {r['robot_m']:.2f} m): "
        f"{args.clip_output}", flush=True)
