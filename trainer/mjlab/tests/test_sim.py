"""Real mjlab training and evaluation of the Go1 flat task on CPU, through the CLI as
tunebot runs it: train 2 iterations, resume for 1 more, evaluate twice and compare."""

import json
import re
import subprocess
import sys

import pytest

GO1 = "Mjlab-Velocity-Flat-Unitree-Go1"
METRICS = {"velocity_error_linear", "velocity_error_angular", "action_acceleration",
           "orientation_error", "fall_rate", "foot_slip", "mechanical_power"}


def _cli(*args, cwd=None):
  r = subprocess.run([sys.executable, "-m", "tunebot_mjlab", *map(str, args)],
                     capture_output=True, text=True, timeout=900, cwd=cwd)
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


def test_evaluate_is_deterministic(runs):
  tmp, _, r1 = runs
  outs = []
  for name in ("a.json", "b.json"):
    out = tmp / name
    _cli("evaluate", "--task", GO1, "--checkpoint", r1 / "model_2.pt", "--output", out, "--seeds", "0,1",
         "--num-envs", 5, "--steps", 40, "--run-dir", r1)
    outs.append(out.read_text())
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
  # The robot is commanded to move in 4 of 5 grid cells, so an untrained policy errs.
  assert ev["metrics"]["velocity_error_linear"] > 0.05
  assert 0 <= ev["metrics"]["fall_rate"] <= 1
