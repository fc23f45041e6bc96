"""The stored notebooks: clean, free of machine paths, in sync, and built to the course's pattern."""

import re
from pathlib import Path

import nbformat
import pytest

from autograder.pipeline import NOTEBOOKS, SOLUTIONS, as_stored, assignments, drift, notebook_paths, stripped

STORED = notebook_paths(SOLUTIONS) + notebook_paths(NOTEBOOKS)
# Unix home and temporary folders, and Windows user folders (backslashes are doubled in the JSON).
MACHINE_PATH = re.compile(
    r"/(home|root|Users|tmp|private|var/folders)/"
    r"|\b[A-Za-z]:\\\\(Users|Documents and Settings)\b"
)


def label(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}/{path.name}"


def graded_cells(path: Path, kind: str) -> dict[str, nbformat.NotebookNode]:
    cells = nbformat.read(path, as_version=4).cells
    return {
        cell.metadata["nbgrader"]["grade_id"]: cell for cell in cells if cell.metadata.get("nbgrader", {}).get(kind)
    }


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
    solutions, tests = graded_cells(path, "solution"), graded_cells(path, "grade")
    assert solutions, f"{label(path)} has no exercise"
    assert set(tests) == {f"test_{exercise}" for exercise in solutions}, "each exercise X needs one test cell test_X"
    for grade_id, cell in tests.items():
        visible, _, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
        assert cell.metadata["nbgrader"]["points"] > 0, f"{grade_id} gives no points"
        assert re.search(r"^\w", visible, re.MULTILINE), f"{grade_id} has no visible check"
        assert hidden.strip(), f"{grade_id} has no hidden tests"
    for grade_id, cell in solutions.items():
        assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source, grade_id


@pytest.mark.parametrize("path", notebook_paths(SOLUTIONS), ids=label)
def test_code_reaches_no_files_by_relative_path(path):
    # nbgrader runs submissions deeper in the tree than solutions/; data and code come from the package.
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            assert not re.search(r"""["'](\.\.?/|data/)""", cell.source), f"relative path in {cell.id}"
