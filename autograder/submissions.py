"""Submissions made by code from the solutions, to grade as students' would be: a complete submission is the
student version with every solution cell filled in with the solution's code."""

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import nbformat

from autograder.cells import grade_id, is_answer, is_test, points
from autograder.repository import SOLUTIONS

SOLUTION_MARKERS = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$\n?", re.MULTILINE)


@dataclass
class Submission:
    student: str
    assignment: str
    notebooks: dict[str, nbformat.NotebookNode]
    wrong_answers: list = field(default_factory=list)  # kept wrong answers it carries (tests/wrong_answers)
    files: dict[str, str] = field(default_factory=dict)  # other files handed in, by name: text as it is


def solution_notebooks(assignment: str) -> dict[str, nbformat.NotebookNode]:
    return {path.name: nbformat.read(path, as_version=4) for path in sorted((SOLUTIONS / assignment).glob("*.ipynb"))}


def solution_code(assignment: str) -> dict[str, str]:
    """The code of every solution cell, by grade_id, as a student would type it (no markers)."""
    return {
        grade_id(cell): SOLUTION_MARKERS.sub("", cell.source)
        for notebook in solution_notebooks(assignment).values()
        for cell in notebook.cells
        if is_answer(cell)
    }


def solved_namespace(assignment: str, exercises: Iterable[str] | None = None) -> dict:
    """What a solved notebook defines: its set-up cell (the first code cell, the imports) run, then the solution
    cells of ``exercises`` (every one when None), as a student would have typed them."""
    (notebook,) = solution_notebooks(assignment).values()
    namespace = {}
    exec(next(cell.source for cell in notebook.cells if cell.cell_type == "code"), namespace)
    code = solution_code(assignment)
    for exercise in code if exercises is None else exercises:
        exec(code[exercise], namespace)
    return namespace


def filled_in(released: dict[str, nbformat.NotebookNode], code: dict[str, str]) -> dict[str, nbformat.NotebookNode]:
    """Copies of the released notebooks with the solution cells named in ``code`` filled in."""
    filled = {}
    for name, notebook in released.items():
        notebook = nbformat.from_dict(notebook)
        for cell in notebook.cells:
            if is_answer(cell) and grade_id(cell) in code:
                cell.source = code[grade_id(cell)]
        filled[name] = notebook
    return filled


def points_by_test(notebooks: dict[str, nbformat.NotebookNode]) -> dict[str, float]:
    """The points of every graded test cell, by grade_id."""
    return {grade_id(cell): points(cell) for notebook in notebooks.values() for cell in notebook.cells if is_test(cell)}
