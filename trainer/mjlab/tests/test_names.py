"""Config-level tests of the name maps: no simulation, no env is built."""

import json
import math
import subprocess
import sys

import pytest

from mjlab.envs import mdp as envs_mdp
from mjlab.managers.reward_manager import RewardTermCfg
from mjlab.managers.scene_entity_config import SceneEntityCfg
from mjlab.tasks.velocity import mdp

from tunebot_mjlab import names, tasks

GO1 = "Mjlab-Velocity-Flat-Unitree-Go1"

# docs/design.md section 2: the full default configuration tunebot sends for Unitree-Go2-Flat.
GO2_DEFAULTS = {
  "weights": {
    "track_linear_velocity": 1.0, "track_angular_velocity": 1.0, "body_orientation_l2": -1.0,
    "pose": 1.0, "body_ang_vel": -0.05, "angular_momentum": -0.025, "is_terminated": -200,
    "joint_acc_l2": -2.5e-7, "joint_pos_limits": -10, "action_rate_l2": -0.05, "foot_gait": 0.5,
    "foot_clearance": -1.0, "foot_slip": -0.25, "soft_landing": -1e-3, "stand_still": -1.0,
    "electrical_power": 0,
  },
  "params": {
    "track_linear_velocity.std": 0.5, "track_angular_velocity.std": 0.7071,
    "pose.std_standing_scale": 1.0, "pose.std_walking_scale": 1.0, "pose.std_running_scale": 1.0,
    "pose.walking_threshold": 0.05, "pose.running_threshold": 1.5, "foot_gait.period": 0.6,
    "foot_gait.threshold": 0.56, "foot_clearance.target_height": 0.10,
    "foot_gait.command_threshold": 0.1, "foot_clearance.command_threshold": 0.1,
    "foot_slip.command_threshold": 0.1, "stand_still.command_threshold": 0.1,
  },
}


def go2_rewards():
  """A stand-in for unitree_rl_mjlab's Unitree-Go2-Flat reward dict, with its names and
  params, built from mjlab's own functions (foot_gait and stand_still are unitree's; any
  callable serves here, the adapter only touches weights and params)."""
  R = RewardTermCfg
  return {
    "track_linear_velocity": R(func=mdp.track_linear_velocity, weight=1.0, params={"command_name": "twist", "std": 0.5}),
    "track_angular_velocity": R(func=mdp.track_angular_velocity, weight=1.0, params={"command_name": "twist", "std": math.sqrt(0.5)}),
    "body_orientation_l2": R(func=envs_mdp.flat_orientation_l2, weight=-1.0, params={"asset_cfg": SceneEntityCfg("robot", body_names=("base_link",))}),
    "pose": R(func=mdp.variable_posture, weight=1.0, params={
      "asset_cfg": SceneEntityCfg("robot", joint_names=(".*",)), "command_name": "twist",
      "std_standing": {".*hip.*": 0.05, ".*thigh.*": 0.1, ".*calf.*": 0.15},
      "std_walking": {".*hip.*": 0.15, ".*thigh.*": 0.35, ".*calf.*": 0.5},
      "std_running": {".*hip.*": 0.15, ".*thigh.*": 0.35, ".*calf.*": 0.5},
      "walking_threshold": 0.05, "running_threshold": 1.5}),
    "body_ang_vel": R(func=mdp.body_angular_velocity_penalty, weight=-0.05, params={}),
    "angular_momentum": R(func=mdp.angular_momentum_penalty, weight=-0.025, params={"sensor_name": "robot/root_angmom"}),
    "is_terminated": R(func=envs_mdp.is_terminated, weight=-200.0),
    "joint_acc_l2": R(func=envs_mdp.joint_acc_l2, weight=-2.5e-7),
    "joint_pos_limits": R(func=envs_mdp.joint_pos_limits, weight=-10.0),
    "action_rate_l2": R(func=envs_mdp.action_rate_l2, weight=-0.05),
    "foot_gait": R(func=envs_mdp.is_alive, weight=0.5, params={"period": 0.6, "offset": [0.0, 0.5, 0.5, 0.0], "threshold": 0.56, "command_name": "twist", "command_threshold": 0.1}),
    "foot_clearance": R(func=mdp.feet_clearance, weight=-1.0, params={"target_height": 0.1, "command_name": "twist", "command_threshold": 0.1}),
    "foot_slip": R(func=mdp.feet_slip, weight=-0.25, params={"sensor_name": "feet_ground_contact", "command_name": "twist", "command_threshold": 0.1}),
    "soft_landing": R(func=mdp.soft_landing, weight=-1e-3, params={"sensor_name": "feet_ground_contact"}),
    "stand_still": R(func=envs_mdp.is_alive, weight=-1.0, params={"command_name": "twist", "command_threshold": 0.1}),
  }


