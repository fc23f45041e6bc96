"""`course.py book` (notebook_build/book.py), on notebook 01: its page shows the full run's figures and the checks'
results, in Chromium too, links the index and its neighbours, and gives away no answer. The check's own runs of the
solution notebooks build and test every notebook's page the same way (tests/notebook_runs.py)."""

import pytest

from autograder.repository import assignments
from book_pages import assert_gives_away_no_answer, drawn_in_chromium, figures_in
from notebook_build import book
from transformer_course import PASSED_MARK

pytestmark = pytest.mark.grading
FIRST, SECOND = assignments()[:2]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    notebook = book.with_a_full_run(FIRST)
    out = tmp_path_factory.mktemp("book")
    return book.write_page(notebook, out / f"{FIRST}.html", None, out / f"{SECOND}.html"), notebook


def test_the_page_shows_the_figures_and_the_checks_results_and_links_the_others(site):
    page, _ = site
    text = page.read_text(encoding="utf-8")
    assert "data:image/png;base64," in text and PASSED_MARK in text
    assert 'href="index.html"' in text and f'href="{SECOND}.html"' in text
    assert f'href="{page.name}"' in book.index([page])


def test_chromium_shows_the_pages_figures_and_its_links(site):
    page, notebook = site
    widths = drawn_in_chromium(page)
    assert len(widths) == figures_in(notebook) > 0 and all(width > 0 for width in widths)


def test_the_page_gives_away_no_answer(site):
    _, notebook = site
    assert_gives_away_no_answer(FIRST, notebook)
