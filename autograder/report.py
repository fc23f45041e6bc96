"""Grading results as text: a table per notebook (exercise, points, what went wrong), and a class summary."""

import math
import textwrap
from dataclasses import dataclass
from datetime import datetime

from autograder.grading import NotebookResult, Outcome
from transformer_course.checks import CheckFailed

EXERCISE_WIDTH = 24
LINE_WIDTH = 110
# A check's own message needs no type name in front of it.
CHECKS_OWN_ERRORS = {kind.__name__ for kind in (CheckFailed, *CheckFailed.__subclasses__())}


def exercise(test: str) -> str:
    """A test cell's exercise, as the notebook names it: test_softmax tests softmax."""
    return test.removeprefix("test_")


def points(value: float) -> str:
    return f"{value:g}"


def notebook_table(result: NotebookResult) -> str:
    lines = [f"{result.name}: {points(result.points)} / {points(result.max_points)} points"]
    for test in result.tests:
        row = f"  {exercise(test.name):<{EXERCISE_WIDTH}} {points(test.points):>3} / {points(test.max_points):<3} "
        message = test.message or "✔"
        if test.error_type in CHECKS_OWN_ERRORS:
            message = message.removeprefix(f"{test.error_type}: ")
        lines += wrapped(message, indent=" " * len(row), first=row)
    lines += [line for note in result.notes for line in wrapped(note.text, indent="        ", first="  note: ")]
    return "\n".join(lines)


def wrapped(text: str, indent: str, first: str) -> list[str]:
    """``text`` wrapped to the line width, its first line after ``first``, the others after ``indent``."""
    lines = []
    for paragraph in text.splitlines() or [""]:
        lines += textwrap.wrap(paragraph, LINE_WIDTH, initial_indent=first, subsequent_indent=indent) or [first]
        first = indent
    return lines


@dataclass(frozen=True)
class Lateness:
    """When a submission was handed in and due (UTC, as nbgrader keeps them), and what that cost."""

    submitted: datetime | None = None
    due: datetime | None = None
    seconds_late: float = 0.0
    penalty: float = 0.0  # nbgrader's late_submission_penalty, of all the assignment's notebooks
    marked_late: bool = False  # the LMS named it late, in a download without times


def lateness_note(lateness: Lateness) -> str | None:
    """One line for the report: 'submitted …, due …: 1 d 2 h late, late penalty 2 points'; nothing when there is
    neither a submission time nor a late mark."""
    if lateness.submitted is None:
        if lateness.marked_late:
            return "the LMS marked this submission late, but its download has no submission time: no late penalty"
        return None
    times = f"submitted {utc(lateness.submitted)}" + (f", due {utc(lateness.due)}" if lateness.due else "")
    if lateness.due is None:
        return times
    if lateness.seconds_late <= 0:
        return f"{times}: on time"
    return f"{times}: {duration(lateness.seconds_late)} late, late penalty {points(lateness.penalty)} points"


def utc(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def duration(seconds: float) -> str:
    """'1 d 2 h 5 min', to the started minute."""
    days, minutes = divmod(math.ceil(seconds / 60), 24 * 60)
    parts = [(days, "d"), *zip(divmod(minutes, 60), ("h", "min"), strict=True)]
    return " ".join(f"{count} {unit}" for count, unit in parts if count)


def outcome_report(outcome: Outcome, heading: bool = True) -> str:
    """Everything about one student's assignment: notes on the submission, then each notebook's table."""
    parts = [f"== {outcome.student} · {outcome.assignment}"] if heading else []
    parts += [line for note in outcome.notes for line in wrapped(note.text, indent="        ", first="  note: ")]
    parts += [notebook_table(notebook) for notebook in outcome.notebooks]
    return "\n".join(parts)


def class_summary(outcomes: list[Outcome]) -> str:
    """One line per student and assignment: points after any late penalty (the grade exported), and whether it
    could be graded."""
    width = max([len("student")] + [len(outcome.student) for outcome in outcomes])
    lines = [f"{'student':<{width}}  {'assignment':<32} points"]
    for outcome in outcomes:
        earned = outcome.grade
        remark = "" if outcome.graded else "  (COULD NOT BE GRADED: see its report)"
        if outcome.late_penalty and outcome.graded:
            remark = f"  ({points(outcome.points)} less the late penalty of {points(outcome.late_penalty)})"
        score = f"{points(earned)} / {points(outcome.max_points)}"
        lines.append(f"{outcome.student:<{width}}  {outcome.assignment:<32} {score}{remark}")
    return "\n".join(lines)
