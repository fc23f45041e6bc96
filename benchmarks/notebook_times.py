"""Time every solution notebook, executed top to bottom in a fresh kernel, as CI runs them.

    .venv/bin/python benchmarks/notebook_times.py [--repeat N]

Prints seconds per notebook (the best of N runs, kernel start included). A benchmark, not a test: the
figures in benchmarks/RESULTS.md come from here.
"""

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from autograder.repository import SOLUTIONS, notebook_paths


def seconds_to_run(path: Path) -> float:
    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(notebook, timeout=600, resources={"metadata": {"path": str(path.parent)}}).execute()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per notebook; the best is reported")
    repeat = parser.parse_args().repeat
    for path in notebook_paths(SOLUTIONS):
        best = min(seconds_to_run(path) for _ in range(repeat))
        print(f"{path.parent.name:32s} {best:6.1f} s")


if __name__ == "__main__":
    main()
