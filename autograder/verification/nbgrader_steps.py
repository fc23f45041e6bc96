"""The course's steps inside nbgrader's autograde: every way of autograding ends in the same verification.

``class autograde``, ``nbgrader autograde`` run by hand and the formgrader's Autograde button all run nbgrader's
``Autograde`` converter with the course's configuration (``nbgrader_config.py``), which puts these two
preprocessors in its list:

- ``SandboxedExecute`` is nbgrader's ``Execute``, with the kernel started in the grading sandbox
  (``sandbox.py``) whatever kernel the notebook names;
- ``SealedVerification`` runs the notebook's graded tests again in the sealed run (``sealed_run.py``), and puts a
  ``SealedVerification`` error into each test cell that passed in the kernel but not there, before nbgrader's
  ``SaveAutoGrades`` scores the cells: such a test earns nothing, in the gradebook and in the feedback alike.
  What the verification found (tampering, structural changes, the student's cells that failed) is kept in the
  autograded notebook's metadata under ``VERIFICATION``, for the course's report, with the seconds it took.

Both read the one ``GradingSandbox`` setting: grading without the sandbox is the instructor's explicit choice.
"""

import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpec
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Bool, Enum, Int
from traitlets.config import Configurable

from autograder.cells import grade_id, is_test, points
from autograder.verification import sealed_run, structure
from autograder.verification.findings import Finding, Unreadable
from autograder.verification.sandbox import Sandbox, unavailable

VERIFICATION = "course_verification"  # the autograded notebook's metadata key: {"notes": [...], "overruled": {...}}
NOT_VERIFIED = "could not be verified (see the notes)"
FAILED = "SealedVerification"  # the error a test cell shows when it passed in the kernel and not in the sealed run
# What a test cell shows instead of the kernel's error when the judge passed it.
GRANTED = nbformat.v4.new_output(
    "stream", name="stdout", text="✔ passed when the autograder checked your answer again (see the notes)\n"
)
# How the sandboxed kernel starts: ipykernel, except that a process the student's code forks (a fork bomb's copies
# of the kernel) gives up the kernel's sockets at once and waits forever if it tries to send the kernel's messages:
# copies of the kernel would otherwise answer nbgrader in its name and garble its channels. Waiting, a copy keeps
# its place under the process limit, so the bomb runs out of places and stops, as in the sealed run
# (runner.stay_out_if_forked). The sandbox ends them all with the kernel.
KERNEL_START = """\
import os, time
import jupyter_client.session
def _wait_forever(*args, **kwargs):
    while True:
        time.sleep(3600)
def _forked():
    jupyter_client.session.Session.send = _wait_forever
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            kind = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if kind.startswith(("socket:", "anon_inode:[event")):
            try:
                os.close(fd)
            except OSError:
                pass
os.register_at_fork(after_in_child=_forked)
from ipykernel import kernelapp
kernelapp.launch_new_instance()
"""


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

    def sandbox(self, shared: tuple[str, ...] = (), readable: tuple[str, ...] = ()) -> Sandbox | None:
        """The sandbox to run in, or None when grading without one; refuses when none can run here."""
        if not self.enabled:
            return None
        if reason := unavailable():
            raise RuntimeError(f"{reason} (nbgrader setting: c.GradingSandbox.enabled = False)")
        return Sandbox(readable=readable, shared=shared, memory=self.memory)


class SandboxedExecute(Execute):
    """nbgrader's Execute, with the kernel in the grading sandbox: ipykernel started through the sandbox's
    launcher, talking to nbgrader over Unix sockets in a folder only the two share (the sandbox has no network).
    The kernel spec is made here, so no notebook's metadata can choose another kernel."""

    # Once the last cell has run, the kernel is killed rather than asked to exit: nothing of the student's should
    # run after the tests (atexit hooks included), and asking costs about a second per notebook graded.
    shutdown_kernel = Enum(["graceful", "immediate"], default_value="immediate").tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        self._folders = [Path(tempfile.mkdtemp(prefix="kernel-")), Path(tempfile.mkdtemp(prefix="kernel-settings-"))]
        try:
            return super().preprocess(nb, resources, km)
        finally:
            for folder in self._folders:
                shutil.rmtree(folder, ignore_errors=True)

    def create_kernel_manager(self):
        manager = super().create_kernel_manager()
        shared, private = self._folders
        sandbox = GradingSandbox(config=self.config).sandbox(shared=(str(shared),))
        if sandbox is None:
            return manager
        kernel = [sys.executable, "-c", KERNEL_START, "-f", "{connection_file}"]
        argv = sandbox.launcher(private / "sandbox.json") + ["--", *kernel]
        manager._kernel_spec = KernelSpec(argv=argv, display_name="Python 3 (grading sandbox)", language="python")
        manager.transport, manager.ip = "ipc", str(shared / "kernel-ipc")  # the sockets: kernel-ipc-1, -2, ...
        manager.connection_file = str(shared / "kernel.json")
        return manager


class SealedVerification(NbGraderPreprocessor):
    """Run the submission's graded tests again, sealed, and fail in the notebook each one that does not pass
    there. The judge's verdict also stands for a test that failed in nbgrader's kernel but passed there: the
    kernel's run of a test is only a copy for the feedback, and the student's code in it can fail a check that its
    answers pass (a decorator keeps the kernel's check from lending a correct earlier exercise). Runs after Execute
    and before SaveAutoGrades."""

    def preprocess(self, nb, resources):
        names = resources["nbgrader"]
        course = CourseDirectory(config=self.config)
        notes: list[Finding] = []
        start = time.perf_counter()
        verdict = self.verdict(course, names, notes)
        seconds = time.perf_counter() - start
        overruled, granted = {}, {}
        for cell in nb.cells:
            if not (is_test(cell) and points(cell)):
                continue  # no points at stake
            errors = [out for out in cell.outputs if out.output_type == "error"]
            if errors:
                if verdict is not None and grade_id(cell) in verdict.passed:
                    granted[grade_id(cell)] = f"{errors[0].ename}: {errors[0].evalue}"
                    cell.outputs = [out for out in cell.outputs if out.output_type != "error"] + [GRANTED]
                continue  # else already failed in the kernel
            if verdict is None:
                overruled[grade_id(cell)] = NOT_VERIFIED
            elif failure := verdict.failure(grade_id(cell)):
                overruled[grade_id(cell)] = f"{failure} (in nbgrader's kernel it passed)"
            else:
                continue
            why = overruled[grade_id(cell)]
            shown = nbformat.v4.new_output("error", ename=FAILED, evalue=why, traceback=[f"{FAILED}: {why}"])
            cell.outputs.append(shown)
        found = [note.as_json() for note in notes]
        nb.metadata[VERIFICATION] = {"notes": found, "overruled": overruled, "granted": granted, "seconds": seconds}
        return nb, resources

    def verdict(self, course: CourseDirectory, names: dict, notes: list[Finding]) -> sealed_run.SealedVerdict | None:
        """The sealed run of the notebook as the student submitted it; what it found goes into ``notes``."""
        assignment, student, notebook = names["assignment"], names["student"], names["notebook"] + ".ipynb"
        source = read(Path(course.format_path(course.source_directory, ".", assignment)) / notebook)
        released = read(Path(course.format_path(course.release_directory, ".", assignment)) / notebook)
        submitted_path = Path(course.format_path(course.submitted_directory, student, assignment)) / notebook
        timeout = SandboxedExecute(config=self.config).timeout
        sandbox = GradingSandbox(config=self.config).sandbox()
        return run_sealed(assignment, source, released, submitted_path, timeout, sandbox, notes)


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
