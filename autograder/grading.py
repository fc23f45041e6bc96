"""Grading a class in parallel: each (student, assignment) is autograded by nbgrader in a scratch copy of the
course directory, checked again by the sealed verification, and written into the class gradebook by this
process alone.

Why a sandbox. The student's code runs in nbgrader's kernel and in the sealed run, and both run in the
grading sandbox (``sandbox.py``): it sees no class folder, no gradebook, no source notebook and no other
submission, has no network, and every process it starts ends with the job. nbgrader itself, which reads the
gradebook and restores the hidden tests, runs outside and sends them to the kernel as code to run. nbgrader
starts its kernel from a kernel spec of this job's (``course-sandbox``), which starts the kernel through the
sandbox; the kernel talks to nbgrader over Unix sockets in a folder that only the two share.

Why scratch copies. Running ``nbgrader autograde --student X`` for several students at once against one
SQLite gradebook worked in our trials (SQLite makes concurrent writers wait up to 5 s), but it rests on file
locking that network file systems do not honour, and a worker stopped for its time or memory would be stopped
in the middle of the class gradebook. So each job gets its own copy of the gradebook and its own folders;
nbgrader grades there, and the parent copies the results into the class gradebook through nbgrader's
Gradebook API, one job at a time. Re-grading overwrites the same rows, so it is idempotent.

Why limits. Each worker process lowers its own RLIMIT_DATA before it starts nbgrader and the sealed run,
so every kernel inherits it: an allocation past the limit fails in the student's cell instead of taking the
machine's memory. RLIMIT_DATA counts memory a process writes to, not address space it reserves; torch
reserves far more address space than it uses, so RLIMIT_AS would have to be set many times higher (measured:
notebook 07 autogrades under a 512 MiB data limit, and needs about 1.5 GiB of address space).
"""

import contextlib
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from sqlalchemy.exc import SAWarning

from autograder import sealed, structure
from autograder.cells import grade_id, is_test, points
from autograder.sandbox import Sandbox

NO_END = "did not finish within"  # what the log says of an nbgrader run that had to be stopped
START_UP_ALLOWANCE = 120.0  # seconds for nbgrader and its kernel to start, on top of the cells' limits
CELL_TIMEOUT = 120.0  # seconds; the same limit the course's nbgrader_config.py sets for nbgrader run by hand
MEMORY_LIMIT = 2 * 2**30  # bytes of data per process: notebook 07 needs about 350 MiB
SANDBOX_KERNEL = "course-sandbox"  # the kernel spec each job writes for nbgrader: ipykernel in the sandbox
# How the sandboxed kernel starts: ipykernel, except that a process the student's code forks (a fork bomb's copies
# of the kernel) gives up the kernel's sockets at once and waits forever if it tries to send the kernel's messages:
# copies of the kernel would otherwise answer nbgrader in its name and garble its channels. Waiting, a copy keeps
# its place under the process limit, so the bomb runs out of places and stops, as in the sealed run
# (sealed_runner.stay_out_if_forked). The sandbox ends them all with the kernel.
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

SCRATCH_CONFIG = """\
# A scratch copy of the class, for one student and one assignment; the class's settings, these folders.
c = get_config()  # noqa: F821
load_subconfig({class_config!r})  # noqa: F821
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = {db_url!r}
"""


@dataclass(frozen=True)
class Limits:
    cell_timeout: float = CELL_TIMEOUT
    memory: int = MEMORY_LIMIT
    workers: int = os.cpu_count() or 1
    sandbox: bool = True  # False only when the instructor chose --no-sandbox


@dataclass(frozen=True)
class Job:
    root: Path  # the class's course directory
    student: str
    assignment: str
    template: Path  # a copy of the class gradebook from before the batch
    limits: Limits


@dataclass
class TestResult:
    name: str  # the test cell's grade_id
    max_points: float
    points: float
    message: str | None = None  # why it earned less than its points
    overruled: bool = False  # passed in nbgrader's kernel, failed the sealed verification
    unscored: bool = False  # nbgrader gave it no score (its cell was missing), so it awaits manual grading


