"""Grading a class in parallel: each (student, assignment) is autograded by nbgrader in a scratch copy of the
course directory, and written into the class gradebook by this process alone. nbgrader's autograde runs the
course's steps (``verification/nbgrader_steps.py``): the student's code in a kernel in the sandbox, the test cells
in the judge, outside it.

Why a sandbox. The student's code runs in nbgrader's kernel (and, where that kernel died, in the sealed run that
says why), in the grading sandbox (``verification/sandbox.py``): it sees no class folder, no gradebook, no source
notebook, no check and no other submission, has no network, and every process it starts ends with the job.
nbgrader itself, which reads the gradebook and restores the hidden tests, runs outside, and so does the judge that
runs them; the kernel talks to both over Unix sockets in a folder that only they share (``JudgedExecute``).

Why scratch copies. Running ``nbgrader autograde --student X`` for several students at once against one
SQLite gradebook worked in our trials (SQLite makes concurrent writers wait up to 5 s), but it rests on file
locking that network file systems do not honour, and a worker stopped for its time or memory would be stopped
in the middle of the class gradebook. So each job gets its own copy of the gradebook and its own folders;
nbgrader grades there, and the parent copies the results into the class gradebook through nbgrader's
Gradebook API, one job at a time. Re-grading overwrites the same rows, so it is idempotent.

Why limits. Each worker process lowers its own RLIMIT_DATA before it starts nbgrader,
so every kernel inherits it: an allocation past the limit fails in the student's cell instead of taking the
machine's memory. RLIMIT_DATA counts memory a process writes to, not address space it reserves; torch
reserves far more address space than it uses, so RLIMIT_AS would have to be set many times higher (measured:
notebook 07 autogrades under a 512 MiB data limit, and needs about 1.5 GiB of address space).
"""

import ast
import contextlib
import functools
import json
import math
import os
import shutil
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

from autograder import warm_start
from autograder.cells import grade_id, is_test, points
from autograder.job_watch import WALL_FACTOR, Stopped, communicate_within
from autograder.limits import CELL_TIMEOUT
from autograder.verification.findings import (
    ExtraFile,
    Finding,
    JobTimedOut,
    NotGraded,
    NotGradedByNbgrader,
    NotOfThisAssignment,
    NotSubmitted,
    NotVerified,
)
from autograder.verification.nbgrader_steps import NOT_VERIFIED, VERIFICATION, run_sealed
from autograder.verification.sandbox import Sandbox

NO_END = "did not finish within"  # what the log says of an nbgrader run that had to be stopped
START_UP_ALLOWANCE = 120.0  # seconds for nbgrader and its kernel to start, on top of the cells' limits
# A job's limit in processor time, unless the instructor sets one (--job-timeout): this many times its notebook's
# graded run as benchmarks/grading_times.py measured it on an idle machine (normal_runs.json beside this file: 5 to
# 10 s), since PyTorch's threads may use more than one core; at least the floor, and for an assignment the file does
# not know, the fallback. In wall-clock time it may take job_watch.WALL_FACTOR times as long.
JOB_TIME_FACTOR = 10
JOB_TIME_FLOOR = 60.0
JOB_TIME_FALLBACK = 600.0
CELL_SHARE = 0.25  # the share of a job's processor-time limit that one cell may use (JudgedExecute)
NORMAL_RUNS = Path(__file__).with_name("normal_runs.json")
PROGRESS = "running.json"  # in a job's scratch folder: the cell being run (JudgedExecute.progress_file)
# Files nbgrader's exchange puts beside a submission: when it was submitted, and the secret that feedback is released
# under (nbgrader release_feedback reads it from feedback/, which generate_feedback copies from autograded/).
NBGRADER_FILES = ("timestamp.txt", "submission_secret.txt")
MEMORY_LIMIT = Sandbox.memory  # bytes of data per process, the grading workers included
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
    job_timeout: float | None = None  # seconds a (student, assignment) may take in all; None: job_time_limit's

    def job_time_limit(self, assignment: str) -> float:
        """Seconds a job of ``assignment`` may take in all: the instructor's, else a few times a normal run."""
        if self.job_timeout is not None:
            return self.job_timeout
        normal = json.loads(NORMAL_RUNS.read_text(encoding="utf-8")).get(assignment)
        return max(JOB_TIME_FLOOR, JOB_TIME_FACTOR * normal) if normal else JOB_TIME_FALLBACK


@dataclass(frozen=True)
class Job:
    root: Path  # the class's course directory
    student: str
    assignment: str
    template: Path  # a copy of the class gradebook from before the batch
    limits: Limits


