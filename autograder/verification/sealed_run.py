"""The sealed run: a notebook run in two processes of the course's own, the student's code apart from the judge.

Grading itself runs the judge against nbgrader's kernel (``nbgrader_steps.JudgedExecute``). The sealed run does
the same without nbgrader: it builds a program from the instructor's source notebook, in the source's order (the
course's cells and the test cells, hidden tests included, from the source; the answer cells, and any cells the
student added, from the submission) and runs the student's code in a fresh process of its own (``student.py``),
in the grading sandbox unless the instructor chose none, and the test cells in the judge (``judge.py``), here.
The course uses it where nbgrader's kernel died, for the report to say what ended it, and to try the kept wrong
answers (tests/end_to_end/test_wrong_answer_trials.py). A process that dies passes nothing that was not judged before.
"""

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat

from autograder.cells import grading, is_answer, is_test, key, label
from autograder.release import is_released
from autograder.verification.findings import CellFailed, Finding, ForgedVerdicts, RunEnded, TimedOut
from autograder.verification.judge import STUDENT_FILES, Judge, Stopped, TestRun, course_imports
from autograder.verification.sandbox import Sandbox

INTERRUPT_GRACE = 10.0  # seconds a cell gets to stop after an interrupt before its process is killed


@dataclass
class SealedVerdict:
    passed: set[str] = field(default_factory=set)  # test cells that ran to the end, nothing tampered with
    errors: dict[str, str] = field(default_factory=dict)  # test cell → why it failed
    findings: list[Finding] = field(default_factory=list)  # what else happened, in order: CellFailed, TimedOut, ...

    def found(self, kind: type[Finding]) -> list:
        return [finding for finding in self.findings if isinstance(finding, kind)]

    def judged(self, test: str, run: TestRun, timeout: float) -> tuple[str, str] | None:
        """Record the judge's run of a test; return its failure as (type, message), None when it passed."""
        if run.failure is None:
            self.passed.add(test)
            return None
        kind, message = run.failure
        message = message.replace("the time limit", f"{timeout:g} s")
        self.errors[test] = f"{kind}: {message}"
        return kind, message

    def failure(self, test: str) -> str | None:
        """Why a test earns nothing in the sealed run, or None when it passed."""
        if test in self.passed:
            return None
        if test in self.errors:
            return self.errors[test]
        ended = self.found(RunEnded)
        return f"not reached: {ended[0].why}" if ended else "not reached"


def program(
    source: nbformat.NotebookNode, released: nbformat.NotebookNode, submitted: nbformat.NotebookNode
) -> list[dict]:
    """The cells to run, in the source's order: the student's code only in answer cells and in cells they added."""
    answers = {key(cell): cell.source for cell in submitted.cells if is_answer(cell)}
    stubs = {key(cell): cell.source for cell in released.cells if is_answer(cell)}
    added = added_cells(released, submitted)
    cells = []
    for cell in (cell for cell in source.cells if cell.cell_type == "code"):
        if is_answer(cell):
            cells.append(role("student", label(cell), answers.get(key(cell), stubs.get(key(cell), ""))))
        else:
            cells.append(role("test" if is_test(cell) else "course", label(cell), cell.source))
        cells += added.pop(key(cell), [])
    unanchored = [cell for cells_after in added.values() for cell in cells_after]
    return before_first_answer(cells, unanchored)


def role(kind: str, name: str, source: str) -> dict:
    return {"role": kind, "name": name, "source": source}


def added_cells(released: nbformat.NotebookNode, submitted: nbformat.NotebookNode) -> dict[str, list[dict]]:
    """Code cells the student added, by the key of the released cell each follows in the submission."""
    known = {key(cell) for cell in released.cells}
    anchor, added = None, {}
    for cell in submitted.cells:
        if key(cell) in known:
            anchor = key(cell)
        elif cell.cell_type == "code" and not grading(cell) and cell.source.strip():
            after = anchor.split(" ", 1)[1] if anchor else "the top"
            added.setdefault(anchor, []).append(role("student", f"the cell you added after {after}", cell.source))
    return added


def before_first_answer(cells: list[dict], extra: list[dict]) -> list[dict]:
    """Move the student's cells that would run before the first answer cell, and ``extra``, to just before it,
    so that the course's set-up has run, and been recorded, before any of the student's code."""
    first = next((i for i, cell in enumerate(cells) if cell["role"] == "student" and not is_added(cell)), len(cells))
    early = [cell for cell in cells[:first] if cell["role"] == "student"] + extra
    setup = [cell for cell in cells[:first] if cell["role"] != "student"]
    return setup + early + cells[first:]


