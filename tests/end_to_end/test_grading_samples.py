"""The sample submissions (autograder/samples.py), honest, tampered, faulty and hostile, graded in one batch through
the autograder's parallel path, in the grading sandbox: each earns exactly what it should and its report says what
happened, while nothing else is affected: the class folder is intact but for what grading writes, no feedback shows
hidden test code or solution code, nothing reached the network and nothing outlived its job.
"""

import ast
import socket
from dataclasses import dataclass

import nbformat
import psutil
import pytest

from autograder.class_folder import NOT_GRADED_FEEDBACK, ClassFolder
from autograder.grading import CELL_SHARE, Limits, Outcome
from autograder.report import class_summary
from autograder.repository import NOTEBOOKS, assignments
from autograder.samples import DAEMON_MARKER, SNOOPED, Assignment, Sample, reports, samples
from autograder.verification.findings import JobTimedOut, Unreadable
from class_records import (
    assert_feedback_hides_tests_and_machine_paths,
    class_files,
    feedback_files,
    feedback_text,
    grades,
    solution_lines_not_handed_out,
)
from cores import grading_workers

pytestmark = pytest.mark.grading

# Notebook 01's cells each take about a second at most, its set-up (PyTorch imported) a few, and up to three times
# as long on a busy machine. The infinite-loop sample costs this once.
CELL_TIMEOUT = 20.0
FIRST = assignments()[0]
# A server on this machine's loopback that the network sample tries to reach; it must never hear from it.
LISTENER = socket.create_server(("127.0.0.1", 0))
RELEASED_FIRST = {path.name: nbformat.read(path, as_version=4) for path in (NOTEBOOKS / FIRST).glob("*.ipynb")}
SAMPLES = samples(FIRST, RELEASED_FIRST, listening_port=LISTENER.getsockname()[1])


@dataclass
class Graded:
    class_folder: ClassFolder
    grades: dict[str, dict[str, str]]  # student → exported row
    outcomes: dict[str, Outcome]  # student → what grading found
    before: dict[str, str]  # the class folder's files, but for what grading writes, before grading: path → hash


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Graded:
    class_folder = ClassFolder.create(tmp_path_factory.mktemp("class") / "course")
    class_folder.write_student_versions([FIRST])
    for sample in SAMPLES:
        submission = sample.submission
        class_folder.submit(submission.student, FIRST, submission.notebooks, submission.files)
    before = class_files(class_folder.root)
    outcomes = class_folder.autograde(limits=Limits(cell_timeout=CELL_TIMEOUT, workers=grading_workers()))
    class_folder.generate_feedback(FIRST)
    rows = {row["student_id"]: row for row in grades(class_folder) if row["assignment"] == FIRST}
    return Graded(class_folder, rows, {outcome.student: outcome for outcome in outcomes}, before)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda sample: sample.submission.student)
def test_sample_earns_what_it_should_and_the_report_says_what_happened(graded, sample: Sample):
    outcome = graded.outcomes[sample.submission.student]
    earned = {test.name for test in outcome.tests if test.points == test.max_points > 0}
    said = "\n".join(outcome.messages)  # whole: a failure here must say why, and pytest shortens a list's items
    assert earned == sample.earns, said
    assert reports(outcome, sample.reported), said
    row = graded.grades[sample.submission.student]  # the exported grade agrees
    if outcome.graded:
        assert (row["status"], float(row["score"])) == ("graded", outcome.points)
    else:  # the instructor's to grade: no score, not a 0
        assert (row["status"], row["score"]) == ("could not be graded", "")


def test_the_class_folder_is_intact_but_for_what_grading_writes(graded):
    assert class_files(graded.class_folder.root) == graded.before


def test_nothing_reached_the_network_and_nothing_outlived_its_job(graded):
    LISTENER.setblocking(False)
    with pytest.raises(BlockingIOError):
        LISTENER.accept()  # no connection is waiting
    daemons = [
        process for process in psutil.process_iter(["cmdline"]) if DAEMON_MARKER in (process.info["cmdline"] or [])
    ]
    assert daemons == []


def test_every_sample_gets_feedback_or_a_page_that_says_why_not(graded):
    files = feedback_files(graded.class_folder, FIRST)
    autograded = {path.name for path in (graded.class_folder.root / "autograded").iterdir()}
    assert {path.parent.parent.name for path in files if path.name != NOT_GRADED_FEEDBACK} == autograded
    # The others get a page with their report, which says why nbgrader did not grade them; everyone's report
    # lies beside their feedback.
    assert {path.parent.parent.name for path in files if path.name == NOT_GRADED_FEEDBACK} == set(
        graded.outcomes
    ) - autograded
    assert all((path.parent / "report.txt").exists() for path in files)


def test_no_feedback_shows_hidden_test_code_or_machine_paths(graded):
    assert_feedback_hides_tests_and_machine_paths(graded.class_folder, FIRST)


