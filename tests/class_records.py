"""What grading left in a class folder, read back as the tests check it."""

import csv
import hashlib
import html
import re
import sqlite3
import sys
from pathlib import Path

import nbformat

from autograder.class_folder import GRADING_LOCK, LEDGER, REPORTS, ClassFolder
from autograder.grades import NOT_GRADED
from autograder.grading import ShownFailure, failures_in
from autograder.repository import NOTEBOOKS, REPO, SOLUTIONS
from autograder.submissions import solution_code

# What grading writes into a class folder; the rest stays as it was.
WRITTEN_BY_GRADING = ("autograded", "feedback", "gradebook.db", "grades.csv", LEDGER, REPORTS, NOT_GRADED, GRADING_LOCK)


def grades(class_folder: ClassFolder) -> list[dict[str, str]]:
    """The rows of the exported grades CSV: one per student and assignment handed out."""
    with open(class_folder.export(), newline="", encoding="utf-8") as file:
        return list(csv.DictReader(file))


def failed_in_nbgrader(class_folder: ClassFolder, student: str, assignment: str) -> dict[str, ShownFailure]:
    """Each test cell that failed in nbgrader's run of the student's notebooks, with the error it showed."""
    folder = class_folder.root / "autograded" / student / assignment
    return {test: error for path in sorted(folder.glob("*.ipynb")) for test, error in failures_in(path).items()}


def feedback_files(class_folder: ClassFolder, assignment: str) -> list[Path]:
    """The feedback HTML written so far: feedback/<student>/<assignment>/<notebook>.html."""
    return sorted((class_folder.root / "feedback").glob(f"*/{assignment}/*.html"))


def class_files(root: Path) -> dict[str, str]:
    """Every file of the class folder that grading does not write, with a hash of its bytes."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.relative_to(root).parts[0] not in WRITTEN_BY_GRADING
    }


def feedback_text(path: Path) -> str:
    """A feedback file's text as a student reads it: tags and syntax highlighting removed."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def code_lines(source: str) -> set[str]:
    """The lines of code worth looking for elsewhere: long enough not to occur by chance."""
    return {
        line.strip() for line in source.splitlines() if len(line.strip()) >= 16 and not line.strip().startswith("#")
    }


def regions(source: str, begin: str, end: str) -> str:
    return "\n".join(re.findall(rf"### {begin}\n(.*?)### {end}", source, flags=re.DOTALL))


def gradebook_rows(class_folder: ClassFolder) -> list[tuple]:
    """Every grade row of the class gradebook: its id, whose and which cell it is, and its scores. A lost,
    duplicated or re-created grade changes this list."""
    with sqlite3.connect(class_folder.root / "gradebook.db") as database:
        return database.execute(
            """select grade.id, submitted_assignment.student_id, assignment.name, notebook.name, base_cell.name,
                      grade.auto_score, grade.manual_score, grade.needs_manual_grade
               from grade
               join submitted_notebook on grade.notebook_id = submitted_notebook.id
               join submitted_assignment on submitted_notebook.assignment_id = submitted_assignment.id
               join assignment on submitted_assignment.assignment_id = assignment.id
               join notebook on submitted_notebook.notebook_id = notebook.id
               join base_cell on grade.cell_id = base_cell.id
               order by 2, 3, 4, 5"""
        ).fetchall()


def hidden_test_lines(assignment: str) -> set[str]:
    """The lines of the assignment's hidden tests that appear nowhere in its visible code."""
    source = "\n".join(
        cell.source for path in (SOLUTIONS / assignment).glob("*.ipynb") for cell in nbformat.read(path, 4).cells
    )
    visible = code_lines(re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", source, flags=re.DOTALL))
    return code_lines(regions(source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")) - visible


def assert_feedback_hides_tests_and_machine_paths(class_folder: ClassFolder, assignment: str) -> None:
    """No feedback page of the assignment shows a hidden test's code or a folder of the grading machine."""
    hidden = hidden_test_lines(assignment)
    assert hidden, f"{assignment} has no hidden test line to look for"
    for path in feedback_files(class_folder, assignment):
        shown = feedback_text(path)
        assert [line for line in hidden if line in shown] == [], path
        assert str(REPO) not in shown and sys.prefix not in shown, f"{path} shows the grading machine's folders"


def solution_lines_not_handed_out(assignment: str, exercises: list[str]) -> set[str]:
    """The lines of the exercises' solutions that the student version shows nowhere, not even in its prose: a
    student who did not write them can only have them from the solutions."""
    handed_out = "\n".join(
        cell.source for path in (NOTEBOOKS / assignment).glob("*.ipynb") for cell in nbformat.read(path, 4).cells
    )
    solutions = solution_code(assignment)
    lines = set().union(*(code_lines(solutions[exercise]) for exercise in exercises))
    return {line for line in lines if line not in handed_out}
