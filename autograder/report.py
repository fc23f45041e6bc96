"""Grading results as text: a table per notebook (exercise, points, what went wrong), and a class summary."""

import textwrap

from autograder.grading import NotebookResult, Outcome

EXERCISE_WIDTH = 26
MESSAGE_WIDTH = 88


def exercise(test: str) -> str:
    """A test cell's exercise, as the notebook names it: test_softmax tests softmax."""
    return test.removeprefix("test_")


def points(value: float) -> str:
    return f"{value:g}"


def notebook_table(result: NotebookResult) -> str:
    lines = [f"{result.name}: {points(result.points)} / {points(result.max_points)} points"]
    for test in result.tests:
        score = f"{points(test.points):>3} / {points(test.max_points)}"
        lines.append(f"  {exercise(test.name):<{EXERCISE_WIDTH}} {score:<8} {'' if test.message else '✔'}".rstrip())
        if test.message:
            lines += wrapped(test.message, indent=" " * (EXERCISE_WIDTH + 13))
    lines += [line for note in result.notes for line in wrapped(note, indent="      ", first="  note: ")]
    return "\n".join(lines)


def wrapped(text: str, indent: str, first: str | None = None) -> list[str]:
    lines = []
    for paragraph in text.splitlines() or [""]:
        lines += textwrap.wrap(paragraph, MESSAGE_WIDTH, initial_indent=first or indent, subsequent_indent=indent)
        first = None
    return lines


def outcome_report(outcome: Outcome, heading: bool = True) -> str:
    """Everything about one student's assignment: notes on the submission, then each notebook's table."""
    parts = [f"== {outcome.student} · {outcome.assignment}"] if heading else []
    parts += [line for note in outcome.notes for line in wrapped(note, indent="      ", first="  note: ")]
    parts += [notebook_table(notebook) for notebook in outcome.notebooks]
    return "\n".join(parts)


def class_summary(outcomes: list[Outcome]) -> str:
    """One line per student and assignment: points, and how many tests the sealed run overruled."""
    width = max((len(outcome.student) for outcome in outcomes), default=7)
    lines = [f"{'student':<{width}}  {'assignment':<32} points"]
    for outcome in outcomes:
        earned = sum(notebook.points for notebook in outcome.notebooks)
        possible = sum(notebook.max_points for notebook in outcome.notebooks)
        overruled = sum(test.overruled for notebook in outcome.notebooks for test in notebook.tests)
        remark = f"  ({overruled} passed in the kernel, failed sealed)" if overruled else ""
        if any(note.startswith("not graded") for note in outcome.notes):
            remark = "  (not graded: see its report)"
        lines.append(
            f"{outcome.student:<{width}}  {outcome.assignment:<32} {points(earned)} / {points(possible)}{remark}"
        )
    return "\n".join(lines)