@dataclass
class NotebookResult:
    name: str  # file name, e.g. 01_self_attention_averaging.ipynb
    tests: list[TestResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what else happened: tampering, faults, nbgrader's errors
    submitted: bool = True
    graded_by_nbgrader: bool = True

    @property
    def points(self) -> float:
        return sum(test.points for test in self.tests)

    @property
    def max_points(self) -> float:
        return sum(test.max_points for test in self.tests)


@dataclass
class Outcome:
    student: str
    assignment: str
    notebooks: list[NotebookResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # about the submission as a whole: extra or misnamed files
    scratch: Path | None = None  # where nbgrader graded it; removed once merged
    seconds: dict[str, float] = field(default_factory=dict)  # time spent: nbgrader, then verification
    failure: str | None = None  # why the autograder could not grade it at all

    @property
    def graded(self) -> bool:
        """Whether every notebook handed in was graded; if not, its points await the instructor (manual grading)."""
        return self.failure is None and all(
            notebook.graded_by_nbgrader for notebook in self.notebooks if notebook.submitted
        )

    @property
    def tests(self) -> list[TestResult]:
        return [test for notebook in self.notebooks for test in notebook.tests]

    @property
    def messages(self) -> list[str]:
        """Everything the report says went wrong: notes on the submission and its notebooks, failed tests."""
        notes = self.notes + [note for notebook in self.notebooks for note in notebook.notes]
        return notes + [f"{test.name}: {test.message}" for test in self.tests if test.message]


def autograde(root: Path, pairs: list[tuple[str, str]], limits: Limits, progress=lambda outcome: None) -> list[Outcome]:
    """Grade every (student, assignment) of ``pairs`` in worker processes; write each into the class gradebook
    as it finishes. One bad submission only ever costs its own job."""
    with tempfile.TemporaryDirectory(prefix="autograde-") as scratch:
        template = Path(scratch) / "gradebook.db"
        shutil.copy(root / "gradebook.db", template)
        jobs = [Job(root, student, assignment, template, limits) for student, assignment in pairs]
        outcomes, broken = run_jobs(jobs, limits, progress)
        if broken:  # a worker process died (not a kernel: those are its children); grade the rest again
            retried, still_broken = run_jobs(broken, limits, progress)
            outcomes += retried + [failed(job, "its grading process died twice") for job in still_broken]
    return sorted(outcomes, key=lambda outcome: (outcome.assignment, outcome.student))


def run_jobs(jobs: list[Job], limits: Limits, progress) -> tuple[list[Outcome], list[Job]]:
    outcomes, broken = [], []
    context = get_context("spawn")  # workers start clean, whatever the parent has imported or opened
    threads = max(1, (os.cpu_count() or 1) // limits.workers)
    with ProcessPoolExecutor(
        limits.workers, mp_context=context, initializer=prepare_worker, initargs=(limits.memory, threads)
    ) as pool:
        futures = {pool.submit(grade, job): job for job in jobs}
        for future in as_completed(futures):
            job = futures[future]
            try:
                outcome = future.result()
            except BrokenProcessPool:
                broken.append(job)
                continue
            except Exception as error:  # a fault of the autograder itself: report it, grade the others
                outcome = failed(job, f"the autograder failed: {type(error).__name__}: {error}")
            merge(job, outcome)
            outcomes.append(outcome)
            progress(outcome)
    return outcomes, broken


def failed(job: Job, reason: str) -> Outcome:
    return Outcome(job.student, job.assignment, notes=[f"not graded: {reason}"], failure=reason)


def prepare_worker(memory: int, threads: int) -> None:
    """Run in each worker before any job; the worker's children (nbgrader, kernels, sealed runs) inherit all
    of it: the memory limit, and as many PyTorch threads as leave every worker a fair share of the cores."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    try:
        import resource
    except ImportError:  # Windows: no per-process limits; grading still works
        return
    resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))


# --- in a worker ------------------------------------------------------------------------------------------


def grade(job: Job) -> Outcome:
    """Autograde one student's assignment in a scratch course directory, then verify it sealed."""
    scratch = Path(tempfile.mkdtemp(prefix=f"grade-{job.assignment[:2]}-"))
    outcome = Outcome(job.student, job.assignment, scratch=scratch)
    set_up_scratch(job, scratch, outcome)
    start = time.perf_counter()
    log = run_nbgrader(job, scratch)
    outcome.seconds["nbgrader"] = time.perf_counter() - start
    for source_path in sorted((job.root / "source" / job.assignment).glob("*.ipynb")):
        outcome.notebooks.append(grade_notebook(job, scratch, source_path, log))
    outcome.seconds["verification"] = time.perf_counter() - start - outcome.seconds["nbgrader"]
    return outcome


def set_up_scratch(job: Job, scratch: Path, outcome: Outcome) -> None:
    """The class's source, a copy of its gradebook, and the submission's notebooks (nothing else of it)."""
    db_url = f"sqlite:///{scratch / 'gradebook.db'}"
    config = SCRATCH_CONFIG.format(class_config=str(job.root / "nbgrader_config.py"), root=str(scratch), db_url=db_url)
    (scratch / "nbgrader_config.py").write_text(config, encoding="utf-8")
    (scratch / "source").symlink_to(job.root / "source", target_is_directory=True)
    shutil.copy(job.template, scratch / "gradebook.db")
    submitted = job.root / "submitted" / job.student / job.assignment
    copy = scratch / "submitted" / job.student / job.assignment
    copy.mkdir(parents=True)
    expected = {path.name for path in (job.root / "source" / job.assignment).glob("*.ipynb")}
    extra = []
    for path in sorted(submitted.rglob("*")) if submitted.is_dir() else []:
        if not path.is_file() or ".ipynb_checkpoints" in path.parts:
            continue
        if path.parent == submitted and path.name in {*expected, "timestamp.txt"}:
            shutil.copy(path, copy / path.name)
        else:
            extra.append(path.relative_to(submitted))
    outcome.notes += extra_file_notes(extra, expected)


def extra_file_notes(extra: list[Path], expected: set[str]) -> list[str]:
    """Files nbgrader would copy next to the notebook are left out: in the kernel's folder, a file named
    torch.py would be imported in place of PyTorch."""
    notes = []
    for path in extra:
        if path.suffix == ".ipynb":
            names = ", ".join(sorted(expected))
            notes.append(f"{path} is not a notebook of this assignment (expected {names}); it was not graded")
        elif path.suffix == ".py" or path.parent != Path("."):
            notes.append(f"extra file {path} was left out: its name could shadow a module the checks import")
        else:
            notes.append(f"extra file {path} was left out (only the assignment's notebooks are graded)")
    return notes


def run_nbgrader(job: Job, scratch: Path) -> str:
    """nbgrader's autograde of the one submission; its log (nbgrader goes on after a notebook fails). A run
    that outlasts every cell's time limit together is stopped, its kernel with it."""
    command = [
        sys.executable,
        "-m",
        "nbgrader",
        "autograde",
        job.assignment,
        "--student",
        job.student,
        "--force",
        f"--ExecutePreprocessor.timeout={math.ceil(job.limits.cell_timeout)}",  # nbgrader takes whole seconds
    ]
    env = {**os.environ, "PATH": path_with_this_python()}
    if job.limits.sandbox:
        command += sandboxed_kernel(scratch, env)
    process = subprocess.Popen(
        command, cwd=scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    code_cells = sum(
        cell.cell_type == "code"
        for path in (job.root / "source" / job.assignment).glob("*.ipynb")
        for cell in nbformat.read(path, as_version=4).cells
    )
    deadline = START_UP_ALLOWANCE + code_cells * job.limits.cell_timeout
    try:
        return process.communicate(timeout=deadline)[0]
    except subprocess.TimeoutExpired:
        stop_with_children(process)
        return process.communicate()[0] + f"\nnbgrader {NO_END} {deadline:.0f} s and was stopped"


def sandboxed_kernel(scratch: Path, env: dict[str, str]) -> list[str]:
    """Make nbgrader start its kernel in the sandbox: a kernel spec of the job's own, found first on JUPYTER_PATH and
    named on the command line (so a notebook's metadata cannot pick another kernel), and Unix sockets in a folder
    shared with the sandbox (it has no network to talk over). Returns nbgrader's extra options; sets ``env``."""
    runtime, specs = scratch / "runtime", scratch / "jupyter"
    runtime.mkdir()
    spec = specs / "kernels" / SANDBOX_KERNEL
    spec.mkdir(parents=True)
    kernel = [sys.executable, "-c", KERNEL_START, "-f", "{connection_file}"]
    argv = Sandbox(shared=(str(runtime),)).launcher(scratch / "sandbox.json") + ["--", *kernel]
    kernel_spec = {"argv": argv, "display_name": "Python 3 (grading sandbox)", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel_spec), encoding="utf-8")
    env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(specs), env.get("JUPYTER_PATH")]))
    connection = f"--KernelManager.connection_file={runtime / 'kernel.json'}"  # and the sockets beside it
    return [f"--ExecutePreprocessor.kernel_name={SANDBOX_KERNEL}", "--KernelManager.transport=ipc", connection]


