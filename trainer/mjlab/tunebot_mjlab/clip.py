"""The evaluation clip of docs/design.md section 4: a short video of the policy walking.

A rollout of its own, after the measured ones: one environment built for it, the same
command schedule for every trial (standing, walking, turning; clipped to the task's command
ranges as the evaluation grid is) so clips compare, a camera following the robot's root body
at a distance fitting its size (camera_distance), rendered offscreen by MuJoCo and encoded to
H.264 MP4 by the ffmpeg of the pinned imageio-ffmpeg wheel. It shares nothing with the metric rollouts but the
checkpoint, so rendering cannot change the evaluation's numbers.

The OpenGL backend must be chosen before mujoco is imported (gl_backend): EGL when the job
has a GPU, OSMesa (software, no display) when it has none; MUJOCO_GL=egl|osmesa|glfw set by
the person wins, and MUJOCO_GL=disable turns clips off.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict
from pathlib import Path

FPS = 30
SECONDS = 5.0
WIDTH, HEIGHT = 480, 360

# (from second, name, vx m/s, vy m/s, wz rad/s), before evaluate.clip_grid fits it into the
# task's command ranges (mjlab 1.6.0's Go1 and G1 turn at most 0.5 rad/s).
SCHEDULE = (
  (0.0, "standing", 0.0, 0.0, 0.0),
  (1.0, "walking", 0.6, 0.0, 0.0),
  (3.0, "turning", 0.4, 0.0, 0.6),
)

OFF = ("disable", "disabled", "off", "false", "0")

# The camera stands CAMERA_SIZES times the robot's largest side away (G1: 1.22 m tall, 3.05 m;
# Go1: 0.58 m long, 1.44 m; what mjlab's own viewer settings for them say), within these bounds.
CAMERA_SIZES = 2.5
CAMERA_DISTANCE = (0.5, 20.0)


class ClipError(RuntimeError):
  """A clip that cannot be rendered; the evaluation stands without it."""


def gl_backend() -> str:
  """The MuJoCo OpenGL backend for the clip, set in MUJOCO_GL for the import that follows.

  A person's MUJOCO_GL (egl, osmesa, glfw, or disable to write no clip) is kept; otherwise
  EGL when this job was given a GPU that torch sees, else OSMesa. With EGL, the GPU is the
  job's first (MUJOCO_EGL_DEVICE_ID), unless the person chose one.
  """
  backend = os.environ.get("MUJOCO_GL", "").strip().lower()
  if backend not in ("egl", "osmesa", "glfw") and backend not in OFF:
    from tunebot_mjlab import tasks

    backend = "egl" if tasks.device().startswith("cuda") else "osmesa"
    os.environ["MUJOCO_GL"] = backend
    if backend == "egl":
      first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
      if first.isdigit():
        os.environ.setdefault("MUJOCO_EGL_DEVICE_ID", first)
  if backend == "osmesa":
    # OSMesa's llvmpipe and triton (which rsl_rl loads through torch._dynamo) each bring
    # an LLVM: loaded triton first they live together, the other way the process crashes.
    import torch._dynamo  # noqa: F401
  return backend


def command_at(t: float, schedule=SCHEDULE) -> tuple[float, float, float]:
  """The schedule's (vx, vy, wz) at second t."""
  cmd = schedule[0][2:]
  for start, _, vx, vy, wz in schedule:
    if t >= start:
      cmd = (vx, vy, wz)
  return cmd


def task_schedule(ranges) -> tuple:
  """SCHEDULE with each command clipped into the task's ranges (evaluate.command_ranges)."""
  from tunebot_mjlab import evaluate

  cells = evaluate.clip_grid(ranges, [(name, vx, vy, wz) for _, name, vx, vy, wz in SCHEDULE])
  return tuple((start, *cell) for (start, *_), cell in zip(SCHEDULE, cells))


def robot_size(model, geom_ids) -> float:
  """The largest side (m) of the box around the robot's geoms' centres in its initial pose
  (the model's first keyframe, mjlab's init_state, else qpos0): a humanoid's height, a
  quadruped's length."""
  import mujoco
  import numpy as np

  data = mujoco.MjData(model)
  if model.nkey:
    mujoco.mj_resetDataKeyframe(model, data, 0)
  mujoco.mj_kinematics(model, data)
  pos = data.geom_xpos[np.asarray(geom_ids, dtype=int)]
  if len(pos) == 0:
    raise ClipError("the robot has no geoms to size the camera by")
  return float((pos.max(axis=0) - pos.min(axis=0)).max())


def camera_distance(size: float) -> float:
  """How far the camera stands from a robot whose largest side is size metres."""
  lo, hi = CAMERA_DISTANCE
  return min(max(CAMERA_SIZES * size, lo), hi)


