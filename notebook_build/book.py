"""The course as a website: every notebook as the learner gets it, with the figures and outputs of a full run.

Notebooks are stored without outputs, so a visitor to the repository sees no figure. ``python3.11 course.py book``
runs each solution notebook top to bottom, as a learner would (nothing shortened), and writes the student
version, with the outputs of that run, as one HTML page per notebook, with an index. The pages show no solution:

- the code of every cell is the student version's, exercises as stubs;
- an exercise's own cell shows no output (what the solution printed could give it away);
- a test cell runs as the student version has it, its hidden tests in a cell of their own after it that the page
  leaves out, so it shows what the visible checks print.

Each page links the index and the notebooks before and after it. The check builds every page from its own run of
the solutions (tests/notebook_runs.py), and tests them in Chromium. The pages go to ``.course/book/`` (not tracked
by git) unless another folder is given; publish that folder as it is (docs/maintaining.md).

Why nbconvert. It renders a notebook as JupyterLab shows it, builds offline, and is already installed with nbgrader
at its pinned version; Sphinx with MyST-NB or mkdocs-jupyter would add a toolchain and its pins for the same pages.
"""

import html
import re
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from autograder.cells import is_answer, is_test
from autograder.limits import FULL_RUN_CELL_TIMEOUT
from autograder.repository import NOTEBOOKS, REPO, SOLUTIONS, assignments

OUT = REPO / ".course" / "book"
NAVIGATION_STYLE = "padding: 0.5em 1em; border-bottom: 1px solid #ccc; font-family: sans-serif"
HIDDEN_TESTS = "### BEGIN HIDDEN TESTS"
KEEP_RANDOM_STATE = "_random_state_before_hidden_tests = __import__('torch').random.get_rng_state()"
RESTORE_RANDOM_STATE = (
    "__import__('torch').random.set_rng_state(_random_state_before_hidden_tests)\ndel _random_state_before_hidden_tests"
)


def build(out: Path = OUT, only: list[str] | None = None) -> list[Path]:
    """Write a page per notebook (all, or those whose folder starts with one of ``only``) and the index."""
    out.mkdir(parents=True, exist_ok=True)
    chosen = [name for name in assignments() if not only or name.startswith(tuple(only))]
    pages = [out / f"{name}.html" for name in chosen]
    for number, name in enumerate(chosen):
        before, after = pages[number - 1] if number else None, pages[number + 1] if number + 1 < len(pages) else None
        write_page(with_a_full_run(name), pages[number], before, after)
    (out / "index.html").write_text(index(pages), encoding="utf-8")
    return pages


def write_page(notebook: nbformat.NotebookNode, path: Path, before: Path | None, after: Path | None) -> Path:
    """The notebook as an HTML page at ``path``, with links to the index and to the pages before and after it."""
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(notebook)
    links = ['<a href="index.html">all notebooks</a>']
    links += [
        f'<a href="{page.name}">{label}: {html.escape(title(page))}</a>'
        for label, page in (("previous", before), ("next", after))
        if page is not None
    ]
    navigation = f'<nav style="{NAVIGATION_STYLE}">{" · ".join(links)}</nav>'
    opening = re.search(r"<body[^>]*>", body)
    body = body[: opening.end()] + navigation + body[opening.end() :] if opening else navigation + body
    path.write_text(body, encoding="utf-8")
    return path


def with_a_full_run(assignment: str) -> nbformat.NotebookNode:
    """The assignment's student version with the outputs of its solution run top to bottom, as a learner runs it."""
    run, student = to_run(assignment)
    folder = {"metadata": {"path": str(SOLUTIONS / assignment)}}  # the kernel runs where the notebook lies
    NotebookClient(run, timeout=FULL_RUN_CELL_TIMEOUT, kernel_name="python3", resources=folder).execute()
    return with_outputs(student, run)


def to_run(assignment: str) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """The notebook whose run makes the assignment's page, and the student version the page shows.

    The run is the solution notebook with each test cell as the student version has it, so its outputs are the
    visible checks' own, and its hidden tests in a cell of their own after it. The check's run of the solutions
    (tests/notebook_runs.py) proves them there. PyTorch's random state is kept across them, so every later cell
    prints what it prints in a learner's run, which has no hidden test."""
    (solution_path,) = sorted((SOLUTIONS / assignment).glob("*.ipynb"))
    run = nbformat.read(solution_path, as_version=4)
    student = nbformat.read(NOTEBOOKS / assignment / solution_path.name, as_version=4)
    visible = {cell.id: cell.source for cell in student.cells if is_test(cell)}
    cells = []
    for cell in run.cells:
        cells.append(cell)
        if is_test(cell):
            hidden = cell.source.partition(HIDDEN_TESTS)[2]
            cell.source = visible[cell.id]
            cells.append(nbformat.v4.new_code_cell(f"{KEEP_RANDOM_STATE}\n{hidden}\n{RESTORE_RANDOM_STATE}"))
            cells[-1].id = f"{cell.id}-hidden"
    run.cells = cells
    return run, student


def with_outputs(student: nbformat.NotebookNode, run: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student version with, in each code cell but an exercise's own, the outputs of its cell in the run, and
    the cells that ran numbered in order, as a learner's run numbers them."""
    ran = {cell.id: cell for cell in run.cells if cell.cell_type == "code"}
    code = [cell for cell in student.cells if cell.cell_type == "code"]
    for number, cell in enumerate(code, start=1):
        if cell.id in ran and not is_answer(cell):
            cell.outputs = ran[cell.id].outputs
            for output in cell.outputs:
                if output.output_type == "execute_result":
                    output.execution_count = number
        cell.execution_count = number
    return student


def title(path: Path) -> str:
    """A page's notebook title: its first heading."""
    notebook = nbformat.read(NOTEBOOKS / path.stem / f"{path.stem}.ipynb", as_version=4)
    for cell in notebook.cells:
        for line in cell.source.splitlines() if cell.cell_type == "markdown" else []:
            if line.startswith("#"):
                return line.lstrip("#").strip()
    return path.stem


def index(pages: list[Path]) -> str:
    items = "\n".join(f'<li><a href="{page.name}">{html.escape(title(page))}</a></li>' for page in pages)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Transformers from first principles</title></head>\n'
        "<body><h1>Transformers from first principles</h1>\n"
        "<p>Each notebook as a learner gets it, exercises unsolved, with the outputs and figures of a full run.</p>\n"
        f"<ol>\n{items}\n</ol></body></html>\n"
    )
