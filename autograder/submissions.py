"""Submissions made by code from the solutions and the kept wrong answers, to grade as students would be.

A complete submission is the student version with every solution cell filled in with the solution's
code. A wrong-answer submission replaces some of those cells with kept wrong answers; because every
exercise is graded on its own, one submission can carry one wrong answer per exercise.
"""

import itertools
import re
from collections import defaultdict
from dataclasses import dataclass, field

import nbformat

from autograder.pipeline import SOLUTIONS
from autograder.wrong_answers import WrongAnswer, all_wrong_answers

SOLUTION_MARKERS = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$\n?", re.MULTILINE)


@dataclass
class Submission:
    student: str
    assignment: str
    notebooks: dict[str, nbformat.NotebookNode]
    wrong_answers: list[WrongAnswer] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # other files handed in, by name: text as it is


def solution_notebooks(assignment: str) -> dict[str, nbformat.NotebookNode]:
    return {path.name: nbformat.read(path, as_version=4) for path in sorted((SOLUTIONS / assignment).glob("*.ipynb"))}


def solution_code(assignment: str) -> dict[str, str]:
    """The code of every solution cell, by grade_id, as a student would type it (no markers)."""
    return {
        cell.metadata["nbgrader"]["grade_id"]: SOLUTION_MARKERS.sub("", cell.source)
        for notebook in solution_notebooks(assignment).values()
        for cell in notebook.cells
        if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code"
    }


def filled_in(released: dict[str, nbformat.NotebookNode], code: dict[str, str]) -> dict[str, nbformat.NotebookNode]:
    """Copies of the released notebooks with the solution cells named in ``code`` filled in."""
    filled = {}
    for name, notebook in released.items():
        notebook = nbformat.from_dict(notebook)
        for cell in notebook.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if cell.metadata.get("nbgrader", {}).get("solution") and grade_id in code:
                cell.source = code[grade_id]
        filled[name] = notebook
    return filled


def wrong_answer_submissions(assignment: str, released: dict[str, nbformat.NotebookNode]) -> list[Submission]:
    """Submissions that together carry every kept wrong answer of the assignment, one per exercise each."""
    by_exercise = defaultdict(list)
    for answer in all_wrong_answers():
        if answer.assignment == assignment:
            by_exercise[answer.exercise].append(answer)
    correct = solution_code(assignment)
    submissions = []
    for number, bundle in enumerate(itertools.zip_longest(*by_exercise.values()), start=1):
        answers = [answer for answer in bundle if answer is not None]
        code = {**correct, **{answer.exercise: answer.source for answer in answers}}
        submissions.append(Submission(f"wrong-{number:02d}", assignment, filled_in(released, code), answers))
    return submissions


def points_by_test(notebooks: dict[str, nbformat.NotebookNode]) -> dict[str, float]:
    """The points of every graded test cell, by grade_id."""
    return {
        cell.metadata["nbgrader"]["grade_id"]: float(cell.metadata["nbgrader"].get("points", 0))
        for notebook in notebooks.values()
        for cell in notebook.cells
        if cell.metadata.get("nbgrader", {}).get("grade")
    }
