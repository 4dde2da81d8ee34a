"""Name maps from tunebot's reward space (docs/design.md section 2) to a task's reward terms.

A reward configuration is ``{"weights": {term: number}, "params": {name: number}}``. In
tunebot's names (the fixed table of docs/design.md section 2), a per-task map says where
every name lives in the task's ``env_cfg.rewards`` (a dict of mjlab ``RewardTermCfg``) and
how the number is applied. In the task's own names (what ``tunebot space`` prints), a
weight is ``term`` and a param ``term.param``, and no map is needed (apply_by_name).
Anything a task does not have is refused with its name before a simulation starts, except
a weight of exactly 0 for a term the task lacks: an absent term is already off.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Callable


class RewardConfigError(ValueError):
  """A reward configuration that cannot be applied to the task; names every problem."""

  def __init__(self, task: str, problems: list[str]):
    self.task = task
    self.problems = problems
    super().__init__(
      f"reward configuration does not fit task {task}:\n  - " + "\n  - ".join(problems)
    )


@dataclass(frozen=True)
class WeightMap:
  """Where a tunebot weight lives in the task.

  term: the key in env_cfg.rewards (None: the task has no such term and mjlab has no
    function for it, so only a weight of 0 is accepted).
  sign: tunebot weight = sign * task weight. mjlab's ``upright`` rewards uprightness
    (positive weight) where tunebot's ``body_orientation_l2`` penalises tilt (negative
    weight), so that pair maps with sign -1: -1.0 in tunebot is 1.0 in mjlab.
  add: builds the term from mjlab's reward functions when the task lacks it.
  """

  term: str | None
  sign: float = 1.0
  add: Callable[[], Any] | None = None


@dataclass(frozen=True)
class ParamMap:
  """Where a tunebot param lives: ``env_cfg.rewards[term].params[key]``.

  scale: the param is a factor on the task's own per-joint std dict rather than a value;
    the default is 1.0 and applying it multiplies every entry of ``params[key]``.
  """

  term: str | None
  key: str = ""
  scale: bool = False


@dataclass(frozen=True)
class TaskMap:
  """Everything the adapter needs to know about one task."""

  task: str
  weights: dict[str, WeightMap]
  params: dict[str, ParamMap]
  # Modules whose import registers the task with mjlab's registry.
  modules: tuple[str, ...] = ("mjlab.tasks",)
  # Where the install of the task's package is explained, for error messages.
  install_hint: str = ""
  extra: dict[str, Any] = field(default_factory=dict)


def _is_terminated():
  from mjlab.envs import mdp as envs_mdp
  from mjlab.managers.reward_manager import RewardTermCfg

  return RewardTermCfg(func=envs_mdp.is_terminated, weight=0.0)


def _joint_acc_l2():
  from mjlab.envs import mdp as envs_mdp
  from mjlab.managers.reward_manager import RewardTermCfg
  from mjlab.managers.scene_entity_config import SceneEntityCfg

  return RewardTermCfg(
    func=envs_mdp.joint_acc_l2,
    weight=0.0,
    params={"asset_cfg": SceneEntityCfg("robot", joint_names=(".*",))},
  )


def _electrical_power():
  from mjlab.envs.mdp.rewards import electrical_power_cost
  from mjlab.managers.reward_manager import RewardTermCfg
  from mjlab.managers.scene_entity_config import SceneEntityCfg

  return RewardTermCfg(
    func=electrical_power_cost,
    weight=0.0,
    params={"asset_cfg": SceneEntityCfg("robot", joint_names=(".*",))},
  )


_POSE_PARAMS = {
  "pose.std_standing_scale": ParamMap("pose", "std_standing", scale=True),
  "pose.std_walking_scale": ParamMap("pose", "std_walking", scale=True),
  "pose.std_running_scale": ParamMap("pose", "std_running", scale=True),
  "pose.walking_threshold": ParamMap("pose", "walking_threshold"),
  "pose.running_threshold": ParamMap("pose", "running_threshold"),
}

# Unitree-Go2-Flat from unitree_rl_mjlab: the names of docs/design.md section 2 are the task's.
GO2_FLAT = TaskMap(
  task="Unitree-Go2-Flat",
  weights={
    "track_linear_velocity": WeightMap("track_linear_velocity"),
    "track_angular_velocity": WeightMap("track_angular_velocity"),
    "body_orientation_l2": WeightMap("body_orientation_l2"),
    "pose": WeightMap("pose"),
    "body_ang_vel": WeightMap("body_ang_vel"),
    "angular_momentum": WeightMap("angular_momentum"),
    "is_terminated": WeightMap("is_terminated", add=_is_terminated),
    "joint_acc_l2": WeightMap("joint_acc_l2", add=_joint_acc_l2),
    "joint_pos_limits": WeightMap("joint_pos_limits"),
    "action_rate_l2": WeightMap("action_rate_l2"),
    "foot_gait": WeightMap("foot_gait"),
    "foot_clearance": WeightMap("foot_clearance"),
    "foot_slip": WeightMap("foot_slip"),
    "soft_landing": WeightMap("soft_landing"),
    "stand_still": WeightMap("stand_still"),
    "electrical_power": WeightMap("electrical_power", add=_electrical_power),
  },
  params={
    "track_linear_velocity.std": ParamMap("track_linear_velocity", "std"),
    "track_angular_velocity.std": ParamMap("track_angular_velocity", "std"),
    **_POSE_PARAMS,
    "foot_gait.period": ParamMap("foot_gait", "period"),
    "foot_gait.threshold": ParamMap("foot_gait", "threshold"),
    "foot_gait.command_threshold": ParamMap("foot_gait", "command_threshold"),
    "foot_clearance.target_height": ParamMap("foot_clearance", "target_height"),
    "foot_clearance.command_threshold": ParamMap("foot_clearance", "command_threshold"),
    "foot_slip.command_threshold": ParamMap("foot_slip", "command_threshold"),
    "stand_still.command_threshold": ParamMap("stand_still", "command_threshold"),
  },
  # unitree_rl_mjlab registers its tasks when its task package is imported. Upstream
  # (github.com/unitreerobotics/unitree_rl_mjlab) installs that package as `src` (its
  # setup.py: packages=["src"]) and its scripts/train.py does `import mjlab.tasks` then
  # `import src.tasks`; Unitree-Go2-Flat is registered in src/tasks/velocity/config/go2.
  # `unitree_rl_mjlab.tasks` covers forks that renamed the package.
  modules=("mjlab.tasks", "src.tasks", "unitree_rl_mjlab.tasks"),
  install_hint=(
    "Unitree-Go2-Flat comes from unitree_rl_mjlab, which is not on PyPI: clone it next to "
    "the adapter and install it into the same venv (see trainer/mjlab/README.md), or set "
    "TUNEBOT_MJLAB_TASK_MODULES to the module that registers it"
  ),
)

# mjlab's own Go1 flat task: same ideas, mjlab's names. Terms Go1 lacks are added from
# mjlab's reward functions where mjlab has one (is_terminated, joint_acc_l2,
# electrical_power); foot_gait and stand_still have no mjlab function and are refused
# unless their weight is 0.
GO1_FLAT = TaskMap(
  task="Mjlab-Velocity-Flat-Unitree-Go1",
  weights={
    "track_linear_velocity": WeightMap("track_linear_velocity"),
    "track_angular_velocity": WeightMap("track_angular_velocity"),
    "body_orientation_l2": WeightMap("upright", sign=-1.0),
    "pose": WeightMap("pose"),
    "body_ang_vel": WeightMap("body_ang_vel"),
    "angular_momentum": WeightMap("angular_momentum"),
    "is_terminated": WeightMap("is_terminated", add=_is_terminated),
    "joint_acc_l2": WeightMap("joint_acc_l2", add=_joint_acc_l2),
    "joint_pos_limits": WeightMap("dof_pos_limits"),
    "action_rate_l2": WeightMap("action_rate_l2"),
    "foot_gait": WeightMap(None),
    "foot_clearance": WeightMap("foot_clearance"),
    "foot_slip": WeightMap("foot_slip"),
    "soft_landing": WeightMap("soft_landing"),
    "stand_still": WeightMap(None),
    "electrical_power": WeightMap("electrical_power", add=_electrical_power),
  },
  params={
    "track_linear_velocity.std": ParamMap("track_linear_velocity", "std"),
    "track_angular_velocity.std": ParamMap("track_angular_velocity", "std"),
    **_POSE_PARAMS,
    "foot_gait.period": ParamMap(None),
    "foot_gait.threshold": ParamMap(None),
    "foot_gait.command_threshold": ParamMap(None),
    "foot_clearance.target_height": ParamMap("foot_clearance", "target_height"),
    "foot_clearance.command_threshold": ParamMap("foot_clearance", "command_threshold"),
    "foot_slip.command_threshold": ParamMap("foot_slip", "command_threshold"),
    "stand_still.command_threshold": ParamMap(None),
  },
)

TASKS: dict[str, TaskMap] = {m.task: m for m in (GO2_FLAT, GO1_FLAT)}


def task_map(task: str) -> TaskMap:
  """The name map of task; a task without one gets an empty map, and its reward
  configurations must use the task's own names (apply_by_name)."""
  return TASKS.get(task) or TaskMap(task=task, weights={}, params={})


