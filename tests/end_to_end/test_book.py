"""The course as a website (notebook_build/book.py), on notebook 01: its page shows the full run's figures and the
checks' results, and no solution, neither in code nor in what a cell printed."""

import nbformat
import pytest

from autograder.cells import is_answer, is_test
from autograder.repository import assignments
from autograder.submissions import solution_code
from class_records import solution_lines_not_handed_out
from notebook_build import book
from transformer_course import PASSED_MARK

pytestmark = pytest.mark.grading
FIRST = assignments()[0]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    notebook = book.with_a_full_run(FIRST)
    return book.write_page(notebook, FIRST, tmp_path_factory.mktemp("book")), notebook


def test_the_page_shows_the_figures_and_the_checks_results_and_the_index_links_it(site):
    page, _ = site
    text = page.read_text(encoding="utf-8")
    assert "data:image/png;base64," in text and PASSED_MARK in text
    assert f'href="{page.name}"' in book.index([page])


def test_the_page_shows_no_solution(site):
    _, notebook = site
    shown = "\n".join(
        [cell.source for cell in notebook.cells]
        + [nbformat.writes(nbformat.v4.new_notebook(cells=[cell])) for cell in notebook.cells if "outputs" in cell]
    )
    assert {line for line in solution_lines_not_handed_out(FIRST, list(solution_code(FIRST))) if line in shown} == set()
    for cell in notebook.cells:
        if is_answer(cell):
            assert cell.outputs == []
        elif is_test(cell):
            printed = "".join(output.get("text", "") for output in cell.outputs)
            assert all(line.startswith(PASSED_MARK) for line in printed.splitlines())
