"""Sealed verification: a submission's graded checks run again where the student's code cannot reach the verdict.

Anything that runs in the student's kernel can be forged by the student's code in that kernel: it can replace
``torch.allclose`` or a check, swallow the test's exception, rewrite later cells before IPython runs them, or
print "passed". So once nbgrader's kernel has run a submission, and before nbgrader saves its scores
(``verification.SealedVerification``, a step of nbgrader's autograde), the course builds a program from the
instructor's source notebook, in the source's order (the course's cells and the test cells, hidden tests
included, from the source; the answer cells, and any cells the student added, from the submission) and runs
it in a fresh Python process (``runner.py``), in the grading sandbox unless the instructor chose none.
That process records what the checks rely on before the first line of the student's code and reports each
test on a private channel; a test passes only if it ran to the end without an error and nothing it relies on
was changed. A process that dies passes nothing it had not reported.
"""

import contextlib
import importlib.util
import json
import os
import secrets
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat

from autograder.cells import grading, is_answer, is_test, key, label
from autograder.verification.findings import CellFailed, Finding, ForgedVerdicts, RunEnded, Tampering, TimedOut
from autograder.verification.judge import STUDENT_FILES, Judge, Stopped
from autograder.verification.sandbox import Sandbox

RUNNER = Path(__file__).resolve().parent / "runner.py"
# Notebooks whose checks still run in the student's process (``runner.py``), behind a record of what they rely on:
# they lend the learner's code classes (a correct LayerNorm inside the learner's layer), hand it objects of the
# judge's (a model to decode with), or probe its modules with hooks, which the judge's protocol cannot do yet.
# Every other notebook is graded by the judge (``judge.py``).
IN_PROCESS = frozenset(
    {
        "06_transformer_block",
        "07_decoder_and_full_model",
        "08_training_and_decoding",
        "10_gpt",
        "11_fast_inference",
        "12_modern_block",
    }
)


def judged(assignment: str) -> bool:
    """Whether the judge grades the assignment's tests (else the sealed runner, in the student's process)."""
    return assignment not in IN_PROCESS


INTERRUPT_GRACE = 10.0  # seconds a cell gets to stop after an interrupt before its process is killed


@dataclass
class SealedVerdict:
    passed: set[str] = field(default_factory=set)  # test cells that ran to the end, nothing tampered with
    errors: dict[str, str] = field(default_factory=dict)  # test cell → why it failed
    findings: list[Finding] = field(default_factory=list)  # what else happened, in order: CellFailed, Tampering, ...

    def found(self, kind: type[Finding]) -> list:
        return [finding for finding in self.findings if isinstance(finding, kind)]

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
    """Run the program: the student's code in a fresh process, in ``sandbox`` or (None) in an empty folder, and
    the tests in the judge, or, for the assignments in ``IN_PROCESS``, everything in that process."""
    if assignment is None or judged(assignment):
        return judge_program(cells, workdir, cell_timeout, sandbox)
    return run_in_process(cells, workdir, cell_timeout, sandbox)


def run_in_process(cells: list[dict], workdir: Path, cell_timeout: float, sandbox: Sandbox | None) -> SealedVerdict:
    """The program's cells, tests included, in one fresh process (``runner.py``) that reports on a private channel."""
    workdir.mkdir(parents=True, exist_ok=True)
    empty = workdir / "run"
    empty.mkdir(exist_ok=True)
    secret = secrets.token_hex(16)
    read_end, write_end = os.pipe()
    # In the sandbox, the runner's own file is all it sees of the autograder.
    if sandbox is not None:
        sandbox = replace(sandbox, readable=(*sandbox.readable, str(RUNNER)))
    launcher = [] if sandbox is None else sandbox.launcher(workdir / "sandbox.json") + ["--"]
    with open(workdir / "output.txt", "wb") as output:
        process = subprocess.Popen(
            [*launcher, sys.executable, "-I", str(RUNNER), str(write_end)],
            stdin=subprocess.PIPE,
            stdout=output,
            stderr=output,
            pass_fds=(write_end,),
            cwd=empty,
            env={**os.environ, "NBGRADER_EXECUTION": "autograde", "MPLBACKEND": "Agg"},
            start_new_session=True,  # its own process group, so that whatever it forks is stopped with it
        )
    os.close(write_end)
    with contextlib.suppress(BrokenPipeError):  # a runner that could not start reads nothing; its exit says why
        process.stdin.write(f"{secret}\n{json.dumps(cells)}".encode())
    with contextlib.suppress(BrokenPipeError):
        process.stdin.close()
    try:
        return Listener(process, read_end, secret, cells, cell_timeout).listen()
    finally:
        os.close(read_end)
        stop_group(process)


