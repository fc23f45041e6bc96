"""The course's steps inside nbgrader's autograde: every way of autograding ends in the same judge.

``class autograde``, ``nbgrader autograde`` run by hand and the formgrader's Autograde button all run nbgrader's
``Autograde`` converter with the course's configuration (``nbgrader_config.py``), which puts these two
preprocessors in its list:

- ``JudgedExecute`` is nbgrader's ``Execute`` with two changes. The kernel runs in the grading sandbox
  (``sandbox.py``), whatever kernel the notebook names, and sees what a student's process of the sealed run sees:
  no check, no stand-in, no reference block not yet due. And the test cells never run in it: the judge
  (``judge.py``) runs each one here, from the instructor's source notebook, while the kernel answers its requests
  for the learner's functions and modules (``student.serve_judge``). The student's code thus runs once, in the
  kernel, and a test cell's outputs are what the judge found: what the check printed, and its error when it
  failed. nbgrader's ``SaveAutoGrades`` scores those, in the gradebook and in the feedback alike.
- ``JudgeNotes`` keeps what grading found besides the scores (the student's cells that failed or ran too long,
  structural changes) in the autograded notebook's metadata under ``VERIFICATION``, for the course's report, with
  the seconds the judge took. A notebook autograded without these steps has no such notes, and the course's
  grading gives its tests nothing (``grading.verification_of``).

Both read the one ``GradingSandbox`` setting: grading without the sandbox is the instructor's explicit choice.
"""

import json
import math
import shutil
import socket
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpec
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Bool, Enum, Float, Int, Unicode, default
from traitlets.config import Configurable

from autograder.cells import grade_id, is_answer, is_test, key, label
from autograder.job_watch import CellWatch
from autograder.verification import sealed_run, structure
from autograder.verification.findings import CellFailed, Finding, TimedOut, Unreadable
from autograder.verification.judge import STUDENT_FILES, Judge, SentTooMuch, Stopped, TestRun, course_imports
from autograder.verification.sandbox import Sandbox, unavailable

VERIFICATION = "course_verification"  # the autograded notebook's metadata key: {"notes": [...], "seconds": s}
NOT_VERIFIED = "not judged: the class's nbgrader_config.py leaves out the course's steps"
VERDICT = "course_verdict"  # where JudgedExecute leaves the judge's verdict for JudgeNotes, in nbgrader's resources
NOT_A_TEST = "NotATest"  # the error of a cell marked as a test that the instructor's notebook does not have
INTERRUPT_GRACE = sealed_run.INTERRUPT_GRACE
ACCEPT_POLL = 0.05  # seconds between looks, while the judge waits for the kernel, at whether the kernel's cell ended
# How the kernel starts: the student's side of grading loaded (the checks import empty, ``serve_judge`` is there),
# then ipykernel, except that a process the student's code forks (a fork bomb's copies of the kernel) gives up the
# kernel's sockets at once and waits forever if it tries to send the kernel's messages: copies of the kernel would
# otherwise answer nbgrader in its name and garble its channels. A copy whose code fails waits too, before IPython
# formats its traceback: a fork bomb's copies all fail once no place is left, and their formatting took a third of
# the bomb sample's processor time (17 of 51 core-seconds), competing with the kernel's cells after the bomb. Waiting,
# a copy keeps its place under the process limit, so the bomb runs out of places and stops, as in the sealed run
# (runner.stay_out_if_forked). The sandbox ends them all with the kernel.
KERNEL_START = f"""\
import importlib.util, os, sys, time
_spec = importlib.util.spec_from_file_location("_grading_student", {STUDENT_FILES[0]!r})
_student = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _student
_spec.loader.exec_module(_student)
_student.hide_checks()
import jupyter_client.session
from IPython.core.interactiveshell import InteractiveShell
def _wait_forever(*args, **kwargs):
    while True:
        time.sleep(3600)
def _forked():
    jupyter_client.session.Session.send = _wait_forever
    InteractiveShell.showtraceback = InteractiveShell.showsyntaxerror = _wait_forever
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            kind = os.readlink(f"/proc/self/fd/{{fd}}")
        except OSError:
            continue
        if kind.startswith(("socket:", "anon_inode:[event")):
            try:
                os.close(fd)
            except OSError:
                pass
os.register_at_fork(after_in_child=_forked)
del _spec, _student
from ipykernel import kernelapp
kernelapp.launch_new_instance()
"""
# What the kernel runs in place of a test cell: answer the judge of that cell (student.serve_judge).
SERVE_JUDGE = 'import sys; sys.modules["_grading_student"].serve_judge({address!r})'


