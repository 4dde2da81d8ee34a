"""tunebot's trainer adapter for mjlab + RSL-RL velocity tasks.

Run as ``python -m tunebot_mjlab train|evaluate|check ...`` or
``python -m tunebot_mjlab --print-defaults --task TASK``; see trainer/mjlab/README.md.
"""

__version__ = "0.1.0"