def stop_with_children(process: subprocess.Popen) -> None:
    """Kill a process and its children: a kernel runs in a session of its own, so its group is not enough."""
    import psutil  # IPython's dependency, so present wherever nbgrader runs

    try:
        family = psutil.Process(process.pid).children(recursive=True) + [psutil.Process(process.pid)]
    except psutil.NoSuchProcess:
        return
    for member in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            member.kill()


def path_with_this_python() -> str:
    return str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")


def grade_notebook(job: Job, scratch: Path, source_path: Path, log: str) -> NotebookResult:
    result = NotebookResult(source_path.name)
    source = nbformat.read(source_path, as_version=4)
    submitted_path = scratch / "submitted" / job.student / job.assignment / source_path.name
    autograded_path = scratch / "autograded" / job.student / job.assignment / source_path.name
    result.submitted, result.graded_by_nbgrader = submitted_path.exists(), autograded_path.exists()
    verdict = None
    if not result.submitted:
        result.notes.append(f"{source_path.name} was not submitted")
    else:
        verdict = verify(job, scratch, source, submitted_path, result)
        if not result.graded_by_nbgrader:
            result.notes.append(f"nbgrader could not grade it: {nbgrader_error(log)}")
    scores = scores_in(scratch, job, source_path.stem)
    in_kernel = failures_in(autograded_path) if result.graded_by_nbgrader else {}
    for cell in (cell for cell in source.cells if is_test(cell)):
        result.tests.append(
            test_result(cell, scores.get(grade_id(cell)), in_kernel.get(grade_id(cell)), verdict, result)
        )
    if any(test.overruled for test in result.tests):
        mark_overruled(autograded_path, result)
    return result


