"""The structural comparison of a submission with the notebook that was released: what the student changed in
cells they were not meant to change.

nbgrader 0.9.6 repairs some of this silently when it autogrades (it restores a locked cell's source and a
graded cell's type and points from the gradebook) and misses the rest (it runs cells in the submission's
order, and leaves a deleted test cell ungraded unless told to add it back). Either way the instructor
should hear of it; the sealed verification never depends on it, since it runs the source's cells in the
source's order.
"""

import nbformat

from autograder.cells import grade_id, grading, is_test, key, label
from autograder.verification.findings import ChangedCell

# nbgrader metadata a student has no reason to change.
GRADING_FIELDS = ("grade", "solution", "locked", "points", "grade_id")


def compare(released: nbformat.NotebookNode, submitted: nbformat.NotebookNode) -> list[ChangedCell]:
    """Every change to a graded or locked cell of ``released`` found in ``submitted``."""
    matched, findings = match_cells(released, submitted)
    for cell in (cell for cell in released.cells if grading(cell)):
        counterpart = matched.get(key(cell))
        if counterpart is None:
            findings.append(ChangedCell("deleted", label(cell), f"{describe(cell)} was deleted"))
            continue
        findings += changes_to(cell, counterpart)
    findings += reordering(released, submitted, matched)
    return findings


def match_cells(
    released: nbformat.NotebookNode, submitted: nbformat.NotebookNode
) -> tuple[dict[str, nbformat.NotebookNode], list[ChangedCell]]:
    """The submitted cell that stands for each released cell, by key; a cell whose grade_id was removed still
    matches by its cell id. Also reports grade_ids that appear more than once."""
    by_key: dict[str, nbformat.NotebookNode] = {}
    findings = []
    for cell in submitted.cells:
        if key(cell) in by_key and grade_id(cell):
            findings.append(ChangedCell("duplicated", label(cell), f"{label(cell)} appears more than once"))
            continue
        by_key.setdefault(key(cell), cell)
    by_id = {cell.get("id"): cell for cell in submitted.cells}
    matched = {}
    for cell in released.cells:
        counterpart = by_key.get(key(cell)) or by_id.get(cell.get("id"))
        if counterpart is not None:
            matched[key(cell)] = counterpart
    return matched, findings


def describe(cell: nbformat.NotebookNode) -> str:
    if is_test(cell):
        return f"the test cell {label(cell)}"
    if grading(cell).get("solution"):
        return f"the answer cell {label(cell)}"
    return f"the read-only cell {label(cell)}"


def changes_to(cell: nbformat.NotebookNode, counterpart: nbformat.NotebookNode) -> list[ChangedCell]:
    findings = []
    if counterpart.cell_type != cell.cell_type:
        text = f"{describe(cell)} was changed from a {cell.cell_type} cell to a {counterpart.cell_type} cell"
        findings.append(ChangedCell("retyped", label(cell), text))
    if grading(cell).get("locked") and counterpart.source != cell.source:
        findings.append(ChangedCell("edited", label(cell), f"{describe(cell)} was edited"))
    changed = [
        field
        for field in GRADING_FIELDS
        if grading(counterpart).get(field) != grading(cell).get(field)
        and not (field == "points" and not grading(cell).get("grade"))
    ]
    if changed:
        findings.append(
            ChangedCell(
                "metadata",
                label(cell),
                f"the grading metadata of {label(cell)} was changed: "
                + ", ".join(
                    f"{field} {grading(cell).get(field)!r} → {grading(counterpart).get(field)!r}" for field in changed
                ),
            )
        )
    return findings


def reordering(
    released: nbformat.NotebookNode, submitted: nbformat.NotebookNode, matched: dict[str, nbformat.NotebookNode]
) -> list[ChangedCell]:
    """The graded cells that no longer come in the released order, each named with the cell it now follows."""
    position = {key(cell): index for index, cell in enumerate(released.cells) if grading(cell)}
    counterpart_key = {id(matched[k]): k for k in position if k in matched}
    sequence = [counterpart_key[id(cell)] for cell in submitted.cells if id(cell) in counterpart_key]
    in_order = set(longest_increasing(sequence, position))
    findings = []
    for index, moved in enumerate(sequence):
        if moved not in in_order:
            before = label(matched[sequence[index - 1]]) if index else "the top of the notebook"
            name = label(matched[moved])
            findings.append(
                ChangedCell("reordered", name, f"the cells were reordered: {name} now comes after {before}")
            )
    return findings


def longest_increasing(sequence: list[str], position: dict[str, int]) -> list[str]:
    """The longest run of cells, in the given order, whose released positions increase: the cells that stayed."""
    best: list[list[str]] = []
    for index, item in enumerate(sequence):
        candidates = [best[j] for j in range(index) if position[sequence[j]] < position[item]]
        best.append(max(candidates, key=len, default=[]) + [item])
    return max(best, key=len, default=[])
