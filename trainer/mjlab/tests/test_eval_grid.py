"""The evaluation's command grid and the clip's schedule clipped to a task's own command
ranges, and the clip camera's distance from the robot's size. No simulation runs: the tasks'
configurations are loaded and their robots compiled alone."""

import json

import pytest

from tunebot_mjlab import clip, evaluate, tasks

G1 = "Mjlab-Velocity-Flat-Unitree-G1"
GO1 = "Mjlab-Velocity-Flat-Unitree-Go1"


class Ranges:
  def __init__(self, x, y, z):
    self.lin_vel_x, self.lin_vel_y, self.ang_vel_z = x, y, z


class Cmd:
  def __init__(self, *r):
    self.ranges = Ranges(*r)


def test_grid_is_clipped_into_each_range():
  r = evaluate.command_ranges(Cmd((-0.5, 0.5), (0.0, 0.0), (-0.3, 0.4)))
  grid = dict((n, (vx, vy, wz)) for n, vx, vy, wz in evaluate.clip_grid(r))
  assert grid == {
    "standing": (0.0, 0.0, 0.0),
    "forward": (0.5, 0.0, 0.0),    # 0.8 > 0.5
    "lateral": (0.0, 0.0, 0.0),    # no lateral commands: the cell stands, keeping its name
    "turning": (0.0, 0.0, 0.4),    # 0.5 > 0.4
    "combined": (0.5, 0.0, 0.3),
  }
  # a low bound above zero lifts the standing cell to it
  lifted = evaluate.clip_grid(evaluate.command_ranges(Cmd((0.2, 1.0), (-1, 1), (-1, 1))))
  assert lifted[0] == ("standing", 0.2, 0.0, 0.0)


def test_grid_inside_the_ranges_is_unchanged():
  r = evaluate.command_ranges(Cmd((-1.0, 1.0), (-1.0, 1.0), (-0.5, 0.5)))
  assert evaluate.clip_grid(r) == evaluate.COMMAND_GRID


@pytest.mark.parametrize("bad, want", [
  (Cmd((1.0, -1.0), (-1, 1), (-1, 1)), "ranges.lin_vel_x is (1.0, -1.0): want finite numbers, low <= high"),
  (Cmd((-1, 1), None, (-1, 1)), "ranges.lin_vel_y is None, not a (low, high) pair of numbers"),
  (Cmd((-1, 1), (-1, 1), (0, float("nan"))), "ranges.ang_vel_z is (0.0, nan)"),
])
def test_bad_ranges_are_named(bad, want):
  with pytest.raises(evaluate.EvalError, match=want.replace("(", r"\(").replace(")", r"\)")):
    evaluate.command_ranges(bad)


def test_clip_schedule_is_clipped_like_the_grid():
  s = clip.task_schedule(evaluate.command_ranges(Cmd((-1.0, 1.0), (-1.0, 1.0), (-0.5, 0.5))))
  assert [x[0] for x in s] == [x[0] for x in clip.SCHEDULE]
  assert clip.command_at(4.0, s) == (0.4, 0.0, 0.5)  # the schedule's 0.6 rad/s turn, clipped
  assert clip.command_at(2.0, s) == clip.command_at(2.0)


def test_tasks_grids_come_from_their_own_ranges():
  for task in (G1, GO1):
    _, env_cfg, _, _ = tasks.load(task)
    env_cfg.commands["twist"].ranges.ang_vel_z = (-0.25, 0.25)
    grid = evaluate.task_grid(env_cfg)
    assert max(abs(wz) for *_, wz in grid) == 0.25, task
    del env_cfg.commands["twist"]
    with pytest.raises(evaluate.EvalError, match="no 'twist' velocity command"):
      evaluate.task_grid(env_cfg)


def test_write_grid_records_the_clipped_grid(tmp_path, capsys):
  cells = evaluate.clip_grid(evaluate.command_ranges(Cmd((-1, 1), (-0.3, 0.3), (-0.5, 0.5))))
  evaluate.write_grid(tmp_path / evaluate.GRID_FILE, G1, cells)
  got = json.loads((tmp_path / evaluate.GRID_FILE).read_text())
  assert got["task"] == G1
  assert got["grid"][2] == {"name": "lateral", "vx": 0.0, "vy": 0.3, "wz": 0.0}
  assert "lateral (0, 0.3, 0)" in capsys.readouterr().out


def test_camera_distance_follows_the_robot_size():
  assert clip.camera_distance(1.2) == pytest.approx(3.0)
  assert clip.camera_distance(0.6) == pytest.approx(1.5)
  assert clip.camera_distance(0.01) == clip.CAMERA_DISTANCE[0]
  assert clip.camera_distance(100) == clip.CAMERA_DISTANCE[1]


def test_robot_size_of_a_model():
  import mujoco

  # a 1 m tall pole standing on a 0.4 m long base, and a floor that is not the robot
  m = mujoco.MjModel.from_xml_string("""<mujoco><worldbody><geom type="plane" size="5 5 .1"/>
    <body pos="0 0 0.1"><freejoint/><geom type="box" size=".2 .1 .05"/>
      <body pos="0 0 1"><geom type="sphere" size=".05"/></body></body></worldbody></mujoco>""")
  assert clip.robot_size(m, [1, 2]) == pytest.approx(1.0)
  with pytest.raises(clip.ClipError, match="no geoms"):
    clip.robot_size(m, [])


def test_g1_and_go1_cameras_fit_their_robots():
  import mujoco

  dist = {}
  for task in (G1, GO1):
    _, env_cfg, _, _ = tasks.load(task)
    m = env_cfg.scene.entities["robot"].build().spec.compile()
    robot = [g for g in range(m.ngeom) if m.geom_bodyid[g] > 0]
    dist[task] = clip.camera_distance(clip.robot_size(m, robot))
  # the humanoid (1.2 m tall) twice as far as the quadruped (0.6 m long): what mjlab's own
  # viewer settings for them say (3.0 m and 1.5 m)
  assert dist[G1] == pytest.approx(3.0, abs=0.2)
  assert dist[GO1] == pytest.approx(1.5, abs=0.15)
