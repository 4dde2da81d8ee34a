"""Finding a task in mjlab's registry and choosing the device."""

from __future__ import annotations

import importlib
import os

from tunebot_mjlab.names import RewardConfigError, TaskMap, task_map


class TaskNotFound(LookupError):
  """The task is not registered after importing the modules that should register it."""


def register(tm: TaskMap) -> list[str]:
  """Imports the modules that register tm's task; returns the import errors, if any.

  TUNEBOT_MJLAB_TASK_MODULES (comma separated) replaces the map's module list, for a task
  package that registers itself from a module the adapter does not know.
  """
  mods = os.environ.get("TUNEBOT_MJLAB_TASK_MODULES", "")
  modules = [m.strip() for m in mods.split(",") if m.strip()] or list(tm.modules)
  errors = []
  for m in modules:
    try:
      importlib.import_module(m)
    except ModuleNotFoundError as e:
      errors.append(f"{m}: {e}")
    except ValueError as e:
      # "already registered": two packages registering the same id; the first one wins.
      errors.append(f"{m}: {e}")
  return errors


def load(task: str):
  """Returns (task map, env cfg, agent cfg, runner class) for task, or raises naming why."""
  tm = task_map(task)
  errors = register(tm)
  from mjlab.tasks.registry import list_tasks, load_env_cfg, load_rl_cfg, load_runner_cls

  if task not in list_tasks():
    msg = f"task {task} is not registered with mjlab"
    if tm.install_hint:
      msg += f": {tm.install_hint}"
    else:
      msg += f" (registered: {', '.join(sorted(list_tasks()))})"
    if errors:
      msg += " (imports tried: " + "; ".join(errors) + ")"
    raise TaskNotFound(msg)
  return tm, load_env_cfg(task), load_rl_cfg(task), load_runner_cls(task)


def device() -> str:
  """cuda:0 when tunebot leased a GPU (CUDA_VISIBLE_DEVICES non-empty) and torch sees it,
  else cpu. mjlab decides the same way in its own train script."""
  import torch

  # Unset means "not restricted"; set but empty (tunebot on CPU, or a user's choice)
  # means no GPU, even when torch could see one.
  if os.environ.get("CUDA_VISIBLE_DEVICES") != "" and torch.cuda.is_available():
    return "cuda:0"
  return "cpu"


__all__ = ["TaskNotFound", "register", "load", "device", "RewardConfigError"]