@dataclass(frozen=True)
class ShownFailure:
    """How a test cell of the autograded notebook shows its failure: the judge's error."""

    error_type: str  # the class name of its first error: NotImplementedYet, CheckFailed, TimeoutError
    text: str  # every error it showed, as "Type: message"


@dataclass
class TestResult:
    name: str  # the test cell's grade_id
    max_points: float
    points: float
    message: str | None = None  # why it earned less than its points
    error_type: str | None = None  # the class name of the error that failed it: NotImplementedYet, CheckFailed
    unscored: bool = False  # nbgrader gave it no score (its cell was missing), so it awaits manual grading


@dataclass
class NotebookResult:
    name: str  # file name, e.g. 01_self_attention_averaging.ipynb
    tests: list[TestResult] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)  # what else happened: tampering, faults, nbgrader's errors
    submitted: bool = True
    graded_by_nbgrader: bool = True
    verification_seconds: float = 0.0  # of nbgrader's run, the judge's share

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
    notes: list[Finding] = field(default_factory=list)  # about the submission as a whole: extra or misnamed files
    scratch: Path | None = None  # where nbgrader graded it; removed once merged
    seconds: dict[str, float] = field(default_factory=dict)  # time spent: nbgrader, then verification
    failure: str | None = None  # why the autograder could not grade it at all
    late_penalty: float = 0.0  # points off for lateness, from the class gradebook

    @property
    def points(self) -> float:
        """The tests' points, before any late penalty."""
        return sum(notebook.points for notebook in self.notebooks)

    @property
    def grade(self) -> float:
        """The points after the late penalty, never below 0: the grade exported."""
        return max(0.0, self.points - self.late_penalty)

    @property
    def max_points(self) -> float:
        return sum(notebook.max_points for notebook in self.notebooks)

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
    def findings(self) -> list[Finding]:
        """What grading found besides the tests' scores: about the submission, then about each notebook."""
        return self.notes + [note for notebook in self.notebooks for note in notebook.notes]

    @property
    def messages(self) -> list[str]:
        """Everything the report says went wrong: what grading found, failed tests."""
        found = [finding.text for finding in self.findings]
        return found + [f"{test.name}: {test.message}" for test in self.tests if test.message]


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
            reason = "its grading process died twice" + _unguarded_script_explained()
            outcomes += retried + [failed(job, reason) for job in still_broken]
    return sorted(outcomes, key=lambda outcome: (outcome.assignment, outcome.student))


def _unguarded_script_explained() -> str:
    """Why every worker may have died, when the program that grades is a script without a main guard: a worker
    starts by importing that script (the "spawn" start), which then grades again instead of taking its job."""
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    if script is None or not Path(script).is_file() or has_main_guard(Path(script).read_text(encoding="utf-8")):
        return ""
    return (
        f" (likely cause: each grading process starts by importing {script}, which grades again as it is "
        'imported; put the grading under `if __name__ == "__main__":`)'
    )


def has_main_guard(source: str) -> bool:
    """Whether a script's top level holds ``if __name__ == "__main__":`` (either way round)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return True  # not a script this program could have run: claim nothing
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.comparators) == 1:
            sides = [node.test.left, node.test.comparators[0]]
            names = {side.id for side in sides if isinstance(side, ast.Name)}
            values = {side.value for side in sides if isinstance(side, ast.Constant)}
            if names == {"__name__"} and values == {"__main__"}:
                return True
    return False


def run_jobs(jobs: list[Job], limits: Limits, progress) -> tuple[list[Outcome], list[Job]]:
    outcomes, broken = [], []
    context = get_context("spawn")  # workers start clean, whatever the parent has imported or opened
    threads = max(1, (os.cpu_count() or 1) // limits.workers)
    if os.environ.get("OMP_NUM_THREADS", "").isdigit():  # a caller that shares the cores with others already chose
        threads = max(1, min(threads, int(os.environ["OMP_NUM_THREADS"])))
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
    return Outcome(job.student, job.assignment, notes=[NotGraded(reason)], failure=reason)


def prepare_worker(memory: int, threads: int) -> None:
    """Run in each worker before any job; the worker's children (nbgrader, kernels, sealed runs) inherit all
    of it: the memory limit, as many PyTorch threads as leave every worker a fair share of the cores, and the
    imports every job's nbgrader needs (warm_start.py)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    try:
        import resource
    except ImportError:  # Windows: no per-process limits; grading still works
        resource = None
    if resource is not None:
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
    warm_start.preload()


