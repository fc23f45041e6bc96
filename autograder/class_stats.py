"""What the class got wrong, for the instructor to know what to teach again: per exercise, the share of students
with full marks and the failures' most common messages (the checks name a mistake the same way for everyone who
makes it, so they group); the distribution of the grades; who handed in late and who has not handed in.

Read from the gradebook (scores, times) and the autograded notebooks (the failures' messages); `class stats`
prints a short table and writes an HTML page."""

import base64
import html
import io
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from autograder.cells import grade_id, is_test
from autograder.grades import Grade, Status
from autograder.grading import failures_in
from autograder.report import exercise

COMMON = 5  # the most common messages shown per exercise


@dataclass
class ExerciseStats:
    notebook: str
    test: str  # the test cell's grade id: test_<exercise>
    max_points: float
    full_marks: int = 0  # graded students with all its points
    graded: int = 0
    messages: Counter = field(default_factory=Counter)  # a failure's first line → how many students saw it

    @property
    def name(self) -> str:
        return exercise(self.test)


@dataclass
class AssignmentStats:
    name: str
    grades: list[Grade]
    exercises: list[ExerciseStats]

    @property
    def graded(self) -> list[Grade]:
        return [grade for grade in self.grades if grade.status is Status.GRADED]

    def who(self, status: Status) -> list[str]:
        return [grade.student for grade in self.grades if grade.status is status]

    @property
    def late(self) -> list[str]:
        return [grade.student for grade in self.grades if grade.late]


def assignment_stats(root: Path, gradebook: Gradebook, grades: list[Grade]) -> AssignmentStats:
    """The statistics of one assignment, from the grades of its students (grades.class_grades)."""
    name = grades[0].assignment
    exercises = {
        (notebook.name, cell.name): ExerciseStats(notebook.name, cell.name, cell.max_score)
        for notebook in gradebook.find_assignment(name).notebooks
        for cell in notebook.grade_cells
        if cell.name.startswith("test_")
    }
    for grade in grades:
        if grade.status is not Status.GRADED:
            continue
        for (notebook, test), stats in exercises.items():
            stats.graded += 1
            stats.full_marks += score_of(gradebook, grade, notebook, test) >= stats.max_points
        for notebook, failures in failures_of(root, grade).items():
            for test, text in failures.items():
                if (notebook, test) in exercises:
                    exercises[notebook, test].messages[first_line(text)] += 1
    return AssignmentStats(name, grades, sorted(exercises.values(), key=lambda stats: order_of(root, name, stats)))


def score_of(gradebook: Gradebook, grade: Grade, notebook: str, test: str) -> float:
    try:
        return gradebook.find_grade(test, notebook, grade.assignment, grade.student).score or 0.0
    except MissingEntry:
        return 0.0


def failures_of(root: Path, grade: Grade) -> dict[str, dict[str, str]]:
    """notebook → test → the failure it showed, in the student's autograded notebooks."""
    folder = root / "autograded" / grade.student / grade.assignment
    return {
        path.stem: {test: failure.text for test, failure in failures_in(path).items()}
        for path in sorted(folder.glob("*.ipynb"))
    }


def first_line(text: str) -> str:
    """A failure as it groups: its first line, without the check's own error type in front."""
    line = text.strip().splitlines()[0] if text.strip() else "(no message)"
    for prefix in ("CheckFailed: ", "NotImplementedYet: "):
        line = line.removeprefix(prefix)
    return line


def order_of(root: Path, assignment: str, stats: ExerciseStats) -> tuple[str, int]:
    """An exercise's place: its notebook, then its test cell's position in the student version."""
    path = root / "release" / assignment / f"{stats.notebook}.ipynb"
    if path.exists():
        tests = [grade_id(cell) for cell in nbformat.read(path, as_version=4).cells if is_test(cell)]
        if stats.test in tests:
            return stats.notebook, tests.index(stats.test)
    return stats.notebook, 1_000


