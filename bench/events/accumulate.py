"""Time TensorBoard's EventAccumulator loading every scalar of one event file.

Usage: python accumulate.py EVENT_FILE  -> prints one JSON line: seconds, tags, points.
"""
import json
import sys
import time

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def main() -> int:
    path = sys.argv[1]
    start = time.perf_counter()
    acc = EventAccumulator(path, size_guidance={"scalars": 0})  # 0 keeps every point
    acc.Reload()
    tags = acc.Tags()["scalars"]
    points = sum(len(acc.Scalars(t)) for t in tags)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "tags": len(tags), "points": points}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
