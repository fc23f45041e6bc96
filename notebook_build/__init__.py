"""The student versions: notebooks/ is generated from solutions/ by nbgrader, and stored without outputs.

``python3.11 course.py generate`` cleans the solution notebooks and rewrites notebooks/; the check fails when the
committed notebooks/ differ from what it would write (``drift``).
"""

import filecmp
import shutil
import tempfile
from pathlib import Path

import nbformat

from autograder.repository import NOTEBOOKS, SOLUTIONS, nbgrader, notebook_paths

# What a stored notebook keeps; the rest (outputs, counts, widget state, timings) belongs to one run.
KEPT_NOTEBOOK_METADATA = ("kernelspec", "language_info")
KEPT_CELL_METADATA = ("nbgrader", "deletable", "editable", "tags")


def stripped(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without outputs, execution counts or per-run metadata."""
    notebook = nbformat.from_dict(notebook)
    notebook.metadata = {key: notebook.metadata[key] for key in KEPT_NOTEBOOK_METADATA if key in notebook.metadata}
    for cell in notebook.cells:
        cell.metadata = {key: cell.metadata[key] for key in KEPT_CELL_METADATA if key in cell.metadata}
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return notebook


def as_stored(notebook: nbformat.NotebookNode) -> str:
    """The exact text a notebook is stored as (nbformat's own layout)."""
    return nbformat.writes(notebook) + "\n"


def strip_solutions() -> list[Path]:
    """Rewrite every solution notebook without outputs; return the ones that changed."""
    changed = []
    for path in notebook_paths(SOLUTIONS):
        text = as_stored(stripped(nbformat.read(path, as_version=4)))
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def generate_into(release: Path) -> None:
    """Write the student version of every assignment into the empty or absent folder ``release``."""
    with tempfile.TemporaryDirectory() as scratch:
        gradebook = f"sqlite:///{Path(scratch) / 'gradebook.db'}"  # generation needs one; nobody keeps it
        nbgrader(
            "generate_assignment",
            "*",
            "--force",
            f"--CourseDirectory.release_directory={release}",
            f"--CourseDirectory.db_url={gradebook}",
        )


def generate() -> None:
    """Clean solutions/ and replace notebooks/ with freshly generated student versions."""
    strip_solutions()
    with tempfile.TemporaryDirectory() as scratch:
        fresh = Path(scratch) / "notebooks"
        generate_into(fresh)
        shutil.rmtree(NOTEBOOKS, ignore_errors=True)
        shutil.copytree(fresh, NOTEBOOKS)


def drift() -> list[str]:
    """How the committed notebooks/ differ from what `generate` writes now (empty when in sync)."""
    with tempfile.TemporaryDirectory() as scratch:
        fresh = Path(scratch) / "notebooks"
        generate_into(fresh)
        expected = {path.relative_to(fresh) for path in fresh.rglob("*") if path.is_file()}
        committed = {
            path.relative_to(NOTEBOOKS)
            for path in NOTEBOOKS.rglob("*")
            if path.is_file() and ".ipynb_checkpoints" not in path.parts
        }
        problems = [f"missing from notebooks/: {path}" for path in sorted(expected - committed)]
        problems += [
            f"in notebooks/ but not generated from solutions/: {path}" for path in sorted(committed - expected)
        ]
        problems += [
            f"differs from its generated version: notebooks/{path}"
            for path in sorted(expected & committed)
            if not filecmp.cmp(fresh / path, NOTEBOOKS / path, shallow=False)
        ]
        return problems