def go1_rewards():
  _, env_cfg, _, _ = tasks.load(GO1)
  return env_cfg.rewards


def test_go2_defaults_round_trip():
  """The stand-in's defaults read back as docs/design.md's table (electrical_power added, off)."""
  got = names.task_defaults(names.GO2_FLAT, go2_rewards())
  assert set(got["weights"]) == set(GO2_DEFAULTS["weights"])
  assert set(got["params"]) == set(GO2_DEFAULTS["params"])
  for k, v in GO2_DEFAULTS["weights"].items():
    assert got["weights"][k] == pytest.approx(v), k
  for k, v in GO2_DEFAULTS["params"].items():
    assert got["params"][k] == pytest.approx(v, abs=1e-4), k


def test_go2_apply_every_name():
  rewards = go2_rewards()
  cfg = json.loads(json.dumps(GO2_DEFAULTS))
  cfg["weights"].update({"foot_gait": 0.8, "electrical_power": -0.002, "body_orientation_l2": -2.0})
  cfg["params"].update({"pose.std_walking_scale": 2.0, "foot_gait.period": 0.5, "stand_still.command_threshold": 0.2})
  names.apply_reward_config(names.GO2_FLAT, rewards, cfg)
  assert rewards["foot_gait"].weight == 0.8
  assert rewards["foot_gait"].params["period"] == 0.5
  assert rewards["foot_gait"].params["offset"] == [0.0, 0.5, 0.5, 0.0]  # never exposed, untouched
  assert rewards["body_orientation_l2"].weight == -2.0
  assert rewards["stand_still"].params["command_threshold"] == 0.2
  assert rewards["pose"].params["std_walking"] == {".*hip.*": 0.3, ".*thigh.*": 0.7, ".*calf.*": 1.0}
  assert rewards["pose"].params["std_standing"] == {".*hip.*": 0.05, ".*thigh.*": 0.1, ".*calf.*": 0.15}
  ep = rewards["electrical_power"]
  assert ep.func is envs_mdp.electrical_power_cost and ep.weight == -0.002
  assert ep.params["asset_cfg"].joint_names == (".*",)


@pytest.mark.parametrize("cfg, want", [
  # A name outside the table: the configuration is read in the task's own names, which lack it too.
  ({"weights": {"no_such_term": -1.0}}, ["weight no_such_term: task Unitree-Go2-Flat has no reward term 'no_such_term' and it is not a name of tunebot's table for the task (its terms: action_rate_l2, angular_momentum, body_ang_vel, body_orientation_l2, foot_clearance, foot_gait, foot_slip, is_terminated, joint_acc_l2, joint_pos_limits, pose, soft_landing, stand_still, track_angular_velocity, track_linear_velocity)"]),
  ({"params": {"pose.nope": 1.0}}, ["param pose.nope: reward term 'pose' of task Unitree-Go2-Flat has no param 'nope' and it is not a name of tunebot's table for the task"]),
  ({"weights": {"pose": float("nan")}}, ["weight pose: nan is not a finite number"]),
  ({"weights": {"pose": True}}, ["weight pose: True is not a finite number"]),
  ({"params": {"pose.std_walking_scale": 0.0}}, ["param pose.std_walking_scale: a scale must be positive, got 0.0"]),
  ({"weights": {}, "extra": 1}, ["unknown top-level key(s): extra (want weights, params)"]),
])
def test_go2_refusals(cfg, want):
  rewards = go2_rewards()
  before = {k: v.weight for k, v in rewards.items()}
  with pytest.raises(names.RewardConfigError) as e:
    names.apply_reward_config(names.GO2_FLAT, rewards, cfg)
  assert e.value.problems == want
  assert {k: v.weight for k, v in rewards.items()} == before  # nothing half-applied