def is_added(cell: dict) -> bool:
    return cell["name"].startswith("the cell you added")


def verify(
    cells: list[dict], workdir: Path, cell_timeout: float, sandbox: Sandbox | None, assignment: str | None = None
) -> SealedVerdict:
    """Run the program of ``assignment``: the student's cells in a fresh process of their own, in ``sandbox`` or
    (None) in an empty folder, and the test cells in the judge (``judge.py``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    empty = workdir / "run"
    empty.mkdir(exist_ok=True)
    to_student, from_student = os.pipe(), os.pipe()
    if sandbox is not None:  # the student's program; none of the checks, and no reference block not yet due
        hidden, revealed = answers_hidden(assignment)
        sandbox = replace(sandbox, readable=(*sandbox.readable, *STUDENT_FILES), hidden=hidden, revealed=revealed)
    launcher = [] if sandbox is None else sandbox.launcher(workdir / "sandbox.json") + ["--"]
    with open(workdir / "output.txt", "wb") as output:
        process = subprocess.Popen(
            [*launcher, sys.executable, "-I", STUDENT_FILES[0], str(to_student[0]), str(from_student[1])],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            pass_fds=(to_student[0], from_student[1]),
            cwd=empty,
            env={**os.environ, "NBGRADER_EXECUTION": "autograde", "MPLBACKEND": "Agg"},
            start_new_session=True,  # its own process group, so that whatever it forks is stopped with it
        )
    os.close(to_student[0])
    os.close(from_student[1])
    imports = course_imports([cell["source"] for cell in cells if cell["role"] == "course"])
    judge = Judge(from_student[0], to_student[1], process.pid, cell_timeout, INTERRUPT_GRACE, imports)
    try:
        return JudgedRun(judge, process, cells).run()
    finally:
        os.close(from_student[0])
        os.close(to_student[1])
        stop_group(process)


def stop_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def answers_hidden(assignment: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The helper package's folders that the student's process of ``assignment`` sees empty, and the files in them
    it sees all the same: no check (the judge's), and the reference blocks of earlier notebooks only, as in the
    assignment's student release (``release.is_released``). Without an assignment, no reference block."""
    checks = importlib.util.find_spec("transformer_course.checks").submodule_search_locations or []
    reference = importlib.util.find_spec("transformer_course.reference").submodule_search_locations or []
    through = int(assignment.split("_")[0]) if assignment else 0
    revealed = [
        str(path)
        for folder in reference
        for path in sorted(Path(folder).glob("*.py"))
        if is_released(Path("reference") / path.name, through)
    ]
    return (*checks, *reference), tuple(revealed)


class JudgedRun:
    """The program's cells in order: test cells in the judge, all others in the student's process."""

    def __init__(self, judge: Judge, process: subprocess.Popen, cells: list[dict]):
        self.judge, self.process, self.cells = judge, process, cells
        self.verdict = SealedVerdict()
        self.current = "the course's set-up"

    def run(self) -> SealedVerdict:
        judge = self.judge
        try:
            judge.clock.start()
            judge.pipe.send(
                [{**cell, "source": "" if cell["role"] == "test" else cell["source"]} for cell in self.cells]
            )
            for index, cell in enumerate(self.cells):
                self.current = cell["name"]
                if cell["role"] == "test":
                    self.on_test(cell["name"], judge.run_test(cell["source"]))
                else:
                    self.on_cell(cell, judge.run_cell(index))
            judge.clock.start()
            judge.pipe.send({"op": "stop"})
        except Stopped:
            self.verdict.findings += [ForgedVerdicts(judge.malformed)] if judge.malformed else []
            self.verdict.findings.append(RunEnded(self.current, self.exit_code()))
        return self.verdict

    def exit_code(self) -> int | None:
        """How the student's process ended; None when the judge stopped it for ignoring an interrupt."""
        if self.judge.killed:
            return None
        try:
            return self.process.wait(timeout=INTERRUPT_GRACE)
        except subprocess.TimeoutExpired:
            return None

    def on_test(self, name: str, test: TestRun) -> None:
        self.verdict.judged(name, test, self.judge.clock.timeout)

    def on_cell(self, cell: dict, error: list[str] | None) -> None:
        if cell["role"] != "student" or error is None:
            return  # the course's demonstrations may fail for want of the learner's functions; tests say so
        name = cell["name"]
        timed_out = self.judge.clock.interrupted
        failed = TimedOut(name, self.judge.clock.timeout) if timed_out else CellFailed(name, *error)
        self.verdict.findings.append(failed)
