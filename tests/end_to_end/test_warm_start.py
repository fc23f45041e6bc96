"""nbgrader started as a copy of a grading worker (autograder/warm_start.py): it runs as the command line would, its
output and exit code come back, a wait can time out, and nothing the copy changes reaches the worker. Each test
runs in a worker of its own, started as the grading pool starts them, since a copy of pytest's own process would
copy its threads' locks."""

import os
import subprocess
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pytest

from autograder import warm_start
from autograder.job_watch import communicate_within

pytestmark = [
    pytest.mark.grading,
    pytest.mark.skipif(not hasattr(os, "fork"), reason="copies need os.fork; elsewhere nbgrader starts anew"),
]


@pytest.fixture(scope="module")
def worker():
    """A worker as the grading pool starts one; what a test runs there, it runs as a job would."""
    with ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=warm_start.preload) as pool:
        yield lambda function, *args: pool.submit(function, *args).result()


def version_and_what_the_worker_kept(folder: Path) -> tuple[str, int, str, str | None]:
    before = os.getcwd()
    copy = warm_start.start(["--version"], folder)
    output, _ = copy.communicate()
    return output, copy.returncode, os.getcwd() == before, os.environ.get("PATH")


def test_a_copy_runs_the_command_and_changes_nothing_of_the_worker(worker, tmp_path):
    output, code, same_folder, path = worker(version_and_what_the_worker_kept, tmp_path)
    assert code == 0 and "nbgrader version" in output
    assert same_folder and path == os.environ.get("PATH")  # the copy moved to tmp_path and put its Python first


def a_failing_command(folder: Path) -> tuple[str, int]:
    copy = warm_start.start(["autograde", "no-such-assignment", "--student", "nobody"], folder)
    return copy.communicate()[0], copy.returncode


def test_a_failing_command_says_why_and_exits_with_its_code(worker, tmp_path):
    output, code = worker(a_failing_command, tmp_path)
    assert code != 0 and "no-such-assignment" in output


def a_wait_that_times_out(folder: Path) -> tuple[bool, str, int]:
    copy = warm_start.start(["--version"], folder)
    try:
        copy.communicate(timeout=0)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    output, stopped = communicate_within(copy, processor_seconds=60.0, wall_seconds=60.0)
    assert stopped is None
    return timed_out, output, copy.returncode


def test_a_wait_times_out_and_the_job_watch_reads_it_to_the_end(worker, tmp_path):
    timed_out, output, code = worker(a_wait_that_times_out, tmp_path)
    assert timed_out and code == 0 and "nbgrader version" in output
