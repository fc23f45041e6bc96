"""The solutions → notebooks pipeline: clean the source notebooks, generate the student versions with
nbgrader, and tell whether the committed student versions have drifted from what it would write."""

import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
NOTEBOOKS = REPO / "notebooks"
AUTOGRADER = REPO / "autograder"  # nbgrader reads nbgrader_config.py from here

# What a stored notebook keeps; the rest (outputs, counts, widget state, timings) belongs to one run.
KEPT_NOTEBOOK_METADATA = ("kernelspec", "language_info")
KEPT_CELL_METADATA = ("nbgrader", "deletable", "editable", "tags")


def nbgrader(*args: str, cwd: Path = AUTOGRADER) -> subprocess.CompletedProcess:
    """Run an nbgrader command of this environment; fail with its log if it fails."""
    bin_dir = str(Path(sys.executable).parent)  # nbgrader starts `alembic` from PATH
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed (exit {result.returncode}):\n{result.stderr}")
    return result


def assignments() -> list[str]:
    """The assignments in teaching order: the numbered folders of solutions/."""
    return sorted(path.name for path in SOLUTIONS.iterdir() if path.is_dir() and path.name[:2].isdigit())


def notebook_paths(root: Path) -> list[Path]:
    return sorted(path for path in root.glob("*/*.ipynb") if ".ipynb_checkpoints" not in path.parts)


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