def test_go2_missing_term_in_installed_task():
  """An installed unitree_rl_mjlab whose task lost a term is refused by name."""
  rewards = go2_rewards()
  del rewards["stand_still"]
  with pytest.raises(names.RewardConfigError) as e:
    names.apply_reward_config(names.GO2_FLAT, rewards, GO2_DEFAULTS)
  assert e.value.problems == [
    "weight stand_still: task Unitree-Go2-Flat has no reward term 'stand_still'",
    "param stand_still.command_threshold: task Unitree-Go2-Flat has no reward term 'stand_still'",
  ]


def test_go1_name_map():
  rewards = go1_rewards()
  cfg = {
    "weights": {"body_orientation_l2": -2.0, "joint_pos_limits": -5.0, "is_terminated": -100.0,
                "joint_acc_l2": 0.0, "foot_gait": 0.0, "stand_still": 0.0},
    "params": {"pose.std_standing_scale": 0.5, "foot_slip.command_threshold": 0.2},
  }
  std_before = dict(rewards["pose"].params["std_standing"])
  names.apply_reward_config(names.GO1_FLAT, rewards, cfg)
  assert rewards["upright"].weight == 2.0  # sign flip: a stronger orientation penalty
  assert rewards["dof_pos_limits"].weight == -5.0
  assert rewards["is_terminated"].func is envs_mdp.is_terminated
  assert rewards["is_terminated"].weight == -100.0
  assert "joint_acc_l2" not in rewards  # 0 for a term the task lacks: left off
  assert rewards["foot_slip"].params["command_threshold"] == 0.2
  assert rewards["pose"].params["std_standing"] == {k: v * 0.5 for k, v in std_before.items()}


def test_go1_refuses_what_mjlab_cannot_add():
  with pytest.raises(names.RewardConfigError) as e:
    names.apply_reward_config(names.GO1_FLAT, go1_rewards(), GO2_DEFAULTS)
  assert e.value.problems == [
    "weight foot_gait: task Mjlab-Velocity-Flat-Unitree-Go1 has no such reward term and mjlab has no function to add it; only 0 (off) is accepted",
    "weight stand_still: task Mjlab-Velocity-Flat-Unitree-Go1 has no such reward term and mjlab has no function to add it; only 0 (off) is accepted",
    "param foot_gait.command_threshold: task Mjlab-Velocity-Flat-Unitree-Go1 has no such reward term or param",
    "param foot_gait.period: task Mjlab-Velocity-Flat-Unitree-Go1 has no such reward term or param",
    "param foot_gait.threshold: task Mjlab-Velocity-Flat-Unitree-Go1 has no such reward term or param",
    "param stand_still.command_threshold: task Mjlab-Velocity-Flat-Unitree-Go1 has no such reward term or param",
  ]


def test_go1_defaults_apply_as_identity():
  """Applying the printed defaults changes nothing: the map reads and writes the same slots."""
  rewards = go1_rewards()
  d = names.task_defaults(names.GO1_FLAT, rewards)
  names.apply_reward_config(names.GO1_FLAT, rewards, d)
  assert names.task_defaults(names.GO1_FLAT, rewards) == d
  assert d["weights"]["body_orientation_l2"] == -1.0 and d["weights"]["joint_pos_limits"] == -1.0


def _cli(*args):
  return subprocess.run([sys.executable, "-m", "tunebot_mjlab", *args], capture_output=True, text=True, timeout=300)


def test_print_defaults_cli():
  r = _cli("--print-defaults", "--task", GO1)
  assert r.returncode == 0, r.stderr
  assert json.loads(r.stdout) == names.task_defaults(names.GO1_FLAT, go1_rewards())


def test_unregistered_go2_names_the_fix():
  r = _cli("--print-defaults", "--task", "Unitree-Go2-Flat")
  assert r.returncode == 1
  assert "Unitree-Go2-Flat comes from unitree_rl_mjlab, which is not on PyPI" in r.stderr


def test_train_refuses_before_simulating(tmp_path):
  """A bad configuration fails fast, naming the term, with nothing simulated or written."""
  rc = tmp_path / "rc.json"
  rc.write_text(json.dumps({"weights": {"foot_gait": 0.5, "track_linear_velocity": 1.0}}))
  run = tmp_path / "run"
  r = _cli("train", "--task", GO1, "--run-dir", str(run), "--reward-config", str(rc), "--iterations", "1", "--num-envs", "4")
  assert r.returncode == 1
  assert "weight foot_gait: task Mjlab-Velocity-Flat-Unitree-Go1 has no such reward term" in r.stderr
  assert not any(p.name.startswith("events.out") or p.suffix == ".pt" for p in run.rglob("*"))
