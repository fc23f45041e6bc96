"""Hooks shared by the tests: whether a test failed (for fixtures that record what went wrong), and where
the browser test left its screenshots."""

import time
from collections.abc import Callable

import pytest

import course

CALL_FAILED = pytest.StashKey[bool]()
# The folders of tests/, each a marker of its tests (-m checks): the checks of the notebooks and the kept wrong
# answers, the helper package, the autograder's parts, all in this process; end_to_end runs nbgrader, the sandbox,
# releases and the browser.
GROUPS = ("checks", "helpers", "autograder", "end_to_end")
SESSION_START = time.time()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.parent.name in GROUPS and item.path.parent.parent.name == "tests":
            item.add_marker(item.path.parent.name)


@pytest.fixture
def test_failed(request) -> Callable[[], bool]:
    """Ask, in a fixture's teardown, whether the test itself failed."""
    return lambda: request.node.stash.get(CALL_FAILED, False)


def pytest_terminal_summary(terminalreporter):
    # Under xdist the browser test runs in a worker, whose output pytest hides; the files tell what it did.
    record = course.BROWSER_RECORD
    shots = [path for path in record.glob("*.png") if path.stat().st_mtime >= SESSION_START]
    if shots:
        terminalreporter.write_sep("-", "browser test")
        terminalreporter.write_line(f"{len(shots)} screenshots and JupyterLab's log in {record}")