def test_result(cell, score: float | None, error: str | None, verdict, result: NotebookResult) -> TestResult:
    """A test's final score: nbgrader's, unless the sealed run failed it or could not run at all."""
    test = TestResult(grade_id(cell), points(cell), score or 0.0, error)
    if not result.graded_by_nbgrader:
        test.points, test.message = 0.0, "not graded (see the notes)" if result.submitted else "not submitted"
    elif score is None:
        test.unscored, test.message = True, "nbgrader did not run it: the test cell is missing from the submission"
    elif test.points and verdict is None:
        test.points, test.message = 0.0, "could not be verified (see the notes)"
    elif test.points and (failure := verdict.failure(test.name)):
        test.points, test.message, test.overruled = 0.0, f"{failure} (in nbgrader's kernel it passed)", True
    if test.points == test.max_points:
        test.message = None
    return test


def verify(job: Job, scratch: Path, source, submitted_path: Path, result: NotebookResult):
    """Structural comparison and sealed run of one submitted notebook; notes go into ``result``."""
    try:
        submitted = nbformat.read(submitted_path, as_version=4)
    except Exception as error:  # nbformat raises several kinds for a file that is not a notebook
        result.notes.append(f"{submitted_path.name} could not be read as a notebook: {type(error).__name__}: {error}")
        return None
    released = nbformat.read(job.root / "release" / job.assignment / submitted_path.name, as_version=4)
    result.notes += [finding.text for finding in structure.compare(released, submitted)]
    program = sealed.program(source, released, submitted)
    workdir = scratch / "sealed" / submitted_path.stem
    verdict = sealed.verify(program, workdir, job.limits.cell_timeout, sandboxed=job.limits.sandbox)
    for cell, error in verdict.cell_errors.items():
        result.notes.append(f"{cell_phrase(cell)} failed: {error}")
    for cell, changes in verdict.tampering.items():
        result.notes.append(f"your code in {cell} " + "; ".join(changes))
    if verdict.forged:
        result.notes.append(f"your code wrote {verdict.forged} line(s) to the verification's channel; ignored")
    if verdict.stopped:
        result.notes.append(f"in the sealed run, {verdict.stopped}")
    return verdict


def cell_phrase(name: str) -> str:
    """A student's cell as the report names it: by its exercise, or as the sealed run described an added one."""
    return name if name.startswith("the cell") else f"your cell {name}"


def gradebook_of(root: Path) -> Gradebook:
    return Gradebook(f"sqlite:///{root / 'gradebook.db'}")


def scores_in(scratch: Path, job: Job, notebook: str) -> dict[str, float | None]:
    """nbgrader's automatic score of each test cell, from the scratch gradebook."""
    with quiet_gradebook(), gradebook_of(scratch) as gradebook:
        try:
            submission = gradebook.find_submission_notebook(notebook, job.assignment, job.student)
        except MissingEntry:
            return {}
        return {grade.name: grade.auto_score for grade in submission.grades}