def judge_program(cells: list[dict], workdir: Path, cell_timeout: float, sandbox: Sandbox | None) -> SealedVerdict:
    """The student's cells in their own process, the test cells in the judge (``judge.py``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    empty = workdir / "run"
    empty.mkdir(exist_ok=True)
    to_student, from_student = os.pipe(), os.pipe()
    if sandbox is not None:  # the student's program, and none of the checks nor their stand-ins
        sandbox = replace(
            sandbox, readable=(*sandbox.readable, *STUDENT_FILES), hidden=(*sandbox.hidden, *checks_folders())
        )
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
    judge = Judge(process, from_student[0], to_student[1], cell_timeout, INTERRUPT_GRACE)
    try:
        return JudgedRun(judge, cells).run()
    finally:
        os.close(from_student[0])
        os.close(to_student[1])
        stop_group(process)


def checks_folders() -> tuple[str, ...]:
    spec = importlib.util.find_spec("transformer_course.checks")
    return tuple(spec.submodule_search_locations or ()) if spec else ()


class JudgedRun:
    """The program's cells in order: test cells in the judge, all others in the student's process."""

    def __init__(self, judge: Judge, cells: list[dict]):
        self.judge, self.cells = judge, cells
        self.verdict = SealedVerdict()
        self.current = "the course's set-up"

    def run(self) -> SealedVerdict:
        judge = self.judge
        judge.import_course_modules([cell["source"] for cell in self.cells if cell["role"] == "course"])
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
            return self.judge.process.wait(timeout=INTERRUPT_GRACE)
        except subprocess.TimeoutExpired:
            return None

    def on_test(self, name: str, error: list[str] | None) -> None:
        if self.judge.clock.interrupted:
            self.verdict.errors[name] = f"it ran longer than {self.judge.clock.timeout:g} s and was interrupted"
        elif error is None:
            self.verdict.passed.add(name)
        else:
            self.verdict.errors[name] = ": ".join(error)

    def on_cell(self, cell: dict, error: list[str] | None) -> None:
        if cell["role"] != "student" or error is None:
            return  # the course's demonstrations may fail for want of the learner's functions; tests say so
        name = cell["name"]
        timed_out = self.judge.clock.interrupted
        failed = TimedOut(name, self.judge.clock.timeout) if timed_out else CellFailed(name, *error)
        self.verdict.findings.append(failed)


def stop_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


class Listener:
    """Reads the runner's channel, gives each cell ``cell_timeout`` seconds, and keeps the verdicts."""

    def __init__(self, process: subprocess.Popen, fd: int, secret: str, cells: list[dict], cell_timeout: float):
        self.process, self.fd, self.secret, self.cells = process, fd, secret, cells
        self.cell_timeout = cell_timeout
        self.verdict = SealedVerdict()
        self.current = "the course's set-up"
        self.interrupted: set[str] = set()
        self.done = False
        self.forged = 0  # lines on the channel that did not carry the secret
        self.ended: RunEnded | None = None  # why the run ended before its last cell

    def listen(self) -> SealedVerdict:
        buffer = b""
        deadline = time.monotonic() + self.cell_timeout
        while True:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                if not self.on_timeout():
                    break
                deadline = time.monotonic() + INTERRUPT_GRACE
                continue
            chunk = os.read(self.fd, 65536)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if self.on_line(line):
                    deadline = time.monotonic() + self.cell_timeout
            if self.done:  # what processes left behind may still write is not the runner's
                break
        self.wait_for_exit()
        if not self.done and self.ended is None:
            self.ended = RunEnded(self.current, self.process.returncode)
        self.verdict.findings += [ForgedVerdicts(self.forged)] if self.forged else []
        self.verdict.findings += [self.ended] if self.ended else []
        return self.verdict

    def wait_for_exit(self) -> None:
        """The channel is closed; a process that lingers after closing it is stopped."""
        try:
            self.process.wait(timeout=INTERRUPT_GRACE)
        except subprocess.TimeoutExpired:
            stop_group(self.process)

    def on_timeout(self) -> bool:
        """Interrupt a cell that ran too long, as a kernel would be; kill the run if that does not stop it."""
        if self.current in self.interrupted:
            self.ended = RunEnded(self.current, exit_code=None)
            return False
        self.interrupted.add(self.current)
        try:
            os.killpg(self.process.pid, signal.SIGINT)
        except ProcessLookupError:
            return False
        return True

    def on_line(self, line: bytes) -> bool:
        """Take one message; return whether a new cell started (which resets the time limit)."""
        try:
            message = json.loads(line)
            genuine = isinstance(message, dict) and secrets.compare_digest(str(message.get("secret")), self.secret)
        except (ValueError, UnicodeDecodeError):
            genuine = False
        if not genuine:
            self.forged += 1
            return False
        event = message["event"]
        if event == "start":
            self.current = self.cells[message["cell"]]["name"]
            return True
        if event == "test":
            self.on_test(message)
        elif event == "cell_error":
            name, (error_type, text) = message["name"], message["error"]
            timed_out = name in self.interrupted
            failed = TimedOut(name, self.cell_timeout) if timed_out else CellFailed(name, error_type, text)
            self.verdict.findings.append(failed)
        elif event == "tampering":
            subjects, changes = zip(*message["changes"], strict=True)
            self.verdict.findings.append(Tampering(message["cell"], changes, subjects))
        elif event == "done":
            self.done = True
        return False

    def on_test(self, message: dict) -> None:
        name = message["name"]
        if name in self.interrupted:
            error = f"it ran longer than {self.cell_timeout:g} s and was interrupted"
        else:
            error = ": ".join(message["error"]) if message["error"] else None
        if message["passed"]:
            self.verdict.passed.add(name)
        elif message["tampering"]:
            failed_too = f" (it also failed: {error})" if error else ""
            changes = "; ".join(change for _, change in message["tampering"])
            self.verdict.errors[name] = f"earns nothing, because your code {changes}{failed_too}"
        else:
            self.verdict.errors[name] = error
