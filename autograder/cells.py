"""How the autograder tells a notebook's cells apart: answer cells, graded test cells, and the course's own."""

import nbformat


def grading(cell: nbformat.NotebookNode) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def grade_id(cell: nbformat.NotebookNode) -> str | None:
    return grading(cell).get("grade_id")


def is_test(cell: nbformat.NotebookNode) -> bool:
    """A graded test cell: its points are won when it runs without an error."""
    return bool(grading(cell).get("grade")) and not grading(cell).get("solution")


def is_answer(cell: nbformat.NotebookNode) -> bool:
    """A cell in which the student writes code."""
    return bool(grading(cell).get("solution")) and cell.cell_type == "code"


def key(cell: nbformat.NotebookNode) -> str:
    """What identifies a cell across the source, the released and the submitted notebook: the grade_id of an
    nbgrader cell (ids may differ between source and release), the cell id of any other."""
    return f"grade_id {grade_id(cell)}" if grade_id(cell) else f"id {cell.get('id')}"


def label(cell: nbformat.NotebookNode) -> str:
    """How a report names a cell."""
    return grade_id(cell) or f"cell {cell.get('id')}"


def points(cell: nbformat.NotebookNode) -> float:
    return float(grading(cell).get("points", 0))
