import os

# The tests run on CPU, headless, and never talk to wandb, whatever the machine has.
# Nothing renders in the test process itself; the adapter's subprocesses choose their
# OpenGL backend as they do under tunebot (tests/test_sim.py drops MUJOCO_GL for them).
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("MUJOCO_GL", "disable")
os.environ["WANDB_MODE"] = "disabled"
