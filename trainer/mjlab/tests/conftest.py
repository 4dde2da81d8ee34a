import os

# The tests run on CPU, headless, and never talk to wandb, whatever the machine has.
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("MUJOCO_GL", "disable")
os.environ["WANDB_MODE"] = "disabled"