@functools.cache
def preloaded(source: Path) -> None:
    """The assignment's checks imported in this worker, once, for every job's copy of it (warm_start.py)."""
    warm_start.preload_assignment(source)


# --- in a worker ------------------------------------------------------------------------------------------


def grade(job: Job) -> Outcome:
    """Autograde one student's assignment in a scratch course directory."""
    scratch = Path(tempfile.mkdtemp(prefix=f"grade-{job.assignment[:2]}-"))
    outcome = Outcome(job.student, job.assignment, scratch=scratch)
    set_up_scratch(job, scratch, outcome)
    start = time.perf_counter()
    log, stopped = run_nbgrader(job, scratch)
    outcome.seconds["nbgrader"] = time.perf_counter() - start
    if stopped:  # stopped at the job's limit: what nbgrader had written of its autograde is not a grade
        shutil.rmtree(scratch / "autograded" / job.student / job.assignment, ignore_errors=True)
    for source_path in sorted((job.root / "source" / job.assignment).glob("*.ipynb")):
        outcome.notebooks.append(grade_notebook(job, scratch, source_path, log, stopped))
    outcome.seconds["verification"] = sum(notebook.verification_seconds for notebook in outcome.notebooks)
    outcome.seconds["nbgrader"] -= outcome.seconds["verification"]
    return outcome


def set_up_scratch(job: Job, scratch: Path, outcome: Outcome) -> None:
    """The class's source, a copy of its gradebook, and the submission's notebooks (nothing else of it)."""
    db_url = f"sqlite:///{scratch / 'gradebook.db'}"
    config = SCRATCH_CONFIG.format(class_config=str(job.root / "nbgrader_config.py"), root=str(scratch), db_url=db_url)
    (scratch / "nbgrader_config.py").write_text(config, encoding="utf-8")
    for folder in ("source", "release"):  # the judge reads both
        (scratch / folder).symlink_to(job.root / folder, target_is_directory=True)
    shutil.copy(job.template, scratch / "gradebook.db")
    submitted = job.root / "submitted" / job.student / job.assignment
    copy = scratch / "submitted" / job.student / job.assignment
    copy.mkdir(parents=True)
    expected = {path.name for path in (job.root / "source" / job.assignment).glob("*.ipynb")}
    extra = []
    for path in sorted(submitted.rglob("*")) if submitted.is_dir() else []:
        if not path.is_file() or ".ipynb_checkpoints" in path.parts:
            continue
        if path.parent == submitted and path.name in {*expected, *NBGRADER_FILES}:
            shutil.copy(path, copy / path.name)
        else:
            extra.append(path.relative_to(submitted))
    outcome.notes += extra_file_notes(extra, expected)


def extra_file_notes(extra: list[Path], expected: set[str]) -> list[Finding]:
    """Files nbgrader would copy next to the notebook are left out: in the kernel's folder, a file named
    torch.py would be imported in place of PyTorch."""
    return [
        NotOfThisAssignment(str(path), tuple(sorted(expected)))
        if path.suffix == ".ipynb"
        else ExtraFile(str(path), could_shadow=path.suffix == ".py" or path.parent != Path("."))
        for path in extra
    ]


def run_nbgrader(job: Job, scratch: Path) -> tuple[str, Stopped | None]:
    """nbgrader's autograde of the one submission; its log (nbgrader goes on after a notebook fails). A run
    that uses more processor time than the job's limit, or outlasts every cell's time limit together, is stopped,
    its kernel with it (job_watch.py says why processor time)."""
    args = [
        "autograde",
        job.assignment,
        "--student",
        job.student,
        "--force",
        f"--ExecutePreprocessor.timeout={math.ceil(job.limits.cell_timeout)}",  # nbgrader takes whole seconds
        f"--JudgedExecute.progress_file={scratch / PROGRESS}",
        f"--JudgedExecute.cell_processor_time={CELL_SHARE * job.limits.job_time_limit(job.assignment):g}",
    ]
    args += [f"--GradingSandbox.enabled={job.limits.sandbox}", f"--GradingSandbox.memory={job.limits.memory}"]
    with contextlib.suppress(Exception):  # a source that cannot be imported fails in the job itself, as it should
        preloaded(job.root / "source" / job.assignment)
    process = warm_start.start(args, scratch)
    code_cells = sum(
        cell.cell_type == "code"
        for path in (job.root / "source" / job.assignment).glob("*.ipynb")
        for cell in nbformat.read(path, as_version=4).cells
    )
    processor_limit = job.limits.job_time_limit(job.assignment)
    wall_limit = min(START_UP_ALLOWANCE + code_cells * job.limits.cell_timeout, WALL_FACTOR * processor_limit)
    log, stopped = communicate_within(process, processor_limit, wall_limit)
    if stopped:
        log += f"\nnbgrader {NO_END} {stopped.text} and was stopped"
    return log, stopped