def uses_table(tm: TaskMap, config: Any) -> bool:
  """Whether config is in the names of tm's table (docs/design.md section 2) rather than the
  task's own: the task has a table and every name of config is in it. tunebot doctor
  decides the same way (trainer/mjlab/space.go, Naming)."""
  if not tm.weights or not isinstance(config, dict):
    return bool(tm.weights)
  w, p = config.get("weights") or {}, config.get("params") or {}
  if not isinstance(w, dict) or not isinstance(p, dict):
    return True  # the table path names the shape problem
  return set(w) <= set(tm.weights) and set(p) <= set(tm.params)


def scalar_params(term: Any) -> dict[str, float]:
  """The params of a reward term that are plain finite numbers (std, thresholds, targets):
  the ones a space may name as ``term.param``."""
  return {k: v for k, v in (term.params or {}).items() if _finite(v)}


def apply_by_name(task: str, rewards: dict[str, Any], config: dict[str, Any], has_table: bool = False) -> dict[str, Any]:
  """Applies a reward configuration in the task's own names: a weight ``term`` sets
  ``rewards[term].weight``, a param ``term.key`` sets ``rewards[term].params[key]``.

  A term the task lacks (whatever the value) or a param that is missing or not a scalar is
  refused with its name; every problem is collected first, so nothing is half-applied.
  has_table: the task also has a table, whose names this configuration does not all use.
  """
  problems: list[str] = []
  nor = " and it is not a name of tunebot's table for the task" if has_table else ""
  if not isinstance(config, dict):
    raise RewardConfigError(task, ["the reward configuration is not a JSON object"])
  extra = sorted(set(config) - {"weights", "params"})
  if extra:
    problems.append(f"unknown top-level key(s): {', '.join(extra)} (want weights, params)")
  weights = config.get("weights") or {}
  params = config.get("params") or {}
  if not isinstance(weights, dict) or not isinstance(params, dict):
    raise RewardConfigError(task, ["weights and params must be JSON objects"])
  ops: list[Callable[[], None]] = []
  summary: dict[str, Any] = {}
  for name in sorted(weights):
    w = weights[name]
    if name not in rewards:
      problems.append(f"weight {name}: task {task} has no reward term {name!r}{nor} (its terms: {', '.join(sorted(rewards))})")
      continue
    if not _finite(w):
      problems.append(f"weight {name}: {w!r} is not a finite number")
      continue

    def setw(term=rewards[name], w=w):
      term.weight = float(w)

    ops.append(setw)
    summary.setdefault(name, {})["weight"] = float(w)
  for name in sorted(params):
    v = params[name]
    term_name, dot, key = name.partition(".")
    term = rewards.get(term_name)
    if not dot or not key:
      problems.append(f"param {name}: a param is named term.param")
      continue
    if term is None:
      problems.append(f"param {name}: task {task} has no reward term {term_name!r}{nor}")
      continue
    if not _finite(v):
      problems.append(f"param {name}: {v!r} is not a finite number")
      continue
    if key not in (term.params or {}):
      problems.append(f"param {name}: reward term {term_name!r} of task {task} has no param {key!r}{nor}")
      continue
    if not _finite(term.params[key]):
      problems.append(f"param {name}: {term_name}.{key} is not a scalar in task {task} (it is {type(term.params[key]).__name__})")
      continue

    def setp(term=term, key=key, v=v):
      term.params[key] = float(v)

    ops.append(setp)
    summary.setdefault(term_name, {})[key] = float(v)
  if problems:
    raise RewardConfigError(task, problems)
  for op in ops:
    op()
  return summary


