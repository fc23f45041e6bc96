"""Hooks shared by the tests: whether a test failed (for fixtures that record what went wrong), and where
the browser test left its screenshots."""

import time
from collections.abc import Callable

import pytest

import course

CALL_FAILED = pytest.StashKey[bool]()
SESSION_START = time.time()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


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