class GradingSandbox(Configurable):
    """Where student code runs while it is graded."""

    enabled = Bool(
        True,
        help="Run student code (nbgrader's kernel and the sealed run) in the bubblewrap sandbox. False grades "
        "without protection from the code graded; set it only for code you trust, or where no sandbox can run.",
    ).tag(config=True)
    memory = Int(Sandbox.memory, help="Bytes each process of the student's may write to (see Sandbox.memory).").tag(
        config=True
    )
    processes = Int(
        Sandbox.processes,
        help="Processes and threads the student's code may run at once, the kernel's own included (a kernel that "
        "has used PyTorch on 2 threads runs 14); a fork bomb stops there.",
    ).tag(config=True)
    disk = Int(
        Sandbox.disk,
        help="Bytes the student's code may write to its private /tmp and working folder, which live in memory.",
    ).tag(config=True)

    def sandbox(self, shared: tuple[str, ...] = (), readable: tuple[str, ...] = ()) -> Sandbox | None:
        """The sandbox to run in, or None when grading without one; refuses when none can run here."""
        if not self.enabled:
            return None
        if reason := unavailable():
            raise RuntimeError(f"{reason} (nbgrader setting: c.GradingSandbox.enabled = False)")
        return Sandbox(readable=readable, shared=shared, memory=self.memory, processes=self.processes, disk=self.disk)