def grade_notebook(job: Job, scratch: Path, source_path: Path, log: str, stopped: Stopped | None) -> NotebookResult:
    result = NotebookResult(source_path.name)
    source = nbformat.read(source_path, as_version=4)
    submitted_path = scratch / "submitted" / job.student / job.assignment / source_path.name
    autograded_path = scratch / "autograded" / job.student / job.assignment / source_path.name
    result.submitted, result.graded_by_nbgrader = submitted_path.exists(), autograded_path.exists()
    unjudged = False
    if not result.submitted:
        result.notes.append(NotSubmitted(source_path.name))
    elif result.graded_by_nbgrader:
        unjudged = not verification_of(autograded_path, result)
    elif stopped:  # stopped at the job's time limit: running it again would take as long
        result.notes.append(job_timed_out(scratch, source_path.stem, stopped))
    else:  # nbgrader gave up on it (its kernel died, or it is no notebook): the sealed run says what happened
        released = nbformat.read(job.root / "release" / job.assignment / source_path.name, as_version=4)
        sandbox = Sandbox(memory=job.limits.memory) if job.limits.sandbox else None
        run_sealed(job.assignment, source, released, submitted_path, job.limits.cell_timeout, sandbox, result.notes)
        result.notes.append(NotGradedByNbgrader(nbgrader_error(log)))
    scores = scores_in(scratch, job, source_path.stem)
    in_kernel = failures_in(autograded_path) if result.graded_by_nbgrader else {}
    for cell in (cell for cell in source.cells if is_test(cell)):
        name = grade_id(cell)
        result.tests.append(test_result(cell, scores.get(name), in_kernel.get(name), unjudged, result))
    return result


def job_timed_out(scratch: Path, notebook: str, stopped: Stopped) -> Finding:
    """What the report says of a notebook whose job was stopped at its time limit: the cell it was running."""
    try:
        running = json.loads((scratch / PROGRESS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        running = {}
    if running.get("notebook") != notebook:  # it stopped in another notebook of the assignment, or before any cell
        return JobTimedOut("", "", stopped.seconds, stopped.processor_time)
    return JobTimedOut(running["cell"], running["whose"], stopped.seconds, stopped.processor_time)


def verification_of(autograded_path: Path, result: NotebookResult) -> bool:
    """What the judge (in nbgrader's autograde, verification/nbgrader_steps.py) found besides the scores: its
    notes go into ``result``. False when the notebook was autograded without the course's steps: its tests ran
    where the student's code could reach them, and earn nothing."""
    found = nbformat.read(autograded_path, as_version=4).metadata.get(VERIFICATION)
    if found is None:
        result.notes.append(NotVerified())
        return False
    result.notes += [Finding.from_json(note) for note in found["notes"]]
    result.verification_seconds = found["seconds"]
    return True


def test_result(
    cell, score: float | None, error: ShownFailure | None, unjudged: bool, result: NotebookResult
) -> TestResult:
    """A test's final score: nbgrader's, of the outputs the judge gave its cell; nothing where no judge ran."""
    test = TestResult(grade_id(cell), points(cell), score or 0.0)
    if error is not None:
        test.message, test.error_type = error.text, error.error_type
    if not result.graded_by_nbgrader:
        test.points, test.message = 0.0, "not graded (see the notes)" if result.submitted else "not submitted"
    elif score is None:
        test.unscored, test.message = True, "nbgrader did not run it: the test cell is missing from the submission"
    elif unjudged and test.max_points:
        test.points, test.message, test.error_type = 0.0, NOT_VERIFIED, None
    if test.points == test.max_points:
        test.message = test.error_type = None
    return test


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


def failures_in(autograded: Path) -> dict[str, ShownFailure]:
    """For each test cell that failed in the autograded notebook: the error it shows."""
    failures = {}
    for cell in nbformat.read(autograded, as_version=4).cells:
        errors = [output for output in cell.get("outputs", []) if output.output_type == "error"]
        if is_test(cell) and errors:
            text = "\n".join(f"{error.ename}: {error.evalue}" for error in errors)
            failures[grade_id(cell)] = ShownFailure(errors[0].ename, text)
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
    """Each test's final score (nbgrader's, or 0 where no judge ran), and nbgrader's comments and
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