# --- the table ---------------------------------------------------------------------------------------------


def table(stats: AssignmentStats) -> str:
    """A few lines for the terminal: who handed in, the mean, and each exercise with its most common failure."""
    graded = stats.graded
    mean = sum(grade.score for grade in graded) / len(graded) if graded else 0.0
    possible = stats.grades[0].max_score
    lines = [
        f"{stats.name}: {len(graded)} graded, {len(stats.who(Status.NOT_SUBMITTED))} not submitted, "
        f"{len(stats.who(Status.NOT_GRADED))} could not be graded, {len(stats.late)} late; "
        f"mean grade {mean:.1f} / {possible:g}"
    ]
    for exercise_stats in stats.exercises:
        share = f"{exercise_stats.full_marks}/{exercise_stats.graded}"
        lines.append(f"  {exercise_stats.name:<28} full marks {share:>7}")
        for message, count in exercise_stats.messages.most_common(1):
            shown = message if len(message) <= 90 else message[:87] + "..."
            lines.append(f"      most common ({count}): {shown}")
    return "\n".join(lines)


# --- the page ----------------------------------------------------------------------------------------------


def page(class_name: str, every: list[AssignmentStats]) -> str:
    sections = "\n".join(section(stats) for stats in every)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>What the class got wrong: {html.escape(class_name)}</title>
<style>
body {{ font-family: sans-serif; max-width: 60rem; margin: 2rem auto; line-height: 1.4; }}
table {{ border-collapse: collapse; margin: 1rem 0; }}
td, th {{ border: 1px solid #ccc; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }}
td.number {{ text-align: right; }}
</style></head>
<body>
<h1>What the class got wrong: {html.escape(class_name)}</h1>
{sections}
</body></html>
"""


def section(stats: AssignmentStats) -> str:
    rows = "\n".join(exercise_row(exercise_stats) for exercise_stats in stats.exercises)
    people = [
        ("Late", stats.late),
        ("Not submitted", stats.who(Status.NOT_SUBMITTED)),
        ("Could not be graded (grade by hand; the report says why)", stats.who(Status.NOT_GRADED)),
    ]
    lists = "\n".join(
        f"<p><b>{title}</b> ({len(students)}): {html.escape(', '.join(students)) or 'none'}</p>"
        for title, students in people
    )
    return f"""<h2>{html.escape(stats.name)}</h2>
<p>{len(stats.graded)} of {len(stats.grades)} students graded.</p>
<img alt="The distribution of the grades of {html.escape(stats.name)}" src="data:image/png;base64,{histogram(stats)}">
<table>
<tr><th>exercise</th><th>full marks</th><th>the most common failures (students)</th></tr>
{rows}
</table>
{lists}"""


def exercise_row(stats: ExerciseStats) -> str:
    share = f"{stats.full_marks} / {stats.graded}" + (
        f" ({stats.full_marks / stats.graded:.0%})" if stats.graded else ""
    )
    failures = "".join(
        f"<li>({count}) {html.escape(message)}</li>" for message, count in stats.messages.most_common(COMMON)
    )
    return (
        f"<tr><td>{html.escape(stats.name)}</td><td class=number>{share}</td>"
        f"<td><ul>{failures or '<li>none</li>'}</ul></td></tr>"
    )


def histogram(stats: AssignmentStats) -> str:
    """The distribution of the graded students' grades, as a PNG in base64."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    possible = stats.grades[0].max_score
    figure, axes = plt.subplots(figsize=(6, 2.6))
    scores = [grade.score for grade in stats.graded]
    bins = [edge - 0.5 for edge in range(int(possible) + 2)]
    axes.hist(scores, bins=bins, color="#4a78b5", edgecolor="white")
    axes.set_xlabel(f"grade (of {possible:g}, after any late penalty)")
    axes.set_ylabel("students")
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.set_xlim(-0.5, possible + 0.5)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