class JudgedExecute(Execute):
    """nbgrader's Execute, with the kernel in the grading sandbox and the test cells in the judge.

    The kernel is ipykernel started through the sandbox's launcher, talking to nbgrader over Unix sockets in a
    folder only the two share (the sandbox has no network); the kernel spec is made here, so no notebook's
    metadata can choose another kernel. In that folder the judge also listens for the kernel, one connection per
    test cell. A cell marked as a test that the instructor's source notebook does not have runs nowhere."""

    # Once the last cell has run, the kernel is killed rather than asked to exit: nothing of the student's should
    # run after the tests (atexit hooks included), and asking costs about a second per notebook graded.
    shutdown_kernel = Enum(["graceful", "immediate"], default_value="immediate").tag(config=True)
    # nbclient's iopub_timeout: how long, after a cell's reply, to wait for the message that says the cell is done.
    # nbclient waits 4 s and nbgrader then gives up on the whole notebook, which a busy machine reaches (a fork bomb's
    # copies, in a submission graded beside others, once kept a kernel's message 4 s late); the cell's own limit is
    # what code is allowed, so the message may come that late too.

    @default("iopub_timeout")
    def _cell_limit(self) -> int:
        return math.ceil(self.timeout) if self.timeout else 4

    progress_file = Unicode(
        "",
        help="A file that names the cell being run, rewritten before each cell runs, so that a grader that stops "
        "a run past its time limit can say where it was (grading.py). Empty: none.",
    ).tag(config=True)
    cell_processor_time = Float(
        0.0,
        help="Processor seconds the kernel's processes may use in one cell before it is interrupted, as at the "
        "cell's time limit (which counts wall-clock seconds). The grader sets it to a share of the job's limit, so "
        "that code that runs for ever fails in its own cell and the cells after it still count. 0: no such limit.",
    ).tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        names = resources["nbgrader"]
        course = CourseDirectory(config=self.config)
        source = read(Path(course.format_path(course.source_directory, ".", names["assignment"])) / nb_file(names))
        self._assignment = names["assignment"]
        self._tests = {grade_id(cell): cell.source for cell in source.cells if is_test(cell)}
        self._known = {key(cell) for cell in source.cells}
        # The judge imports what the course's cells import (PyTorch, the checks: seconds) while the kernel starts.
        importing = ThreadPoolExecutor(1, thread_name_prefix="judge-imports")
        self._imports = importing.submit(course_imports, [cell.source for cell in source.cells if is_course_code(cell)])
        importing.shutdown(wait=False)
        self._verdict, self._judging, self._after = sealed_run.SealedVerdict(), 0.0, "the top"
        self._folders = [Path(tempfile.mkdtemp(prefix="kernel-")), Path(tempfile.mkdtemp(prefix="kernel-settings-"))]
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self._folders[0] / "judge"))
        self._listener.listen(1)
        try:
            super().preprocess(nb, resources, km)
        finally:
            self._imports.result()  # whatever happened, the imports end before the judge's folders go
            self._listener.close()
            for folder in self._folders:
                shutil.rmtree(folder, ignore_errors=True)
        resources[VERDICT] = {"verdict": self._verdict, "seconds": self._judging}
        return nb, resources

    def create_kernel_manager(self):
        manager = super().create_kernel_manager()
        shared, private = self._folders
        sandbox = GradingSandbox(config=self.config).sandbox(shared=(str(shared),))
        kernel = [sys.executable, "-c", KERNEL_START, "-f", "{connection_file}"]
        if sandbox is not None:
            hidden, revealed = sealed_run.answers_hidden(self._assignment)
            sandbox = replace(sandbox, readable=(*sandbox.readable, *STUDENT_FILES), hidden=hidden, revealed=revealed)
            kernel = sandbox.launcher(private / "sandbox.json") + ["--", *kernel]
        manager._kernel_spec = KernelSpec(argv=kernel, display_name="Python 3 (graded)", language="python")
        manager.transport, manager.ip = "ipc", str(shared / "kernel-ipc")  # the sockets: kernel-ipc-1, -2, ...
        manager.connection_file = str(shared / "kernel.json")
        return manager

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        watch = CellWatch(self.km.provisioner.pid, self.km.provisioner.pgid, self.cell_processor_time)
        if is_test(cell):
            self._after = label(cell)
            self.running(label(cell), "test")
            with watch.cell():
                return self.judge_cell(cell, index, watch), self.resources
        self.running(*self.whose(cell))
        start = time.perf_counter()
        with watch.cell():
            cell, resources = super().preprocess_cell(cell, resources, index)
        self.note_failure(cell, timed_out=time.perf_counter() - start >= self.timeout, watch=watch)
        return cell, resources

    def whose(self, cell) -> tuple[str, str]:
        """How the report names a code cell, and whose it is: the student's (an answer cell, or one they added)
        or the course's."""
        if key(cell) not in self._known:
            return f"the cell you added after {self._after}", "student"
        return label(cell), "student" if is_answer(cell) else "course"

    def running(self, cell: str, whose: str) -> None:
        if self.progress_file:
            notebook = self.resources["nbgrader"]["notebook"]
            Path(self.progress_file).write_text(json.dumps({"notebook": notebook, "cell": cell, "whose": whose}))

    def note_failure(self, cell, timed_out: bool, watch: CellWatch) -> None:
        """A finding for one of the student's cells that failed: an answer cell, or one they added."""
        name, whose = self.whose(cell)
        if whose == "course":
            self._after = name
            return
        errors = [output for output in cell.get("outputs", []) if output.output_type == "error"]
        if not errors:
            return
        if watch.interrupted:
            self._verdict.findings.append(TimedOut(name, watch.seconds, processor_time=True))
        elif timed_out:  # nbclient interrupted it (KeyboardInterrupt), or gave up on it (CellTimeoutError)
            self._verdict.findings.append(TimedOut(name, self.timeout))
        else:
            self._verdict.findings.append(CellFailed(name, errors[0].ename, errors[0].evalue))

    def judge_cell(self, cell, index: int, watch: CellWatch):
        """Run a test cell in the judge, the kernel answering for the learner's code; the cell shows what the
        learner's code printed, what the check printed, and the judge's error when the test failed."""
        source = self._tests.get(grade_id(cell))
        if source is None:
            cell.outputs = [error_output(NOT_A_TEST, "the instructor's notebook has no test of this name")]
            return cell
        start, found, served = time.perf_counter(), {}, threading.Event()
        judging = threading.Thread(target=self.judging, args=(source, served, found))
        judging.start()
        serve = nbformat.v4.new_code_cell(SERVE_JUDGE.format(address=str(self._folders[0] / "judge")))
        timeout, self.timeout = self.timeout, math.ceil(self.timeout + 3 * INTERRUPT_GRACE)
        try:
            self.execute_cell(serve, index, store_history=False)
        finally:
            self.nb.cells[index] = cell  # nbclient puts the cell it ran in the notebook
            self.timeout = timeout
            served.set()
            judging.join()
            self._judging += time.perf_counter() - start
        if "error" in found:  # the autograder's own fault: nbgrader reports the notebook as not graded
            raise found["error"]
        run: TestRun = found["run"]
        if watch.interrupted:
            run = replace(run, processor_limit=watch.seconds)
        failure = self._verdict.judged(grade_id(cell), run, self.timeout)
        printed = [output for output in serve.outputs if output.output_type in ("stream", "display_data")]
        if run.printed:
            printed.append(nbformat.v4.new_output("stream", name="stdout", text=run.printed))
        if failure is not None:
            printed.append(error_output(*failure))
        cell.outputs, cell.execution_count = printed, serve.get("execution_count")
        return cell

    def judging(self, source: str, served: threading.Event, found: dict) -> None:
        try:
            found["run"] = self.judged(source, served)
        except BaseException as error:  # noqa: B036 - handed to the main thread, which raises it
            found["error"] = error

    def judged(self, source: str, served: threading.Event) -> TestRun:
        """The judge's run of one test cell, against the kernel that connects to it (in another thread). The kernel
        may never connect (the student's code changed how it runs cells): then the test fails once the kernel's
        cell has ended."""
        connection = self.connection(served)
        if connection is None:
            return TestRun(["KernelAbsent", "your notebook's kernel did not answer the judge"], "", False)
        group = self.km.provisioner.pgid
        with connection:
            descriptor = connection.fileno()
            judge = Judge(descriptor, descriptor, group, self.timeout, INTERRUPT_GRACE, self._imports.result())
            try:
                run = judge.run_test(source)
                judge.clock.start()
                judge.pipe.send({"op": "stop"})
            except SentTooMuch as stopped:
                return TestRun(["SentTooMuch", str(stopped)], "", False)
            except Stopped as stopped:
                return TestRun(["KernelEnded", f"the notebook's kernel ended during the test: {stopped}"], "", False)
        return run

    def connection(self, served: threading.Event) -> socket.socket | None:
        """The kernel's connection for this test, or None once its cell has ended without one."""
        self._listener.settimeout(ACCEPT_POLL)
        while not served.is_set():
            try:
                return self._listener.accept()[0]
            except TimeoutError:
                continue
        return None


