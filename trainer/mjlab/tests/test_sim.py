"""Real mjlab training and evaluation of the Go1 flat task on CPU, through the CLI as
tunebot runs it: train 2 iterations, resume for 1 more, evaluate twice (once rendering the
clip) and compare."""

import json
import os
import re
import subprocess
import sys

import pytest

GO1 = "Mjlab-Velocity-Flat-Unitree-Go1"
METRICS = {"velocity_error_linear", "velocity_error_angular", "action_acceleration",
           "orientation_error", "fall_rate", "foot_slip", "mechanical_power"}


def _cli(*args, cwd=None):
  # The adapter picks its OpenGL backend itself (OSMesa here: no GPU), as under tunebot.
  env = {k: v for k, v in os.environ.items() if k != "MUJOCO_GL"}
  r = subprocess.run([sys.executable, "-m", "tunebot_mjlab", *map(str, args)],
                     capture_output=True, text=True, timeout=900, cwd=cwd, env=env)
  assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
  return r


def _checkpoints(d):
  return sorted(int(m.group(1)) for p in d.iterdir() if (m := re.fullmatch(r"model_(\d+)\.pt", p.name)))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("go1")
  rc = tmp / "reward_config.json"
  rc.write_text(json.dumps({
    "weights": {"track_linear_velocity": 1.5, "body_orientation_l2": -1.0, "is_terminated": -200.0,
                "electrical_power": -0.001},
    "params": {"pose.std_walking_scale": 1.5},
  }))
  r0, r1 = tmp / "trial-000-rung-0", tmp / "trial-000-rung-1"
  _cli("train", "--task", GO1, "--run-dir", r0, "--reward-config", rc, "--iterations", 2,
       "--target-iterations", 2, "--start-iteration", 0, "--seed", 7, "--num-envs", 6, "--gpu-ids", "[0]")
  _cli("train", "--task", GO1, "--run-dir", r1, "--reward-config", rc, "--iterations", 1,
       "--target-iterations", 3, "--start-iteration", 2, "--seed", 7, "--num-envs", 6,
       "--resume-checkpoint", r0 / "model_1.pt")
  return tmp, r0, r1


def test_train_leaves_the_contract(runs):
  _, r0, _ = runs
  assert _checkpoints(r0)[-1] == 1  # RSL-RL: a run to 2 iterations ends with model_1.pt
  assert (r0 / "policy.onnx").stat().st_size > 0
  assert list(r0.glob("events.out.tfevents.*"))
  applied = json.loads((r0 / "params" / "rewards_applied.json").read_text())
  assert applied["upright"]["weight"] == 1.0 and applied["electrical_power"]["weight"] == -0.001


def test_policy_onnx_is_a_valid_model(runs):
  import onnx

  _, r0, _ = runs
  onnx.checker.check_model(onnx.load(str(r0 / "policy.onnx")))


def test_resume_continues_to_the_target(runs):
  _, r0, r1 = runs
  assert _checkpoints(r1) == [2]
  assert (r1 / "policy.onnx").is_file()
  import torch

  assert torch.load(r1 / "model_2.pt", map_location="cpu", weights_only=False)["iter"] == 2


@pytest.fixture(scope="module")
def evaluations(runs):
  """The same checkpoint evaluated twice, the second time also rendering the clip."""
  tmp, _, r1 = runs
  outs, logs = [], []
  for name, clip in (("a.json", []), ("b.json", ["--clip-output", tmp / "clip", "--clip-poster", tmp / "poster.png"])):
    out = tmp / name
    r = _cli("evaluate", "--task", GO1, "--checkpoint", r1 / "model_2.pt", "--output", out, "--seeds", "0,1",
             "--num-envs", 5, "--steps", 40, "--run-dir", r1, *clip)
    outs.append(out.read_text())
    logs.append(r.stdout)
  return tmp, outs, logs


