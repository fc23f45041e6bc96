"""Time the course's grading against plain nbgrader on this machine, notebook by notebook, side by side.

    .venv/bin/python benchmarks/grading_times.py [--students N] [--rounds R] [--write-normal-runs]

Each synthetic student hands in every notebook with every exercise solved, so that every cell runs in full. In
each round, one after the other (alternating, so that a machine getting busier costs both alike), the whole class:

- **plain nbgrader**: ``nbgrader autograde`` of each assignment with nbgrader's own preprocessors, no sandbox and no
  judge: the kernel runs the test cells, hidden tests included;
- **the course's grading**: ``class autograde`` with one worker: the kernel in the sandbox, the test cells in the
  judge, a scratch copy of the gradebook per job and the report.

Prints seconds per (student, notebook) for both and their ratio, then per notebook where the course's time goes
(nbgrader's run, of which the judge's share). With --write-normal-runs it writes each notebook's graded run, as
the course grades it, into autograder/normal_runs.json: the default time limit of a grading job is a few times that
(grading.JOB_TIME_FACTOR). A benchmark, not a test: the figures quoted in the docs come from here.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from autograder.class_folder import ClassFolder
from autograder.grading import CELL_TIMEOUT, NORMAL_RUNS, Limits, Outcome
from autograder.repository import assignments, this_python_first
from autograder.submissions import filled_in, solution_code

# nbgrader's own autograde steps (nbgrader.converters.autograde), in place of the course's.
PLAIN = """
c.Autograde.autograde_preprocessors = [
    "nbgrader.preprocessors.Execute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
"""


def class_with_solutions(root: Path, students: int) -> ClassFolder:
    class_folder = ClassFolder.create(root)
    class_folder.write_student_versions()
    for assignment in assignments():
        solved = filled_in(class_folder.released(assignment), solution_code(assignment))
        for number in range(students):
            class_folder.submit(f"student-{number:03d}", assignment, solved)
    return class_folder


def plain_nbgrader(class_folder: ClassFolder, assignment: str) -> float:
    """Seconds for nbgrader alone to autograde every student's notebook of the assignment, in one command."""
    command = [sys.executable, "-m", "nbgrader", "autograde", assignment, "--force"]
    command.append(f"--ExecutePreprocessor.timeout={int(CELL_TIMEOUT)}")
    start = time.perf_counter()
    subprocess.run(command, cwd=class_folder.root, env=this_python_first(), capture_output=True, check=True)
    return time.perf_counter() - start


def course_grading(class_folder: ClassFolder) -> tuple[float, list[Outcome]]:
    """Seconds for the course to grade the whole class, every notebook, in one batch with one worker."""
    start = time.perf_counter()
    outcomes = class_folder.autograde(limits=Limits(workers=1))
    seconds = time.perf_counter() - start
    assert all(test.points == test.max_points for outcome in outcomes for test in outcome.tests), "not full marks"
    return seconds, outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=2, help="synthetic students (default 2)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    parser.add_argument("--write-normal-runs", action="store_true", help=f"write {NORMAL_RUNS.name}")
    args = parser.parse_args()
    plain_seconds = {assignment: [] for assignment in assignments()}
    course_seconds, jobs = [], []
    with tempfile.TemporaryDirectory() as scratch:
        course = class_with_solutions(Path(scratch) / "course", args.students)
        plain = class_with_solutions(Path(scratch) / "plain", args.students)
        with open(plain.root / "nbgrader_config.py", "a", encoding="utf-8") as config:
            config.write(PLAIN)
        for _ in range(args.rounds):  # alternating, so that a machine getting busier costs both alike
            for assignment in assignments():
                plain_seconds[assignment].append(plain_nbgrader(plain, assignment))
            seconds, outcomes = course_grading(course)
            course_seconds.append(seconds)
            jobs += outcomes
    pairs = args.students * len(assignments())
    bare = sum(statistics.mean(times) for times in plain_seconds.values()) / pairs
    ours = statistics.mean(course_seconds) / pairs
    print(f"{args.students} students × {len(assignments())} notebooks, {args.rounds} alternating rounds, one worker")
    print(f"seconds per (student, notebook): plain nbgrader {bare:.2f}, the course {ours:.2f}, ratio {ours / bare:.2f}")
    print(
        "\nper notebook: plain nbgrader; the course's nbgrader run (kernel in the sandbox, judge), of which the judge"
    )
    normal = {}
    for assignment in assignments():
        runs = [outcome.seconds for outcome in jobs if outcome.assignment == assignment]
        run = statistics.mean(job["nbgrader"] + job["verification"] for job in runs)
        judge = statistics.mean(job["verification"] for job in runs)
        mean_plain = statistics.mean(plain_seconds[assignment]) / args.students
        normal[assignment] = round(run, 1)
        print(f"  {assignment:32s} {mean_plain:5.1f}   {run:5.1f}, {judge:4.1f}")
    if args.write_normal_runs:
        NORMAL_RUNS.write_text(json.dumps(normal, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {NORMAL_RUNS}")


if __name__ == "__main__":
    main()
