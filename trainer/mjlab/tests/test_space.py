"""Reward configurations in a task's own names (what `tunebot space` prints), and the
checked-in spaces of trainer/mjlab/spaces. No simulation, no env is built."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tunebot_mjlab import names, tasks

G1 = "Mjlab-Velocity-Flat-Unitree-G1"
GO1 = "Mjlab-Velocity-Flat-Unitree-Go1"
HERE = Path(__file__).resolve().parent.parent  # trainer/mjlab
REPO = HERE.parent.parent
# task -> (adapter answer for mjlab 1.6.0, checked-in space)
FILES = {G1: ("g1.task.json", "g1.yaml"), GO1: ("go1.task.json", "go1.yaml")}


def rewards(task):
  _, env_cfg, _, _ = tasks.load(task)
  return env_cfg.rewards


def _cli(*args, **kw):
  return subprocess.run([sys.executable, "-m", "tunebot_mjlab", *args], capture_output=True, text=True,
                        timeout=300, **kw)


def test_g1_applies_own_names_without_a_table():
  assert names.task_map(G1).weights == {}  # no hand-written table for G1
  r = rewards(G1)
  cfg = {"weights": {"upright": 2.0, "self_collisions": -0.5, "air_time": 0.25},
         "params": {"upright.std": 0.3, "pose.walking_threshold": 0.1, "self_collisions.force_threshold": 20.0}}
  applied = names.apply_reward_config(names.task_map(G1), r, cfg)
  assert r["upright"].weight == 2.0 and r["self_collisions"].weight == -0.5 and r["air_time"].weight == 0.25
  assert r["upright"].params["std"] == 0.3
  assert r["pose"].params["walking_threshold"] == 0.1
  assert r["self_collisions"].params["force_threshold"] == 20.0
  assert applied["upright"] == {"weight": 2.0, "std": 0.3}


def test_own_names_refused_by_name_and_nothing_half_applied():
  r = rewards(G1)
  before = {k: (v.weight, dict(v.params)) for k, v in r.items()}
  cfg = {"weights": {"foot_gait": 0.0, "upright": 2.0, "pose": float("inf")},
         "params": {"pose.std_walking": 1.0, "upright.nope": 1.0, "nope.std": 1.0, "upright": 0.5,
                    "upright.std": 0.3}}
  with pytest.raises(names.RewardConfigError) as e:
    names.apply_reward_config(names.task_map(G1), r, cfg)
  p = e.value.problems
  assert p[0].startswith("weight foot_gait: task Mjlab-Velocity-Flat-Unitree-G1 has no reward term 'foot_gait' (its terms: ")
  assert p[1:] == [
    "weight pose: inf is not a finite number",
    "param nope.std: task Mjlab-Velocity-Flat-Unitree-G1 has no reward term 'nope'",
    "param pose.std_walking: pose.std_walking is not a scalar in task Mjlab-Velocity-Flat-Unitree-G1 (it is dict)",
    "param upright: a param is named term.param",
    "param upright.nope: reward term 'upright' of task Mjlab-Velocity-Flat-Unitree-G1 has no param 'nope'",
  ]
  assert {k: (v.weight, dict(v.params)) for k, v in r.items()} == before


def test_go1_own_names_bypass_its_table():
  """Go1 has a table for the design's names; a space in Go1's own names is applied as
  named: upright keeps mjlab's sign, no term is added."""
  r = rewards(GO1)
  names.apply_reward_config(names.GO1_FLAT, r, {"weights": {"upright": 2.0, "dof_pos_limits": -2.0, "air_time": 0.5}})
  assert r["upright"].weight == 2.0 and r["dof_pos_limits"].weight == -2.0 and r["air_time"].weight == 0.5
  assert "is_terminated" not in r


def test_go1_mixed_names_name_the_stranger():
  with pytest.raises(names.RewardConfigError) as e:
    names.apply_reward_config(names.GO1_FLAT, rewards(GO1), {"weights": {"upright": 2.0, "body_orientation_l2": -1.0}})
  assert len(e.value.problems) == 1
  assert e.value.problems[0].startswith("weight body_orientation_l2: task Mjlab-Velocity-Flat-Unitree-Go1 has no reward term 'body_orientation_l2' and it is not a name of tunebot's table for the task (its terms: ")


@pytest.mark.parametrize("task", [G1, GO1])
def test_own_defaults_apply_as_identity(task):
  r = rewards(task)
  d = names.own_defaults(r)
  names.apply_by_name(task, r, d)
  assert names.own_defaults(r) == d
  assert "pose.std_walking" not in d["params"] and d["params"]["pose.running_threshold"] == 1.5


def test_train_g1_refuses_before_simulating(tmp_path):
  rc = tmp_path / "rc.json"
  rc.write_text(json.dumps({"weights": {"upright": 1.0, "stand_still": -1.0}, "params": {"pose.std_running": 2.0}}))
  run = tmp_path / "run"
  r = _cli("train", "--task", G1, "--run-dir", str(run), "--reward-config", str(rc), "--iterations", "1", "--num-envs", "4")
  assert r.returncode == 1
  assert "weight stand_still: task Mjlab-Velocity-Flat-Unitree-G1 has no reward term 'stand_still'" in r.stderr
  assert "param pose.std_running: pose.std_running is not a scalar" in r.stderr
  assert not any(p.name.startswith("events.out") or p.suffix == ".pt" for p in run.rglob("*"))


def test_unknown_task_lists_the_registered_ones():
  r = _cli("space", "--task", "Mjlab-Velocity-Flat-Unitree-G2")
  assert r.returncode == 1
  assert "task Mjlab-Velocity-Flat-Unitree-G2 is not registered with mjlab (registered: " in r.stderr
  assert G1 in r.stderr


@pytest.mark.parametrize("task", [G1, GO1])
def test_space_answer_is_the_checked_in_one(task):
  """The adapter's answer for the installed task is what trainer/mjlab/testdata holds, from
  which the Go tests regenerate trainer/mjlab/spaces (a new mjlab that changes a task fails
  here first)."""
  r = _cli("space", "--task", task)
  assert r.returncode == 0, r.stderr
  want = json.loads((HERE / "testdata" / FILES[task][0]).read_text())
  assert json.loads(r.stdout) == want


@pytest.mark.skipif(shutil.which("go") is None, reason="go is not on PATH")
@pytest.mark.parametrize("task", [G1, GO1])
def test_tunebot_space_regenerates_the_checked_in_file(task, tmp_path):
  cfg = tmp_path / "tunebot.yaml"
  cfg.write_text(f"trainer:\n  python: {sys.executable}\n")
  env = dict(os.environ, PYTHONPATH=str(HERE))
  r = subprocess.run(["go", "run", "./cmd/tunebot", "space", "--task", task, "--config", str(cfg)],
                     capture_output=True, text=True, timeout=900, cwd=REPO, env=env)
  assert r.returncode == 0, r.stderr
  assert r.stdout == (HERE / "spaces" / FILES[task][1]).read_text()
