"""The G1 humanoid as the proof that any mjlab velocity task is tunable: a short real session
on CPU through the CLI, as tunebot runs it. Two trials in the task's own names from the
checked-in space (trainer/mjlab/spaces/g1.yaml), the baseline's defaults and a proposal that
moves four of them to their bounds, each trained for 2 iterations, evaluated on the command grid
clipped to the G1's ranges and rendered as a clip; the two must differ in metrics and in clips."""

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

G1 = "Mjlab-Velocity-Flat-Unitree-G1"
SPACE = Path(__file__).resolve().parent.parent / "spaces" / "g1.yaml"
METRICS = {"velocity_error_linear", "velocity_error_angular", "action_acceleration",
           "orientation_error", "fall_rate", "foot_slip", "mechanical_power"}
# The proposal: each value is a bound of g1.yaml's term or param.
PROPOSAL = {"upright": "max", "action_rate_l2": "min", "track_linear_velocity": "min", "upright.std": "min"}


def _cli(*args):
  env = {k: v for k, v in os.environ.items() if k != "MUJOCO_GL"}  # the adapter picks OSMesa
  r = subprocess.run([sys.executable, "-m", "tunebot_mjlab", *map(str, args)],
                     capture_output=True, text=True, timeout=1800, env=env)
  assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
  return r.stdout


def _configs():
  """The baseline (g1.yaml's defaults) and the proposal, as tunebot writes reward_config.json."""
  import yaml

  # float(): PyYAML (YAML 1.1) reads -1e-05 as a string; tunebot's YAML reads a number
  space = yaml.safe_load(SPACE.read_text())["reward_space"]
  base = {"weights": {t["name"]: float(t["default"]) for t in space["terms"]},
          "params": {p["name"]: float(p["default"]) for p in space["params"]}}
  prop = json.loads(json.dumps(base))
  for name, bound in PROPOSAL.items():
    entry = next(e for e in space["terms"] + space["params"] if e["name"] == name)
    prop["params" if "." in name else "weights"][name] = float(entry[bound])
  return base, prop


@pytest.fixture(scope="module")
def trials(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("g1")
  out = []
  for i, cfg in enumerate(_configs()):
    run = tmp / f"trial-{i:03d}-rung-0"
    run.mkdir()
    (run / "reward_config.json").write_text(json.dumps(cfg))
    _cli("train", "--task", G1, "--run-dir", run, "--reward-config", run / "reward_config.json",
         "--iterations", 2, "--target-iterations", 2, "--seed", 7, "--num-envs", 4, "--gpu-ids", "[0]")
    log = _cli("evaluate", "--task", G1, "--checkpoint", run / "model_1.pt", "--output", run / "evaluation.json",
               "--seeds", 0, "--num-envs", 5, "--steps", 30, "--run-dir", run,
               "--clip-output", run / "clip.mp4", "--clip-poster", run / "clip-poster.png")
    out.append((run, cfg, log))
  return out


def test_g1_trials_train_with_their_own_weights(trials):
  for run, cfg, _ in trials:
    applied = json.loads((run / "params" / "rewards_applied.json").read_text())
    assert applied["upright"] == {"weight": cfg["weights"]["upright"], "std": cfg["params"]["upright.std"]}
    assert applied["self_collisions"]["weight"] == -1.0
    assert (run / "policy.onnx").stat().st_size > 0
  assert trials[0][1] != trials[1][1]


def test_g1_is_evaluated_on_its_own_command_grid(trials):
  from tunebot_mjlab import evaluate, tasks

  _, env_cfg, _, _ = tasks.load(G1)
  want = [{"name": n, "vx": vx, "vy": vy, "wz": wz} for n, vx, vy, wz in evaluate.task_grid(env_cfg)]
  for run, _, log in trials:
    ev = json.loads((run / "evaluation.json").read_text())
    assert ev["task"] == G1 and set(ev["metrics"]) == METRICS
    assert all(v >= 0 for v in ev["metrics"].values()) and 0 <= ev["metrics"]["fall_rate"] <= 1
    grid = json.loads((run / evaluate.GRID_FILE).read_text())
    assert grid == {"task": G1, "grid": want}
    assert "[tunebot] command grid (vx m/s, vy m/s, wz rad/s), clipped to the task's ranges: standing (0, 0, 0)" in log


def _frames(path):
  import imageio_ffmpeg
  import numpy as np

  from tunebot_mjlab import clip

  reader = imageio_ffmpeg.read_frames(str(path))
  meta = reader.__next__()
  assert tuple(meta["size"]) == (clip.WIDTH, clip.HEIGHT) and meta["fps"] == clip.FPS
  frames = [np.frombuffer(f, np.uint8).reshape(clip.HEIGHT, clip.WIDTH, 3) for f in reader]
  assert len(frames) == round(clip.SECONDS * clip.FPS)
  return np.stack(frames)


def test_g1_trials_differ_in_metrics_and_clips(trials):
  evs = [json.loads((run / "evaluation.json").read_text())["metrics"] for run, _, _ in trials]
  assert evs[0] != evs[1], "two G1 policies trained with different weights measure the same"
  clips = [_frames(run / "clip.mp4") for run, _, _ in trials]
  assert hashlib.sha256(clips[0].tobytes()).digest() != hashlib.sha256(clips[1].tobytes()).digest()
  for run, _, log in trials:
    assert "rendered with MUJOCO_GL=osmesa" in log
    assert (run / "clip-poster.png").stat().st_size > 0


def test_g1_clip_camera_stands_back_for_a_humanoid(trials):
  for _, _, log in trials:
    m = re.search(r"camera ([0-9.]+) m from the root body \(robot ([0-9.]+) m\)", log)
    assert m, log[-2000:]
    # the G1 is 1.2 m tall: the camera stands about 3 m away (the Go1's, 0.6 m long, 1.5 m)
    assert float(m[2]) == pytest.approx(1.22, abs=0.1) and float(m[1]) == pytest.approx(3.05, abs=0.25)
