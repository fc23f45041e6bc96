"""Time the autograder on this machine: N synthetic students × every notebook, graded one at a time and then
in parallel, each (student, notebook) through nbgrader and the sealed verification.

    .venv/bin/python benchmarks/grading_times.py [--students N] [--workers W]

Each synthetic student hands in every notebook with every exercise solved, so that every cell runs in full.
Prints seconds per (student, notebook) for each way of grading, where the time goes, and the speed-up of
parallel over sequential grading. A benchmark, not a test: the figures quoted in README.md come from here.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from autograder.course_directory import CourseDirectory  # noqa: E402
from autograder.grading import Limits, Outcome  # noqa: E402
from autograder.pipeline import assignments  # noqa: E402
from autograder.submissions import filled_in, solution_code  # noqa: E402


def timed(course: CourseDirectory, workers: int) -> tuple[float, list[Outcome]]:
    start = time.perf_counter()
    outcomes = course.autograde(limits=Limits(workers=workers))
    seconds = time.perf_counter() - start
    assert all(test.points == test.max_points for outcome in outcomes for test in outcome.tests), "not full marks"
    return seconds, outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=2, help="synthetic students (default 2)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="parallel workers (default: CPUs)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        course = CourseDirectory.create(Path(scratch) / "class")
        course.release()
        for assignment in assignments():
            solved = filled_in(course.released(assignment), solution_code(assignment))
            for number in range(args.students):
                course.submit(f"student-{number:03d}", assignment, solved)
        pairs = args.students * len(assignments())
        sequential, outcomes = timed(course, workers=1)
        parallel, _ = timed(course, workers=args.workers)
    print(f"{args.students} students × {len(assignments())} notebooks = {pairs} (student, notebook) pairs")
    print(f"sequential (1 worker):   {sequential:7.1f} s, {sequential / pairs:5.1f} s per (student, notebook)")
    print(f"parallel ({args.workers} workers):   {parallel:7.1f} s, {parallel / pairs:5.1f} s per (student, notebook)")
    print(f"speed-up: {sequential / parallel:.2f}× on {os.cpu_count()} CPUs")
    print("\nwhere one job's time goes when grading sequentially (mean seconds):")
    for assignment in assignments():
        jobs = [outcome.seconds for outcome in outcomes if outcome.assignment == assignment]
        nbgrader = statistics.mean(job["nbgrader"] for job in jobs)
        verification = statistics.mean(job["verification"] for job in jobs)
        print(f"  {assignment:32s} nbgrader {nbgrader:5.1f} s   sealed verification {verification:5.1f} s")


if __name__ == "__main__":
    main()