def test_no_feedback_shows_solution_code_its_student_did_not_write(graded):
    """The samples that read the class or the solutions left the first exercise unanswered (and answered the others
    with the solutions): what they found must not reach their feedback."""
    first = Assignment.of(FIRST, RELEASED_FIRST)
    readers = {sample.submission.student for sample in SAMPLES if "reads" in sample.submission.student}
    solution = solution_lines_not_handed_out(FIRST, first.answers[:1])
    assert solution and readers
    for path in feedback_files(graded.class_folder, FIRST):
        if path.parent.parent.name in readers:
            assert [line for line in solution if line in feedback_text(path)] == [], path


def test_a_kernel_never_holds_a_test_to_print(graded):
    """The snooping sample printed its kernel's history into its feedback, after three test cells had run: their
    hidden tests are not there (the judge ran them), nor the checks' code (test_no_feedback_shows_hidden_...)."""
    (feedback,) = [path for path in feedback_files(graded.class_folder, FIRST) if "prints-history" in str(path)]
    printed = feedback_text(feedback).split(SNOOPED, 1)[1]  # its source, what it printed, the cells after it
    assert "def softmax" in printed  # it printed the history: the first exercise's answer is in it
    assert "check_softmax" not in printed  # and not the first test (whose cell stands before it on the page)


def test_a_submission_nbgrader_could_not_grade_is_named_and_its_student_told_why(graded):
    outcome = graded.outcomes["sample-malformed"]
    assert not outcome.graded
    assert "COULD NOT BE GRADED" in class_summary([outcome])
    (unreadable,) = [finding for finding in outcome.findings if isinstance(finding, Unreadable)]
    page = graded.class_folder.root / "feedback" / "sample-malformed" / FIRST / NOT_GRADED_FEEDBACK
    shown = " ".join(feedback_text(page).split())  # the report's lines are wrapped
    assert " ".join(unreadable.text.split()) in shown


def test_a_job_past_its_time_limit_is_stopped_and_names_the_cell_it_was_running(tmp_path):
    """Cells that each stay within the cell limit but together use more processor time than the job may: the job is
    stopped at its limit, the submission counts as not graded (autograde exits non-zero) and the report names the
    cell. (Code that sleeps instead is stopped at a wall-clock limit: tests/autograder/test_job_watch.py.)"""
    first = Assignment.of(FIRST, RELEASED_FIRST)
    job_timeout = 20.0
    each = 0.9 * CELL_SHARE * job_timeout  # a cell may use a share of the job's limit: each stays below it
    busy = f"import time\n\nstart = time.process_time()\nwhile time.process_time() - start < {each}:\n    pass\n"
    busy_answers = {answer: f"{first.solutions[answer]}\n\n{busy}" for answer in first.answers}
    assert len(busy_answers) * each > 0.8 * job_timeout  # with the set-up's few seconds, more than the job may use
    outcome = graded_alone(tmp_path, first, first.notebook_with(**busy_answers), job_timeout)
    assert not outcome.graded and "COULD NOT BE GRADED" in class_summary([outcome])
    (stopped,) = [finding for finding in outcome.findings if isinstance(finding, JobTimedOut)]
    # Its processor time, or on a machine too busy to give it that much, five times as long on the wall clock.
    assert stopped.cell and stopped.cell in stopped.text and stopped.seconds in (20.0, 100.0), stopped


def test_a_function_that_never_returns_fails_its_own_test_and_the_others_still_count(tmp_path):
    """The last exercise's function loops for ever when called: its visible check and its test are each interrupted
    once they have used their cell's share of the job's processor time, and the other exercises' tests pass."""
    first = Assignment.of(FIRST, RELEASED_FIRST)
    answer = first.answers[-1]
    (name,) = [node.name for node in ast.parse(first.solutions[answer]).body if isinstance(node, ast.FunctionDef)][:1]
    never_returns = f"{first.solutions[answer]}\n\ndef {name}(*args, **kwargs):\n    while True:\n        pass\n"
    outcome = graded_alone(tmp_path, first, first.notebook_with(**{answer: never_returns}), job_timeout=40.0)
    assert outcome.graded
    failed = [test for test in outcome.tests if test.points < test.max_points]
    assert failed and all("and was interrupted" in (test.message or "") for test in failed), failed
    assert sum(test.points for test in outcome.tests) > 0


def graded_alone(tmp_path, first: Assignment, notebook: nbformat.NotebookNode, job_timeout: float) -> Outcome:
    class_folder = ClassFolder.create(tmp_path / "course")
    class_folder.write_student_versions([FIRST])
    class_folder.submit("student", FIRST, {first.notebook: notebook})
    # The cells' wall-clock limit is long, so that on a busy machine the processor-time limits under test come first.
    limits = Limits(cell_timeout=6 * CELL_TIMEOUT, job_timeout=job_timeout, workers=1)
    (outcome,) = class_folder.autograde(limits=limits)
    return outcome
