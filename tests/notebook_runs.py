"""Every solution notebook run top to bottom in a fresh kernel (nbval, lax: a cell fails only when it raises), as a
learner runs it, and its page of the course's website made from that run.

The run is the one the website's page is made from (``notebook_build.book.to_run``): each test cell runs as the
student version has it, and its hidden tests run in a cell of their own right after it, so every hidden test is
proven on the full run, and the page shows what the visible checks print. After the last cell, the page: written
as ``course.py book`` writes it, giving away no answer, and each of its figures drawn in Chromium. One run serves
both, where the website's own took as long again.
"""

import tempfile
from collections import defaultdict
from pathlib import Path

import pytest
from nbval.plugin import IPyNbCell, IPyNbFile, find_comment_markers, find_metadata_tags

from autograder.repository import assignments


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path, parent):
    collected = yield
    return [NotebookRun.from_parent(parent, path=file_path) if type(node) is IPyNbFile else node for node in collected]


class NotebookRun(IPyNbFile):
    """A solution notebook's cells, with its hidden tests apart, then its page."""

    def collect(self):
        from notebook_build import book

        self.nb, self.student = book.to_run(self.path.parent.name)
        self.cells = []
        for number, cell in enumerate(cell for cell in self.nb.cells if cell.cell_type == "code"):
            options = defaultdict(bool, find_metadata_tags(cell.metadata))
            options.update(find_comment_markers(cell.source))
            options.setdefault("check", self.compare_outputs)
            self.cells.append(
                IPyNbCell.from_parent(self, name=f"Cell {number}", cell_num=number, cell=cell, options=options)
            )
            yield self.cells[-1]
        yield Page.from_parent(self, name="page")


class Page(pytest.Item):
    """The notebook's page of the website, from the run of the cells before it."""

    def runtest(self):
        from book_pages import assert_gives_away_no_answer, drawn_in_chromium, figures_in
        from notebook_build import book

        run: NotebookRun = self.parent
        for item in run.cells:
            if item.test_outputs is None or any(output.output_type == "error" for output in item.test_outputs):
                pytest.skip(f"no page: {item.name} did not run to its end")
            item.cell.outputs = item.test_outputs
        assignment = run.path.parent.name
        page = book.with_outputs(run.student, run.nb)
        assert_gives_away_no_answer(assignment, page)
        names = assignments()
        number = names.index(assignment)
        with tempfile.TemporaryDirectory() as folder:
            pages = [Path(folder) / f"{name}.html" for name in names]
            after = pages[number + 1] if number + 1 < len(pages) else None
            path = book.write_page(page, pages[number], pages[number - 1] if number else None, after)
            widths = drawn_in_chromium(path)
        assert len(widths) == figures_in(page) > 0, f"{assignment}'s page has {len(widths)} images"
        assert all(width > 0 for width in widths), f"Chromium could not draw a figure of {assignment}'s page"

    def reportinfo(self):
        return self.path, 0, f"{self.path.relative_to(self.config.rootpath)}::page"
