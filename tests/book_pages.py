"""What a page of the course's website must show, and must not: shared by the test of `course.py book`
(tests/end_to_end/test_book.py) and the check's runs of the solution notebooks (tests/notebook_runs.py)."""

from pathlib import Path

import nbformat
from playwright.sync_api import sync_playwright

import course
from autograder.cells import is_answer, is_test
from autograder.repository import SOLUTIONS
from autograder.submissions import solution_code
from browsers import CHROMIUM_FLAGS, require_chromium
from class_records import solution_lines_not_handed_out
from notebook_build.book import HIDDEN_TESTS
from transformer_course import PASSED_MARK


def hidden_test_lines(assignment: str) -> set[str]:
    """The lines of the hidden tests in the instructor's notebook."""
    lines = set()
    for path in (SOLUTIONS / assignment).glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            hidden = cell.source.partition(HIDDEN_TESTS)[2].partition("### END HIDDEN TESTS")[0]
            lines |= {line.strip() for line in hidden.splitlines() if line.strip()}
    return lines


def assert_gives_away_no_answer(assignment: str, page: nbformat.NotebookNode) -> None:
    """No solution line and no hidden-test line in the page's code or in what its cells printed; no output under
    an exercise; only the visible checks' results under a test cell."""
    shown = "\n".join(
        [cell.source for cell in page.cells]
        + [nbformat.writes(nbformat.v4.new_notebook(cells=[cell])) for cell in page.cells if "outputs" in cell]
    )
    solutions = solution_lines_not_handed_out(assignment, list(solution_code(assignment)))
    hidden = hidden_test_lines(assignment)
    assert hidden and solutions  # what the page must not show exists
    assert {line for line in solutions | hidden if line in shown} == set(), f"{assignment}'s page shows an answer"
    for cell in page.cells:
        if is_answer(cell):
            assert cell.outputs == [], f"{assignment}'s page shows what the exercise {cell.id} printed"
        elif is_test(cell):
            printed = "".join(output.get("text", "") for output in cell.outputs)
            assert printed and all(line.startswith(PASSED_MARK) for line in printed.splitlines()), printed
            assert printed.count(PASSED_MARK) <= cell.source.count("check_")  # the visible checks', no hidden one


def figures_in(page: nbformat.NotebookNode) -> int:
    """How many figures the page's outputs hold."""
    return sum("image/png" in output.get("data", {}) for cell in page.cells for output in cell.get("outputs", []))


def drawn_in_chromium(path: Path) -> list[int]:
    """The widths of the page's images as Chromium decoded them (0 for one it could not draw); checks on the way
    that the page's navigation leads to the index first."""
    require_chromium()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(course.CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            page = chromium.new_page()
            page.goto(path.as_uri(), wait_until="domcontentloaded")  # the page's MathJax comes from a CDN
            page.wait_for_function("[...document.images].every(image => image.complete)")
            assert page.locator("nav a").all_inner_texts()[0] == "all notebooks"
            return page.eval_on_selector_all("img", "images => images.map(image => image.naturalWidth)")
        finally:
            chromium.close()