def test_evaluate_is_deterministic_and_the_clip_changes_nothing(evaluations):
  _, outs, _ = evaluations
  # the second run rendered a clip after its measured rollouts: the numbers are the same
  assert outs[0] == outs[1]
  ev = json.loads(outs[0])
  assert set(ev) == {"task", "checkpoint", "iteration", "seeds", "metrics", "perSeed"}
  assert (ev["task"], ev["checkpoint"], ev["iteration"], ev["seeds"]) == (GO1, "model_2.pt", 2, [0, 1])
  assert set(ev["metrics"]) == METRICS
  assert [s["seed"] for s in ev["perSeed"]] == [0, 1]
  for s in ev["perSeed"]:
    assert set(s["metrics"]) == METRICS
    assert all(v >= 0 for v in s["metrics"].values())
  for m in METRICS:
    assert ev["metrics"][m] == pytest.approx((ev["perSeed"][0]["metrics"][m] + ev["perSeed"][1]["metrics"][m]) / 2)
  # the grid it measured, clipped to the Go1's ranges (vx, vy ±1, wz ±0.5), beside it
  from tunebot_mjlab import evaluate

  grid = json.loads((evaluations[0] / evaluate.GRID_FILE).read_text())
  assert grid["grid"] == [{"name": n, "vx": vx, "vy": vy, "wz": wz} for n, vx, vy, wz in evaluate.COMMAND_GRID]
  # The robot is commanded to move in 4 of 5 grid cells, so an untrained policy errs.
  assert ev["metrics"]["velocity_error_linear"] > 0.05
  assert 0 <= ev["metrics"]["fall_rate"] <= 1


def test_clip_is_a_real_h264_video(evaluations):
  import imageio_ffmpeg
  import numpy as np
  from PIL import Image

  from tunebot_mjlab import clip

  tmp, _, logs = evaluations
  assert "rendered with MUJOCO_GL=osmesa" in logs[1], logs[1][-2000:]
  # the camera follows the Go1 (0.58 m long) from about 1.5 m, as mjlab's viewer does
  cam = re.search(r"camera ([0-9.]+) m from the root body", logs[1])
  assert cam and float(cam[1]) == pytest.approx(1.45, abs=0.15), logs[1][-2000:]
  data = (tmp / "clip").read_bytes()
  assert data[4:8] == b"ftyp" and b"avc1" in data[:4096]  # MP4, H.264, moov first (+faststart)
  reader = imageio_ffmpeg.read_frames(str(tmp / "clip"))
  meta = reader.__next__()
  assert tuple(meta["size"]) == (clip.WIDTH, clip.HEIGHT) and meta["fps"] == clip.FPS
  frames = [np.frombuffer(f, np.uint8).reshape(clip.HEIGHT, clip.WIDTH, 3) for f in reader]
  assert len(frames) == round(clip.SECONDS * clip.FPS)
  # the robot moves: the walking half differs from the standing start
  assert np.abs(frames[-1].astype(int) - frames[0].astype(int)).mean() > 1
  poster = Image.open(tmp / "poster.png")
  assert poster.size == (clip.WIDTH, clip.HEIGHT)
  assert not (tmp / "clip.tmp.mp4").exists()


def test_clip_schedule_stands_walks_and_turns():
  from tunebot_mjlab import clip

  assert clip.command_at(0.5) == (0.0, 0.0, 0.0)
  assert clip.command_at(2.0)[0] > 0 and clip.command_at(2.0)[2] == 0
  assert clip.command_at(4.0)[2] > 0


def test_gl_backend_follows_the_gpu_unless_set(monkeypatch):
  from tunebot_mjlab import clip

  monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
  monkeypatch.delenv("MUJOCO_GL", raising=False)
  assert clip.gl_backend() == "osmesa" and os.environ["MUJOCO_GL"] == "osmesa"
  monkeypatch.setenv("MUJOCO_GL", "EGL")
  assert clip.gl_backend() == "egl"
  monkeypatch.setenv("MUJOCO_GL", "disable")
  assert clip.gl_backend() == "disable"