def failures_in(autograded: Path) -> dict[str, str]:
    """For each test cell that failed in nbgrader's run: the error it showed."""
    failures = {}
    for cell in nbformat.read(autograded, as_version=4).cells:
        errors = [output for output in cell.get("outputs", []) if output.output_type == "error"]
        if is_test(cell) and errors:
            failures[grade_id(cell)] = "\n".join(f"{error.ename}: {error.evalue}" for error in errors)
    return failures


def nbgrader_error(log: str) -> str:
    """The line of nbgrader's log that says why it gave up on a notebook."""
    known = (
        "Kernel died",
        "DeadKernelError",
        "JSONDecodeError",
        "NotJSONError",
        "No notebooks found",
        NO_END,
        "Error:",
    )
    for line in log.splitlines():
        if any(marker in line for marker in known):
            return line.strip().removeprefix("[AutogradeApp | ERROR]").strip()
    return "see nbgrader's log"


def mark_overruled(autograded: Path, result: NotebookResult) -> None:
    """Show, in the notebook the feedback is made from, why a test that passed in the kernel earns nothing."""
    overruled = {test.name: test.message for test in result.tests if test.overruled}
    notebook = nbformat.read(autograded, as_version=4)
    for cell in notebook.cells:
        if grade_id(cell) in overruled:
            text = overruled[grade_id(cell)]
            cell.outputs.append(
                nbformat.v4.new_output(
                    "error", ename="SealedVerification", evalue=text, traceback=[f"SealedVerification: {text}"]
                )
            )
    autograded.chmod(autograded.stat().st_mode | stat.S_IWUSR)  # nbgrader leaves it read-only
    nbformat.write(notebook, autograded)


@contextlib.contextmanager
def quiet_gradebook() -> Iterator[None]:
    """nbgrader's Gradebook makes SQLAlchemy warn about objects it adds to relationships; nothing is wrong."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)
        yield


# --- in the parent, one job at a time ---------------------------------------------------------------------


def merge(job: Job, outcome: Outcome) -> None:
    """Write a finished job into the class: its autograded notebooks and its grades, replacing earlier ones."""
    if outcome.scratch is None:
        return
    autograded = job.root / "autograded" / job.student / job.assignment
    shutil.rmtree(autograded, ignore_errors=True)
    graded = outcome.scratch / "autograded" / job.student / job.assignment
    if graded.exists():
        shutil.copytree(graded, autograded)
    with quiet_gradebook(), gradebook_of(job.root) as gradebook:
        copy_grades(job, outcome, gradebook)
    shutil.rmtree(outcome.scratch, ignore_errors=True)
    outcome.scratch = None


def copy_grades(job: Job, outcome: Outcome, gradebook: Gradebook) -> None:
    with gradebook_of(outcome.scratch) as graded:
        try:
            timestamp = graded.find_submission(job.assignment, job.student).timestamp
        except MissingEntry:  # nbgrader stopped before it registered the submission (no notebook at all)
            timestamp = None
        gradebook.update_or_create_student(job.student)
        gradebook.update_or_create_submission(
            job.assignment, job.student, **({"timestamp": timestamp} if timestamp else {})
        )
        for notebook in outcome.notebooks:
            copy_notebook_grades(job, notebook, graded, gradebook)
        gradebook.db.commit()


def copy_notebook_grades(job: Job, result: NotebookResult, graded: Gradebook, gradebook: Gradebook) -> None:
    """Each test's final score (nbgrader's, or 0 where the sealed run overruled it), and nbgrader's comments and
    late penalty. As nbgrader itself does, a notebook not submitted scores 0, and one that nbgrader could not
    run keeps no score and is marked for manual grading."""
    notebook = Path(result.name).stem
    target = gradebook.find_submission_notebook(notebook, job.assignment, job.student)
    final = {test.name: test for test in result.tests}
    for grade in target.grades:
        if result.graded_by_nbgrader:
            grade.auto_score = None if final[grade.name].unscored else final[grade.name].points
        else:
            grade.auto_score = None if result.submitted else 0.0
        grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
    try:
        source = graded.find_submission_notebook(notebook, job.assignment, job.student)
    except MissingEntry:
        return
    target.late_submission_penalty = source.late_submission_penalty
    comments = {comment.name: comment.auto_comment for comment in source.comments}
    for comment in target.comments:
        comment.auto_comment = comments.get(comment.name)
