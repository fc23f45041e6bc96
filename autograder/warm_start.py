"""nbgrader's autograde of one job, started as a copy of a grading worker that has imported it once.

Why. Started as a new Python, a job's nbgrader spent about 3.5 s importing nbgrader, PyTorch and the judge before it
could start the kernel, and the judge then imported the notebook's checks (``transformers`` among them from notebook
10 on): most of a small notebook's job, paid again by every submission of a class. A grading worker imports all of
it once (``preload``), and each job's nbgrader is a copy of the worker (``os.fork``) that runs the job and ends.

Why that is safe. The copy runs only nbgrader and the judge, as the new Python did: the student's code still runs in
nbgrader's kernel, a new process in the sandbox. The worker itself never runs a job, so every copy starts from the
same state, the state a new Python would reach with the same imports; what a job changes ends with its copy. Imports
start no thread, so nothing is copied mid-work. Where ``os.fork`` does not exist (Windows), nbgrader starts as a new
Python, as before.
"""

import os
import select
import subprocess
import sys
import time
import traceback
from pathlib import Path

import nbformat

from autograder.repository import this_python_first

READ_SIZE = 1 << 16


def preload() -> None:
    """What every job's nbgrader imports, whatever its notebook: nbgrader's commands, PyTorch and the judge."""
    import nbgrader.apps.nbgraderapp  # noqa: F401

    import autograder.verification.nbgrader_steps  # noqa: F401


def preload_assignment(source: Path) -> None:
    """What the judge imports for this assignment's notebooks (its checks): the course's own import lines, as the
    judge runs them (``judge.course_imports``), from the instructor's source notebooks in ``source``."""
    from autograder.verification.judge import course_imports
    from autograder.verification.nbgrader_steps import is_course_code

    for path in sorted(source.glob("*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        course_imports([cell.source for cell in cells if is_course_code(cell)])


def start(args: list[str], cwd: Path):
    """nbgrader with ``args``, in ``cwd``: a copy of this process where it can be made, else a new Python. Either
    has Popen's ``pid``, ``returncode`` and ``communicate(timeout)``, with its output and errors as one text."""
    environment = this_python_first()
    if not hasattr(os, "fork"):
        command = [sys.executable, "-m", "nbgrader", *args]
        return subprocess.Popen(
            command, cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    return Copy(args, cwd, environment)


class Copy:
    """nbgrader run in a copy of this process, its output and errors through one pipe."""

    def __init__(self, args: list[str], cwd: Path, environment: dict[str, str]) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        reading, writing = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the copy: never returns
            os.close(reading)
            run_nbgrader(args, cwd, environment, writing)
        os.close(writing)
        self.returncode: int | None = None
        self._reading: int | None = reading
        self._output: list[bytes] = []

    def communicate(self, timeout: float | None = None) -> tuple[str, None]:
        """Its whole output once it ends and its output closes; subprocess.TimeoutExpired if not within ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._reading is not None:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self._reading], [], [], left)[0]:
                raise subprocess.TimeoutExpired("nbgrader", timeout)
            chunk = os.read(self._reading, READ_SIZE)
            if chunk:
                self._output.append(chunk)
            else:
                os.close(self._reading)
                self._reading = None
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return b"".join(self._output).decode("utf-8", errors="replace"), None


def run_nbgrader(args: list[str], cwd: Path, environment: dict[str, str], output: int) -> None:
    """In the copy: nbgrader's command line with ``args``, then the copy's end, with nbgrader's exit code. It ends
    with os._exit: the worker's exit handlers (its pool's queues among them) are not the copy's to run."""
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(output)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environment)
        sys.argv = ["nbgrader", *args]
        from nbgrader.apps.nbgraderapp import NbGraderApp

        NbGraderApp.launch_instance(argv=args)
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    except BaseException:  # whatever it was, the log says it and the copy ends
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
