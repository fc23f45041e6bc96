"""The stored notebooks: clean, free of machine paths, in sync, and built to the course's pattern."""

import re
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest

from autograder.cells import grade_id, is_answer, is_test, points
from autograder.repository import NOTEBOOKS, SOLUTIONS, assignments, nbgrader, notebook_paths
from notebook_build import as_stored, drift, stripped

STORED = notebook_paths(SOLUTIONS) + notebook_paths(NOTEBOOKS)
# Unix home and temporary folders, and Windows user folders (backslashes are doubled in the JSON).
# An exercise's heading, which tells the learner its points: "### ✏️ Exercise 2 — the attention weights (2 points)".
EXERCISE_HEADING = re.compile(r"^### ✏️ Exercise (?P<number>\d+) — .*\((?P<points>[\d.]+) points?\)$", re.MULTILINE)
MACHINE_PATH = re.compile(
    r"/(home|root|Users|tmp|private|var/folders)/"
    r"|\b[A-Za-z]:\\\\(Users|Documents and Settings)\b"
)


def label(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}/{path.name}"


def graded_cells(path: Path, which: Callable[[nbformat.NotebookNode], bool]) -> dict[str, nbformat.NotebookNode]:
    """The cells of the notebook at ``path`` that ``which`` selects (``is_answer``, ``is_test``), by grade_id."""
    return {grade_id(cell): cell for cell in nbformat.read(path, as_version=4).cells if which(cell)}


def test_there_is_a_notebook_per_assignment():
    assert assignments(), "no assignments in solutions/"
    for assignment in assignments():
        assert list((SOLUTIONS / assignment).glob("*.ipynb")), f"solutions/{assignment} has no notebook"


@pytest.mark.parametrize("path", STORED, ids=label)
def test_stored_without_outputs_or_run_metadata(path):
    text = path.read_text(encoding="utf-8")
    assert text == as_stored(stripped(nbformat.reads(text, as_version=4))), (
        f"{label(path)} holds outputs or per-run metadata: run `python3.11 course.py generate`"
    )


@pytest.mark.parametrize("path", STORED, ids=label)
def test_no_machine_paths(path):
    found = MACHINE_PATH.search(path.read_text(encoding="utf-8"))
    assert found is None, f"{label(path)} contains a machine path near {found.group(0)!r}"


def test_student_versions_are_in_sync_with_solutions():
    assert drift() == [], "notebooks/ is out of date: run `python3.11 course.py generate` and commit"


@pytest.mark.parametrize("path", notebook_paths(SOLUTIONS), ids=label)
def test_every_exercise_has_a_visible_check_and_hidden_tests_with_points(path):
    solutions, tests = graded_cells(path, is_answer), graded_cells(path, is_test)
    assert solutions, f"{label(path)} has no exercise"
    assert set(tests) == {f"test_{exercise}" for exercise in solutions}, "each exercise X needs one test cell test_X"
    for test, cell in tests.items():
        visible, _, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
        assert points(cell) > 0, f"{test} gives no points"
        assert re.search(r"^\w", visible, re.MULTILINE), f"{test} has no visible check"
        assert hidden.strip(), f"{test} has no hidden tests"
    for exercise, cell in solutions.items():
        assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source, exercise


@pytest.mark.parametrize("path", notebook_paths(SOLUTIONS), ids=label)
def test_code_reaches_no_files_by_relative_path(path):
    # nbgrader runs submissions deeper in the tree than solutions/; data and code come from the package.
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            assert not re.search(r"""["'](\.\.?/|data/)""", cell.source), f"relative path in {cell.id}"


@pytest.mark.parametrize("path", notebook_paths(SOLUTIONS), ids=label)
def test_each_exercise_heading_states_the_points_its_test_cell_gives(path):
    cells = nbformat.read(path, as_version=4).cells
    points_of_test = {grade_id(cell): points(cell) for cell in cells if grade_id(cell)}
    heading, stated = None, {}  # the exercise each heading introduces: its answer cell, the first after it
    for cell in cells:
        if cell.cell_type == "markdown" and (found := EXERCISE_HEADING.search(cell.source)):
            heading = found
        elif is_answer(cell):
            assert heading, f"{label(path)}: the exercise {grade_id(cell)} has no heading that states its points"
            stated[grade_id(cell)], heading = heading, None
    for number, (exercise, found) in enumerate(stated.items(), start=1):
        assert int(found["number"]) == number, f"{label(path)}: {found[0]!r} should be exercise {number}"
        given = points_of_test[f"test_{exercise}"]
        assert float(found["points"]) == given, f"{label(path)}: {found[0]!r}, but test_{exercise} gives {given:g}"


def test_nbgrader_validate_passes_on_every_solution_notebook():
    result = nbgrader("validate", *map(str, notebook_paths(SOLUTIONS)))
    assert "ERROR" not in result.stdout and "VALIDATION FAILED" not in result.stdout, result.stdout
    assert result.stdout.count("Success! Your notebook passes all the tests.") == len(notebook_paths(SOLUTIONS))


def test_nbgrader_validate_invert_finds_every_test_failing_on_student_versions():
    result = nbgrader("validate", "--invert", *map(str, notebook_paths(NOTEBOOKS)))
    assert "PASSED" not in result.stdout, result.stdout
    assert result.stdout.count("Success!") == len(notebook_paths(NOTEBOOKS)), result.stdout