def own_defaults(rewards: dict[str, Any]) -> dict[str, dict[str, float]]:
  """The task's reward weights and scalar params in its own names."""
  weights = {n: _clean(float(t.weight)) for n, t in rewards.items()}
  params = {f"{n}.{k}": _clean(float(v)) for n, t in rewards.items() for k, v in scalar_params(t).items()}
  return {"weights": weights, "params": params}


def describe(rewards: dict[str, Any]) -> list[dict[str, Any]]:
  """Every reward term as `python -m tunebot_mjlab space` prints it: name, weight, the
  function's name and module, its scalar params and the names of its other params."""
  out = []
  for n, t in rewards.items():
    f = t.func
    sp = scalar_params(t)
    out.append({
      "name": n,
      "weight": _clean(float(t.weight)),
      "function": getattr(f, "__name__", type(f).__name__),
      "module": getattr(f, "__module__", "") or "",
      "params": {k: _clean(float(v)) for k, v in sp.items()},
      "other_params": sorted(k for k in (t.params or {}) if k not in sp),
    })
  return out


def _finite(v: Any) -> bool:
  return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def apply_reward_config(tm: TaskMap, rewards: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
  """Applies a tunebot reward configuration to a task's reward dict, in place.

  In the names of the task's table when every name is in it (uses_table), else in the
  task's own names (apply_by_name).

  Every problem is collected first and raised together as RewardConfigError, so nothing is
  half-applied and a user sees all of them at once. Returns a summary of what was set, in
  the task's names (written next to the checkpoints for audit).
  """
  if not uses_table(tm, config):
    return apply_by_name(tm.task, rewards, config, has_table=bool(tm.weights))
  problems: list[str] = []
  if not isinstance(config, dict):
    raise RewardConfigError(tm.task, ["the reward configuration is not a JSON object"])
  extra = sorted(set(config) - {"weights", "params"})
  if extra:
    problems.append(f"unknown top-level key(s): {', '.join(extra)} (want weights, params)")
  weights = config.get("weights") or {}
  params = config.get("params") or {}
  if not isinstance(weights, dict) or not isinstance(params, dict):
    raise RewardConfigError(tm.task, ["weights and params must be JSON objects"])

  ops: list[Callable[[], None]] = []
  summary: dict[str, Any] = {}
  for name in sorted(weights):
    w = weights[name]
    wm = tm.weights.get(name)
    if wm is None:
      problems.append(f"weight {name}: not a term of tunebot's reward space")
      continue
    if not _finite(w):
      problems.append(f"weight {name}: {w!r} is not a finite number")
      continue
    if wm.term is None:
      if w != 0:
        problems.append(
          f"weight {name}: task {tm.task} has no such reward term and mjlab has no "
          "function to add it; only 0 (off) is accepted"
        )
      continue
    if wm.term not in rewards:
      if wm.add is None:
        if w != 0:
          problems.append(f"weight {name}: task {tm.task} has no reward term {wm.term!r}")
        continue
      if w == 0:
        continue  # absent is off; adding a zero-weight term would only cost time
      term_key, factory = wm.term, wm.add

      def add(term_key=term_key, factory=factory, w=w, sign=wm.sign):
        cfg = factory()
        cfg.weight = float(w) * sign
        rewards[term_key] = cfg

      ops.append(add)
    else:

      def setw(term_key=wm.term, w=w, sign=wm.sign):
        rewards[term_key].weight = float(w) * sign

      ops.append(setw)
    summary.setdefault(wm.term, {})["weight"] = float(w) * wm.sign

  for name in sorted(params):
    v = params[name]
    pm = tm.params.get(name)
    if pm is None:
      problems.append(f"param {name}: not a param of tunebot's reward space")
      continue
    if not _finite(v):
      problems.append(f"param {name}: {v!r} is not a finite number")
      continue
    if pm.term is None:
      problems.append(f"param {name}: task {tm.task} has no such reward term or param")
      continue
    term = rewards.get(pm.term)
    if term is None:
      problems.append(f"param {name}: task {tm.task} has no reward term {pm.term!r}")
      continue
    if pm.key not in (term.params or {}):
      problems.append(f"param {name}: reward term {pm.term!r} of task {tm.task} has no param {pm.key!r}")
      continue
    cur = term.params[pm.key]
    if pm.scale:
      if not isinstance(cur, dict) or not cur:
        problems.append(f"param {name}: {pm.term}.{pm.key} is not a per-joint std table")
        continue
      if v <= 0:
        problems.append(f"param {name}: a scale must be positive, got {v}")
        continue

      def scale(term=term, key=pm.key, v=v):
        term.params[key] = {k: float(x) * v for k, x in term.params[key].items()}

      ops.append(scale)
    else:
      if not _finite(cur):
        problems.append(f"param {name}: {pm.term}.{pm.key} is not a scalar in task {tm.task}")
        continue

      def setp(term=term, key=pm.key, v=v):
        term.params[key] = float(v)

      ops.append(setp)
    summary.setdefault(pm.term, {})[pm.key if not pm.scale else pm.key + "_scale"] = float(v)

  if problems:
    raise RewardConfigError(tm.task, problems)
  for op in ops:
    op()
  return summary


def task_defaults(tm: TaskMap, rewards: dict[str, Any]) -> dict[str, dict[str, float]]:
  """The task's actual reward weights and params as a tunebot reward configuration.

  A term the task lacks but that the adapter can add reports weight 0 (it is off); a term
  or param the task cannot have is left out, so a table that lists it differs visibly. A
  task without a table reports its own names (own_defaults).
  """
  if not tm.weights:
    return own_defaults(rewards)
  weights: dict[str, float] = {}
  params: dict[str, float] = {}
  for name, wm in tm.weights.items():
    if wm.term is None:
      continue
    if wm.term in rewards:
      weights[name] = _clean(float(rewards[wm.term].weight) * wm.sign)
    elif wm.add is not None:
      weights[name] = 0.0
  for name, pm in tm.params.items():
    if pm.term is None or pm.term not in rewards:
      continue
    p = rewards[pm.term].params or {}
    if pm.key not in p:
      continue
    if pm.scale:
      params[name] = 1.0
    elif _finite(p[pm.key]):
      params[name] = _clean(float(p[pm.key]))
  return {"weights": weights, "params": params}


def _clean(x: float) -> float:
  # math.sqrt(0.5) is 0.7071067811865476 in the task; tunebot's table says 0.7071. Round
  # to 10 significant digits so a printed default is readable but still exact enough.
  return float(f"{x:.10g}") + 0.0


def copy_rewards(rewards: dict[str, Any]) -> dict[str, Any]:
  """A deep copy, so tests and --print-defaults never touch the registry's config."""
  return copy.deepcopy(rewards)