def render(task: str, checkpoint: str, out: str, poster: str, seed: int) -> dict:
  """Renders the clip of checkpoint to out (MP4) and its first frame to poster (PNG, when
  given); returns what it did: frames, seconds, size, backend, and render and encode times."""
  import copy

  import numpy as np
  import torch
  from mjlab.envs import ManagerBasedRlEnv
  from mjlab.rl import MjlabOnPolicyRunner, RslRlVecEnvWrapper
  from mjlab.viewer import ViewerConfig
  from mjlab.viewer.offscreen_renderer import OffscreenRenderer

  from tunebot_mjlab import evaluate, tasks

  backend = os.environ.get("MUJOCO_GL", "")
  _, env_cfg, agent_cfg, runner_cls = tasks.load(task)
  step_dt = env_cfg.sim.mujoco.timestep * env_cfg.decimation
  steps = math.ceil(SECONDS / step_dt)
  schedule = task_schedule(evaluate.command_ranges(env_cfg.commands.get(evaluate.COMMAND)))
  env_cfg = evaluate.eval_env_cfg(env_cfg, 1, steps, seed)
  v = env_cfg.viewer
  v.width, v.height = WIDTH, HEIGHT
  v.max_extra_envs, v.env_idx = 0, 0
  # The robot's root body, whatever the task's viewer follows, at a distance set below.
  v.origin_type = ViewerConfig.OriginType.ASSET_ROOT
  v.entity_name = "robot"
  # A software renderer draws plainly: shadows, reflections and multisampling make a frame
  # of OSMesa's ~25 times slower (1.5 s instead of 0.06 s at 480x360 on one core).
  software = backend == "osmesa"
  if software:
    v.enable_shadows = v.enable_reflections = False
  agent_cfg.logger = "tensorboard"
  agent_cfg.upload_model = False
  dev = tasks.device()
  torch.manual_seed(seed)

  frames = []
  t0 = time.perf_counter()
  env = ManagerBasedRlEnv(cfg=env_cfg, device=dev)
  renderer = None
  try:
    model = copy.copy(env.sim.mj_model)
    if software:
      model.vis.quality.offsamples = 0
    size = robot_size(env.sim.mj_model, env.scene["robot"].indexing.geom_ids.tolist())
    v.distance = camera_distance(size)
    renderer = OffscreenRenderer(model=model, cfg=v, scene=env.scene, sim_model=env.sim.model,
                                 expanded_fields=env.sim.expanded_fields)
    try:
      renderer.initialize()
    except Exception as e:
      raise ClipError(f"MuJoCo cannot render with MUJOCO_GL={backend}: {e}") from e

    def frame():
      # the command arrows and contacts the task draws, as its own videos show them
      renderer.update(env.sim.data, debug_vis_callback=env.update_visualizers)
      frames.append(renderer.render().copy())

    venv = RslRlVecEnvWrapper(env, clip_actions=agent_cfg.clip_actions)
    runner = (runner_cls or MjlabOnPolicyRunner)(venv, asdict(agent_cfg), None, dev)
    runner.load(checkpoint, load_cfg={"actor": True}, strict=True, map_location=dev)
    policy = runner.get_inference_policy(device=dev)
    cmd_term = env.command_manager.get_term(evaluate.COMMAND)

    venv.reset()
    cmd_term.vel_command_b[:] = torch.tensor(command_at(0.0, schedule), device=dev)
    obs = venv.get_observations()
    frame()
    want = round(SECONDS * FPS)
    with torch.inference_mode():
      for k in range(steps):
        venv.step(policy(obs))
        t = (k + 1) * step_dt
        # the schedule's command for the next step (a reset env gets it back too)
        cmd_term.vel_command_b[:] = torch.tensor(command_at(t, schedule), device=dev)
        obs = venv.get_observations()
        # frame i shows second i/FPS
        while len(frames) < want and t + 1e-9 >= len(frames) / FPS:
          frame()
  finally:
    if renderer is not None:
      renderer.close()
    env.close()
  render_s = time.perf_counter() - t0

  t1 = time.perf_counter()
  _encode(frames, out)
  if poster:
    _png(frames[0], poster)
  encode_s = time.perf_counter() - t1
  h, w = np.shape(frames[0])[:2]
  return {"frames": len(frames), "seconds": len(frames) / FPS, "size": Path(out).stat().st_size,
          "backend": backend, "robot_m": size, "camera_m": v.distance, "width": int(w), "height": int(h),
          "render_s": render_s, "encode_s": encode_s}


def _encode(frames, out: str) -> None:
  """H.264 in MP4 (yuv420p, moov first) through imageio-ffmpeg's pinned ffmpeg: what Slack,
  Discord and browsers play inline. Written beside out and renamed, so a reader never sees
  half a file."""
  import imageio_ffmpeg

  tmp = out + ".tmp.mp4"
  h, w = frames[0].shape[:2]
  gen = imageio_ffmpeg.write_frames(
    tmp, (w, h), fps=FPS, codec="libx264", pix_fmt_in="rgb24", pix_fmt_out="yuv420p",
    quality=None, macro_block_size=8, ffmpeg_log_level="error",
    output_params=["-crf", "28", "-preset", "veryfast", "-profile:v", "main", "-movflags", "+faststart"])
  gen.send(None)
  for f in frames:
    gen.send(f)
  gen.close()
  os.replace(tmp, out)


def _png(frame, path: str) -> None:
  from PIL import Image

  tmp = path + ".tmp.png"
  Image.fromarray(frame).save(tmp, format="PNG", optimize=True)
  os.replace(tmp, path)