class JudgeNotes(NbGraderPreprocessor):
    """Keep what the judge found besides the scores, and the structural comparison with the released notebook,
    in the autograded notebook's metadata (``VERIFICATION``), for the course's report. Runs after nbgrader's
    ClearMetadataPreprocessor, which would remove them."""

    def preprocess(self, nb, resources):
        names = resources["nbgrader"]
        course = CourseDirectory(config=self.config)
        released = read(Path(course.format_path(course.release_directory, ".", names["assignment"])) / nb_file(names))
        submitted_path = Path(course.format_path(course.submitted_directory, names["student"], names["assignment"]))
        notes: list[Finding] = list(structure.compare(released, read(submitted_path / nb_file(names))))
        judged = resources.get(VERDICT)
        if judged is not None:
            notes += judged["verdict"].findings
            nb.metadata[VERIFICATION] = {"notes": [note.as_json() for note in notes], "seconds": judged["seconds"]}
        return nb, resources


def nb_file(names: dict) -> str:
    return names["notebook"] + ".ipynb"


def is_course_code(cell) -> bool:
    return cell.cell_type == "code" and not is_test(cell) and not is_answer(cell)


def error_output(kind: str, message: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("error", ename=kind, evalue=message, traceback=[f"{kind}: {message}"])


def run_sealed(
    assignment: str,
    source: nbformat.NotebookNode,
    released: nbformat.NotebookNode,
    submitted_path: Path,
    cell_timeout: float,
    sandbox: Sandbox | None,
    notes: list[Finding],
) -> sealed_run.SealedVerdict | None:
    """The structural comparison and the sealed run of one submitted notebook; what they found goes into ``notes``.
    None when the file is not a notebook. The course's grading also runs it on its own where nbgrader gave up on a
    notebook (its kernel died), for the report to say what the student's code did."""
    try:
        submitted = read(submitted_path)
    except Exception as error:  # nbformat raises several kinds for a file that is not a notebook
        notes.append(Unreadable(submitted_path.name, f"{type(error).__name__}: {error}"))
        return None
    notes += structure.compare(released, submitted)
    program = sealed_run.program(source, released, submitted)
    with tempfile.TemporaryDirectory(prefix="sealed-") as workdir:
        verdict = sealed_run.verify(program, Path(workdir), cell_timeout, sandbox, assignment)
    notes += verdict.findings
    return verdict


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)
