"""Where the check's time goes, worker by worker: a pytest plugin that notes when each test starts and ends, and a
summary of what it noted, per test file, with the machine's idle share while it ran.

    OMP_NUM_THREADS=1 PYTHONPATH=benchmarks CHECK_TIMELINE=timeline.jsonl \\
        .venv/bin/python -m pytest -p check_timeline tests solutions --nbval-lax --nbval-cell-timeout=1800 \\
        -n auto --dist loadfile
    .venv/bin/python benchmarks/check_timeline.py timeline.jsonl [vmstat.log]

Run ``vmstat 5 > vmstat.log`` beside the first command, from its start to its end, to see how busy the cores were.
A file's time is the sum of its tests' set-up, call and tear-down, on the worker that ran it: the seconds of one
core it kept busy, children included, when the machine is busy computing. A benchmark, not a test: the figures in
benchmarks/RESULTS.md come from here.
"""

import json
import os
import sys
import time
from collections import defaultdict

OUT = os.environ.get("CHECK_TIMELINE", "timeline.jsonl")


def note(nodeid: str, event: str) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(OUT, "a", encoding="utf-8") as timeline:
        timeline.write(json.dumps({"worker": worker, "test": nodeid, "event": event, "time": time.time()}) + "\n")


def pytest_runtest_logstart(nodeid, location):
    note(nodeid, "start")


def pytest_runtest_logfinish(nodeid, location):
    note(nodeid, "end")


def per_file(path: str) -> tuple[dict[str, float], float]:
    """Seconds per test file, and the wall time from the first test's start to the last one's end."""
    rows = [json.loads(line) for line in open(path, encoding="utf-8")]
    if any(row["worker"] != "main" for row in rows):  # pytest-xdist's controller hears of every test once more
        rows = [row for row in rows if row["worker"] != "main"]
    started, seconds = {}, defaultdict(float)
    for row in rows:
        key = (row["worker"], row["test"])
        if row["event"] == "start":
            started[key] = row["time"]
        elif key in started:
            seconds[row["test"].split("::")[0]] += row["time"] - started.pop(key)
    times = [row["time"] for row in rows]
    return dict(seconds), max(times) - min(times)


def idle_share(vmstat_log: str) -> float:
    """The mean of vmstat's idle column over its samples (its first, the average since boot, left out)."""
    lines = [line.split() for line in open(vmstat_log, encoding="utf-8")]
    header = next(line for line in lines if "id" in line)
    samples = [line for line in lines if line and line[0].isdigit()][1:]
    column = header.index("id")
    return sum(float(sample[column]) for sample in samples) / len(samples) / 100


def main() -> None:
    seconds, wall = per_file(sys.argv[1])
    total = sum(seconds.values())
    print(f"wall {wall:.0f} s; tests {total:.0f} s of a core, {total / wall:.2f} cores busy on average")
    if len(sys.argv) > 2:
        print(f"idle share of the machine: {idle_share(sys.argv[2]):.1%}")
    for name, spent in sorted(seconds.items(), key=lambda item: -item[1]):
        if spent >= 5:
            print(f"{spent:7.0f}  {name}")


if __name__ == "__main__":
    main()
