"""The course as a website (notebook_build/book.py), on notebook 01: its page shows the full run's figures and the
checks' results, in Chromium too, links the index and its neighbours, and gives away no answer: no solution line and
no hidden-test line, neither in code nor in what a cell printed."""

import nbformat
import pytest
from playwright.sync_api import sync_playwright
from test_browser import CHROMIUM_FLAGS, require_chromium

import course
from autograder.cells import is_answer, is_test
from autograder.repository import SOLUTIONS, assignments
from autograder.submissions import solution_code
from class_records import solution_lines_not_handed_out
from notebook_build import book
from transformer_course import PASSED_MARK

pytestmark = pytest.mark.grading
FIRST, SECOND = assignments()[:2]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    notebook = book.with_a_full_run(FIRST)
    out = tmp_path_factory.mktemp("book")
    return book.write_page(notebook, out / f"{FIRST}.html", None, out / f"{SECOND}.html"), notebook


def hidden_test_lines(assignment: str) -> set[str]:
    """The lines of the hidden tests in the instructor's notebook."""
    lines, hidden = set(), False
    for path in (SOLUTIONS / assignment).glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            for line in cell.source.splitlines():
                hidden = ("BEGIN HIDDEN TESTS" in line or hidden) and "END HIDDEN TESTS" not in line
                if hidden and line.strip() and "HIDDEN TESTS" not in line:
                    lines.add(line.strip())
    return lines


def test_the_page_shows_the_figures_and_the_checks_results_and_links_the_others(site):
    page, _ = site
    text = page.read_text(encoding="utf-8")
    assert "data:image/png;base64," in text and PASSED_MARK in text
    assert 'href="index.html"' in text and f'href="{SECOND}.html"' in text
    assert f'href="{page.name}"' in book.index([page])


def test_chromium_shows_the_pages_figures_and_its_links(site):
    require_chromium()
    page_path, _ = site
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(course.CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            page = chromium.new_page()
            page.goto(page_path.as_uri(), wait_until="domcontentloaded")  # the page's MathJax comes from a CDN
            page.wait_for_function("[...document.images].every(image => image.complete)")
            widths = page.eval_on_selector_all("img", "images => images.map(image => image.naturalWidth)")
            assert widths and all(width > 0 for width in widths)  # every figure decoded and drawn
            assert page.locator("nav a").all_inner_texts()[0] == "all notebooks"
        finally:
            chromium.close()


def test_the_page_gives_away_no_answer(site):
    _, notebook = site
    shown = "\n".join(
        [cell.source for cell in notebook.cells]
        + [nbformat.writes(nbformat.v4.new_notebook(cells=[cell])) for cell in notebook.cells if "outputs" in cell]
    )
    solutions = solution_lines_not_handed_out(FIRST, list(solution_code(FIRST)))
    assert hidden_test_lines(FIRST) and solutions  # what the page must not show exists
    assert {line for line in solutions | hidden_test_lines(FIRST) if line in shown} == set()
    for cell in notebook.cells:
        if is_answer(cell):
            assert cell.outputs == []
        elif is_test(cell):
            printed = "".join(output.get("text", "") for output in cell.outputs)
            assert all(line.startswith(PASSED_MARK) for line in printed.splitlines())
            assert printed.count(PASSED_MARK) <= cell.source.count("check_")  # the visible checks', no hidden one
