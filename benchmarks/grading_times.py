"""Time the autograder on this machine: N synthetic students × every notebook, each (student, notebook) through
nbgrader and the sealed verification; graded one at a time in the sandbox and without it, alternating, then in
parallel in the sandbox.

    .venv/bin/python benchmarks/grading_times.py [--students N] [--workers W] [--rounds R]

Each synthetic student hands in every notebook with every exercise solved, so that every cell runs in full.
Prints seconds per (student, notebook) for each way of grading, the sandbox's cost per job, where the time goes,
and the speed-up of parallel over sequential grading. A benchmark, not a test: the figures quoted in README.md
come from here.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from autograder.class_folder import ClassFolder  # noqa: E402
from autograder.grading import Limits, Outcome  # noqa: E402
from autograder.repository import assignments  # noqa: E402
from autograder.submissions import filled_in, solution_code  # noqa: E402


def timed(class_folder: ClassFolder, workers: int, sandbox: bool) -> tuple[float, list[Outcome]]:
    start = time.perf_counter()
    outcomes = class_folder.autograde(limits=Limits(workers=workers, sandbox=sandbox))
    seconds = time.perf_counter() - start
    assert all(test.points == test.max_points for outcome in outcomes for test in outcome.tests), "not full marks"
    return seconds, outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=2, help="synthetic students (default 2)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="parallel workers (default: CPUs)")
    parser.add_argument("--rounds", type=int, default=2, help="sequential rounds with and without the sandbox")
    args = parser.parse_args()
    sandboxed, bare = [], []
    with tempfile.TemporaryDirectory() as scratch:
        class_folder = ClassFolder.create(Path(scratch) / "class")
        class_folder.write_student_versions()
        for assignment in assignments():
            solved = filled_in(class_folder.released(assignment), solution_code(assignment))
            for number in range(args.students):
                class_folder.submit(f"student-{number:03d}", assignment, solved)
        pairs = args.students * len(assignments())
        for _ in range(args.rounds):  # alternating, so that a machine getting busier costs both alike
            seconds, outcomes = timed(class_folder, workers=1, sandbox=True)
            sandboxed.append(seconds)
            bare.append(timed(class_folder, workers=1, sandbox=False)[0])
        parallel, _ = timed(class_folder, workers=args.workers, sandbox=True)
    sequential, without = statistics.mean(sandboxed), statistics.mean(bare)
    print(f"{args.students} students × {len(assignments())} notebooks = {pairs} (student, notebook) pairs")
    print(
        f"sequential, sandboxed (1 worker):  {sequential:7.1f} s, {sequential / pairs:5.2f} s per (student, notebook)"
    )
    print(f"sequential, no sandbox (1 worker): {without:7.1f} s, {without / pairs:5.2f} s per (student, notebook)")
    cost = (sequential - without) / pairs
    print(
        f"the sandbox's cost: {cost:+.2f} s per (student, notebook), {100 * cost * pairs / without:+.1f}% "
        f"(rounds: {', '.join(f'{s:.1f}/{b:.1f}' for s, b in zip(sandboxed, bare, strict=True))} s)"
    )
    print(f"parallel, sandboxed ({args.workers} workers): {parallel:7.1f} s, {parallel / pairs:5.2f} s per pair")
    print(f"speed-up: {sequential / parallel:.2f}× on {os.cpu_count()} CPUs")
    print("\nwhere one job's time goes when grading sequentially in the sandbox (mean seconds, last round):")
    for assignment in assignments():
        jobs = [outcome.seconds for outcome in outcomes if outcome.assignment == assignment]
        nbgrader = statistics.mean(job["nbgrader"] for job in jobs)
        verification = statistics.mean(job["verification"] for job in jobs)
        print(f"  {assignment:32s} nbgrader {nbgrader:5.1f} s   sealed verification {verification:5.1f} s")


if __name__ == "__main__":
    main()
